// Input generation with a counter-based generator: element i of a tensor is a pure function of
// (seed, i), so blocks can be filled by any number of threads with the same result.
#include "core/inputs.h"

#include "core/dtype.h"

#include "util/hash.h"

#include <fmt/format.h>
#include <temper/half.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace temper::core {

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's output function: a bijective 64-bit mix with good avalanche.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The random word for element i: splitmix64's stream evaluated at position i.
uint64_t element_bits(uint64_t base, uint64_t i) { return mix64(base + (i + 1) * kGamma); }

// Uniform in [0, 1) from the top 53 bits.
double unit(uint64_t r) { return static_cast<double>(r >> 11) * 0x1p-53; }

// Finite values of a range with an infinite bound stay within ±kInfRangeFinite: large enough to
// exercise big magnitudes in every dtype, small enough that sums and differences of two inputs stay
// finite even in fp16, so infinities in outputs trace back to the infinite inputs.
constexpr double kInfRangeFinite = 1e4;
// Smallest magnitude drawn for finite values of such ranges.
constexpr double kInfRangeTiny = 0x1p-8;

double max_finite(Dtype d) {
  switch (d) {
  case Dtype::F16: return 65504.0;
  case Dtype::BF16: return 0x1.fep127;
  case Dtype::F32: return std::numeric_limits<float>::max();
  default: return std::numeric_limits<double>::max();
  }
}

// What to draw for every element of one tensor.
struct Plan {
  enum Kind { Constant, Uniform, InfMix, Integer } kind = Constant;
  double constant = 0;
  double lo = 0, hi = 0;         // Uniform, and the finite part of InfMix
  bool neg_inf = false, pos_inf = false;
  int64_t ilo = 0;               // Integer: ilo + [0, span)
  uint64_t span = 0;             // 0 means the full 2^64 (never used: int64 is capped at 2^53)
};

Plan make_plan(Dtype d, ValueRange r) {
  Plan p;
  if (std::isnan(r.lo) || std::isnan(r.hi)) {
    p.constant = std::numeric_limits<double>::quiet_NaN(); // stores 0 for integer dtypes
    return p;
  }
  if (r.lo > r.hi) std::swap(r.lo, r.hi);
  if (!is_floating(d)) {
    // Integer limits; int64 is capped at ±2^53 so the fp64 golden sees every value exactly.
    double tmin = 0, tmax = 0;
    switch (d) {
    case Dtype::I8: tmin = -128, tmax = 127; break;
    case Dtype::I16: tmin = -32768, tmax = 32767; break;
    case Dtype::I32: tmin = -2147483648.0, tmax = 2147483647.0; break;
    case Dtype::I64: tmin = -0x1p53, tmax = 0x1p53; break;
    case Dtype::U8: tmin = 0, tmax = 255; break;
    default: tmin = 0, tmax = 1; break; // bool
    }
    double lo = std::clamp(std::ceil(r.lo), tmin, tmax);
    double hi = std::clamp(std::floor(r.hi), tmin, tmax);
    if (lo > hi) { // no integer inside the range: the nearest one
      p.constant = std::clamp(std::nearbyint(r.lo), tmin, tmax);
      return p;
    }
    p.kind = Plan::Integer;
    p.ilo = static_cast<int64_t>(lo);
    p.span = static_cast<uint64_t>(static_cast<int64_t>(hi) - p.ilo) + 1;
    return p;
  }
  const double fmax = max_finite(d);
  if (r.lo == r.hi && std::isinf(r.lo)) { // [inf, inf]: every element that infinity
    p.constant = r.lo;
    return p;
  }
  if (std::isinf(r.lo) || std::isinf(r.hi)) {
    p.kind = Plan::InfMix;
    p.neg_inf = std::isinf(r.lo) && r.lo < 0;
    p.pos_inf = std::isinf(r.hi) && r.hi > 0;
    double cap = std::min(kInfRangeFinite, fmax);
    double lo = std::isinf(r.lo) ? (r.lo < 0 ? -cap : fmax) : std::clamp(r.lo, -fmax, fmax);
    double hi = std::isinf(r.hi) ? (r.hi > 0 ? cap : -fmax) : std::clamp(r.hi, -fmax, fmax);
    // A finite bound beyond the cap ([1e5, inf]): reach further out on the infinite side.
    if (lo > hi) {
      if (std::isinf(r.hi)) hi = std::min(fmax, 2 * lo);
      else lo = std::max(-fmax, 2 * hi);
    }
    p.lo = lo;
    p.hi = hi;
    return p;
  }
  double lo = std::clamp(r.lo, -fmax, fmax), hi = std::clamp(r.hi, -fmax, fmax);
  if (lo == hi) {
    p.constant = lo;
    return p;
  }
  p.kind = Plan::Uniform;
  p.lo = lo;
  p.hi = hi;
  return p;
}

