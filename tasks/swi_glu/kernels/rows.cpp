// SwiGlu, architecture "rows": a contiguous input split at `dim` is a stack of rows
// [x0 | x1], each 2 * half elements long (half = shape[dim] / 2 * the product of the dims after
// dim), so every contiguous case is one streaming loop over rows, whatever its rank and split
// axis. The host picks one of three paths in constant time:
//   - rows:        half >= 2, vectors along a row, masked tail (a short row is one masked vector);
//   - deinterleave: half == 1, a last axis of size 2 ([N, 2] split on dim 1): x0 and x1 alternate,
//                  so each vector of outputs comes from two vectors of pairs separated by
//                  permutes (bf16 with AVX2: from one vector, by a shift and a mask);
//   - general:     non-contiguous tensors, or neither vector instruction set at compile time: one
//                  element at a time.
// Instruction sets, chosen at compile time (-march=native):
//   - AVX-512F + AVX-512BW: rows and deinterleave, 16 elements per vector, tails masked with mask
//     registers;
//   - else AVX2 + FMA + F16C (Haswell to Alder Lake, Zen 1 to 3): rows and deinterleave, 8 elements
//     per vector; fp32 tails with maskload/maskstore, fp16 and bf16 tails as masked 32-bit words
//     plus an odd last element; bf16 rows 16 elements at a time as even and odd halves (below);
//   - else (no AVX2): the general path only.
// The row loop, the prefetch and the split between threads are shared; the sets differ only in
// the vector pieces they provide (see "Each vector instruction set" below).
// Every element is x0 / (1 + exp(-x0)) * x1 in fp32, rounded once when stored, like the task's
// definition; exp is a Cephes-style polynomial (about 1 ulp) with exact IEEE division, so inf
// and NaN inputs give what the scalar formula gives. Both sets evaluate the same polynomials,
// clamps and bf16 rounding.
//
// temper: knob UNROLL = 2 in {1, 2, 4}
// temper: knob NT_STORES = 0 in {0, 1}
// temper: knob NT_MIN_MB = 16 in {4, 16, 64}
// temper: knob PF_DIST = 0 in {0, 4096, 16384}
// temper: knob BF16_CVT = 0 in {0, 1}
// temper: knob HALF_EXP_DEGREE = 6 in {3, 4, 6}
// temper: knob BF16_PAIRS = 0 in {0, 1}
// temper: knob PAR_MIN_KB = 256 in {64, 256, 1024, 4096}
// temper: knob-constraint NT_STORES == 1 || NT_MIN_MB == 16
// temper: knob-constraint BF16_PAIRS == 0 || BF16_CVT == 1
//
// UNROLL: vectors per loop iteration (of 16 elements with AVX-512; with AVX2 of 8, or bf16 pairs
// of 16). NT_STORES: non-temporal stores for outputs of at least NT_MIN_MB MiB, so a large output
// does not evict the inputs it streams past. The constraint keeps NT_MIN_MB at its default where
// it has no effect (regular stores). PF_DIST: bytes of software prefetch ahead in x0 and x1,
// carried into the next rows (0: none); the hardware prefetcher retrains on every new row, which
// costs short rows half their bandwidth.
// BF16_CVT: round bf16 outputs with the AVX512-BF16 instruction where the target has it (a third
// of the arithmetic of a bf16 element is its rounding otherwise). HALF_EXP_DEGREE: the exponential of
// fp16 and bf16 outputs: 3 or 4, a base-2 polynomial of that degree with half the instructions
// (exp_neg_base2); 6, fp32's own (exp_ps). BF16_PAIRS: read bf16
// 32 elements at a time as their even and odd halves (a bf16 is the top half of an fp32, so a
// shift and a mask widen them, with no cross-lane unpacking) and write them back with one
// two-vector rounding and one permute; it rounds with the AVX512-BF16 instruction, hence the
// constraint. PAR_MIN_KB: with more than one thread (temper.yaml's threads, args->num_threads),
// inputs of at least this many KiB are split between the threads: whole rows when there are at
// least as many rows as threads, else 64-element column blocks of every row (a single long row),
// pairs for [N, 2]; smaller inputs stay on the calling thread, where waking the others would
// cost more than it saves. The threads are temper/parallel.h's pool: asleep between calls.
// With AVX2, UNROLL, NT_STORES, NT_MIN_MB, PF_DIST, HALF_EXP_DEGREE and PAR_MIN_KB work as above
// (stream stores of 32 bytes for fp32 and bf16 pairs, 16 for fp16, each peeled to its
// alignment). BF16_CVT and BF16_PAIRS need AVX512-BF16 and are no-ops: bf16 rounds in integer
// arithmetic, and bf16 rows always take the even/odd split, which needs no BF16 instruction there.
#include <temper/half.h>
#include <temper/kernel.h>
#include <temper/parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

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
#define SWIGLU_VECTOR (SWIGLU_AVX512 || SWIGLU_AVX2)

