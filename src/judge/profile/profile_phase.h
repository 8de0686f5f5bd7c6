// The judge's profile phase (`temper judge --profile CASES --expect "..."`): after correctness
// and timing, profiles the candidate (and the reference, which is the default baseline) on the
// chosen cases that passed, and evaluates the mechanism expectations on them.
#pragma once

#include "judge/case_result.h"
#include "judge/golden.h"
#include "judge/profile/expectation.h"
#include "judge/profile/profiler.h"
#include "util/error.h"
#include "util/process.h"
#include "util/progress.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <vector>

namespace temper::judge::profile {

struct ProfilePhaseOptions {
  std::vector<int64_t> case_ids;          // cases to profile; empty: the first judged case
  bool cachegrind = false;
  int calls = 10;
  std::vector<Expectation> expectations;  // evaluated on every profiled case
  std::map<int64_t, MetricSet> baseline;  // a previous candidate's metrics per case; replaces the reference as baseline
  std::string baseline_source;            // where `baseline` came from, for the report
};

// A previous judge report's candidate metrics, per case (its cases[].metrics.candidate).
Expected<std::map<int64_t, MetricSet>> load_baseline_report(const std::filesystem::path& report);

struct ProfilePhaseInput {
  const core::Task* task = nullptr;
  std::vector<const core::Case*> cases;          // the judged cases, in report order
  std::vector<ProfileTarget> candidates;         // per judged case
  std::vector<ProfileTarget> references;         // per judged case; empty without a reference
  ProfileOptions options;                        // worker, timeouts, seed (cachegrind and calls come from the phase options)
};

// Fills CaseResult::profile of the selected cases. Cases that did not pass are not run again;
// their expectations are unverifiable. Errors: a selected case that was not judged, harness problems.
Status run_profile_phase(const ProfilePhaseInput& in, const ProfilePhaseOptions& options, GoldenRunner& golden,
                         std::vector<CaseResult>& results, util::ProcessRunner& runner, util::Progress& progress);

} // namespace temper::judge::profile
