// The official checker's rule for an index output it does not compare element by element
// (proto.yaml `compare: false` with `index_gather`): indices of equal elements may come in any
// order (top-k, cummin, argmax on ties), so what is checked is what they point to. The input
// gathered along `dim` at the candidate's indices must equal the candidate's value output
// (`value_output`), or the input's reduction along `dim` (`value_reduce: amax`, for argmax).
// Exact equality: a gathered element is a copy of an input element, in the input's dtype.
#pragma once

#include "core/task.h"
#include "core/tensor.h"
#include "core/tolerance.h"

#include <cstdint>

namespace temper::core {

struct IndexGatherView {
  Shape input_shape;
  const double* input = nullptr;   // the gathered input, widened to double
  int64_t dim = 0;                 // may be negative, as torch takes it
  bool keepdim = false;            // value_reduce: the index output keeps `dim` with size 1
  Shape index_shape;
  const double* indices = nullptr; // the candidate's index output, widened
  const double* values = nullptr;  // value_output: the candidate's value output (index_shape)
};

// Never throws: out-of-range, fractional and non-finite indices are failing elements, and a
// shape that does not fit the rule is a failed comparison that says so.
Comparison check_index_gather(const IndexGather& rule, const IndexGatherView& view);

} // namespace temper::core
