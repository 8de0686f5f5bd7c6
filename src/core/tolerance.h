// Tolerance standards: decide whether a candidate's output matches the fp64 golden, with the
// statistics a report shows. Rules and numbers follow the operators' official standards
// (CANN-Bench, FlashInfer-Bench, the FlashAttention test), see docs/tolerance.md.
#pragma once

#include "core/dtype.h"
#include "core/task.h"
#include "core/tensor.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace temper::core {

struct Mismatch {
  int64_t flat = 0;
  std::vector<int64_t> index;
  double got = 0;
  double expected = 0;
};

struct Comparison {
  bool passed = false;
  std::string standard;
  std::string reason;      // why it failed, one line; empty when passed
  int64_t numel = 0;
  double max_abs = 0;      // over elements where both are finite
  double max_rel = 0;
  double mean_rel = 0;
  int64_t mismatches = 0;  // elements the standard counts as failing
  std::vector<Mismatch> first; // up to 8 first failing positions, row-major order
  nlohmann::json details = nlohmann::json::object(); // standard-specific figures
  // The verdict needed the same-precision run and none was given (cann-bench's second stage):
  // a caller that can compute it compares again with it. An output that passes the first stage
  // never needs it, so callers compute it only then.
  bool wants_lowp = false;
};

// What the comparison sees of one output.
struct OutputView {
  Dtype dtype;          // the candidate's output dtype
  Shape shape;
  const double* got;    // candidate output widened to double, numel elements
  const double* golden; // fp64 golden
  const double* lowp;   // same-precision CPU computation; may be null (see each standard)
};

// Compares one output under `spec`. Never throws for any values (NaN, inf, empty tensors).
Comparison compare_output(const ToleranceSpec& spec, const OutputView& out);

// Validates a spec: known standard name, sensible numbers. Empty string when fine.
std::string validate_tolerance(const ToleranceSpec& spec);

} // namespace temper::core
