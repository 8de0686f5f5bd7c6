// SwiGlu, architecture "general": one code path for every layout. The output index space is
// collapsed (size-1 dimensions dropped, neighbours merged where the input's and the output's
// strides allow it), then walked in blocks of BLOCK elements that may span many rows: each block
// gathers x0 and x1 into fp32 buffers in L1 (vector loads where the innermost stride is 1, strided
// scalar loads otherwise), computes silu(x0) * x1 on the whole block with a vectorized exp, and
// scatters the results back. Short rows ([N, 7] after a split on the last axis) and strided
// innermost axes ([N, 2] split on dim 1 reads every other element) therefore still run the
// vector arithmetic at full width; a contiguous split on the last axis is one long run per row.
// Every element is x0 / (1 + exp(-x0)) * x1 in fp32, rounded once when stored, like the task's
// definition; exp is a Cephes-style polynomial (about 1 ulp) with exact IEEE division, so inf and
// NaN inputs give what the scalar formula gives.
// Instruction sets, chosen at compile time (-march=native):
//   - AVX-512F + AVX-512BW: 16 elements per vector, tails masked with mask registers;
//   - else AVX2 + FMA + F16C (Haswell to Alder Lake, Zen 1 to 3): 8 elements per vector, with
//     rows.cpp's AVX2 formulas (the same polynomial and clamps, 2^n built by two exact
//     multiplies, bf16 rounded in integer arithmetic); fp32 tails with maskload/maskstore, fp16
//     and bf16 tails as masked 32-bit words plus an odd last element;
//   - else (no AVX2): the same blocks with scalar arithmetic and std::exp.
//
// temper: knob BLOCK = 1024 in {256, 512, 1024, 2048, 4096}
// temper: knob UNROLL = 2 in {1, 2, 4}
//
// BLOCK: elements per staged block (three fp32 buffers of BLOCK elements stay in L1).
// UNROLL: vectors per iteration of the arithmetic loop (of 16 elements with AVX-512, 8 with AVX2).
#include <temper/half.h>
#include <temper/kernel.h>

#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) && defined(__AVX512BW__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from `__m512 __Y = __Y;` (_mm512_undefined_ps), which
// -Wmaybe-uninitialized reports at every inlined use: a false positive in the header.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define SWIGLU_AVX512 1
#define SWIGLU_AVX2 0
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define SWIGLU_AVX512 0
#define SWIGLU_AVX2 1
#else
#define SWIGLU_AVX512 0
#define SWIGLU_AVX2 0
#endif

#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef UNROLL
#define UNROLL 2
#endif

static_assert(BLOCK % 64 == 0, "BLOCK must be a multiple of 64 (four 16-lane vectors)");

namespace {

int fail(const temper_args* args, const char* message) {
  if (args->set_error) args->set_error(message);
  return 1;
}

float load_scalar(const void* base, int32_t dtype, int64_t offset) {
  switch (dtype) {
  case TEMPER_F16: return temper_f16_to_f32(static_cast<const uint16_t*>(base)[offset]);
  case TEMPER_BF16: return temper_bf16_to_f32(static_cast<const uint16_t*>(base)[offset]);
  default: return static_cast<const float*>(base)[offset];
  }
}

void store_scalar(void* base, int32_t dtype, int64_t offset, float v) {
  switch (dtype) {
  case TEMPER_F16: static_cast<uint16_t*>(base)[offset] = temper_f32_to_f16(v); break;
  case TEMPER_BF16: static_cast<uint16_t*>(base)[offset] = temper_f32_to_bf16(v); break;
  default: static_cast<float*>(base)[offset] = v; break;
  }
}

#if SWIGLU_AVX512

// exp(x) for 1 + exp(x): clamp (NaN passes through min/max as ordered here), x = n ln2 + r, a
// degree-6 polynomial in r on [-ln2/2, ln2/2], then scalef, which gives inf above the range.
inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  // Below -86 exp(x) is under 2^-124, which 1 + exp(x) rounds away: the result is the same, and
  // no subnormal is made (each costs a microcode assist on Intel cores: 7x on SwiGLU case 5).
  x = _mm512_max_ps(_mm512_set1_ps(-86.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

inline __m512 swiglu_ps(__m512 x0, __m512 x1) {
  const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x0));
  return _mm512_mul_ps(_mm512_div_ps(x0, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), x1);
}

// fp32 -> bf16 with round to nearest even and quiet NaNs, bit for bit temper_f32_to_bf16.
inline __m256i f32_to_bf16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(x, _mm512_set1_epi32(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_mask_mov_epi32(rounded, nan, quiet), 16));
}