#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef NT_STORES
#define NT_STORES 0
#endif
#ifndef NT_MIN_MB
#define NT_MIN_MB 16
#endif
#ifndef PF_DIST
#define PF_DIST 0
#endif
#ifndef BF16_CVT
#define BF16_CVT 0
#endif
#ifndef HALF_EXP_DEGREE
#define HALF_EXP_DEGREE 6
#endif
#ifndef BF16_PAIRS
#define BF16_PAIRS 0
#endif
#ifndef PAR_MIN_KB
#define PAR_MIN_KB 256
#endif
#if BF16_PAIRS && defined(__AVX512BF16__)
#define SWIGLU_BF16_PAIRS 1
#else
#define SWIGLU_BF16_PAIRS 0
#endif

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

float swiglu_scalar(float x0, float x1) { return x0 / (1.0f + std::exp(-x0)) * x1; }

#if SWIGLU_VECTOR
constexpr int64_t kElemBytes(int32_t d) { return d == TEMPER_F32 ? 4 : 2; }
#endif

// Each vector instruction set below provides the same few pieces, which the shared row loop,
// deinterleave split and thread split after them use:
//   kLanes                       elements per vector;
//   kStepElems<D>                elements one step of a row's vector loop covers;
//   kStreamAlign<D>              output bytes a stream store must be aligned to;
//   partial<D>(x0, x1, out, j, n) elements j .. j + n - 1 of a row, 0 < n <= kLanes;
//   step<D, Stream>(x0, x1, out, j) elements j .. j + kStepElems<D> - 1 (Stream: stream stores);
//   deinterleave<D>(in, out, n)  [n, 2] pairs to n outputs.

#if SWIGLU_AVX512

// exp(x) for 1 + exp(x): clamp (NaN passes through min/max as ordered here), x = n ln2 + r, a
// polynomial of degree 6 in r on [-ln2/2, ln2/2] (about 1 ulp in fp32), then scalef, which gives
// inf above the range without integer exponent tricks.
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

// exp(-x0) for half-precision outputs (HALF_EXP_DEGREE 3 or 4), in base 2 and half the
// instructions: t = -x0 log2(e); reduce splits off f = t - floor(t) in [0, 1) in one instruction,
// a minimax polynomial gives 2^f, and scalef multiplies by 2^floor(t) (scalef floors its exponent
// itself). t is clamped at -125 so that no subnormal is made (a microcode assist each on Intel
// cores; 1 + 2^-125 is 1 all the same); reduce of an infinite t is 0 and scalef by +inf is inf, so
// inf and NaN inputs still give what the formula gives. Relative error: 7.7e-5 at degree 3 (an
// eighth of an fp16 ulp), 4.4e-6 at degree 4, plus t's rounding (6e-8 of t, 5e-6 at |x0| = 88).
template <int Degree>
inline __m512 exp_neg_base2(__m512 x0) {
  const __m512 t = _mm512_max_ps(_mm512_set1_ps(-125.0f), _mm512_mul_ps(x0, _mm512_set1_ps(-1.44269504088896341f)));
  const __m512 f = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p;
  if constexpr (Degree == 3) {
    p = _mm512_fmadd_ps(_mm512_set1_ps(7.802452147e-2f), f, _mm512_set1_ps(2.260671705e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.958335042e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.999251962e-1f));
  } else {
    p = _mm512_fmadd_ps(_mm512_set1_ps(1.353416778e-2f), f, _mm512_set1_ps(5.201146007e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.414427549e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.930038333e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.000002623f));
  }
  return _mm512_scalef_ps(p, t);
}

