// Golden of a knowledge-base probe: written plainly from the operator's formula.
#include <temper/golden.h>

#include <cstdint>
#include <stdexcept>

namespace tg = temper_golden;

void temper_golden_compute(tg::Context& ctx) {
  const tg::Array& b = ctx.input(0);
  const tg::Array& c = ctx.input(1);
  const tg::real s = static_cast<tg::real>(ctx.attr_float("s", 3.0));
  if (b.numel() != c.numel()) throw std::runtime_error("KbTriad: b and c differ in length");
  tg::Array& a = ctx.add_output("a", b.shape, "float32");
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = tg::round(b.data[i] + s * c.data[i], "float32");
}
