// The timing phase of a judgement: every job of the tier over the cases that passed
// correctness, merged per case, folded into the case statuses, aggregated overall.
#pragma once

#include "judge/judge.h"
#include "util/progress.h"

#include <filesystem>
#include <optional>
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

// The candidate's work outside its calls, judged over all the case's timing jobs (once the last
// is in): above their allowances together (CaseTiming::outside_allowance_seconds) the case is
// REJECTED_CHEAT work_outside_call, and true. Work a leftover thread does is there in every job;
// one stray burst is not (7 ms in one of a final report's 40 jobs on a VM, the rest at half
// their allowance).
bool reject_work_outside_calls(CaseResult& r);

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

// One reference of a timing phase against several (run_timing_phase_against).
struct AgainstReference {
  std::vector<std::filesystem::path> artifacts; // per case, as TimingPhaseInput::reference_artifacts
  ReferenceArm arm;                              // its worker (the artifact is set per case)
  std::string key;                               // its build's key (its stored calibration's)
  std::string label;                             // in progress lines ("PyTorch, 1 thread")
  JudgeReport* report = nullptr;                 // the correctness phase's results, timed here
  std::optional<Error> error;                    // set: it could not be timed to the end, and why
  bool required = false;                         // its failure is the phase's error (the judgement's own reference)
};

// The timing phase of one candidate against several references in the same jobs
// (time_case_against): each case's job times the candidate once against every reference still
// timing it, and each reference's report gets what run_timing_phase would give it alone. A
// reference that fails has `error` set and leaves the later jobs; a required one's failure is the
// phase's error, as run_timing_phase's reference's is. `in.reference_artifacts` is unused.
Status run_timing_phase_against(const TimingPhaseInput& in, const TimingOptions& options, const TimingConfig& config,
                                GoldenRunner& golden, std::span<AgainstReference> refs, util::Progress& progress);

} // namespace temper::judge