// Outputs of dtype D: fp16 and bf16 may take the short base-2 exponential (HALF_EXP_DEGREE 3, 4).
template <int32_t D>
inline __m512 swiglu_ps(__m512 x0, __m512 x1) {
  __m512 e;
  if constexpr (D != TEMPER_F32 && (HALF_EXP_DEGREE == 3 || HALF_EXP_DEGREE == 4)) {
    e = exp_neg_base2<HALF_EXP_DEGREE>(x0);
  } else {
    e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x0));
  }
  const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), e);
  return _mm512_mul_ps(_mm512_div_ps(x0, d), x1);
}

// fp32 -> bf16 with round to nearest even and quiet NaNs. BF16_CVT with AVX512-BF16: one
// instruction, which also flushes subnormal results (below 1.2e-38) to zero, far inside every
// tolerance; otherwise integer rounding, bit for bit temper_f32_to_bf16.
inline __m256i f32_to_bf16(__m512 v) {
#if BF16_CVT && defined(__AVX512BF16__)
  return (__m256i)_mm512_cvtneps_pbh(v);
#else
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(x, _mm512_set1_epi32(0x400000));
  const __m512i bits = _mm512_mask_mov_epi32(rounded, nan, quiet);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16));
#endif
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

// A full, 64-byte aligned vector store that bypasses the caches.
template <int32_t D>
inline void stream16(void* base, int64_t i, __m512 v) {
  if constexpr (D == TEMPER_F32) {
    _mm512_stream_ps(static_cast<float*>(base) + i, v);
  } else if constexpr (D == TEMPER_F16) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<uint16_t*>(base) + i),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(static_cast<uint16_t*>(base) + i), f32_to_bf16(v));
  }
}

#if SWIGLU_BF16_PAIRS
// 32 bf16 outputs from 32 x0 and 32 x1 (BF16_PAIRS): the even elements widen with a shift, the
// odd ones with a mask; the results round together into [even | odd] and one permute puts them
// back in order. Stream: a 64-byte aligned store that bypasses the caches.
template <bool Stream>
inline void bf16_pairs32(const char* x0, const char* x1, void* out, int64_t j) {
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                              22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i a = _mm512_loadu_si512(x0 + 2 * j);
  const __m512i b = _mm512_loadu_si512(x1 + 2 * j);
  const __m512 even = swiglu_ps<TEMPER_BF16>(_mm512_castsi512_ps(_mm512_slli_epi32(a, 16)),
                                             _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)));
  const __m512 odd = swiglu_ps<TEMPER_BF16>(_mm512_castsi512_ps(_mm512_and_si512(a, top)),
                                            _mm512_castsi512_ps(_mm512_and_si512(b, top)));
  const __m512i y = _mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(odd, even));
  uint16_t* o = static_cast<uint16_t*>(out) + j;
  if constexpr (Stream) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(o), y);
  } else {
    _mm512_storeu_si512(o, y);
  }
}
#endif

constexpr int64_t kLanes = 16;

// Elements one step of a row's vector loop covers: UNROLL vectors of 16, or of 32 bf16 pairs.
template <int32_t D>
constexpr int64_t kStepElems = (D == TEMPER_BF16 && SWIGLU_BF16_PAIRS ? 32 : 16) * UNROLL;

// Stream stores: 64 bytes of output per vector for fp32 and bf16 pairs, 32 for other halves.
template <int32_t D>
constexpr int64_t kStreamAlign = D == TEMPER_F32 || (D == TEMPER_BF16 && SWIGLU_BF16_PAIRS) ? 64 : 32;

// n <= 16 elements from j: one masked vector.
template <int32_t D>
inline void partial(const void* in0, const void* in1, void* out, int64_t j, int64_t n) {
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
  store16<D>(out, j, swiglu_ps<D>(load16<D>(in0, j, m), load16<D>(in1, j, m)), m);
}

