// One call's outputs against the golden, output by output, as the official checker does: by the
// output's tolerance standard; for an output proto.yaml marks `compare: false`, by what its
// indices point to when it has `index_gather` (core/index_check.h), else not at all. Used by the
// correctness check and by the check of sampled timed calls, so both decide alike.
#pragma once

#include "core/task.h"
#include "core/tensor.h"
#include "core/tolerance.h"
#include "judge/golden.h"

#include "util/error.h"

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace temper::judge {

struct OutputCheck {
  std::string name;
  core::Comparison cmp;
};

// `got[k]` is the candidate's output k widened to double, in the golden's order; `inputs` the
// call's inputs (flat, as the kernel received them); `lowp` the same-precision run, or null.
std::vector<OutputCheck> check_outputs(const core::Task& task, const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                       const GoldenResult& gold, const GoldenResult* lowp, const std::vector<std::vector<double>>& got);

// check_outputs against `lowp` when it holds the same-precision run; when it does not and a
// comparison asks for it (core::Comparison::wants_lowp: cann-bench's second stage, which a passing
// output never reaches), `compute_lowp` makes it, `lowp` keeps it, and the outputs are compared
// again. Errors are compute_lowp's.
Expected<std::vector<OutputCheck>> check_outputs_lowp_on_demand(
    const core::Task& task, const core::Case& c, const std::vector<core::HostTensor>& inputs, const GoldenResult& gold,
    std::optional<GoldenResult>& lowp, const std::vector<std::vector<double>>& got,
    const std::function<Expected<GoldenResult>()>& compute_lowp);

// Comparisons already made, by everything that decides one: the case, the call's inputs and
// the candidate's output bytes (one XXH3-128 over all of them). The golden and the tolerances are
// the task's, which the owner holds fixed (a probe's variants, a campaign's judgements). They
// compare the same bytes against the same golden again and again: a probe's variants on the same
// trial inputs (most knobs move data and leave the arithmetic alone), a campaign's gate after the
// submission's correctness check, the final report's three judgements of one kernel. What a
// comparison gives is a function of its key, so a hit is that comparison. Thread-safe.
class ComparedOutputs {
public:
  static std::string key(const core::Operator& op, const core::Case& c, const std::vector<core::HostTensor>& inputs,
                         const std::vector<unsigned char>& output_bytes);
  std::optional<std::vector<OutputCheck>> find(const std::string& key) const;
  void insert(const std::string& key, const std::vector<OutputCheck>& checks);
  int hits() const;

private:
  mutable std::mutex m_mu;
  mutable int m_hits = 0;
  std::map<std::string, std::vector<OutputCheck>> m_checks;
};

} // namespace temper::judge
