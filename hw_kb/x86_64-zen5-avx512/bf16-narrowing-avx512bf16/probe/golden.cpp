// Golden of a knowledge-base probe: written plainly from the operator's formula.
#include <temper/golden.h>

#include <cstdint>
#include <stdexcept>

namespace tg = temper_golden;

void temper_golden_compute(tg::Context& ctx) {
  const tg::Array& x = ctx.input(0);
  tg::Array& y = ctx.add_output("y", x.shape, "bfloat16");
  for (size_t i = 0; i < y.data.size(); ++i) y.data[i] = tg::round(x.data[i], "bfloat16");
}
