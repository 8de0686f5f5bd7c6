// GQA, architecture "rowwise": one query row at a time, against the key/value head its group
// shares.
//
// For each batch b and key/value head g, K and V of that head are widened to fp32 once (zero
// padded to Dp columns) and then serve all G query heads of the group and all S positions: a
// K/V head is read from memory once, not G times. Each query row (already multiplied by the
// scale) then gets, on its own:
//   1. scores s[j] = q . K[j] for its visible keys, KEY_UNROLL keys at a time (independent
//      vector accumulators over d, one horizontal sum per key);
//   2. a max-subtracted softmax, vectorized over keys (a polynomial exp, fp32 sum);
//   3. y = (sum_j p[j] V[j]) / sum, vectorized over d in passes of PV_VECS vectors, rounded once
//      at the store.
// No blocking and no online softmax: a row's scores (Skv floats) stay in L1, and K/V of the head
// (Skv x Dp fp32 each) in L2 or L3. The same path serves prefill and decode.
// AVX-512 (16 lanes) or AVX2 + FMA + F16C (8 lanes) by the compile flags, scalar otherwise;
// fp16/bf16 are converted in registers. Any element strides; is_causal is bottom-right aligned
// (key j visible to query i iff j <= i + Skv - S); a row with no visible key gets 0.
//
// temper: knob KEY_UNROLL = 4 in {1, 2, 4, 8}
// temper: knob PV_VECS = 8 in {2, 4, 8}
//
// KEY_UNROLL: keys whose dot products run side by side. PV_VECS: vectors of d accumulated per
// pass over the keys in P @ V.
#include <temper/half.h>
#include <temper/kernel.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>
#endif

#ifndef KEY_UNROLL
#define KEY_UNROLL 4
#endif
#ifndef PV_VECS
#define PV_VECS 8
#endif

static_assert(KEY_UNROLL >= 1 && PV_VECS >= 1, "knobs must be positive");

namespace {

// ---------------------------------------------------------------------------------------------
// Vector backends: the same attention code is instantiated for one of them.

#if defined(__AVX512F__)
struct V16 {
  using R = __m512;
  static constexpr int W = 16;
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  // a < b ? x : y
  static R select_lt(R a, R b, R x, R y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x); }
  // exp(x) for x <= 0 mostly: x = n ln2 + r, a degree-6 polynomial in r, then scalef; inputs
  // below -88 (including -inf, a masked score) give exactly 0.
  static float hsum(R v) { return _mm512_reduce_add_ps(v); }
  static R exp(R x) {
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-88.0f), _CMP_NLT_UQ);
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-88.0f), x));
    const R n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    R r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    R p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
  }
};

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
struct V8 {
  using R = __m256;
  static constexpr int W = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R select_lt(R a, R b, R x, R y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
  // As V16::exp, with 2^n built in the exponent field (n stays in [-127, 127] after the clamp).
  static float hsum(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static R exp(R x) {
    const R keep = _mm256_cmp_ps(x, _mm256_set1_ps(-88.0f), _CMP_NLT_UQ);
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-88.0f), x));
    const R n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    R r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    R p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), keep);
  }
};

#else
struct V1 {
  using R = float;
  static constexpr int W = 1;
  static R zero() { return 0.0f; }
  static R set1(float x) { return x; }
  static R load(const float* p) { return *p; }
  static void store(float* p, R v) { *p = v; }
  static R fma(R a, R b, R c) { return a * b + c; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, R b) { return a * b; }
  static R max(R a, R b) { return a > b ? a : b; }
  static R select_lt(R a, R b, R x, R y) { return a < b ? x : y; }
  static float hsum(R v) { return v; }
  static R exp(R x) { return x < -88.0f ? 0.0f : std::exp(x); }
};
#endif

#if defined(__AVX512F__)
using Vec = V16;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using Vec = V8;
#else
using Vec = V1;
#endif

constexpr int kW = Vec::W;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// ---------------------------------------------------------------------------------------------
// Conversions between the tensors (fp16, bf16 or fp32, any element stride) and fp32 rows.

// dst[t] = src[off + t * stride] * mul for t < n.
void load_row(const temper_tensor& x, int64_t off, int64_t n, float* dst, float mul) {
  const int64_t st = x.strides[3];
  if (x.dtype == TEMPER_F32) {
    const float* s = static_cast<const float*>(x.data) + off;
    for (int64_t t = 0; t < n; ++t) dst[t] = s[t * st] * mul;
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(x.data) + off;
  const bool f16 = x.dtype == TEMPER_F16;
  int64_t t = 0;
  if (st == 1) {
#if defined(__AVX512F__)
    const __m512 m = _mm512_set1_ps(mul);
    for (; t + 16 <= n; t += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + t));
      const __m512 f = f16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
      _mm512_storeu_ps(dst + t, _mm512_mul_ps(f, m));
    }
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    const __m256 m = _mm256_set1_ps(mul);
    for (; t + 8 <= n; t += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + t));
      const __m256 f = f16 ? _mm256_cvtph_ps(h) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
      _mm256_storeu_ps(dst + t, _mm256_mul_ps(f, m));
    }