// Magnitudes in [a, b] (0 <= a <= b) with every octave equally likely, so small and large values
// both appear. A lower bound of 0 starts at kInfRangeTiny (or well below b when b is tiny). Within
// an octave the spacing is linear (2^k * (1 + f) instead of 2^(k + f)): inputs only need the spread,
// and exp2 or ldexp per element would dominate the generation time.
struct LogUniform {
  double a = 0, b = 0, log2_ratio = 0;
  LogUniform() = default;
  LogUniform(double lo, double hi) : b(hi) {
    if (lo <= 0) lo = std::min(kInfRangeTiny, hi * 0x1p-10);
    a = std::min(lo, hi);
    log2_ratio = hi > a ? std::min(std::log2(hi / a), 1000.0) : 0.0;
  }
  double operator()(double u) const {
    double x = u * log2_ratio;
    double k = std::floor(x);
    // 2^k for 0 <= k <= 1000, straight from the exponent bits.
    uint64_t pow_bits = static_cast<uint64_t>(static_cast<int64_t>(k) + 1023) << 52;
    double pow2;
    std::memcpy(&pow2, &pow_bits, sizeof pow2);
    return std::min(b, a * (1 + (x - k)) * pow2);
  }
};

// The draw of an InfMix plan. Random bits select the side and whether the element is infinite
// through table lookups rather than branches, which would mispredict half of the time.
struct InfMixDraw {
  LogUniform side[2]; // magnitudes of the positive [0] and negative [1] finite values
  uint64_t side_mask = 0, side_fixed = 0;
  double inf_value[2] = {HUGE_VAL, -HUGE_VAL};
  uint64_t inf_mask = 0, inf_fixed = 0;
  bool any_inf = false;

  explicit InfMixDraw(const Plan& p) {
    bool has_neg = p.lo < 0, has_pos = p.hi > 0;
    side[0] = LogUniform(std::max(0.0, p.lo), std::max(0.0, p.hi));
    side[1] = LogUniform(std::max(0.0, -p.hi), std::max(0.0, -p.lo));
    side_mask = has_neg && has_pos ? 1 : 0;
    side_fixed = has_neg && !has_pos ? 1 : 0;
    inf_mask = p.neg_inf && p.pos_inf ? 1 : 0;
    inf_fixed = p.neg_inf && !p.pos_inf ? 1 : 0;
    any_inf = p.neg_inf || p.pos_inf;
  }
  double operator()(uint64_t r) const {
    // Bits 0-2: inf when zero (1 in 8); bit 3: its sign; bit 4: the finite value's side;
    // the top 53 bits: the magnitude.
    uint64_t s = ((r >> 4) & side_mask) | side_fixed;
    double mag = side[s](unit(r));
    double v = s ? -mag : mag;
    bool inf = any_inf && (r & 7) == 0;
    return inf ? inf_value[((r >> 3) & inf_mask) | inf_fixed] : v;
  }
};

