// The timing phase of a judgement: every job of the tier over the cases that passed
// correctness, merged per case, folded into the case statuses, aggregated overall.
#pragma once

#include "judge/judge.h"
#include "util/progress.h"

#include <filesystem>
#include <span>
#include <string>
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

// The timing configuration of a job: the user's options completed with what the job knows
// (the task's threads, this machine's flush size, the compiler and flags both arms use).
TimingConfig make_timing_config(const TimingOptions& options, const core::Task& task,
                                const build::CompilerSpec& compiler, const build::CompilerIdentity& compiler_id,
                                const std::filesystem::path& worker_exe, std::chrono::milliseconds call_timeout,
                                size_t memory_limit_bytes);

// Merges a case's jobs: the verdict (measurement and confirmation), the mean speedup, the widest
// interval and, for an AMBIGUOUS case, the cap per arm that would likely decide it.
void summarize_timing_jobs(CaseTimingSummary& s);

Status run_timing_phase(const TimingPhaseInput& in, const TimingOptions& options, const TimingConfig& config,
                        GoldenRunner& golden, JudgeReport& report, util::Progress& progress);

// The probe tier's timing of several variants of one case in one job against one reference
// (time_case_shared): `in` holds the case, the reference and an artifact per variant, in the
// order of `reports`, one-case reports whose case has passed its checks or says why not. Each
// report gets what run_timing_phase would give it alone, over the rounds its variant took part in.
// `labels` (one per report, or none) name the variants in the progress lines.
Status run_shared_timing_phase(const TimingPhaseInput& in, const TimingOptions& options, const TimingConfig& config,
                               GoldenRunner& golden, std::span<JudgeReport* const> reports, util::Progress& progress,
                               std::span<const std::string> labels = {});

} // namespace temper::judge