template <int32_t D, bool Stream>
inline void step(const char* in0, const char* in1, void* out, int64_t j) {
#if SWIGLU_BF16_PAIRS
  if constexpr (D == TEMPER_BF16) {
    for (int u = 0; u < UNROLL; ++u) bf16_pairs32<Stream>(in0, in1, out, j + 32 * u);
    return;
  }
#endif
  for (int u = 0; u < UNROLL; ++u) {
    const __m512 y = swiglu_ps<D>(load16<D>(in0, j + 16 * u, 0xffff), load16<D>(in1, j + 16 * u, 0xffff));
    if constexpr (Stream) {
      stream16<D>(out, j + 16 * u, y);
    } else {
      store16<D>(out, j + 16 * u, y, 0xffff);
    }
  }
}

// [N, 2] split on the last axis: input pairs (x0, x1); 16 pairs are two vectors, separated by
// two permutes into the x0 lanes and the x1 lanes.
template <int32_t D>
void deinterleave(const void* in, void* out, int64_t n) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  int64_t i = 0;
  for (; i < n; i += 16) {
    const int64_t left = n - i < 16 ? n - i : 16;
    const __mmask16 lo = static_cast<__mmask16>(left >= 8 ? 0xffff : (1u << (2 * left)) - 1u);
    const __mmask16 hi = static_cast<__mmask16>(left <= 8 ? 0 : (1u << (2 * (left - 8))) - 1u);
    const __m512 a = load16<D>(in, 2 * i, lo);
    const __m512 b = load16<D>(in, 2 * i + 16, hi);
    const __m512 x0 = _mm512_permutex2var_ps(a, even, b);
    const __m512 x1 = _mm512_permutex2var_ps(a, odd, b);
    store16<D>(out, i, swiglu_ps<D>(x0, x1), static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1u));
  }
}

#elif SWIGLU_AVX2

// AVX2 + FMA + F16C: the AVX-512 section's arithmetic on 8 lanes. Neither scalef nor reduce
// exists here, so 2^n is built in the exponent bits and f = t - floor(t) is a subtraction; over
// the clamped ranges both are meant to give what the AVX-512 instructions give, bit for bit (by
// construction: no AVX-512 machine was at hand to compare them on).

// p * 2^n for an integral float n in [-125, 128]: 2^128 is no float, so 2^(n - 1) (a normal
// float for every such n) and then 2. Both products are exact, or the second overflows to inf
// exactly where scalef(p, n) does. A NaN n (from a NaN input) comes with a NaN p: NaN.
inline __m256 scale_pow2(__m256 p, __m256 n) {
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23);
  return _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
}

// exp(x) for 1 + exp(x), as exp_ps above: clamp to [-86, 89] (NaN passes through min/max as
// ordered here), degree 6 in r; n = round(x log2 e) lies in [-124, 128].
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

// exp(-x0) in base 2 (HALF_EXP_DEGREE 3 or 4), as exp_neg_base2 above. t is also clamped at
// 128.5 so that floor(t) fits scale_pow2 and f of an infinite t is not inf - inf: above 128.5
// the AVX-512 version gives inf (p(f) * 2^floor(t) overflows), and so does 2^128 * p(0.5).
template <int Degree>
inline __m256 exp_neg_base2(__m256 x0) {
  __m256 t = _mm256_max_ps(_mm256_set1_ps(-125.0f), _mm256_mul_ps(x0, _mm256_set1_ps(-1.44269504088896341f)));
  t = _mm256_min_ps(_mm256_set1_ps(128.5f), t);
  const __m256 fl = _mm256_floor_ps(t);
  const __m256 f = _mm256_sub_ps(t, fl);
  __m256 p;
  if constexpr (Degree == 3) {
    p = _mm256_fmadd_ps(_mm256_set1_ps(7.802452147e-2f), f, _mm256_set1_ps(2.260671705e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.958335042e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.999251962e-1f));
  } else {
    p = _mm256_fmadd_ps(_mm256_set1_ps(1.353416778e-2f), f, _mm256_set1_ps(5.201146007e-2f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.414427549e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.930038333e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.000002623f));
  }
  return scale_pow2(p, fl);
}

