// Golden of a knowledge-base probe: written plainly from the operator's formula.
#include <temper/golden.h>

#include <cstdint>
#include <stdexcept>

namespace tg = temper_golden;

void temper_golden_compute(tg::Context& ctx) {
  const tg::Array& x = ctx.input(0);
  const int64_t iters = ctx.attr_int("iters", 250000);
  const tg::real a = static_cast<tg::real>(ctx.attr_float("a", 0.5)), b = static_cast<tg::real>(ctx.attr_float("b", 1.0));
  if (a <= -1 || a >= 1) throw std::runtime_error("KbFmaChains: |a| must be below 1 (the chain converges to b / (1 - a))");
  tg::Array& y = ctx.add_output("y", x.shape, "float32");
  // The chain contracts by |a| per step; after a few hundred steps it sits at its fixed point in
  // any precision, so the golden stops there instead of running all iters.
  const int64_t steps = iters < 600 ? iters : 600;
  for (size_t i = 0; i < y.data.size(); ++i) {
    tg::real v = x.data[i];
    for (int64_t k = 0; k < steps; ++k) v = v * a + b;
    y.data[i] = tg::round(v, "float32");
  }
}
