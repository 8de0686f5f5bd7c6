// What the judge's profile phase found for one case: the candidate's metrics, the baseline's
// (the reference, or a previous candidate's), and each mechanism expectation's result.
#pragma once

#include "judge/profile/expectation.h"
#include "judge/profile/metrics.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace temper::judge::profile {

struct CaseProfile {
  MetricSet candidate;
  std::optional<MetricSet> baseline;
  std::string baseline_source; // "reference", "baseline report FILE", or empty without a baseline
  std::vector<ExpectationResult> expectations;
  MechanismVerdict mechanism;

  // {"candidate": {...}, "baseline": {...}|null, "baseline_source": "...", "expectations": [...], "mechanism": {...}}
  nlohmann::json to_json() const;
};

} // namespace temper::judge::profile