// Fills elements [begin, end) of a tensor into `out`, which holds element `begin` (element type
// T); `conv` turns a drawn double into a T. The switch is outside the loops so each loop is a
// tight, inlinable body.
template <typename T, typename Conv>
void fill_typed(T* out, const Plan& p, uint64_t base, int64_t begin, int64_t end, Conv conv) {
  auto bits = [base](int64_t i) { return element_bits(base, static_cast<uint64_t>(i)); };
  switch (p.kind) {
  case Plan::Constant: break; // filled by the caller through store_double
  case Plan::Uniform: {
    const double lo = p.lo, hi = p.hi;
    for (int64_t i = begin; i < end; ++i) {
      double u = unit(bits(i));
      out[i - begin] = conv(lo * (1 - u) + hi * u); // no overflow for ranges as wide as the dtype
    }
    break;
  }
  case Plan::InfMix: {
    const InfMixDraw draw(p);
    for (int64_t i = begin; i < end; ++i) out[i - begin] = conv(draw(bits(i)));
    break;
  }
  case Plan::Integer: {
    for (int64_t i = begin; i < end; ++i) {
      // Multiply-shift maps 64 random bits onto [0, span) with negligible bias.
      auto off = static_cast<uint64_t>((static_cast<unsigned __int128>(bits(i)) * p.span) >> 64);
      out[i - begin] = conv(static_cast<double>(p.ilo + static_cast<int64_t>(off)));
    }
    break;
  }
  }
}

template <typename T, typename Conv>
void fill_as(unsigned char* data, const Plan& p, uint64_t base, int64_t begin, int64_t end, Conv conv) {
  fill_typed(reinterpret_cast<T*>(data) + begin, p, base, begin, end, conv);
}

// Half values through float (round to nearest even each step), a block of floats at a time.
void fill_f16(uint16_t* out, const Plan& p, uint64_t base, int64_t begin, int64_t end) {
  constexpr int64_t kBlock = 512;
  float block[kBlock];
  for (int64_t b = begin; b < end; b += kBlock) {
    const int64_t e = std::min(end, b + kBlock);
    fill_typed(block, p, base, b, e, [](double v) { return static_cast<float>(v); });
    floats_to_f16(block, out + (b - begin), static_cast<size_t>(e - b));
  }
}

// The Uniform plan eight elements at a time with AVX-512 (F and DQ: 64-bit multiplies and
// conversions), for the dtypes large cases use. Every step is the scalar one on eight lanes,
// each operation rounded as the scalar code rounds it: the arithmetic through the explicitly
// rounded forms, which no compiler fuses into an FMA (GCC contracts C++ by default, and the
// scalar code, built for any x86-64, has no FMA to contract into), so the bytes are the scalar
// path's (tested bit for bit). A timing job generates the values of
// every timed call, and on the scalar path generation cost about 1 ns an element.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TEMPER_INPUTS_AVX512 1
std::atomic<bool> g_vector_fill{true};

bool cpu_has_avx512dq() {
  // Every AVX-512 CPU has F16C (clang 14's __builtin_cpu_supports knows no "f16c").
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return yes;
}

// The zero-masked forms throughout: GCC 12 warns of the unmasked forms' undefined pass-through.
#define TEMPER_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,avx,f16c")))

// Elements i..i+7 of a Uniform plan as doubles.
TEMPER_AVX512_TARGET inline __m512d uniform8(uint64_t base, int64_t i, __m512d lo, __m512d hi) {
  const __m512i lane = _mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1); // i + 1 + lane
  __m512i z = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(i)), lane);
  z = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(base)),
                       _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(kGamma))));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_maskz_srli_epi64(0xFF, z, 30)), _mm512_set1_epi64(static_cast<long long>(0xbf58476d1ce4e5b9ULL)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_maskz_srli_epi64(0xFF, z, 27)), _mm512_set1_epi64(static_cast<long long>(0x94d049bb133111ebULL)));
  z = _mm512_xor_si512(z, _mm512_maskz_srli_epi64(0xFF, z, 31));
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512d u = _mm512_maskz_mul_round_pd(0xFF, _mm512_maskz_cvtepu64_pd(0xFF, _mm512_maskz_srli_epi64(0xFF, z, 11)),
                                              _mm512_set1_pd(0x1p-53), kNearest);
  const __m512d a = _mm512_maskz_mul_round_pd(0xFF, lo, _mm512_maskz_sub_round_pd(0xFF, _mm512_set1_pd(1.0), u, kNearest), kNearest);
  const __m512d b = _mm512_maskz_mul_round_pd(0xFF, hi, u, kNearest);
  return _mm512_maskz_add_round_pd(0xFF, a, b, kNearest);
}

