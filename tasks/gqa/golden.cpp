// Golden for GQA (grouped query attention):
//   y[b, i, h, :] = sum_j softmax_j(scale * q[b, i, h, :] . k[b, j, g, :]) * v[b, j, g, :]
// with g = h / (Nq / Nkv), scale = scaleValue, or 1 / sqrt(D) when scaleValue <= 0, and, when
// is_causal, only keys j <= i + (Skv - S) visible (bottom-right aligned). A query row with no
// visible key (possible only when S > Skv) has output 0.
//
// Written from the public semantics (desc.md), plainly, as the correctness oracle. The fp64 build
// (`real` = double; round() is the identity) is the oracle. The low-precision build (`real` =
// float) is the same-precision implementation the flashattention standard measures against: q, k
// and v as stored (fp16/bf16 values, exact in fp32), scores accumulated in fp32, softmax in fp32,
// probabilities rounded to the input dtype before the P @ V product, which accumulates in fp32,
// and the output rounded to the dtype when stored (golden.h does that last step).
#include <temper/golden.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg = temper_golden; // the golden-writer API (golden.h)

namespace {

using tg::real;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t k = 0; k < s.size(); ++k) t += (k ? ", " : "") + std::to_string(s[k]);
  return t + "]";
}

} // namespace

void temper_golden_compute(tg::Context& ctx) {
  if (ctx.inputs.size() != 3) throw std::runtime_error("GQA takes three inputs (query, key, value), got " + std::to_string(ctx.inputs.size()));
  const tg::Array& q = ctx.input(0);
  const tg::Array& k = ctx.input(1);
  const tg::Array& v = ctx.input(2);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) throw std::runtime_error("GQA: query, key and value must have rank 4");
  if (k.shape != v.shape) throw std::runtime_error("GQA: key " + shape_text(k.shape) + " and value " + shape_text(v.shape) + " differ");
  const int64_t B = q.shape[0], S = q.shape[1], Nq = q.shape[2], D = q.shape[3];
  const int64_t Skv = k.shape[1], Nkv = k.shape[2];
  if (k.shape[0] != B || k.shape[3] != D) {
    throw std::runtime_error("GQA: query " + shape_text(q.shape) + " and key " + shape_text(k.shape) + " disagree in batch or head dim");
  }
  if (Nkv < 1 || Nq % Nkv != 0) throw std::runtime_error("GQA: query heads must be a multiple of key/value heads");

  const double scale_attr = ctx.attr_float("scaleValue", -1.0);
  const bool causal = ctx.attr_bool("is_causal", false);
  const real scale = scale_attr > 0 ? static_cast<real>(scale_attr) : real(1) / std::sqrt(static_cast<real>(D));
  const std::string& dtype = q.dtype;

  tg::Array& y = ctx.add_output("y", q.shape, dtype); // zero-filled
  const int64_t group = Nq / Nkv;

  std::vector<real> kt(static_cast<size_t>(D * Skv)); // k[b, :, g, :] transposed: kt[d * Skv + j]
  std::vector<real> p(static_cast<size_t>(Skv));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t g = 0; g < Nkv; ++g) {
      for (int64_t j = 0; j < Skv; ++j)
        for (int64_t d = 0; d < D; ++d) kt[static_cast<size_t>(d * Skv + j)] = k.data[static_cast<size_t>(((b * Skv + j) * Nkv + g) * D + d)];

      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        for (int64_t i = 0; i < S; ++i) {
          // Keys 0 .. visible-1 take part.
          const int64_t visible = causal ? std::clamp<int64_t>(i + (Skv - S) + 1, 0, Skv) : Skv;
          real* out = &y.data[static_cast<size_t>(((b * S + i) * Nq + h) * D)];
          if (visible == 0) continue; // no visible key: the output stays 0
          const real* qrow = &q.data[static_cast<size_t>(((b * S + i) * Nq + h) * D)];

          // Scores: p[j] = scale * sum_d q[d] * k[j][d], summed over d in order.
          std::fill(p.begin(), p.begin() + visible, real(0));
          for (int64_t d = 0; d < D; ++d) {
            const real qd = qrow[d];
            const real* krow = &kt[static_cast<size_t>(d * Skv)];
            for (int64_t j = 0; j < visible; ++j) p[static_cast<size_t>(j)] += qd * krow[j];
          }
          real m = -INFINITY;
          for (int64_t j = 0; j < visible; ++j) {
            p[static_cast<size_t>(j)] *= scale;
            m = std::max(m, p[static_cast<size_t>(j)]);
          }

          // Softmax with the maximum subtracted.
          real sum = 0;
          for (int64_t j = 0; j < visible; ++j) {
            p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - m);
            sum += p[static_cast<size_t>(j)];
          }
          for (int64_t j = 0; j < visible; ++j) p[static_cast<size_t>(j)] = tg::round(p[static_cast<size_t>(j)] / sum, dtype);

          // out = P @ V.
          for (int64_t j = 0; j < visible; ++j) {
            const real pj = p[static_cast<size_t>(j)];
            const real* vrow = &v.data[static_cast<size_t>(((b * Skv + j) * Nkv + g) * D)];
            for (int64_t d = 0; d < D; ++d) out[d] += pj * vrow[d];
          }
        }
      }
    }
  }
}