template <int32_t D>
inline __m512 load16(const void* base, int64_t i, __mmask16 m) {
  if constexpr (D == TEMPER_F32) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(base) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + i);
    if constexpr (D == TEMPER_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <int32_t D>
inline void store16(void* base, int64_t i, __m512 v, __mmask16 m) {
  if constexpr (D == TEMPER_F32) {
    _mm512_mask_storeu_ps(static_cast<float*>(base) + i, m, v);
  } else if constexpr (D == TEMPER_F16) {
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(base) + i, m,
                             _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(base) + i, m, f32_to_bf16(v));
  }
}

inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1u); }

// n elements at base[off + k * stride] into buf[0..n) as fp32.
template <int32_t D>
void gather(const void* base, int64_t off, int64_t stride, int64_t n, float* buf) {
  if (stride == 1) {
    for (int64_t k = 0; k < n; k += 16) {
      const __mmask16 m = tail_mask(n - k); // masked: the buffer may end right after n
      _mm512_mask_storeu_ps(buf + k, m, load16<D>(base, off + k, m));
    }
  } else {
    for (int64_t k = 0; k < n; ++k) buf[k] = load_scalar(base, D, off + k * stride);
  }
}

template <int32_t D>
void scatter(void* base, int64_t off, int64_t stride, int64_t n, const float* buf) {
  if (stride == 1) {
    for (int64_t k = 0; k < n; k += 16) store16<D>(base, off + k, _mm512_maskz_loadu_ps(tail_mask(n - k), buf + k), tail_mask(n - k));
  } else {
    for (int64_t k = 0; k < n; ++k) store_scalar(base, D, off + k * stride, buf[k]);
  }
}

// c[k] = silu(a[k]) * b[k] for k < n; the buffers hold whole vectors, so no tail handling.
void compute(const float* a, const float* b, float* c, int64_t n) {
  int64_t k = 0;
  for (; k + 16 * UNROLL <= n; k += 16 * UNROLL) {
    for (int u = 0; u < UNROLL; ++u) {
      _mm512_storeu_ps(c + k + 16 * u, swiglu_ps(_mm512_loadu_ps(a + k + 16 * u), _mm512_loadu_ps(b + k + 16 * u)));
    }
  }
  for (; k < n; k += 16) _mm512_storeu_ps(c + k, swiglu_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k)));
}

#elif SWIGLU_AVX2

// AVX2 + FMA + F16C: the AVX-512 section on 8 lanes, with rows.cpp's AVX2 formulas. There is no
// scalef, so 2^n is built in the exponent bits, and no 16-bit masked move, so half tails move as
// masked 32-bit words plus an odd last element.

// p * 2^n for an integral float n in [-124, 128]: 2^128 is no float, so 2^(n - 1) (a normal
// float for every such n) and then 2. Both products are exact, or the second overflows to inf
// exactly where scalef(p, n) does. A NaN n (from a NaN input) comes with a NaN p: NaN.
inline __m256 scale_pow2(__m256 p, __m256 n) {
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23);
  return _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
}

// exp(x) for 1 + exp(x), as the AVX-512 exp_ps: clamp to [-86, 89] (NaN passes through min/max
// as ordered here), degree 6 in r; n = round(x log2 e) lies in [-124, 128].
inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
  x = _mm256_max_ps(_mm256_set1_ps(-86.0f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  return scale_pow2(p, n);
}

inline __m256 swiglu_ps(__m256 x0, __m256 x1) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x0));
  return _mm256_mul_ps(_mm256_div_ps(x0, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), x1);
}

