// What the judge found for one case: the status (names from DESIGN.md), the error statistics,
// where it first went wrong, and the facts behind it. Pure data; report.cpp renders it.
#pragma once

#include "core/task.h"
#include "core/tolerance.h"
#include "judge/profile/case_profile.h"
#include "judge/status.h"
#include "judge/timing.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge {

struct OutputMismatch {
  std::string output;
  core::Mismatch at;
};

struct TrialSummary {
  int trial = 0;
  bool passed = false;
  double kernel_seconds = 0;
  double max_abs = 0;
  double max_rel = 0;
};

struct CaseResult {
  int64_t case_id = 0;
  CaseStatus status = CaseStatus::Passed;
  std::string reason_code; // for REJECTED_CHEAT (e.g. writes_inputs); empty otherwise
  std::string message;     // one line: why it is not PASSED, or a note

  // Context of the case, copied for the report.
  std::vector<core::Dtype> dtypes;
  std::vector<core::Shape> shapes;
  std::vector<std::pair<std::string, core::AttrValue>> attrs;

  // Build.
  double compile_seconds = 0;
  bool compile_cache_hit = false;
  std::string compile_diagnostics; // kept for COMPILE_ERROR, and warnings
  nlohmann::json resources;        // CUDA: ptxas's static resources (build/ptxas_resources.h); null otherwise

  // Golden.
  // Golden phase (before any candidate code loads): seconds spent computing this case's golden
  // outputs (fp64 and low-precision builds, all trials), 0 when all came from the cache.
  double golden_seconds = 0;
  int golden_cache_hits = 0; // fp64 trials found in the cache

  // Correctness over all trials and outputs (worst values).
  int trials_run = 0;
  double max_abs = 0;
  double max_rel = 0;
  double mean_rel = 0;
  int64_t mismatches = 0;
  std::vector<OutputMismatch> first_mismatches;       // of the first failing trial
  std::vector<std::pair<std::string, core::Comparison>> comparisons; // per output, worst trial
  std::vector<TrialSummary> trials;
  bool nondeterministic = false; // the repeated call produced different bytes
  int comparisons_reused = 0;    // trials whose outputs an earlier check compared (ComparedOutputs)
  std::string output_tail;       // the worker's last output, for crashes and errors
  std::string sandbox;           // what the worker's sandbox enforced, as it reported when loading

  // Paired timing against the reference, when one was given and the case passed.
  std::optional<CaseTimingSummary> timing;

  // Metrics and mechanism expectations (judge --profile / --expect), for the cases profiled.
  std::optional<profile::CaseProfile> profile;

  double kernel_seconds = 0; // median over trials
  std::string time_kind = "host"; // what kernel_seconds is: "host" wall clock, "simulated" (PyPTO SIM),
                                  // or "device" (the NPU profiler's kernel time, PyPTO NPU)
  double host_wall_seconds = 0;   // with "device": the median host wall time of the same calls
  // The median CPU time of the worker's calling thread over the same calls (0 where the backend
  // reports none): the timing protocol's clock for one-thread tasks, which excludes the time
  // other processes hold the CPU.
  double kernel_cpu_seconds = 0;
  double jit_compile_seconds = 0; // run-time (JIT) compile the backend reported, never in kernel_seconds
  double wall_seconds = 0;   // judge time spent on this case
};

} // namespace temper::judge
