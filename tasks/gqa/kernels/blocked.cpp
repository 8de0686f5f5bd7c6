// GQA, architecture "blocked": FlashAttention-style blocked attention with an online softmax,
// one key/value head at a time for its whole group of query heads.
//
// For each batch b and key/value head g, the rows are the (query position, query head) pairs of
// the group, row = i * G + h_local, so a block of rows covers consecutive positions (which keeps
// the causal limit monotone in the row). Keys are taken in blocks of BLOCK_KV; per key block:
//   1. scores St[j][r] = sum_d K[j][d] * Qt[d][r]: the query block is transposed once (Qt, already
//      multiplied by the scale), so the micro-kernel broadcasts one key element and multiplies a
//      vector of rows: an outer product with QK_KEYS x NR accumulators and no horizontal sums;
//   2. the online softmax, vectorized over rows: running max m, running sum l, the factor alpha
//      that rescales what was accumulated before (masked keys get p = 0);
//   3. O[r][:] = alpha[r] * O[r][:] + sum_j p[j][r] * V[j][:], PV_ROWS rows x NR vectors of d.
// Every K/V block loaded is used by all G query heads of its group (the point of GQA).
//
// The host picks one of two paths in constant time from S:
//   - decode (S <= DECODE_MAX_S): all S * G rows of a group are one block; the K and V blocks are
//     widened to fp32 as they stream in, so K and V are read from memory once, in one pass;
//   - prefill: K and V of the group are widened to fp32 once, then every block of BLOCK_M rows
//     sweeps the key blocks it can see (a causal block stops at its last row's limit).
// Everything is accumulated in fp32 and rounded once at the store. AVX-512 (16 lanes) or
// AVX2 + FMA + F16C (8 lanes) by the compile flags, scalar otherwise; fp16/bf16 are converted
// in registers. Any element strides; is_causal is bottom-right aligned (key j visible to query i
// iff j <= i + Skv - S); a row with no visible key gets 0.
//
// temper: knob BLOCK_M = 64 in {16, 32, 64, 128, 256}
// temper: knob BLOCK_KV = 64 in {16, 32, 64, 128, 256}
// temper: knob DECODE_MAX_S = 4 in {1, 4, 16}
// temper: knob QK_KEYS = 6 in {2, 4, 6, 8}
// temper: knob PV_ROWS = 4 in {2, 4, 6}
// temper: knob PAR_MIN_MFLOP = 4 in {1, 4, 16, 64}
//
// BLOCK_M: rows (position x head of the group) per prefill block. BLOCK_KV: keys per block.
// DECODE_MAX_S: the largest S that takes the decode path. QK_KEYS: keys per scores micro-tile.
// PV_ROWS: rows per P @ V micro-tile. PAR_MIN_MFLOP: with more than one thread
// (args->num_threads), problems of at least this many million flops are split between the
// threads of temper/parallel.h's pool (asleep between calls): decode by (batch, key/value head),
// prefill by (batch, head, block of BLOCK_M rows), each thread a contiguous share with buffers of
// its own; smaller ones stay on the calling thread.
#include <temper/half.h>
#include <temper/kernel.h>
#include <temper/parallel.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>
#endif

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_KV
#define BLOCK_KV 64
#endif
#ifndef DECODE_MAX_S
#define DECODE_MAX_S 4
#endif
#ifndef QK_KEYS
#define QK_KEYS 6
#endif
#ifndef PV_ROWS
#define PV_ROWS 4
#endif
#ifndef PAR_MIN_MFLOP
#define PAR_MIN_MFLOP 4
#endif


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
  static R exp(R x) { return x < -88.0f ? 0.0f : std::exp(x); }
};
#endif

#if defined(__AVX512F__)
using Vec = V16;
constexpr int kAccRegs = 24; // of 32 vector registers, the rest hold operands
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using Vec = V8;
constexpr int kAccRegs = 12; // of 16
#else
using Vec = V1;
constexpr int kAccRegs = 8;
#endif

constexpr int kW = Vec::W;
constexpr int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
// Row vectors per scores micro-tile and d vectors per P @ V micro-tile.
constexpr int kQkVecs = clamp_int(kAccRegs / QK_KEYS, 1, 4);
constexpr int kPvVecs = kW == 16 ? 4 : (kW == 8 ? 2 : 4);

static_assert(BLOCK_M >= 1 && BLOCK_KV >= 1 && QK_KEYS >= 1 && PV_ROWS >= 1, "knobs must be positive");

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
// The attention of one row block against key blocks.

