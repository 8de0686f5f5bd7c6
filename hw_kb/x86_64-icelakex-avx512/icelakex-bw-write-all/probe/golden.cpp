// Golden of a knowledge-base probe: written plainly from the operator's formula.
#include <temper/golden.h>

#include <cstdint>
#include <stdexcept>

namespace tg = temper_golden;

void temper_golden_compute(tg::Context& ctx) {
  const tg::Array& v = ctx.input(0);
  const int64_t n = ctx.attr_int("n", 16777216);
  if (v.numel() != 16 || n % 16) throw std::runtime_error("KbFill: v must have 16 elements and n be a multiple of 16");
  tg::Array& y = ctx.add_output("y", {n}, "float32");
  for (int64_t i = 0; i < n; ++i) y.data[static_cast<size_t>(i)] = v.data[static_cast<size_t>(i % 16)];
}
