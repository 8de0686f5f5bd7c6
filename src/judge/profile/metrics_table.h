// Terminal rendering of metrics: the candidate beside a baseline (`temper profile`), and the
// mechanism expectations of a profiled case (`temper judge --expect`).
#pragma once

#include "judge/profile/case_profile.h"
#include "judge/profile/metrics.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace temper::judge::profile {

// One row per registered metric the candidate or the baseline has: name, candidate, baseline,
// change in percent (when both are numbers), unit and direction. Unsupported values print as
// "unsupported" and their reasons are listed once below the table.
void print_metrics(const MetricSet& candidate, const MetricSet* baseline, const std::string& baseline_label, std::ostream& out);

// Each expectation with its outcome and detail, then the mechanism verdict.
void print_expectations(const CaseProfile& profile, int64_t case_id, std::ostream& out);

} // namespace temper::judge::profile
