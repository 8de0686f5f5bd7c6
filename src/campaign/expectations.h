// Mechanism expectations of a milestone ("vector instructions dominate the inner loop") are
// evaluated by the profiling layer. The campaign stores them in the plan, passes them here with
// the submission's report, records the results and rejects a submission only for an
// expectation that was evaluated and failed; one that cannot be evaluated here is reported.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace temper::campaign {

struct ExpectationResult {
  std::string expectation;
  std::string status; // passed | failed | unsupported
  std::string detail;
};

class ExpectationEvaluator {
public:
  virtual ~ExpectationEvaluator() = default;
  virtual std::vector<ExpectationResult> evaluate(const std::vector<std::string>& expectations,
                                                  const nlohmann::json& report,
                                                  const std::filesystem::path& candidate) = 0;
};

// Until the profiling layer is wired: every expectation is "unsupported" with that reason.
std::vector<ExpectationResult> unevaluated(const std::vector<std::string>& expectations);

} // namespace temper::campaign