template <int32_t D>
inline __m256 swiglu_ps(__m256 x0, __m256 x1) {
  __m256 e;
  if constexpr (D != TEMPER_F32 && (HALF_EXP_DEGREE == 3 || HALF_EXP_DEGREE == 4)) {
    e = exp_neg_base2<HALF_EXP_DEGREE>(x0);
  } else {
    e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x0));
  }
  const __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), e);
  return _mm256_mul_ps(_mm256_div_ps(x0, d), x1);
}

// fp32 -> bf16, round to nearest even, NaNs quieted, bit for bit temper_f32_to_bf16: the bf16 in
// the top half of each 32-bit lane (the low half is left over from rounding).
inline __m256i bf16_round(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x400000));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

// 8 fp32 -> 8 bf16 in order.
inline __m128i f32_to_bf16(__m256 v) {
  const __m256i bits = _mm256_srli_epi32(bf16_round(v), 16);
  // Each 32-bit lane holds at most 0xffff, so the unsigned saturation never saturates.
  return _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
}

// 16 bf16 outputs from 16 x0 and 16 x1, as even and odd elements: a bf16 is the top half of an
// fp32, so a shift widens the even ones and a mask the odd ones, and the rounded results merge
// back in order with a shift and a mask (no widening or narrowing shuffles: they share the
// vector ports with the arithmetic, and bf16 rows were compute-bound on Zen 3 without this).
// Stream: a 32-byte aligned store that bypasses the caches.
template <bool Stream>
inline void bf16_pairs16(const char* x0, const char* x1, void* out, int64_t j) {
  const __m256i top = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + 2 * j));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1 + 2 * j));
  const __m256 even = swiglu_ps<TEMPER_BF16>(_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)),
                                             _mm256_castsi256_ps(_mm256_slli_epi32(b, 16)));
  const __m256 odd = swiglu_ps<TEMPER_BF16>(_mm256_castsi256_ps(_mm256_and_si256(a, top)),
                                            _mm256_castsi256_ps(_mm256_and_si256(b, top)));
  const __m256i y = _mm256_or_si256(_mm256_and_si256(bf16_round(odd), top), _mm256_srli_epi32(bf16_round(even), 16));
  __m256i* o = reinterpret_cast<__m256i*>(static_cast<uint16_t*>(out) + j);
  if constexpr (Stream) {
    _mm256_stream_si256(o, y);
  } else {
    _mm256_storeu_si256(o, y);
  }
}

// 8 fp16 or bf16 to fp32.
template <int32_t D>
inline __m256 widen(__m128i h) {
  if constexpr (D == TEMPER_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
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
inline __m128i to_half(__m256 v) {
  if constexpr (D == TEMPER_F16) return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return f32_to_bf16(v);
}

template <int32_t D>
inline void store8(void* base, int64_t i, __m256 v) {
  if constexpr (D == TEMPER_F32) {
    _mm256_storeu_ps(static_cast<float*>(base) + i, v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(base) + i), to_half<D>(v));
  }
}

// A full vector store that bypasses the caches: 32-byte aligned for fp32, 16 for halves.
template <int32_t D>
inline void stream8(void* base, int64_t i, __m256 v) {
  if constexpr (D == TEMPER_F32) {
    _mm256_stream_ps(static_cast<float*>(base) + i, v);
  } else {
    _mm_stream_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(base) + i), to_half<D>(v));
  }
}

constexpr int64_t kLanes = 8;

// Elements one step of a row's vector loop covers: UNROLL vectors of 8, or bf16 pairs of
// vectors of 8 (16 elements, bf16_pairs16).
template <int32_t D>
constexpr int64_t kStepElems = (D == TEMPER_BF16 ? 16 : 8) * UNROLL;

// Stream stores: 32 bytes of output per vector for fp32 and bf16 pairs, 16 for fp16.
template <int32_t D>
constexpr int64_t kStreamAlign = D == TEMPER_F16 ? 16 : 32;

