// Mechanism expectations of a milestone (`static.vec512_ops > 0`, `cg.D1mr change <= -30%`) are
// evaluated by the profiling layer (judge/profile, docs/metrics.md). The campaign stores them in
// the plan, passes them here with a submission that passed correctness, records the results and
// rejects a submission only for an expectation that was evaluated and failed. One this machine
// cannot decide (no hardware counters, no valgrind, prose instead of a metric) is "unsupported"
// with the reason, never a pass.
#pragma once

#include "campaign/campaign_state.h"
#include "campaign/reference_store.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace temper::campaign {

struct ExpectationResult {
  std::string expectation;
  std::string status; // passed | failed | unsupported
  std::string detail;
};

struct ExpectationRequest {
  std::vector<std::string> expectations;
  nlohmann::json report;                    // the submission's last judge report: its first passed case is profiled
  std::filesystem::path candidate;          // the candidate source
  std::filesystem::path task_dir;
  std::optional<SealedReference> reference; // the baseline of relative expectations ("METRIC change OP N%")
};

class ExpectationEvaluator {
public:
  virtual ~ExpectationEvaluator() = default;
  virtual std::vector<ExpectationResult> evaluate(const ExpectationRequest& request) = 0;
};

// Every expectation "unsupported" with `why` (no evaluator, or nothing to evaluate on).
std::vector<ExpectationResult> unevaluated(const std::vector<std::string>& expectations, const std::string& why);

// The real evaluator: `temper profile TASK CANDIDATE --case N --reference SEALED-ARTIFACT
// --expect ...` as a library call (judge::profile::run_profile_job). The reference is profiled
// only when a relative expectation needs it, the cache simulation only when a cg.* metric is
// named. The candidate is built as the judge builds it (the campaign's compiler and flags).
class ProfilingExpectationEvaluator final : public ExpectationEvaluator {
public:
  ProfilingExpectationEvaluator(JudgeSettings settings, util::ProcessRunner& runner) : m_settings(std::move(settings)), m_runner(runner) {}
  std::vector<ExpectationResult> evaluate(const ExpectationRequest& request) override;
  void set_worker_exe(std::filesystem::path exe) { m_worker_exe = std::move(exe); }

private:
  JudgeSettings m_settings;
  util::ProcessRunner& m_runner;
  std::filesystem::path m_worker_exe;
};

} // namespace temper::campaign