// fp32 -> bf16 with round to nearest even and quiet NaNs, bit for bit temper_f32_to_bf16.
inline __m128i f32_to_bf16(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x400000));
  const __m256i bits = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
  // Each 32-bit lane holds at most 0xffff, so the unsigned saturation never saturates.
  return _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
}

// 8 fp16 or bf16 to fp32 (a bf16 is the top half of an fp32) and back.
template <int32_t D>
inline __m256 widen(__m128i h) {
  if constexpr (D == TEMPER_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

template <int32_t D>
inline __m128i narrow(__m256 v) {
  if constexpr (D == TEMPER_F16) return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return f32_to_bf16(v);
}

template <int32_t D>
inline __m256 load8(const void* base, int64_t i) {
  if constexpr (D == TEMPER_F32) {
    return _mm256_loadu_ps(static_cast<const float*>(base) + i);
  } else {
    return widen<D>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + i)));
  }
}

template <int32_t D>
inline void store8(void* base, int64_t i, __m256 v) {
  if constexpr (D == TEMPER_F32) {
    _mm256_storeu_ps(static_cast<float*>(base) + i, v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(base) + i), narrow<D>(v));
  }
}

// The first n of 8 32-bit lanes, 0 <= n <= 8: a window into a table.
inline __m256i lanes8(int64_t n) {
  static constexpr int32_t kMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMask + 8 - n));
}

// The first n / 2 of 4 32-bit words (n / 2 pairs of halves), 0 <= n <= 8.
inline __m128i words4(int64_t n) {
  static constexpr int32_t kWords[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kWords + 4 - n / 2));
}

// n < 8 elements from base[i]; the other lanes read as 0 and never fault. Halves: the whole
// 32-bit words masked, an odd last element put into lane n - 1 by a mask (an insert takes only
// a constant lane).
template <int32_t D>
inline __m256 load_part(const void* base, int64_t i, int64_t n) {
  if constexpr (D == TEMPER_F32) {
    return _mm256_maskload_ps(static_cast<const float*>(base) + i, lanes8(n));
  } else {
    static constexpr int16_t kLast[15] = {0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0};
    const uint16_t* a = static_cast<const uint16_t*>(base) + i;
    __m128i h = _mm_maskload_epi32(reinterpret_cast<const int*>(a), words4(n));
    if (n & 1) {
      const __m128i last = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kLast + 8 - n));
      h = _mm_or_si128(h, _mm_and_si128(_mm_set1_epi16(static_cast<int16_t>(a[n - 1])), last));
    }
    return widen<D>(h);
  }
}

// The first n < 8 lanes of v to base[i].
template <int32_t D>
inline void store_part(void* base, int64_t i, __m256 v, int64_t n) {
  if constexpr (D == TEMPER_F32) {
    _mm256_maskstore_ps(static_cast<float*>(base) + i, lanes8(n), v);
  } else {
    uint16_t* o = static_cast<uint16_t*>(base) + i;
    const __m128i y = narrow<D>(v);
    _mm_maskstore_epi32(reinterpret_cast<int*>(o), words4(n), y);
    if (n & 1) {
      alignas(16) uint16_t t[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(t), y);
      o[n - 1] = t[n - 1];
    }
  }
}

// n elements at base[off + k * stride] into buf[0..n) as fp32.
template <int32_t D>
void gather(const void* base, int64_t off, int64_t stride, int64_t n, float* buf) {
  if (stride == 1) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) _mm256_storeu_ps(buf + k, load8<D>(base, off + k));
    // Masked: the buffer may end right after n.
    if (k < n) _mm256_maskstore_ps(buf + k, lanes8(n - k), load_part<D>(base, off + k, n - k));
  } else {
    for (int64_t k = 0; k < n; ++k) buf[k] = load_scalar(base, D, off + k * stride);
  }
}

