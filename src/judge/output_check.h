// One call's outputs against the golden, output by output, as the official checker does: by the
// output's tolerance standard; for an output proto.yaml marks `compare: false`, by what its
// indices point to when it has `index_gather` (core/index_check.h), else not at all. Used by the
// correctness check and by the check of sampled timed calls, so both decide alike.
#pragma once

#include "core/task.h"
#include "core/tensor.h"
#include "core/tolerance.h"
#include "judge/golden.h"

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

// Whether a comparison asked for the same-precision run it was not given: compare again with it.
bool wants_low_precision(const std::vector<OutputCheck>& checks);

} // namespace temper::judge