// Elements [begin, end) into `data` (element `begin` at data[begin]); returns where the vector
// part ended (the scalar code does the rest).
TEMPER_AVX512_TARGET int64_t fill_uniform_avx512(unsigned char* data, Dtype dtype, const Plan& p, uint64_t base,
                                                 int64_t begin, int64_t end) {
  const __m512d lo = _mm512_set1_pd(p.lo), hi = _mm512_set1_pd(p.hi);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m512d v = uniform8(base, i, lo, hi);
    switch (dtype) {
    case Dtype::F64: _mm512_storeu_pd(reinterpret_cast<double*>(data) + i, v); break;
    case Dtype::F32: _mm256_storeu_ps(reinterpret_cast<float*>(data) + i, _mm512_maskz_cvtpd_ps(0xFF, v)); break;
    case Dtype::F16:
      _mm_storeu_si128(reinterpret_cast<__m128i*>(reinterpret_cast<uint16_t*>(data) + i),
                       _mm256_cvtps_ph(_mm512_maskz_cvtpd_ps(0xFF, v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      break;
    case Dtype::BF16: {
      // temper_f32_to_bf16 on eight lanes: round to nearest even, NaNs quieted.
      const __m256i x = _mm256_castps_si256(_mm512_maskz_cvtpd_ps(0xFF, v));
      const __m256i rounded = _mm256_srli_epi32(
          _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1)))), 16);
      const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(reinterpret_cast<uint16_t*>(data) + i),
                       _mm256_cvtepi32_epi16(_mm256_blendv_epi8(rounded, quiet, nan)));
      break;
    }
    default: return i;
    }
  }
  return i;
}
#endif

bool vector_fill(const HostTensor& t, const Plan& p) {
#ifdef TEMPER_INPUTS_AVX512
  const Dtype d = t.spec.dtype;
  return p.kind == Plan::Uniform && (d == Dtype::F64 || d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16) &&
         g_vector_fill.load(std::memory_order_relaxed) && cpu_has_avx512dq();
#else
  (void)t;
  (void)p;
  return false;
#endif
}

// Integer plans draw integers already inside the dtype's range.
template <typename T>
struct ToInt {
  T operator()(double v) const { return static_cast<T>(v); }
};

// Random draws go through float on the way to fp16/bf16 (half.h, round to nearest even each step):
// the rare double-rounding tie only matters for chosen values, and constants take store_double.
void fill_block(HostTensor& t, const Plan& p, uint64_t base, int64_t begin, int64_t end) {
  unsigned char* data = t.buffer.data();
  if (p.kind == Plan::Constant) {
    const size_t size = dtype_size(t.spec.dtype);
    store_double(data, t.spec.dtype, static_cast<size_t>(begin), p.constant);
    for (int64_t i = begin + 1; i < end; ++i)
      std::memcpy(data + static_cast<size_t>(i) * size, data + static_cast<size_t>(begin) * size, size);
    return;
  }
#ifdef TEMPER_INPUTS_AVX512
  if (vector_fill(t, p)) begin = fill_uniform_avx512(data, t.spec.dtype, p, base, begin, end);
#endif
  switch (t.spec.dtype) {
  case Dtype::F32: fill_as<float>(data, p, base, begin, end, [](double v) { return static_cast<float>(v); }); return;
  case Dtype::F64: fill_as<double>(data, p, base, begin, end, [](double v) { return v; }); return;
  case Dtype::F16: fill_f16(reinterpret_cast<uint16_t*>(data) + begin, p, base, begin, end); return;
  case Dtype::BF16:
    fill_as<uint16_t>(data, p, base, begin, end, [](double v) { return temper_f32_to_bf16(static_cast<float>(v)); });
    return;
  case Dtype::I8: fill_as<int8_t>(data, p, base, begin, end, ToInt<int8_t>{}); return;
  case Dtype::I16: fill_as<int16_t>(data, p, base, begin, end, ToInt<int16_t>{}); return;
  case Dtype::I32: fill_as<int32_t>(data, p, base, begin, end, ToInt<int32_t>{}); return;
  case Dtype::I64: fill_as<int64_t>(data, p, base, begin, end, ToInt<int64_t>{}); return;
  case Dtype::U8:
  case Dtype::Bool: fill_as<uint8_t>(data, p, base, begin, end, ToInt<uint8_t>{}); return;
  }
}

} // namespace