template <int32_t D>
void scatter(void* base, int64_t off, int64_t stride, int64_t n, const float* buf) {
  if (stride == 1) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) store8<D>(base, off + k, _mm256_loadu_ps(buf + k));
    if (k < n) store_part<D>(base, off + k, _mm256_maskload_ps(buf + k, lanes8(n - k)), n - k);
  } else {
    for (int64_t k = 0; k < n; ++k) store_scalar(base, D, off + k * stride, buf[k]);
  }
}

// c[k] = silu(a[k]) * b[k] for k < n; the buffers hold whole vectors, so no tail handling.
void compute(const float* a, const float* b, float* c, int64_t n) {
  int64_t k = 0;
  for (; k + 8 * UNROLL <= n; k += 8 * UNROLL) {
    for (int u = 0; u < UNROLL; ++u) {
      _mm256_storeu_ps(c + k + 8 * u, swiglu_ps(_mm256_loadu_ps(a + k + 8 * u), _mm256_loadu_ps(b + k + 8 * u)));
    }
  }
  for (; k < n; k += 8) _mm256_storeu_ps(c + k, swiglu_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k)));
}

#else // neither AVX-512 nor AVX2: the same blocks with scalar arithmetic

template <int32_t D>
void gather(const void* base, int64_t off, int64_t stride, int64_t n, float* buf) {
  for (int64_t k = 0; k < n; ++k) buf[k] = load_scalar(base, D, off + k * stride);
}

template <int32_t D>
void scatter(void* base, int64_t off, int64_t stride, int64_t n, const float* buf) {
  for (int64_t k = 0; k < n; ++k) store_scalar(base, D, off + k * stride, buf[k]);
}

void compute(const float* a, const float* b, float* c, int64_t n) {
  for (int64_t k = 0; k < n; ++k) c[k] = a[k] / (1.0f + std::exp(-a[k])) * b[k];
}

#endif // SWIGLU_AVX512, SWIGLU_AVX2

// The collapsed index space: dims[0..nd) outer to inner; x1 lies `half_offset` input elements
// after x0.
struct Layout {
  int32_t nd = 0;
  int64_t shape[TEMPER_MAX_RANK];
  int64_t in_stride[TEMPER_MAX_RANK];
  int64_t out_stride[TEMPER_MAX_RANK];
  int64_t half_offset = 0;
};

Layout collapse(const temper_tensor& in, const temper_tensor& out, int32_t dim) {
  Layout l;
  l.half_offset = out.shape[dim] * in.strides[dim];
  for (int32_t k = 0; k < out.rank; ++k) {
    if (out.shape[k] == 1) continue;
    const int32_t j = l.nd - 1;
    if (j >= 0 && l.in_stride[j] == out.shape[k] * in.strides[k] && l.out_stride[j] == out.shape[k] * out.strides[k]) {
      l.shape[j] *= out.shape[k]; // dims j and k are one run: merge
      l.in_stride[j] = in.strides[k];
      l.out_stride[j] = out.strides[k];
      continue;
    }
    l.shape[l.nd] = out.shape[k];
    l.in_stride[l.nd] = in.strides[k];
    l.out_stride[l.nd] = out.strides[k];
    ++l.nd;
  }
  if (l.nd == 0) { // a single element
    l.nd = 1;
    l.shape[0] = 1;
    l.in_stride[0] = 1;
    l.out_stride[0] = 1;
  }
  return l;
}

// A position in the walk: the index of the outer dims, their offsets, and the position in the
// innermost run.
struct Cursor {
  int64_t index[TEMPER_MAX_RANK] = {0};
  int64_t in_off = 0;
  int64_t out_off = 0;
  int64_t j = 0;
};

