// The timing phase of a judgement: every job of the tier over the cases that passed
// correctness, merged per case, folded into the case statuses, aggregated overall.
#pragma once

#include "judge/judge.h"
#include "util/progress.h"

#include <filesystem>
#include <vector>

namespace temper::judge {

struct TimingPhaseInput {
  const core::Task* task = nullptr;
  std::vector<const core::Case*> cases;                // as selected
  std::vector<std::filesystem::path> reference_artifacts; // per case
  std::vector<std::filesystem::path> candidate_artifacts; // per case
  std::string reference_key;                           // the reference build's cache key
  uint64_t job_seed = 0;
};

Status run_timing_phase(const TimingPhaseInput& in, const TimingOptions& options, const TimingConfig& config,
                        GoldenRunner& golden, JudgeReport& report, util::Progress& progress);

} // namespace temper::judge
