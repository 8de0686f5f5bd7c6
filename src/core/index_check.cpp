#include "core/index_check.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace temper::core {

namespace {

// NaN points to NaN: torch's argmax picks the NaN, and amax is NaN then.
bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

Comparison refused(std::string reason) {
  Comparison c;
  c.standard = "index_gather";
  c.reason = std::move(reason);
  return c;
}

} // namespace

Comparison check_index_gather(const IndexGather& rule, const IndexGatherView& v) {
  // A 0-d input is one row of one element.
  const Shape in_shape = v.input_shape.empty() ? Shape{1} : v.input_shape;
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  const int64_t dim = v.dim < 0 ? v.dim + rank : v.dim;
  if (dim < 0 || dim >= rank) {
    return refused(fmt::format("dim {} is out of range for input '{}' of shape {}", v.dim, rule.input, shape_string(v.input_shape)));
  }
  const bool reduce = rule.value_output.empty();
  if (!reduce && !v.values) return refused(fmt::format("the value output '{}' is missing", rule.value_output));
  if (reduce && rule.value_reduce != "amax") return refused(fmt::format("unknown value_reduce '{}' (known: amax)", rule.value_reduce));
  // Index p addresses the row of `dim` its other coordinates name. A gather's index has the
  // input's rank (any length along dim); a reduction's has size 1 along dim, or drops it.
  Shape index_shape = v.index_shape;
  if (reduce && !v.keepdim && !v.input_shape.empty() && static_cast<int64_t>(index_shape.size()) == rank - 1)
    index_shape.insert(index_shape.begin() + dim, 1);
  if (index_shape.empty()) index_shape = {1};
  bool fits = static_cast<int64_t>(index_shape.size()) == rank;
  for (int64_t d = 0; fits && d < rank; ++d) {
    const size_t k = static_cast<size_t>(d);
    fits = d == dim ? (!reduce || index_shape[k] == 1) : index_shape[k] == in_shape[k];
  }
  if (!fits) {
    return refused(fmt::format("index output of shape {} does not index input '{}' of shape {} along dim {}",
                               shape_string(v.index_shape), rule.input, shape_string(v.input_shape), v.dim));
  }
  const Shape in_strides = row_major_strides(in_shape);
  const int64_t extent = in_shape[static_cast<size_t>(dim)];
  const int64_t stride = in_strides[static_cast<size_t>(dim)];
  const int64_t n = numel(v.index_shape);

  Comparison c;
  c.standard = "index_gather";
  c.numel = n;
  c.details = {{"input", rule.input}, {"dim", v.dim}};
  if (reduce) c.details["value_reduce"] = rule.value_reduce;
  else c.details["value_output"] = rule.value_output;
  int64_t bad_index = 0;
  double first_index = 0;
  for (int64_t p = 0; p < n; ++p) {
    // The input element in the same row of `dim` as index p, at position 0 along dim.
    std::vector<int64_t> at = unravel(p, index_shape);
    int64_t row = 0;
    for (size_t d = 0; d < at.size(); ++d) row += (static_cast<int64_t>(d) == dim ? 0 : at[d]) * in_strides[d];
    const double idx = v.indices[p];
    double got = std::numeric_limits<double>::quiet_NaN();
    const bool valid = std::isfinite(idx) && idx == std::floor(idx) && idx >= 0 && idx < static_cast<double>(extent);
    if (valid) got = v.input[row + static_cast<int64_t>(idx) * stride];
    double expected;
    if (reduce) {
      expected = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < extent; ++k) {
        const double x = v.input[row + k * stride];
        if (std::isnan(x)) {
          expected = x;
          break;
        }
        expected = std::max(expected, x);
      }
    } else {
      expected = v.values[p];
    }
    if (valid && same_value(got, expected)) continue;
    if (!valid) ++bad_index;
    // A mismatch shows the value the index points to (NaN when it points nowhere) against the
    // value it must point to; the reason names the first index itself.
    if (c.first.empty()) first_index = idx;
    if (c.first.size() < 8) c.first.push_back({p, unravel(p, v.index_shape), got, expected});
    ++c.mismatches;
  }
  c.passed = c.mismatches == 0;
  c.details["out_of_range"] = bad_index;
  if (!c.passed) {
    const Mismatch& m = c.first.front();
    const std::string target = reduce ? fmt::format("{} of '{}' along dim {}", rule.value_reduce, rule.input, v.dim)
                                      : fmt::format("the value output '{}'", rule.value_output);
    c.reason = fmt::format("{} of {} indices do not point to {} (first at {}: index {} points to {}, which must be {}); {} of them out "
                           "of range or not integers",
                           c.mismatches, n, target, shape_string(m.index), first_index, m.got, m.expected, bad_index);
  }
  return c;
}

} // namespace temper::core
