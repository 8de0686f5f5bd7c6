// Golden of a knowledge-base probe: written plainly from the operator's formula.
#include <temper/golden.h>

#include <cstdint>
#include <stdexcept>

namespace tg = temper_golden;

void temper_golden_compute(tg::Context& ctx) {
  const tg::Array& x = ctx.input(0);
  const int64_t block = ctx.attr_int("block", 65536);
  if (block <= 0 || x.numel() % block) throw std::runtime_error("KbBlockSum: length is not a multiple of block");
  tg::Array& s = ctx.add_output("s", {x.numel() / block}, "float32");
  for (int64_t b = 0; b < x.numel() / block; ++b) {
    tg::real acc = 0;
    for (int64_t i = 0; i < block; ++i) acc += x.data[static_cast<size_t>(b * block + i)];
    s.data[static_cast<size_t>(b)] = tg::round(acc, "float32");
  }
}