bool vector_fill_available() {
#ifdef TEMPER_INPUTS_AVX512
  return cpu_has_avx512dq();
#else
  return false;
#endif
}

void allow_vector_fill(bool allow) {
#ifdef TEMPER_INPUTS_AVX512
  g_vector_fill = allow;
#else
  (void)allow;
#endif
}

uint64_t derive_seed(uint64_t job_seed, int64_t case_id, int trial, int input_index) {
  // Each field enters through its own odd constant, so swapping fields gives unrelated seeds.
  uint64_t h = mix64(job_seed ^ 0x6a09e667f3bcc909ULL);
  h = mix64(h ^ (static_cast<uint64_t>(case_id) * 0xbb67ae8584caa73bULL));
  h = mix64(h ^ (static_cast<uint64_t>(static_cast<int64_t>(trial)) * 0x3c6ef372fe94f82bULL));
  h = mix64(h ^ (static_cast<uint64_t>(static_cast<int64_t>(input_index)) * 0xa54ff53a5f1d36f1ULL));
  return h;
}

std::string seed_id(uint64_t job_seed) {
  // A truncated digest of a padded message: many seeds share an id, and the id is not the
  // output of an invertible mix, so it names a job in reports without giving the seed away.
  std::string digest = util::hash_hex(fmt::format("temper seed id, version 1, seed {:016x}", job_seed));
  return digest.substr(0, 12);
}

void fill_input(HostTensor& t, const ValueRange& range, uint64_t seed) {
  const int64_t n = t.spec.numel();
  if (n <= 0) return;
  const Plan plan = make_plan(t.spec.dtype, range);
  const uint64_t base = mix64(seed);
  // Threads only above ~1M elements, each with at least 256K: spawning costs more below that.
  constexpr int64_t kParallelMin = int64_t{1} << 20, kMinPerThread = int64_t{1} << 18;
  int64_t threads = 1;
  if (n > kParallelMin)
    threads = std::clamp<int64_t>(n / kMinPerThread, 1, std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) {
    fill_block(t, plan, base, 0, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  const int64_t chunk = (n + threads - 1) / threads;
  for (int64_t k = 1; k < threads; ++k) {
    int64_t begin = std::min(n, k * chunk), end = std::min(n, begin + chunk);
    pool.emplace_back([&t, &plan, base, begin, end] { fill_block(t, plan, base, begin, end); });
  }
  fill_block(t, plan, base, 0, std::min(n, chunk));
  for (auto& th : pool) th.join();
}

std::vector<HostTensor> generate_inputs(const Operator& op, const Case& c, uint64_t job_seed, int trial) {
  std::vector<HostTensor> out;
  std::vector<TensorSpec> specs = c.input_specs(op);
  out.reserve(specs.size());
  for (auto& spec : specs) out.emplace_back(std::move(spec));
  regenerate_inputs(out, c, job_seed, trial);
  return out;
}

void regenerate_inputs(std::vector<HostTensor>& inputs, const Case& c, uint64_t job_seed, int trial) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ValueRange range = k < c.ranges.size() ? c.ranges[k] : ValueRange{};
    fill_input(inputs[k], range, derive_seed(job_seed, c.id, trial, static_cast<int>(k)));
  }
}

} // namespace temper::core
