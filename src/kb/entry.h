// A knowledge-base entry: hw_kb/<target-class>/<entry-id>/entry.yaml (with README.md and the
// probe's sources beside it). An entry is a claim about a target, the mechanism behind it, how
// to use it in a kernel, and the probe experiment that certifies or refutes it here; its
// evidence list records every certification run (fingerprint, date, figures, report hash).
#pragma once

#include "core/task_loader.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::kb {

inline constexpr int kEntrySchemaVersion = 1;

enum class EntryStatus { Proposed, Certified, Refuted, Stale };
std::string_view status_name(EntryStatus s); // proposed, certified, refuted, stale
std::optional<EntryStatus> parse_status(std::string_view text);

// paired: two micro-kernels (a = the judge's reference arm, b = its candidate) under the judge's
//   paired protocol; the expectation is a range for b's speedup over a.
// measure: one micro-kernel timed by the judge (against itself, so both arms are samples of it);
//   the figure is work / time, and the expectation is a range for the figure.
// metric: an expectation on a profiling metric (judge/profile/metrics.h) of one micro-kernel,
//   profiled by the judge's profile phase; the expectation is a range for the metric.
enum class ProbeKind { Paired, Measure, Metric };
std::string_view probe_kind_name(ProbeKind k);

struct Range {
  std::optional<double> min;
  std::optional<double> max;
  bool contains(double v) const { return (!min || v >= *min) && (!max || v <= *max); }
  std::string to_string() const; // "[1.1, inf)"
};

struct Figure {
  std::string name;   // read_bandwidth
  std::string unit;   // GB/s, GFLOP/s, ...
  double scale = 1e9; // from the unit
  std::string work;   // expression of the probe case's scope: bytes or flops per call
  std::string roofline; // "", "bytes_per_s" or "flops_per_s": what the figure is for the roofline
};

struct Metric {
  std::string name;
  Range expect;
};

struct Probe {
  ProbeKind kind = ProbeKind::Paired;
  std::filesystem::path task = "probe"; // a task directory (proto.yaml, cases.yaml, temper.yaml, golden.cpp)
  int64_t case_id = 1;
  std::vector<std::string> requires_flags; // CPU flags the claim needs; missing: not applicable
  std::string cache = "cold";              // the judge's cache mode
  double cap_s = 2;                        // per arm and job
  int jobs = 1;                            // measurement jobs, and as many confirmation jobs
  std::string flags;                       // compiler flags; empty: the judge's default
  std::filesystem::path a, b;              // paired
  Range expect;                            // paired: b's speedup over a
  std::filesystem::path kernel;            // measure, metric
  Figure figure;                           // measure
  Range accept;                            // measure: accepted range of the figure
  Metric metric;                           // metric
  int calls = 20;                          // metric: profiled calls per job
};

struct Evidence {
  std::string date;
  std::string fingerprint;
  std::string target;
  std::string outcome;        // certified, refuted, ambiguous
  nlohmann::json figures = nlohmann::json::object();
  std::string reason;
  std::string report_hash;

  bool decisive() const { return outcome == "certified" || outcome == "refuted"; }
};

struct Entry {
  std::filesystem::path dir;  // hw_kb/<target>/<id>
  std::filesystem::path kb_root; // the knowledge base it was loaded from (load_kb); empty when loaded alone
  std::string id;
  std::string title;
  std::string target;
  std::string claim;
  std::string mechanism;
  std::string usage;
  std::vector<std::string> tags;
  Probe probe;
  EntryStatus status = EntryStatus::Proposed;
  std::vector<Evidence> evidence;

  std::filesystem::path file() const { return dir / "entry.yaml"; }
  // The status as seen on a machine with this fingerprint: a certification or refutation made on
  // another fingerprint is stale here.
  EntryStatus effective_status(const std::string& fingerprint) const;
  const Evidence* last_decisive() const;
  nlohmann::json to_json(const std::string& fingerprint) const;
};

struct EntryParse {
  std::optional<Entry> entry;            // set when there was no error
  std::vector<core::Diagnostic> problems; // file:line: message
};

// Reads and validates dir/entry.yaml: every key known, required fields present, the id and
// target matching the directory names (when `check_location`), the probe's files present.
EntryParse load_entry(const std::filesystem::path& dir, bool check_location = true);

// Rewrites entry.yaml's `status:` and `evidence:` (kept last in the file) and leaves every other
// line, comments included, as it was.
Status write_status_and_evidence(const Entry& e);

} // namespace temper::kb
