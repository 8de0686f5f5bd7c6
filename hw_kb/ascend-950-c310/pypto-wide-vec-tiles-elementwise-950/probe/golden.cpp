// Golden for SwiGlu: output = silu(x0) * x1, where (x0, x1) = chunk(input, 2, dim).
//
// Written from the public semantics (desc.md), plainly, as the correctness oracle. The fp64 build
// (`real` = double) is the oracle; the low-precision build (`real` = float) is the straightforward
// fp32 computation the cann-bench standard compares against: fp16/bf16 inputs widened to fp32,
// everything in fp32, one rounding to the output dtype when the output is stored (golden.h does it).
#include <temper/golden.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg = temper_golden; // the golden-writer API (golden.h)

namespace {

using tg::real;

// SiLU as PyTorch's CPU kernel writes it, x / (1 + exp(-x)), which also fixes the special values:
// silu(+inf) = +inf / 1 = +inf, silu(-inf) = -inf / inf = NaN, silu(NaN) = NaN.
real silu(real x) { return x / (real(1) + std::exp(-x)); }

// The same formula evaluated in fp32, the precision the operator is defined to compute in.
float silu_f32(float x) { return x / (1.0f + std::exp(-x)); }

real swiglu(real x0, real x1) {
  // Where an input is inf or NaN the result is inf, NaN or zero, and which one it is depends on
  // the precision of the evaluation: for x0 in about [-709.8, -88.7], silu(x0) is a tiny nonzero
  // number in fp64 but exactly -0 in fp32 (exp(-x0) overflows), so silu(x0) * inf is -inf in fp64
  // and NaN in fp32. The operator computes in fp32 (inputs of every dtype are widened to fp32, as
  // in CANN-Bench's golden), so special values follow the fp32 evaluation. Finite inputs keep the
  // full precision of `real`.
  if (!std::isfinite(x0) || !std::isfinite(x1)) {
    float a = static_cast<float>(x0), b = static_cast<float>(x1);
    return static_cast<real>(silu_f32(a) * b);
  }
  return silu(x0) * x1;
}

} // namespace

void temper_golden_compute(tg::Context& ctx) {
  if (ctx.inputs.size() != 1) throw std::runtime_error("SwiGlu takes one input, got " + std::to_string(ctx.inputs.size()));
  const tg::Array& in = ctx.input(0);
  const int rank = in.rank();
  if (rank < 1 || rank > 8) throw std::runtime_error("SwiGlu: input rank must be 1 to 8, got " + std::to_string(rank));

  int64_t dim = ctx.attr_int("dim", -1);
  if (dim < -rank || dim >= rank) {
    throw std::runtime_error("SwiGlu: dim " + std::to_string(dim) + " is out of range for rank " + std::to_string(rank));
  }
  if (dim < 0) dim += rank;
  const auto d = static_cast<size_t>(dim);
  if (in.shape[d] % 2 != 0) {
    throw std::runtime_error("SwiGlu: the size of dim " + std::to_string(dim) + " is " + std::to_string(in.shape[d]) +
                             ", not even");
  }

  std::vector<int64_t> out_shape = in.shape;
  out_shape[d] /= 2;
  tg::Array& out = ctx.add_output("output", out_shape, in.dtype);

  // The row-major input seen as [outer, 2, half, inner]: x0 is [:, 0], x1 is [:, 1].
  const int64_t half = out_shape[d];
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < d; ++k) outer *= in.shape[k];
  for (size_t k = d + 1; k < in.shape.size(); ++k) inner *= in.shape[k];

  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t h = 0; h < half; ++h) {
      const int64_t gate = (o * 2 * half + h) * inner;      // x0[o, h, 0]
      const int64_t value = (o * 2 * half + half + h) * inner; // x1[o, h, 0]
      const int64_t dst = (o * half + h) * inner;              // output[o, h, 0]
      for (int64_t i = 0; i < inner; ++i) {
        out.data[static_cast<size_t>(dst + i)] =
            swiglu(in.data[static_cast<size_t>(gate + i)], in.data[static_cast<size_t>(value + i)]);
      }
    }
  }
}
