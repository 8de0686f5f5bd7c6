// Golden of a knowledge-base probe: written plainly from the operator's formula.
#include <temper/golden.h>

#include <cstdint>
#include <stdexcept>

namespace tg = temper_golden;

void temper_golden_compute(tg::Context& ctx) {
  const tg::Array& x = ctx.input(0);
  const int64_t stride = ctx.attr_int("stride", 1040);
  if (stride <= 0) throw std::runtime_error("KbStridedGather: stride must be positive");
  const int64_t m = x.numel() / stride;
  tg::Array& y = ctx.add_output("y", {m}, "float32");
  for (int64_t j = 0; j < m; ++j) y.data[static_cast<size_t>(j)] = x.data[static_cast<size_t>(j * stride)];
}