// n <= 8 elements from j. fp32: maskload/maskstore (masked-off lanes read as 0 and never fault).
// Halves: AVX2 has no 16-bit masked moves, so the n / 2 whole 32-bit words move masked and an odd
// last element on its own. (A bounce buffer with memcpy took 6x as long on case 9, rows of 7.)
template <int32_t D>
inline void partial(const void* in0, const void* in1, void* out, int64_t j, int64_t n) {
  if constexpr (D == TEMPER_F32) {
    static constexpr int32_t kMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMask + 8 - n));
    const __m256 x0 = _mm256_maskload_ps(static_cast<const float*>(in0) + j, m);
    const __m256 x1 = _mm256_maskload_ps(static_cast<const float*>(in1) + j, m);
    _mm256_maskstore_ps(static_cast<float*>(out) + j, m, swiglu_ps<D>(x0, x1));
  } else {
    static constexpr int32_t kWords[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
    static constexpr int16_t kLast[15] = {0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0};
    const uint16_t* a = static_cast<const uint16_t*>(in0) + j;
    const uint16_t* b = static_cast<const uint16_t*>(in1) + j;
    uint16_t* o = static_cast<uint16_t*>(out) + j;
    const __m128i m = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kWords + 4 - n / 2));
    __m128i ha = _mm_maskload_epi32(reinterpret_cast<const int*>(a), m);
    __m128i hb = _mm_maskload_epi32(reinterpret_cast<const int*>(b), m);
    if (n & 1) { // element n - 1 into lane n - 1 (an insert takes only a constant lane)
      const __m128i last = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kLast + 8 - n));
      ha = _mm_or_si128(ha, _mm_and_si128(_mm_set1_epi16(static_cast<int16_t>(a[n - 1])), last));
      hb = _mm_or_si128(hb, _mm_and_si128(_mm_set1_epi16(static_cast<int16_t>(b[n - 1])), last));
    }
    const __m128i y = to_half<D>(swiglu_ps<D>(widen<D>(ha), widen<D>(hb)));
    _mm_maskstore_epi32(reinterpret_cast<int*>(o), m, y);
    if (n & 1) {
      alignas(16) uint16_t t[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(t), y);
      o[n - 1] = t[n - 1];
    }
  }
}

template <int32_t D, bool Stream>
inline void step(const char* in0, const char* in1, void* out, int64_t j) {
  if constexpr (D == TEMPER_BF16) {
    for (int u = 0; u < UNROLL; ++u) bf16_pairs16<Stream>(in0, in1, out, j + 16 * u);
    return;
  }
  for (int u = 0; u < UNROLL; ++u) {
    const __m256 y = swiglu_ps<D>(load8<D>(in0, j + 8 * u), load8<D>(in1, j + 8 * u));
    if constexpr (Stream) {
      stream8<D>(out, j + 8 * u, y);
    } else {
      store8<D>(out, j + 8 * u, y);
    }
  }
}

// 8 outputs from the 8 pairs at in[2 i ..]. bf16: a pair is one 32-bit lane, x0 in its low half
// and x1 in its high half, so a shift and a mask widen both, already in order. fp32 and fp16: two
// vectors of 4 pairs; shuffle_ps takes the even and the odd lanes of each 128-bit half, which
// leaves the pairs in the order 0 1 4 5 2 3 6 7, and one permute of the result restores it
// (the arithmetic is per lane, so it can run in the shuffled order).
template <int32_t D>
inline void pairs8(const void* in, void* out, int64_t i) {
  if constexpr (D == TEMPER_BF16) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(in) + 2 * i));
    const __m256 x0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    const __m256 x1 = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
    store8<D>(out, i, swiglu_ps<D>(x0, x1));
  } else {
    const __m256 a = load8<D>(in, 2 * i);
    const __m256 b = load8<D>(in, 2 * i + 8);
    const __m256 y = swiglu_ps<D>(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    store8<D>(out, i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(y), _MM_SHUFFLE(3, 1, 2, 0))));
  }
}

