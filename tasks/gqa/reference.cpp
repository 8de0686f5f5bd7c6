// GQA reference kernel for the CPU backend (grouped query attention):
//   y[b, i, h, :] = softmax_j(scale * q[b, i, h, :] . k[b, j, g, :]) @ v[b, :, g, :],  g = h / (Nq / Nkv)
//
// The baseline to beat: plain, single-threaded C++ with no intrinsics and no tiling. For each
// batch and key/value head it widens that head's K and V to fp32 once, then handles every query
// row of the query heads that share it on its own: scores in fp32, max-subtracted softmax,
// P @ V with fp32 accumulation, one rounding when the output is stored. Handles float16 and
// bfloat16 (and float32), any element strides, scaleValue <= 0 as 1 / sqrt(D), and is_causal
// with bottom-right alignment (key j visible to query i iff j <= i + Skv - S); a query row with no
// visible key gets output 0.
#include <temper/half.h>
#include <temper/kernel.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

int fail(const temper_args* args, const char* message) {
  if (args->set_error) args->set_error(message);
  return 1;
}

bool is_supported(int32_t dtype) { return dtype == TEMPER_F32 || dtype == TEMPER_F16 || dtype == TEMPER_BF16; }

float load(const void* base, int32_t dtype, int64_t offset) {
  switch (dtype) {
  case TEMPER_F16: return temper_f16_to_f32(static_cast<const uint16_t*>(base)[offset]);
  case TEMPER_BF16: return temper_bf16_to_f32(static_cast<const uint16_t*>(base)[offset]);
  default: return static_cast<const float*>(base)[offset];
  }
}

void store(void* base, int32_t dtype, int64_t offset, float v) {
  switch (dtype) {
  case TEMPER_F16: static_cast<uint16_t*>(base)[offset] = temper_f32_to_f16(v); break;
  case TEMPER_BF16: static_cast<uint16_t*>(base)[offset] = temper_f32_to_bf16(v); break;
  default: static_cast<float*>(base)[offset] = v; break;
  }
}

// Offset of element [a, b, c, d] of a rank-4 tensor.
int64_t offset4(const temper_tensor& t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3];
}

// Dot product with eight running partial sums (element d goes to sum d % 8), added up at the end:
// the usual way to write a dot product that a compiler can vectorize without reordering it.
float dot(const float* a, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int l = 0; l < 8; ++l) s[l] += a[d + l] * b[d + l];
  for (; d < n; ++d) s[d % 8] += a[d] * b[d];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

} // namespace

TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  if (args == nullptr) return 1;
  if (args->abi_version != TEMPER_ABI_VERSION) return fail(args, "GQA: unsupported ABI version");
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->inputs == nullptr || args->outputs == nullptr) {
    return fail(args, "GQA: expects three inputs (query, key, value) and one output");
  }
  const temper_tensor& q = args->inputs[0];
  const temper_tensor& k = args->inputs[1];
  const temper_tensor& v = args->inputs[2];
  const temper_tensor& y = args->outputs[0];
  if (q.rank != 4 || k.rank != 4 || v.rank != 4 || y.rank != 4) return fail(args, "GQA: all tensors must have rank 4");
  if (!is_supported(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype || y.dtype != q.dtype) {
    return fail(args, "GQA: query, key, value and output must share one dtype (float16, bfloat16 or float32)");
  }
  const int64_t B = q.shape[0], S = q.shape[1], Nq = q.shape[2], D = q.shape[3];
  const int64_t Skv = k.shape[1], Nkv = k.shape[2];
  for (int d = 0; d < 4; ++d) {
    if (k.shape[d] != v.shape[d]) return fail(args, "GQA: key and value shapes differ");
    if (y.shape[d] != q.shape[d]) return fail(args, "GQA: output shape differs from the query shape");
  }
  if (k.shape[0] != B || k.shape[3] != D) return fail(args, "GQA: query and key disagree in batch size or head dim");
  if (Nkv < 1 || Nq % Nkv != 0) return fail(args, "GQA: query heads must be a multiple of key/value heads");
  if (temper_numel(&y) == 0) return 0;

  const double scale_attr = temper_attr_float(args, "scaleValue", -1.0);
  const bool causal = temper_attr_int(args, "is_causal", 0) != 0;
  const float scale = scale_attr > 0 ? static_cast<float>(scale_attr) : 1.0f / std::sqrt(static_cast<float>(D));
  const int64_t group = Nq / Nkv;

  std::vector<float> kf(static_cast<size_t>(Skv * D)), vf(static_cast<size_t>(Skv * D));
  std::vector<float> qf(static_cast<size_t>(D)), acc(static_cast<size_t>(D)), p(static_cast<size_t>(Skv));

  for (int64_t b = 0; b < B; ++b) {
    for (int64_t g = 0; g < Nkv; ++g) {
      for (int64_t j = 0; j < Skv; ++j) {
        for (int64_t d = 0; d < D; ++d) {
          kf[static_cast<size_t>(j * D + d)] = load(k.data, k.dtype, offset4(k, b, j, g, d));
          vf[static_cast<size_t>(j * D + d)] = load(v.data, v.dtype, offset4(v, b, j, g, d));
        }
      }
      for (int64_t h = g * group; h < (g + 1) * group; ++h) {
        for (int64_t i = 0; i < S; ++i) {
          int64_t visible = Skv;
          if (causal) {
            visible = i + (Skv - S) + 1;
            if (visible < 0) visible = 0;
            if (visible > Skv) visible = Skv;
          }
          if (visible == 0) {
            for (int64_t d = 0; d < D; ++d) store(y.data, y.dtype, offset4(y, b, i, h, d), 0.0f);
            continue;
          }
          for (int64_t d = 0; d < D; ++d) qf[static_cast<size_t>(d)] = load(q.data, q.dtype, offset4(q, b, i, h, d));

          float m = -INFINITY;
          for (int64_t j = 0; j < visible; ++j) {
            float s = dot(qf.data(), &kf[static_cast<size_t>(j * D)], D) * scale;
            p[static_cast<size_t>(j)] = s;
            if (s > m) m = s;
          }
          float sum = 0.0f;
          for (int64_t j = 0; j < visible; ++j) {
            float e = std::exp(p[static_cast<size_t>(j)] - m);
            p[static_cast<size_t>(j)] = e;
            sum += e;
          }
          for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] = 0.0f;
          for (int64_t j = 0; j < visible; ++j) {
            const float pj = p[static_cast<size_t>(j)];
            const float* vrow = &vf[static_cast<size_t>(j * D)];
            for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += pj * vrow[d];
          }
          const float inv = 1.0f / sum;
          for (int64_t d = 0; d < D; ++d) store(y.data, y.dtype, offset4(y, b, i, h, d), acc[static_cast<size_t>(d)] * inv);
        }
      }
    }
  }
  return 0;
}