#endif
  }
  for (; t < n; ++t) dst[t] = (f16 ? temper_f16_to_f32(s[t * st]) : temper_bf16_to_f32(s[t * st])) * mul;
}

#if defined(__AVX512F__)
// fp32 -> bf16, round to nearest even, NaN kept quiet: bit for bit temper_f32_to_bf16.
__m256i f32_to_bf16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(x, _mm512_set1_epi32(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_mask_mov_epi32(rounded, nan, quiet), 16));
}
#endif

// dst[off + t * stride] = src[t] * mul for t < n, rounded once to the tensor's dtype.
void store_row(const float* src, float mul, const temper_tensor& y, int64_t off, int64_t n) {
  const int64_t st = y.strides[3];
  if (y.dtype == TEMPER_F32) {
    float* d = static_cast<float*>(y.data) + off;
    for (int64_t t = 0; t < n; ++t) d[t * st] = src[t] * mul;
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(y.data) + off;
  const bool f16 = y.dtype == TEMPER_F16;
  int64_t t = 0;
#if defined(__AVX512F__)
  if (st == 1) {
    const __m512 m = _mm512_set1_ps(mul);
    for (; t + 16 <= n; t += 16) {
      const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(src + t), m);
      const __m256i h = f16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) : f32_to_bf16(v);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + t), h);
    }
  }
#endif
  for (; t < n; ++t) {
    const float v = src[t] * mul;
    d[t * st] = f16 ? temper_f32_to_f16(v) : temper_f32_to_bf16(v);
  }
}

// A 64-byte aligned float buffer.
struct Buffer {
  float* p = nullptr;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(p); }
  bool allocate(int64_t n) {
    const size_t bytes = static_cast<size_t>(round_up(n > 0 ? n : 1, 16)) * sizeof(float);
    p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (p != nullptr) std::memset(p, 0, bytes);
    return p != nullptr;
  }
};

// ---------------------------------------------------------------------------------------------
// One query row.

struct Problem {
  int64_t S, Skv, D, Dp;
  bool causal;
};

// s[j .. j + KU] = q . K[j + u] over Dp columns.
template <class V, int KU>
inline void scores(const float* q, const float* K, int64_t Dp, int64_t j, float* s) {
  typename V::R acc[KU];
#pragma GCC unroll 8
  for (int u = 0; u < KU; ++u) acc[u] = V::zero();
  const float* kr = K + j * Dp;
  for (int64_t d = 0; d < Dp; d += V::W) {
    const typename V::R qv = V::load(q + d);
#pragma GCC unroll 8
    for (int u = 0; u < KU; ++u) acc[u] = V::fma(qv, V::load(kr + u * Dp + d), acc[u]);
  }
#pragma GCC unroll 8
  for (int u = 0; u < KU; ++u) s[j + u] = V::hsum(acc[u]);
}

// out[0 .. Dp) = sum_{j < n} p[j] * Vf[j], PV_VECS vectors per pass.
template <class V>
void weighted_sum(const float* p, const float* Vf, int64_t Dp, int64_t n, float* out) {
  for (int64_t d0 = 0; d0 < Dp; d0 += PV_VECS * V::W) {
    typename V::R acc[PV_VECS];
#pragma GCC unroll 8
    for (int c = 0; c < PV_VECS; ++c) acc[c] = V::zero();
    for (int64_t j = 0; j < n; ++j) {
      const typename V::R pb = V::set1(p[j]);
      const float* vr = Vf + j * Dp + d0;
#pragma GCC unroll 8
      for (int c = 0; c < PV_VECS; ++c) acc[c] = V::fma(pb, V::load(vr + c * V::W), acc[c]);
    }
#pragma GCC unroll 8
    for (int c = 0; c < PV_VECS; ++c) V::store(out + d0 + c * V::W, acc[c]);
  }
}

