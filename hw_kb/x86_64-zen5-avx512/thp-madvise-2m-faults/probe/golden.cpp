// Golden of a knowledge-base probe: written plainly from the operator's formula.
#include <temper/golden.h>

#include <cstdint>
#include <stdexcept>

namespace tg = temper_golden;

void temper_golden_compute(tg::Context& ctx) {
  const tg::Array& x = ctx.input(0);
  const tg::real a = static_cast<tg::real>(ctx.attr_float("a", 1.5)), b = static_cast<tg::real>(ctx.attr_float("b", 0.25));
  tg::Array& y = ctx.add_output("y", x.shape, "float32");
  for (size_t i = 0; i < y.data.size(); ++i) y.data[i] = tg::round(x.data[i] * a + b, "float32");
}
