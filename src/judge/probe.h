// Probing a kernel's knobs: the macros a candidate reads (`#ifndef TILE / #define TILE 64`) are
// set over a grid of values, every variant is built through the compile cache, checked on one
// case, and every correct variant is timed against the same reference on the same inputs, so
// the ranking compares like with like. A probe answers "which settings are worth a gate", not
// "is it faster": short jobs, no confirmation, and a race: a variant clearly behind the best
// checked one so far stops early, unchecked. Variants are timed several to a job, which pays
// the reference's calls once for all of them (judge/paired.h measure_shared): against a
// reference 50 times slower than they are, that is most of a probe's time.
#pragma once

#include "build/compiler.h"
#include "build/knobs.h"
#include "judge/case_result.h"
#include "judge/judge.h"
#include "judge/output_check.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge {

// One knob and the values it takes, from `--grid NAME=v1,v2,...`.
struct KnobAxis {
  std::string name;
  std::vector<std::string> values;
};

inline constexpr size_t kMaxProbeVariants = 256;

// Parses "NAME=v1,v2,...". The error says what is wrong with the text as given, e.g.
// "--grid TILE: expected NAME=v1,v2 (no '=')".
Expected<KnobAxis> parse_knob_axis(std::string_view text);

// The cartesian product of the axes in order (the last axis varies fastest), each variant as
// -D macros. Errors: no axis, a knob named twice, more than kMaxProbeVariants variants.
Expected<std::vector<std::vector<build::Define>>> expand_grid(const std::vector<KnobAxis>& axes);

// Explicit variants against the candidate's declared knobs (`source`) on one case: each as -D
// macros for every declared knob (defaults filled in). Errors: no variant, too many, a kernel
// that declares no knobs, an undeclared knob or value, a constraint that fails, a duplicate.
Expected<std::vector<std::vector<build::Define>>> check_variants(const std::vector<build::KnobValues>& variants,
                                                                 std::string_view source, const core::ExprScope& case_scope);

struct ProbeOptions {
  std::filesystem::path task_dir;
  std::filesystem::path candidate;
  int64_t case_id = 0;
  std::vector<KnobAxis> grid;
  // Instead of a grid: these variants, in this order. Each is checked against the knobs the
  // candidate declares (build/knobs.h): declared names and values, the constraints on the case;
  // knobs a variant leaves out take their declared defaults. At most kMaxProbeVariants.
  std::vector<build::KnobValues> variants;
  build::CompilerSpec compiler;
  std::optional<uint64_t> seed;      // default: this machine's secret seed (goldens are reused)
  bool fresh_seed = false;
  int jobs = 0;                      // parallel compiles and checks; 0: one per core
  std::chrono::milliseconds call_timeout{60'000};
  size_t memory_limit_bytes = size_t{4} << 30;
  int trials = 3;                    // correctness trials per variant (at least 3)
  std::optional<int> threads;        // overrides the task's threads (`--threads N|all`)
  std::filesystem::path worker_exe;  // default: the backend's worker beside the running binary
  std::string backend = "cpu";       // cpu | cuda (judge/kernel_backend.h); cuda: `compiler` is nvcc
  std::string cuda_arch;             // cuda: empty means the device's architecture, else sm_90
  bool progress = true;
  std::string temper_version = "dev";
  // Race the variants (timed in the order given, so put the likeliest winner first): a variant
  // whose interval falls clearly below the best checked one's stops early and its timed outputs
  // are not checked; it keeps its rank by the speedup it showed, with no verdict.
  bool race = true;
  // Variants timed together in one job, against one run of the reference; fewer where their
  // arenas would not fit in a quarter of the memory available. 1: a job per variant.
  int variants_per_job = 8;
  // Comparisons shared with earlier judgements of the task (CorrectnessConfig::compared); unset:
  // the probe's own, which its variants share.
  std::shared_ptr<ComparedOutputs> compared;
  // The reference (default: the task's reference for the backend), protocol, stop rule and noise floor.
  // The tier and job counts are ignored: a probe is one measurement job per group of variants.
  TimingOptions timing;
};

struct ProbeVariant {
  std::vector<build::Define> knobs;
  CaseResult result;  // correctness, compile facts, and timing when the variant was timed
  int rank = 0;       // 1 = fastest; 0 when the variant was not timed

  bool timed() const;
  bool behind() const; // timed, stopped behind the race's best, outputs unchecked
  std::string label() const; // "SLOW=0,BROKEN=1"
};

struct ProbeReport {
  nlohmann::json context;            // like the judge's, plus the case, grid and reference
  nlohmann::json protocol;           // MeasurementProtocol::to_json
  nlohmann::json timing_notes;       // noise floor and calibration note of the timing runs
  std::vector<ProbeVariant> variants; // ranked: timed variants fastest first, then the rest
  double wall_seconds = 0;

  int timed_count() const;
  int behind_count() const;
};

// Runs a probe. Errors are usage and harness problems (bad task, unknown case, missing files,
// a grid that is empty or too large, a reference that does not compile or fails); whatever a
// variant does is its status.
Expected<ProbeReport> run_probe(const ProbeOptions& options, util::ProcessRunner& runner);

inline constexpr std::string_view kProbeReportKind = "temper.probe.report";

nlohmann::json probe_report_to_json(const ProbeReport& r);

// The ranked table: rank, knobs, status, speedup, 95% interval, verdict, candidate median;
// then why each failing variant failed, and a summary line.
void print_probe_table(const ProbeReport& r, std::ostream& out, bool color);

} // namespace temper::judge