// [N, 2] split on the last axis: 8 pairs at a time, the last few through a zero-padded buffer.
template <int32_t D>
void deinterleave(const void* in, void* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) pairs8<D>(in, out, i);
  if (i < n) {
    const int64_t eb = kElemBytes(D);
    alignas(32) char a[16 * 4] = {};
    alignas(32) char y[8 * 4];
    std::memcpy(a, static_cast<const char*>(in) + 2 * i * eb, static_cast<size_t>(2 * (n - i) * eb));
    pairs8<D>(a, y, 0);
    std::memcpy(static_cast<char*>(out) + i * eb, y, static_cast<size_t>((n - i) * eb));
  }
}

#endif // SWIGLU_AVX2

#if SWIGLU_VECTOR

// Software prefetch PF_DIST bytes ahead in both input streams, carried across rows: the cursor
// runs through x0 and x1 of one row and then jumps to the next row (x0 of row r + 1 starts
// 2 * row_bytes after x0 of row r), so a short row's successor is already on its way when the
// hardware prefetcher would only start to train on it.
struct Prefetcher {
  const char* p0 = nullptr; // cursor in the x0 stream
  int64_t left = 0;         // bytes of the cursor's row still ahead of it
  int64_t row_bytes = 0;    // bytes of one half-row (x1 - x0)

  // Starts PF_DIST bytes ahead of the start of the row at x0 (rows further on when they are
  // short). Rows too short for the vector loop never step it: they skip the division.
  Prefetcher(const void* x0, int64_t row_bytes_, bool used) : row_bytes(row_bytes_) {
    if (PF_DIST == 0 || !used) return;
    const int64_t rows_ahead = PF_DIST / row_bytes, offset = PF_DIST % row_bytes;
    p0 = static_cast<const char*>(x0) + rows_ahead * 2 * row_bytes + offset;
    left = row_bytes - offset;
  }

  void step(int64_t bytes) {
    _mm_prefetch(p0, _MM_HINT_T0);
    _mm_prefetch(p0 + row_bytes, _MM_HINT_T0);
    p0 += bytes;
    left -= bytes;
    if (left <= 0) {
      p0 += row_bytes;
      left += row_bytes;
    }
  }
};

// One row: out[j] = f(x0[j], x1[j]) for j < half. `prefetch`: carry software prefetch into the
// following rows (x1 = x0 + half elements, rows 2 * half apart); off for a part of a row.
template <int32_t D, bool Stream>
void row(const void* x0, const void* x1, void* out, int64_t half, bool prefetch = true) {
  constexpr int64_t kStep = kStepElems<D>;
  Prefetcher pf(x0, half * kElemBytes(D), prefetch && half >= kStep);
  const auto* in0 = static_cast<const char*>(x0);
  const auto* in1 = static_cast<const char*>(x1);
  int64_t j = 0;
  if constexpr (Stream) {
    // Peel to the stream stores' alignment.
    const int64_t align = kStreamAlign<D>;
    const auto addr = reinterpret_cast<uintptr_t>(out);
    int64_t peel = static_cast<int64_t>((align - addr % align) % align) / kElemBytes(D);
    if (peel > half) peel = half;
    if (addr % kElemBytes(D) != 0) peel = half; // misaligned element: no streaming at all
    for (; j < peel; j += kLanes) partial<D>(in0, in1, out, j, peel - j < kLanes ? peel - j : kLanes);
    j = peel;
  }
  for (; j + kStep <= half; j += kStep) {
    if constexpr (PF_DIST > 0) pf.step(kStep * kElemBytes(D));
    step<D, Stream>(in0, in1, out, j);
  }
  for (; j < half; j += kLanes) partial<D>(in0, in1, out, j, half - j < kLanes ? half - j : kLanes);
}

template <int32_t D>
void rows(const void* in, void* out, int64_t outer, int64_t half, bool stream) {
  const int64_t eb = kElemBytes(D);
  for (int64_t r = 0; r < outer; ++r) {
    const char* x0 = static_cast<const char*>(in) + r * 2 * half * eb;
    char* y = static_cast<char*>(out) + r * half * eb;
    if (stream) {
      row<D, true>(x0, x0 + half * eb, y, half);
    } else {
      row<D, false>(x0, x0 + half * eb, y, half);
    }
  }
  if (stream) _mm_sfence();
}

