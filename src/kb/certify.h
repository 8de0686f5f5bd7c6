// Certifying an entry: run its probe here through the judge, decide, record evidence.
//
// The decision is the judge's interval against the entry's expectation, never a point value
// (metric probes: the interval of the median over the profiled calls, or for a deterministic
// metric such as static.* or cg.* its value in every job):
//   certified  every job's interval (the widest of them) lies inside the expected range, and for
//              paired probes the measurement and confirmation jobs agree on the verdict;
//   refuted    that interval lies entirely outside the range (the claim clearly fails here), or
//              the CPU lacks a flag the claim needs (not applicable);
//   ambiguous  anything else: the interval straddles a bound, or is undetermined, or the metric
//              cannot be measured on this machine ("unsupported here: reason"). The entry stays
//              proposed, and the evidence says why.
// A probe is run by a ProbeRunner: the judge in production, a fake in tests.
#pragma once

#include "kb/entry.h"
#include "kb/target.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::kb {

// What one job of the probe measured.
struct ProbeJob {
  bool confirmation = false;
  // paired: b's speedup over a, with its 95% interval (0/inf ends when undetermined).
  double speedup = 1;
  double speedup_lo = 0;
  double speedup_hi = 0;
  std::string verdict; // the judge's verdict for this job: FASTER, SLOWER, SAME, AMBIGUOUS
  // measure: the micro-kernel's per-call times (both arms of the A/A job).
  std::vector<double> seconds;
  // metric: the metric's value in this job (unset: not measurable here, `metric_unsupported`
  // says why) and, for a metric that is the median over the profiled calls, the calls' values.
  std::optional<double> metric_value;
  std::string metric_unsupported;
  std::vector<double> metric_samples;
};

struct ProbeOutcome {
  std::vector<ProbeJob> jobs;
  bool verdict_confirmed = false; // paired: the judge's merged verdict is confirmed
  std::string merged_verdict;     // paired: FASTER, SLOWER, SAME, AMBIGUOUS
  double work = 0;                // measure: work per call (bytes or flops), from figure.work
  std::string report_hash;        // of the judge's JSON report
  std::string note;               // e.g. "2 measurement + confirmation jobs, cap 2 s per arm"
};

// Runs an entry's probe. An error is a probe that could not run (does not build, is incorrect,
// needs a module this build lacks): the entry stays as it is.
class ProbeRunner {
public:
  virtual ~ProbeRunner() = default;
  virtual Expected<ProbeOutcome> run(const Entry& entry) = 0;
};

struct Decision {
  std::string outcome; // certified, refuted, ambiguous
  nlohmann::json figures = nlohmann::json::object();
  std::string reason;
};

// The decision for an outcome (pure; what the fake-judge tests exercise).
Decision decide(const Entry& entry, const ProbeOutcome& outcome);

// The figure's interval from one job's samples: work / time over the 95% order-statistic
// interval of the median time; nullopt when there are too few samples for an interval.
struct FigureInterval {
  double value = 0;
  double lo = 0;
  double hi = 0;
};
std::optional<FigureInterval> figure_interval(const std::vector<double>& seconds, double work, double scale);

// The 95% order-statistic interval of the median of per-call metric values (the judge's interval,
// on the raw values: counts may be 0); nullopt below 6 values.
std::optional<FigureInterval> median_interval(const std::vector<double>& values);

// Whether a metric's value is a property of the code and inputs rather than a sample of a run
// (static.*, compile.vectorized_loops, the cache simulation's cg.*, cuda.*): it is decided on its
// value, which every job must reproduce.
bool deterministic_metric(std::string_view name);

struct CertifyResult {
  Decision decision;
  Evidence evidence;
  EntryStatus new_status = EntryStatus::Proposed;
};

// Checks the target's flags, runs the probe, decides, appends the evidence and sets the status
// (certified, refuted, or proposed when ambiguous) and, when `write`, rewrites entry.yaml.
// Errors: the probe could not run; nothing is written then.
Expected<CertifyResult> certify(Entry& entry, ProbeRunner& runner, const TargetFingerprint& target, bool write);

} // namespace temper::kb