// Calls f(in_offset, out_offset, n) for the runs that cover the next `count` elements.
template <class F>
void walk(const Layout& l, Cursor& c, int64_t count, F&& f) {
  const int32_t last = l.nd - 1;
  const int64_t run = l.shape[last];
  while (count > 0) {
    const int64_t n = run - c.j < count ? run - c.j : count;
    f(c.in_off + c.j * l.in_stride[last], c.out_off + c.j * l.out_stride[last], n);
    c.j += n;
    count -= n;
    if (c.j < run) continue;
    c.j = 0;
    for (int32_t k = last - 1; k >= 0; --k) {
      if (++c.index[k] < l.shape[k]) {
        c.in_off += l.in_stride[k];
        c.out_off += l.out_stride[k];
        break;
      }
      c.in_off -= (l.shape[k] - 1) * l.in_stride[k];
      c.out_off -= (l.shape[k] - 1) * l.out_stride[k];
      c.index[k] = 0;
    }
  }
}

template <int32_t D>
void swiglu_blocks(const temper_tensor& in, const temper_tensor& out, const Layout& l, int64_t total) {
  alignas(64) float a[BLOCK], b[BLOCK], c[BLOCK]; // at most 48 KiB of stack
  const int32_t last = l.nd - 1;
  Cursor read, write;
  for (int64_t done = 0; done < total; done += BLOCK) {
    const int64_t n = total - done < BLOCK ? total - done : BLOCK;
    int64_t at = 0;
    walk(l, read, n, [&](int64_t in_off, int64_t, int64_t m) {
      gather<D>(in.data, in_off, l.in_stride[last], m, a + at);
      gather<D>(in.data, in_off + l.half_offset, l.in_stride[last], m, b + at);
      at += m;
    });
    // Round up to whole vectors: the padding lanes compute garbage that is never stored.
    const int64_t padded = (n + 15) / 16 * 16;
    for (int64_t k = n; k < padded; ++k) a[k] = b[k] = 0.0f;
    compute(a, b, c, padded);
    at = 0;
    walk(l, write, n, [&](int64_t, int64_t out_off, int64_t m) {
      scatter<D>(out.data, out_off, l.out_stride[last], m, c + at);
      at += m;
    });
  }
}

} // namespace

TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  if (args == nullptr) return 1;
  if (args->abi_version != TEMPER_ABI_VERSION) return fail(args, "SwiGlu: unsupported ABI version");
  if (args->num_inputs != 1 || args->num_outputs != 1 || args->inputs == nullptr || args->outputs == nullptr) {
    return fail(args, "SwiGlu: expects exactly one input and one output");
  }
  const temper_tensor& in = args->inputs[0];
  const temper_tensor& out = args->outputs[0];
  const int32_t rank = in.rank;
  if (rank < 1 || rank > TEMPER_MAX_RANK) return fail(args, "SwiGlu: input rank must be 1 to 8");
  if (out.rank != rank) return fail(args, "SwiGlu: output rank differs from the input rank");
  const int32_t dtype = in.dtype;
  if (dtype != TEMPER_F32 && dtype != TEMPER_F16 && dtype != TEMPER_BF16) {
    return fail(args, "SwiGlu: input dtype must be float32, float16 or bfloat16");
  }
  if (out.dtype != dtype) return fail(args, "SwiGlu: output dtype differs from the input dtype");
  int64_t dim = temper_attr_int(args, "dim", -1);
  if (dim < -rank || dim >= rank) return fail(args, "SwiGlu: dim is out of range for the input rank");
  if (dim < 0) dim += rank;
  if (in.shape[dim] % 2 != 0) return fail(args, "SwiGlu: the size of the split dimension is odd");
  for (int32_t k = 0; k < rank; ++k) {
    const int64_t expect = k == dim ? in.shape[k] / 2 : in.shape[k];
    if (out.shape[k] != expect) return fail(args, "SwiGlu: output shape is not the input shape with dim halved");
  }
  const int64_t total = temper_numel(&out);
  if (total == 0) return 0;
  const Layout l = collapse(in, out, static_cast<int32_t>(dim));
  switch (dtype) {
  case TEMPER_F16: swiglu_blocks<TEMPER_F16>(in, out, l, total); break;
  case TEMPER_BF16: swiglu_blocks<TEMPER_BF16>(in, out, l, total); break;
  default: swiglu_blocks<TEMPER_F32>(in, out, l, total); break;
  }
  return 0;
}