// Columns [c0, c1) of every row: a share of rows too few to split by row.
template <int32_t D>
void column_block(const void* in, void* out, int64_t outer, int64_t half, int64_t c0, int64_t c1, bool stream) {
  const int64_t eb = kElemBytes(D);
  for (int64_t r = 0; r < outer; ++r) {
    const char* x0 = static_cast<const char*>(in) + (r * 2 * half + c0) * eb;
    char* y = static_cast<char*>(out) + (r * half + c0) * eb;
    if (stream) {
      row<D, true>(x0, x0 + half * eb, y, c1 - c0, false);
    } else {
      row<D, false>(x0, x0 + half * eb, y, c1 - c0, false);
    }
  }
  if (stream) _mm_sfence();
}

template <int32_t D>
void contiguous(const void* in, void* out, int64_t outer, int64_t half, int threads) {
  const int64_t eb = kElemBytes(D);
  const bool stream = NT_STORES && outer * half * eb >= (int64_t{NT_MIN_MB} << 20);
  if (outer * 2 * half * eb < (int64_t{PAR_MIN_KB} << 10)) threads = 1;
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  if (half == 1) {
    temper_parallel::parallel_for(threads, (outer + 15) / 16, [&](int64_t b, int64_t e) {
      deinterleave<D>(src + b * 32 * eb, dst + b * 16 * eb, std::min(e * 16, outer) - b * 16);
    });
  } else if (outer >= 8 * int64_t{threads}) { // whole rows, nearly balanced
    temper_parallel::parallel_for(threads, outer, [&](int64_t b, int64_t e) {
      rows<D>(src + b * 2 * half * eb, dst + b * half * eb, e - b, half, stream);
    });
  } else {
    temper_parallel::parallel_for(threads, (half + 63) / 64, [&](int64_t b, int64_t e) {
      column_block<D>(in, out, outer, half, b * 64, std::min(e * 64, half), stream);
    });
  }
}

#endif // SWIGLU_VECTOR

// Any strides, any rank: an odometer over the output index (the reference's walk).
void general(const temper_tensor& in, const temper_tensor& out, int32_t dim) {
  const int32_t rank = in.rank;
  const int64_t half_offset = out.shape[dim] * in.strides[dim];
  int64_t index[TEMPER_MAX_RANK] = {0};
  int64_t in_off = 0, out_off = 0;
  const int32_t last = rank - 1;
  const int64_t n_last = out.shape[last];
  for (;;) {
    for (int64_t i = 0; i < n_last; ++i) {
      const float x0 = load_scalar(in.data, in.dtype, in_off + i * in.strides[last]);
      const float x1 = load_scalar(in.data, in.dtype, in_off + half_offset + i * in.strides[last]);
      store_scalar(out.data, out.dtype, out_off + i * out.strides[last], swiglu_scalar(x0, x1));
    }
    int32_t k = last - 1;
    for (; k >= 0; --k) {
      if (++index[k] < out.shape[k]) {
        in_off += in.strides[k];
        out_off += out.strides[k];
        break;
      }
      in_off -= (out.shape[k] - 1) * in.strides[k];
      out_off -= (out.shape[k] - 1) * out.strides[k];
      index[k] = 0;
    }
    if (k < 0) break;
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
  if (temper_numel(&out) == 0) return 0;

#if SWIGLU_VECTOR
  if (temper_is_contiguous(&in) && temper_is_contiguous(&out)) {
    int64_t outer = 1, half = out.shape[dim];
    for (int32_t k = 0; k < dim; ++k) outer *= in.shape[k];
    for (int32_t k = static_cast<int32_t>(dim) + 1; k < rank; ++k) half *= in.shape[k];
    const int threads = args->num_threads > 1 ? args->num_threads : 1;
    switch (dtype) {
    case TEMPER_F16: contiguous<TEMPER_F16>(in.data, out.data, outer, half, threads); break;
    case TEMPER_BF16: contiguous<TEMPER_BF16>(in.data, out.data, outer, half, threads); break;
    default: contiguous<TEMPER_F32>(in.data, out.data, outer, half, threads); break;
    }
    return 0;
  }
#endif
  general(in, out, static_cast<int32_t>(dim));
  return 0;
}