// One row with n >= 1 visible keys: q (scaled, Dp floats) -> out (unnormalized, Dp floats);
// returns the softmax sum. s has room for round_up(Skv, W) floats.
template <class V>
float attend_row(const float* q, const float* Kf, const float* Vf, int64_t Dp, int64_t n, float* s, float* out) {
  int64_t j = 0;
  for (; j + KEY_UNROLL <= n; j += KEY_UNROLL) scores<V, KEY_UNROLL>(q, Kf, Dp, j, s);
  for (; j < n; ++j) scores<V, 1>(q, Kf, Dp, j, s);
  const int64_t np = round_up(n, V::W);
  for (int64_t t = n; t < np; ++t) s[t] = -INFINITY; // padding lanes: exp gives 0

  typename V::R mv = V::set1(-INFINITY);
  for (int64_t t = 0; t < np; t += V::W) mv = V::max(mv, V::load(s + t));
  float lanes[V::W];
  V::store(lanes, mv);
  float m = lanes[0];
  for (int t = 1; t < V::W; ++t) m = lanes[t] > m ? lanes[t] : m;

  const typename V::R mb = V::set1(m);
  typename V::R sum = V::zero();
  for (int64_t t = 0; t < np; t += V::W) {
    const typename V::R p = V::exp(V::sub(V::load(s + t), mb));
    V::store(s + t, p);
    sum = V::add(sum, p);
  }
  weighted_sum<V>(s, Vf, Dp, n, out);
  return V::hsum(sum);
}

int fail(const temper_args* args, const char* message) {
  if (args->set_error) args->set_error(message);
  return 1;
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
  const int32_t dt = q.dtype;
  if ((dt != TEMPER_F32 && dt != TEMPER_F16 && dt != TEMPER_BF16) || k.dtype != dt || v.dtype != dt || y.dtype != dt) {
    return fail(args, "GQA: query, key, value and output must share one dtype (float16, bfloat16 or float32)");
  }
  for (int d = 0; d < 4; ++d) {
    if (k.shape[d] != v.shape[d]) return fail(args, "GQA: key and value shapes differ");
    if (y.shape[d] != q.shape[d]) return fail(args, "GQA: output shape differs from the query shape");
  }
  const int64_t B = q.shape[0], S = q.shape[1], Nq = q.shape[2], D = q.shape[3];
  const int64_t Skv = k.shape[1], Nkv = k.shape[2];
  if (k.shape[0] != B || k.shape[3] != D) return fail(args, "GQA: query and key disagree in batch size or head dim");
  if (Nkv < 1 || Nq % Nkv != 0) return fail(args, "GQA: query heads must be a multiple of key/value heads");
  if (temper_numel(&y) == 0) return 0;

  const int64_t G = Nq / Nkv;
  const bool causal = temper_attr_int(args, "is_causal", 0) != 0;
  const double scale_attr = temper_attr_float(args, "scaleValue", -1.0);
  const float scale = scale_attr > 0 ? static_cast<float>(scale_attr) : 1.0f / std::sqrt(static_cast<float>(D));
  const int64_t Dp = round_up(D, static_cast<int64_t>(PV_VECS) * kW);

  Buffer kf, vf, qf, s, out;
  if (!kf.allocate(Skv * Dp) || !vf.allocate(Skv * Dp) || !qf.allocate(Dp) || !s.allocate(round_up(Skv, kW)) ||
      !out.allocate(Dp)) {
    return fail(args, "GQA: out of memory");
  }
  auto off = [](const temper_tensor& t, int64_t b, int64_t j, int64_t h) {
    return b * t.strides[0] + j * t.strides[1] + h * t.strides[2];
  };
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t g = 0; g < Nkv; ++g) {
      // The group's K and V, widened once (padding columns stay 0 from the allocation).
      for (int64_t j = 0; j < Skv; ++j) {
        load_row(k, off(k, b, j, g), D, kf.p + j * Dp, 1.0f);
        load_row(v, off(v, b, j, g), D, vf.p + j * Dp, 1.0f);
      }
      for (int64_t h = g * G; h < (g + 1) * G; ++h) {
        for (int64_t i = 0; i < S; ++i) {
          int64_t n = Skv;
          if (causal) {
            n = i + (Skv - S) + 1;
            if (n < 0) n = 0;
            if (n > Skv) n = Skv;
          }
          if (n == 0) {
            std::memset(out.p, 0, static_cast<size_t>(D) * sizeof(float));
            store_row(out.p, 1.0f, y, off(y, b, i, h), D);
            continue;
          }
          load_row(q, off(q, b, i, h), D, qf.p, scale);
          const float sum = attend_row<Vec>(qf.p, kf.p, vf.p, Dp, n, s.p, out.p);
          store_row(out.p, 1.0f / sum, y, off(y, b, i, h), D);
        }
      }
    }
  }
  return 0;
}
