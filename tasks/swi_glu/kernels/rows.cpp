// SwiGlu, architecture "rows": a contiguous input split at `dim` is a stack of rows
// [x0 | x1], each 2 * half elements long (half = shape[dim] / 2 * the product of the dims after
// dim), so every contiguous case is one streaming loop over rows, whatever its rank and split
// axis. The host picks one of three paths in constant time:
//   - rows:        half >= 2, AVX-512 over each row, masked tail (a short row is one masked vector);
//   - deinterleave: half == 1, a last axis of size 2 ([N, 2] split on dim 1): x0 and x1 alternate,
//                  so 16 outputs come from two vectors separated with one permute each;
//   - general:     non-contiguous tensors, or no AVX-512 at compile time: one element at a time.
// Every element is x0 / (1 + exp(-x0)) * x1 in fp32, rounded once when stored, like the task's
// definition; exp is a Cephes-style polynomial (about 1 ulp) with exact IEEE division, so inf
// and NaN inputs give what the scalar formula gives.
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
// UNROLL: vectors of 16 elements per loop iteration. NT_STORES: non-temporal stores for outputs
// of at least NT_MIN_MB MiB, so a large output does not evict the inputs it streams past. The
// constraint keeps NT_MIN_MB at its default where it has no effect (regular stores). PF_DIST:
// bytes of software prefetch ahead in x0 and x1, carried into the next rows (0: none); the
// hardware prefetcher retrains on every new row, which costs short rows half their bandwidth.
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
#include <temper/half.h>
#include <temper/kernel.h>
#include <temper/parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>
#define SWIGLU_AVX512 1
#else
#define SWIGLU_AVX512 0
#endif

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

constexpr int64_t kElemBytes(int32_t d) { return d == TEMPER_F32 ? 4 : 2; }

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

// Elements one step of a row's vector loop covers: UNROLL vectors of 16, or of 32 bf16 pairs.
template <int32_t D>
constexpr int64_t kStepElems = (D == TEMPER_BF16 && SWIGLU_BF16_PAIRS ? 32 : 16) * UNROLL;

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
  constexpr bool kPairs = D == TEMPER_BF16 && SWIGLU_BF16_PAIRS;
  Prefetcher pf(x0, half * kElemBytes(D), prefetch && half >= kStep);
  const auto* in0 = static_cast<const char*>(x0);
  const auto* in1 = static_cast<const char*>(x1);
  int64_t j = 0;
  if constexpr (Stream) {
    // Peel to the stream stores' alignment: 64 bytes of output per vector for fp32 and bf16 pairs,
    // 32 for other halves.
    const int64_t align = D == TEMPER_F32 || kPairs ? 64 : 32;
    const auto addr = reinterpret_cast<uintptr_t>(out);
    int64_t peel = static_cast<int64_t>((align - addr % align) % align) / kElemBytes(D);
    if (peel > half) peel = half;
    if (addr % kElemBytes(D) != 0) peel = half; // misaligned element: no streaming at all
    for (; j < peel; j += 16) {
      const int64_t n = peel - j < 16 ? peel - j : 16;
      const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
      store16<D>(out, j, swiglu_ps<D>(load16<D>(in0, j, m), load16<D>(in1, j, m)), m);
    }
    j = peel;
  }
  for (; j + kStep <= half; j += kStep) {
    if constexpr (PF_DIST > 0) pf.step(kStep * kElemBytes(D));
#if SWIGLU_BF16_PAIRS
    if constexpr (kPairs) {
      for (int u = 0; u < UNROLL; ++u) bf16_pairs32<Stream>(in0, in1, out, j + 32 * u);
      continue;
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
  for (; j < half; j += 16) {
    const int64_t n = half - j < 16 ? half - j : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
    store16<D>(out, j, swiglu_ps<D>(load16<D>(in0, j, m), load16<D>(in1, j, m)), m);
  }
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

#endif // SWIGLU_AVX512

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

#if SWIGLU_AVX512
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
