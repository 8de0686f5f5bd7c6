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

} // namespace temper::judge