struct Problem {
  const temper_tensor* q;
  const temper_tensor* k;
  const temper_tensor* v;
  const temper_tensor* y;
  int64_t S, Skv, D, G;
  float scale;
  bool causal;
};

// Working set of one row block (R rows, padded to Rp, a multiple of the vector width).
struct Rows {
  int64_t first = 0; // global row index (i * G + h_local) of row 0
  int64_t R = 0, Rp = 0, Dp = 0;
  float* Qt = nullptr;    // [D][Rp], scaled queries, transposed
  float* St = nullptr;    // [BLOCK_KV][Rp], scores then probabilities of the current key block
  float* O = nullptr;     // [R][Dp], unnormalized output
  float* m = nullptr;     // [Rp] running max
  float* l = nullptr;     // [Rp] running sum
  float* alpha = nullptr; // [Rp] rescale factor of the current block
  float* lim = nullptr;   // [Rp] number of visible keys (keys j < lim), as float
  int64_t max_lim = 0;    // the largest lim of the real rows
};

// St[j][r] for keys j .. j + MR, row vectors c0 .. c0 + NR.
template <class V, int MR, int NR>
inline void qk_tile(const float* K, int64_t D, const Rows& rw, int64_t j, int64_t c0) {
  typename V::R acc[MR][NR];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    for (int c = 0; c < NR; ++c) acc[m][c] = V::zero();
  const float* q = rw.Qt + c0 * V::W;
  const float* kr = K + j * D;
  for (int64_t d = 0; d < D; ++d) {
    typename V::R qv[NR];
#pragma GCC unroll 4
    for (int c = 0; c < NR; ++c) qv[c] = V::load(q + d * rw.Rp + c * V::W);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const typename V::R kb = V::set1(kr[m * D + d]);
#pragma GCC unroll 4
      for (int c = 0; c < NR; ++c) acc[m][c] = V::fma(kb, qv[c], acc[m][c]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    for (int c = 0; c < NR; ++c) V::store(rw.St + (j + m) * rw.Rp + (c0 + c) * V::W, acc[m][c]);
}

template <class V, int MR>
inline void qk_tile_cols(const float* K, int64_t D, const Rows& rw, int64_t j, int64_t c0, int64_t nr) {
  switch (nr) {
  case 1: qk_tile<V, MR, 1>(K, D, rw, j, c0); break;
  case 2: qk_tile<V, MR, (kQkVecs >= 2 ? 2 : 1)>(K, D, rw, j, c0); break;
  case 3: qk_tile<V, MR, (kQkVecs >= 3 ? 3 : 1)>(K, D, rw, j, c0); break;
  default: qk_tile<V, MR, kQkVecs>(K, D, rw, j, c0); break;
  }
}

// O[r .. r + MR][d0 .. d0 + NR * W] = alpha * O + P^T @ V over jn keys.
template <class V, int MR, int NR>
inline void pv_tile(const float* Vb, const Rows& rw, int64_t r, int64_t jn, int64_t d0) {
  typename V::R acc[MR][NR];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    const typename V::R a = V::set1(rw.alpha[r + m]);
#pragma GCC unroll 4
    for (int c = 0; c < NR; ++c) acc[m][c] = V::mul(V::load(rw.O + (r + m) * rw.Dp + d0 + c * V::W), a);
  }
  for (int64_t j = 0; j < jn; ++j) {
    typename V::R vv[NR];
#pragma GCC unroll 4
    for (int c = 0; c < NR; ++c) vv[c] = V::load(Vb + j * rw.Dp + d0 + c * V::W);
    const float* p = rw.St + j * rw.Rp + r;
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const typename V::R pb = V::set1(p[m]);
#pragma GCC unroll 4
      for (int c = 0; c < NR; ++c) acc[m][c] = V::fma(pb, vv[c], acc[m][c]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    for (int c = 0; c < NR; ++c) V::store(rw.O + (r + m) * rw.Dp + d0 + c * V::W, acc[m][c]);
}

// One key block: keys j0 .. j0 + nk, K as [nk][D] and V as [nk][Dp] fp32 rows.
template <class V>
void attend_block(const Problem& pb, Rows& rw, const float* Kb, const float* Vb, int64_t j0, int64_t nk) {
  const int64_t need = rw.max_lim - j0 < nk ? rw.max_lim - j0 : nk; // keys any row can see
  if (need <= 0) return;
  const int64_t nvec = rw.Rp / V::W;

  // 1. Scores.
  int64_t j = 0;
  for (; j + QK_KEYS <= need; j += QK_KEYS) {
    int64_t c = 0;
    for (; c + kQkVecs <= nvec; c += kQkVecs) qk_tile<V, QK_KEYS, kQkVecs>(Kb, pb.D, rw, j, c);
    if (c < nvec) qk_tile_cols<V, QK_KEYS>(Kb, pb.D, rw, j, c, nvec - c);
  }
  for (; j < need; ++j) {
    int64_t c = 0;
    for (; c + kQkVecs <= nvec; c += kQkVecs) qk_tile<V, 1, kQkVecs>(Kb, pb.D, rw, j, c);
    if (c < nvec) qk_tile_cols<V, 1>(Kb, pb.D, rw, j, c, nvec - c);
  }

  // 2. Online softmax, W rows at a time.
  const typename V::R neg_inf = V::set1(-INFINITY);
  for (int64_t c = 0; c < rw.Rp; c += V::W) {
    const typename V::R m_old = V::load(rw.m + c);
    typename V::R mb = neg_inf;
    if (pb.causal) {
      const typename V::R lim = V::load(rw.lim + c);
      for (int64_t t = 0; t < need; ++t) {
        float* s = rw.St + t * rw.Rp + c;
        const typename V::R sv = V::select_lt(V::set1(static_cast<float>(j0 + t)), lim, V::load(s), neg_inf);
        V::store(s, sv);
        mb = V::max(mb, sv);
      }
    } else {
      for (int64_t t = 0; t < need; ++t) mb = V::max(mb, V::load(rw.St + t * rw.Rp + c));
    }
    const typename V::R m_new = V::max(m_old, mb);
    // A row that has seen no visible key yet keeps m = -inf; subtract 0 instead so exp gives 0.
    const typename V::R m_use = V::select_lt(m_new, V::set1(-FLT_MAX), V::zero(), m_new);
    const typename V::R a = V::exp(V::sub(m_old, m_use));
    typename V::R sum = V::zero();
    for (int64_t t = 0; t < need; ++t) {
      float* s = rw.St + t * rw.Rp + c;
      const typename V::R p = V::exp(V::sub(V::load(s), m_use));
      V::store(s, p);
      sum = V::add(sum, p);
    }
    V::store(rw.l + c, V::fma(V::load(rw.l + c), a, sum));
    V::store(rw.m + c, m_new);
    V::store(rw.alpha + c, a);
  }

  // 3. O = alpha * O + P^T V. Rows of a tile see at most the keys below their largest limit
  // (rows are in position order, so that is the last row's); a tile with none keeps O as is
  // (alpha is 1 for a row with a finite max, and O is 0 for one without).
  auto tile_keys = [&](int64_t r, int64_t mr) {
    const int64_t lim = static_cast<int64_t>(rw.lim[r + mr - 1]) - j0;
    return lim < need ? lim : need;
  };
  int64_t r = 0;
  for (; r + PV_ROWS <= rw.R; r += PV_ROWS) {
    const int64_t jn = tile_keys(r, PV_ROWS);
    if (jn <= 0) continue;
    for (int64_t d0 = 0; d0 < rw.Dp; d0 += kPvVecs * V::W) pv_tile<V, PV_ROWS, kPvVecs>(Vb, rw, r, jn, d0);
  }
  for (; r < rw.R; ++r) {
    const int64_t jn = tile_keys(r, 1);
    if (jn <= 0) continue;
    for (int64_t d0 = 0; d0 < rw.Dp; d0 += kPvVecs * V::W) pv_tile<V, 1, kPvVecs>(Vb, rw, r, jn, d0);
  }
}

// Loads the queries of rows first .. first + R of (b, g), resets m, l and O.
void begin_rows(const Problem& pb, Rows& rw, int64_t b, int64_t g, int64_t first, int64_t R, float* qrow) {
  rw.first = first;
  rw.R = R;
  rw.Rp = round_up(R, kW);
  std::memset(rw.Qt, 0, static_cast<size_t>(pb.D * rw.Rp) * sizeof(float));
  std::memset(rw.O, 0, static_cast<size_t>(R * rw.Dp) * sizeof(float));
  const temper_tensor& q = *pb.q;
  rw.max_lim = 0;
  for (int64_t r = 0; r < rw.Rp; ++r) {
    rw.m[r] = -INFINITY;
    rw.l[r] = 0.0f;
    rw.lim[r] = static_cast<float>(pb.Skv);
    if (r >= R) continue; // padding rows: zero queries, never stored
    const int64_t gr = first + r, i = gr / pb.G, h = g * pb.G + gr % pb.G;
    int64_t lim = pb.Skv;
    if (pb.causal) {
      lim = i + (pb.Skv - pb.S) + 1;
      if (lim < 0) lim = 0;
      if (lim > pb.Skv) lim = pb.Skv;
    }
    rw.lim[r] = static_cast<float>(lim);
    if (lim > rw.max_lim) rw.max_lim = lim;
    load_row(q, b * q.strides[0] + i * q.strides[1] + h * q.strides[2], pb.D, qrow, pb.scale);
    for (int64_t d = 0; d < pb.D; ++d) rw.Qt[d * rw.Rp + r] = qrow[d];
  }
}

// y = O / l for the block's rows (0 for a row without a visible key).
void end_rows(const Problem& pb, const Rows& rw, int64_t b, int64_t g) {
  const temper_tensor& y = *pb.y;
  for (int64_t r = 0; r < rw.R; ++r) {
    const int64_t gr = rw.first + r, i = gr / pb.G, h = g * pb.G + gr % pb.G;
    const float inv = rw.l[r] > 0.0f ? 1.0f / rw.l[r] : 0.0f;
    store_row(rw.O + r * rw.Dp, inv, y, b * y.strides[0] + i * y.strides[1] + h * y.strides[2], pb.D);
  }
}

// Attention for units [u0, u1) of the problem (see temper_kernel): a thread's share, with
// buffers of its own. False when they cannot be allocated.
bool attend_share(const Problem& pb, bool decode, int64_t rows_total, int64_t block_rows, int64_t blocks, int64_t Nkv, int64_t u0,
                  int64_t u1) {
  const temper_tensor& k = *pb.k;
  const temper_tensor& v = *pb.v;
  const int64_t D = pb.D, Skv = pb.Skv;
  const int64_t Rp = round_up(block_rows, kW);
  const int64_t Dp = round_up(D, static_cast<int64_t>(kPvVecs) * kW);
  // Decode keeps the rows of every key/value head of a batch live at once and streams K and V
  // in memory order ([b][j][g][:] is contiguous over g), so the hardware prefetcher sees one
  // sequential stream; walking one head at a time would touch 2 KiB-strided rows, a new page
  // every few rows, and wait on DRAM latency for each. Prefill widens one head at a time.
  const int64_t heads = decode ? Nkv : 1;
  const int64_t kv_rows = decode ? (Skv < BLOCK_KV ? Skv : BLOCK_KV) : Skv;

  Buffer qt, st, o, m, l, alpha, lim, qrow, kb, vb;
  if (!qt.allocate(heads * D * Rp) || !st.allocate(int64_t{BLOCK_KV} * Rp) || !o.allocate(heads * block_rows * Dp) ||
      !m.allocate(heads * Rp) || !l.allocate(heads * Rp) || !alpha.allocate(heads * Rp) ||
      !lim.allocate(heads * Rp) || !qrow.allocate(D) || !kb.allocate(heads * kv_rows * D) ||
      !vb.allocate(heads * kv_rows * Dp)) {
    return false;
  }
  Rows rows[1];
  Rows* rw_of = rows;
  // One Rows per live head (heads is 1 for prefill); a small array on the heap for decode.
  struct RowsArray {
    Rows* p = nullptr;
    ~RowsArray() { delete[] p; }
  } many;
  if (heads > 1) {
    many.p = new (std::nothrow) Rows[static_cast<size_t>(heads)];
    if (many.p == nullptr) return false;
    rw_of = many.p;
  }
  for (int64_t g = 0; g < heads; ++g) {
    Rows& rw = rw_of[g];
    rw.Dp = Dp;
    rw.Qt = qt.p + g * D * Rp;
    rw.St = st.p;
    rw.O = o.p + g * block_rows * Dp;
    rw.m = m.p + g * Rp;
    rw.l = l.p + g * Rp;
    rw.alpha = alpha.p + g * Rp;
    rw.lim = lim.p + g * Rp;
  }

  auto kv_off = [](const temper_tensor& t, int64_t b, int64_t j, int64_t g) {
    return b * t.strides[0] + j * t.strides[1] + g * t.strides[2];
  };
  if (decode) {
    // Units are (b, g): per batch, the share's heads [g0, g1).
    for (int64_t b = u0 / Nkv; b * Nkv < u1; ++b) {
      const int64_t g0 = u0 > b * Nkv ? u0 - b * Nkv : 0, g1 = u1 - b * Nkv < Nkv ? u1 - b * Nkv : Nkv;
      for (int64_t g = g0; g < g1; ++g) begin_rows(pb, rw_of[g], b, g, 0, rows_total, qrow.p);
      const int64_t max_lim = rw_of[g0].max_lim; // the same for every head: it depends on positions only
      for (int64_t j0 = 0; j0 < max_lim; j0 += BLOCK_KV) {
        const int64_t nk = max_lim - j0 < BLOCK_KV ? max_lim - j0 : BLOCK_KV;
        for (int64_t t = 0; t < nk; ++t) {
          for (int64_t g = g0; g < g1; ++g) {
            load_row(k, kv_off(k, b, j0 + t, g), D, kb.p + (g * kv_rows + t) * D, 1.0f);
            load_row(v, kv_off(v, b, j0 + t, g), D, vb.p + (g * kv_rows + t) * Dp, 1.0f);
          }
        }
        for (int64_t g = g0; g < g1; ++g) {
          attend_block<Vec>(pb, rw_of[g], kb.p + g * kv_rows * D, vb.p + g * kv_rows * Dp, j0, nk);
        }
      }
      for (int64_t g = g0; g < g1; ++g) end_rows(pb, rw_of[g], b, g);
    }
    return true;
  }
  // Units are (b, g, block of rows); K and V of (b, g) are widened when the share reaches it.
  Rows& rw = rw_of[0];
  int64_t widened = -1;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t bg = u / blocks, b = bg / Nkv, g = bg % Nkv, first = (u % blocks) * block_rows;
    if (bg != widened) {
      for (int64_t t = 0; t < Skv; ++t) {
        load_row(k, kv_off(k, b, t, g), D, kb.p + t * D, 1.0f);
        load_row(v, kv_off(v, b, t, g), D, vb.p + t * Dp, 1.0f);
      }
      widened = bg;
    }
    const int64_t R = rows_total - first < block_rows ? rows_total - first : block_rows;
    begin_rows(pb, rw, b, g, first, R, qrow.p);
    for (int64_t j0 = 0; j0 < rw.max_lim; j0 += BLOCK_KV) {
      const int64_t nk = Skv - j0 < BLOCK_KV ? Skv - j0 : BLOCK_KV;
      attend_block<Vec>(pb, rw, kb.p + j0 * D, vb.p + j0 * Dp, j0, nk);
    }
    end_rows(pb, rw, b, g);
  }
  return true;
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

  Problem pb{&q, &k, &v, &y, S, Skv, D, Nq / Nkv, 0.0f, temper_attr_int(args, "is_causal", 0) != 0};
  const double scale_attr = temper_attr_float(args, "scaleValue", -1.0);
  pb.scale = scale_attr > 0 ? static_cast<float>(scale_attr) : 1.0f / std::sqrt(static_cast<float>(D));

  // Host choice, O(1) from S: decode streams K/V once per group; prefill widens them once.
  const bool decode = S <= DECODE_MAX_S;
  const int64_t rows_total = S * pb.G;
  const int64_t block_rows = decode ? rows_total : (rows_total < BLOCK_M ? rows_total : BLOCK_M);
  // The work is units of (batch, key/value head) for decode, (batch, head, block of rows) for
  // prefill; with more than one thread each takes a contiguous share of them (buffers of its own),
  // when the problem has at least PAR_MIN_MFLOP million flops (2 per multiply-add, both matmuls).
  const int64_t blocks = decode ? 1 : (rows_total + block_rows - 1) / block_rows;
  const int64_t units = B * Nkv * blocks;
  const double flops = 4.0 * static_cast<double>(B) * static_cast<double>(Nq) * static_cast<double>(S) * static_cast<double>(Skv) *
                       static_cast<double>(D);
  const int threads = args->num_threads > 1 && flops >= PAR_MIN_MFLOP * 1e6 ? args->num_threads : 1;
  bool out_of_memory = false;
  temper_parallel::parallel_for(threads, units, [&](int64_t u0, int64_t u1) {
    if (!attend_share(pb, decode, rows_total, block_rows, blocks, Nkv, u0, u1)) out_of_memory = true;
  });
  if (out_of_memory) return fail(args, "GQA: out of memory");
  return 0;
}
