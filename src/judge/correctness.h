// The correctness half of the judge for one case: a fresh worker on the candidate's artifact,
// several trials with fresh inputs; before each call inputs are restored from the judge's
// pristine copy and outputs poisoned; after it inputs are compared with the pristine copy and
// outputs with the golden under the task's tolerance standard. One trial runs twice to expose
// nondeterminism.
#pragma once

#include "backend/worker.h"
#include "core/task.h"
#include "judge/case_result.h"
#include "judge/golden.h"
#include "judge/output_check.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>

namespace temper::judge {

struct CorrectnessConfig {
  std::filesystem::path worker_exe;
  std::vector<std::string> worker_args; // a runner script and its flags (the pypto backend)
  std::vector<std::string> worker_env;  // added to the worker's fixed environment (WorkerOptions)
  bool device_profiles = false;         // WorkerOptions::device_profiles (pypto --time device)
  int threads = 1;
  std::chrono::milliseconds call_timeout{60'000};
  size_t memory_limit_bytes = size_t{4} << 30;
  int trials = 3;
  uint64_t job_seed = 0;
  // Set: comparisons made by earlier checks of the same task (a probe's variants, a campaign's
  // judgements) answer a trial whose inputs and output bytes they saw, and this check's are added.
  std::shared_ptr<ComparedOutputs> compared;
};

// Fills the correctness fields of `result` (status, errors, trials). Golden outputs come from
// `golden` (computed beforehand, so normally cache hits). Returns an Error only for harness
// problems (the golden failing, the worker binary missing); everything the kernel does is data.
Status check_case(const core::Task& task, const core::Case& c, const std::filesystem::path& artifact,
                  GoldenRunner& golden, const CorrectnessConfig& config, CaseResult& result);

} // namespace temper::judge
