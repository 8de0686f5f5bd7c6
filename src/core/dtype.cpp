#include "core/dtype.h"

#include <temper/half.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace temper::core {

std::optional<Dtype> parse_dtype(std::string_view n) {
  if (n == "float16" || n == "fp16" || n == "half") return Dtype::F16;
  if (n == "bfloat16" || n == "bf16") return Dtype::BF16;
  if (n == "float32" || n == "fp32" || n == "float") return Dtype::F32;
  if (n == "float64" || n == "fp64" || n == "double") return Dtype::F64;
  if (n == "int8") return Dtype::I8;
  if (n == "int16") return Dtype::I16;
  if (n == "int32") return Dtype::I32;
  if (n == "int64") return Dtype::I64;
  if (n == "uint8") return Dtype::U8;
  if (n == "bool") return Dtype::Bool;
  return std::nullopt;
}

std::string_view dtype_name(Dtype d) {
  switch (d) {
  case Dtype::F32: return "float32";
  case Dtype::F16: return "float16";
  case Dtype::BF16: return "bfloat16";
  case Dtype::F64: return "float64";
  case Dtype::I8: return "int8";
  case Dtype::I16: return "int16";
  case Dtype::I32: return "int32";
  case Dtype::I64: return "int64";
  case Dtype::U8: return "uint8";
  case Dtype::Bool: return "bool";
  }
  return "?";
}

size_t dtype_size(Dtype d) {
  switch (d) {
  case Dtype::F64:
  case Dtype::I64: return 8;
  case Dtype::F32:
  case Dtype::I32: return 4;
  case Dtype::F16:
  case Dtype::BF16:
  case Dtype::I16: return 2;
  case Dtype::I8:
  case Dtype::U8:
  case Dtype::Bool: return 1;
  }
  return 1;
}

bool is_floating(Dtype d) {
  return d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F64;
}

namespace {
template <typename T>
T load_as(const void* data, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void store_as(void* data, size_t i, T v) {
  std::memcpy(static_cast<unsigned char*>(data) + i * sizeof(T), &v, sizeof(T));
}
template <typename T>
T saturate(double v) {
  if (std::isnan(v)) return T(0);
  double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

// double -> float with round-to-odd: a following round-to-nearest-even to fp16 or bf16 (both far
// narrower than float) then equals a direct correctly rounded conversion, with no double rounding.
float to_float_round_odd(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(f) || static_cast<double>(f) == v) return f;
  uint32_t b = temper_f32_bits(f);
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) b -= 1; // truncate toward zero
  return temper_bits_f32(b | 1u);
}
uint16_t double_to_f16(double v) { return temper_f32_to_f16(to_float_round_odd(v)); }
uint16_t double_to_bf16(double v) { return temper_f32_to_bf16(to_float_round_odd(v)); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx,f16c"))) void floats_to_f16_f16c(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) out[i] = temper_f32_to_f16(in[i]);
}
// CPUID's F16C and AVX bits and the OS saving the YMM state (clang 14's __builtin_cpu_supports
// knows no "f16c").
bool have_f16c() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    if (!(c & bit_F16C) || !(c & bit_AVX) || !(c & bit_OSXSAVE)) return false;
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
  }();
  return yes;
}
#endif
} // namespace

void floats_to_f16(const float* in, uint16_t* out, size_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (have_f16c()) {
    floats_to_f16_f16c(in, out, n);
    return;
  }
#endif
  for (size_t i = 0; i < n; ++i) out[i] = temper_f32_to_f16(in[i]);
}

double load_double(const void* data, Dtype d, size_t i) {
  switch (d) {
  case Dtype::F32: return load_as<float>(data, i);
  case Dtype::F64: return load_as<double>(data, i);
  case Dtype::F16: return temper_f16_to_f32(load_as<uint16_t>(data, i));
  case Dtype::BF16: return temper_bf16_to_f32(load_as<uint16_t>(data, i));
  case Dtype::I8: return load_as<int8_t>(data, i);
  case Dtype::I16: return load_as<int16_t>(data, i);
  case Dtype::I32: return load_as<int32_t>(data, i);
  case Dtype::I64: return static_cast<double>(load_as<int64_t>(data, i));
  case Dtype::U8:
  case Dtype::Bool: return load_as<uint8_t>(data, i);
  }
  return 0;
}

namespace {
template <typename T, typename Widen>
void widen_all(const void* data, size_t n, double* out, Widen widen) {
  for (size_t i = 0; i < n; ++i) out[i] = widen(load_as<T>(data, i));
}
} // namespace

void widen_to_double(const void* data, Dtype d, size_t n, double* out) {
  auto plain = [](auto v) { return static_cast<double>(v); };
  switch (d) {
  case Dtype::F32: return widen_all<float>(data, n, out, plain);
  case Dtype::F64: return widen_all<double>(data, n, out, plain);
  case Dtype::F16: return widen_all<uint16_t>(data, n, out, [](uint16_t v) { return double(temper_f16_to_f32(v)); });
  case Dtype::BF16: return widen_all<uint16_t>(data, n, out, [](uint16_t v) { return double(temper_bf16_to_f32(v)); });
  case Dtype::I8: return widen_all<int8_t>(data, n, out, plain);
  case Dtype::I16: return widen_all<int16_t>(data, n, out, plain);
  case Dtype::I32: return widen_all<int32_t>(data, n, out, plain);
  case Dtype::I64: return widen_all<int64_t>(data, n, out, plain);
  case Dtype::U8:
  case Dtype::Bool: return widen_all<uint8_t>(data, n, out, plain);
  }
}

void store_double(void* data, Dtype d, size_t i, double v) {
  switch (d) {
  case Dtype::F32: store_as<float>(data, i, static_cast<float>(v)); return;
  case Dtype::F64: store_as<double>(data, i, v); return;
  case Dtype::F16: store_as<uint16_t>(data, i, double_to_f16(v)); return;
  case Dtype::BF16: store_as<uint16_t>(data, i, double_to_bf16(v)); return;
  case Dtype::I8: store_as<int8_t>(data, i, saturate<int8_t>(v)); return;
  case Dtype::I16: store_as<int16_t>(data, i, saturate<int16_t>(v)); return;
  case Dtype::I32: store_as<int32_t>(data, i, saturate<int32_t>(v)); return;
  case Dtype::I64: store_as<int64_t>(data, i, saturate<int64_t>(v)); return;
  case Dtype::U8: store_as<uint8_t>(data, i, saturate<uint8_t>(v)); return;
  case Dtype::Bool: store_as<uint8_t>(data, i, static_cast<uint8_t>(v != 0 && !std::isnan(v))); return;
  }
}

namespace {
template <typename T>
void saturate_all(const double* in, size_t n, double* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(saturate<T>(in[i]));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx,f16c"))) void halves_to_doubles_f16c(const uint16_t* in, double* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
  }
  for (; i < n; ++i) out[i] = temper_f16_to_f32(in[i]);
}
#endif

void round_to_f16_all(const double* in, size_t n, double* out) {
  constexpr size_t kChunk = 512;
  float f[kChunk];
  uint16_t h[kChunk];
  for (size_t at = 0; at < n; at += kChunk) {
    const size_t m = std::min(kChunk, n - at);
    for (size_t i = 0; i < m; ++i) f[i] = to_float_round_odd(in[at + i]);
    floats_to_f16(f, h, m);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (have_f16c()) {
      halves_to_doubles_f16c(h, out + at, m);
      continue;
    }
#endif
    for (size_t i = 0; i < m; ++i) out[at + i] = temper_f16_to_f32(h[i]);
  }
}
} // namespace

void round_to_dtype_all(Dtype d, const double* in, size_t n, double* out) {
  switch (d) {
  case Dtype::F64: std::copy(in, in + n, out); return;
  case Dtype::F32:
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
    return;
  case Dtype::F16: return round_to_f16_all(in, n, out);
  case Dtype::BF16:
    for (size_t i = 0; i < n; ++i) out[i] = temper_bf16_to_f32(double_to_bf16(in[i]));
    return;
  case Dtype::I8: return saturate_all<int8_t>(in, n, out);
  case Dtype::I16: return saturate_all<int16_t>(in, n, out);
  case Dtype::I32: return saturate_all<int32_t>(in, n, out);
  case Dtype::I64: return saturate_all<int64_t>(in, n, out);
  case Dtype::U8: return saturate_all<uint8_t>(in, n, out);
  case Dtype::Bool:
    for (size_t i = 0; i < n; ++i) out[i] = in[i] != 0 && !std::isnan(in[i]) ? 1.0 : 0.0;
    return;
  }
}

double round_to_dtype(Dtype d, double v) {
  switch (d) {
  case Dtype::F64: return v;
  case Dtype::F32: return static_cast<float>(v);
  case Dtype::F16: return temper_f16_to_f32(double_to_f16(v));
  case Dtype::BF16: return temper_bf16_to_f32(double_to_bf16(v));
  case Dtype::I8: return saturate<int8_t>(v);
  case Dtype::I16: return saturate<int16_t>(v);
  case Dtype::I32: return saturate<int32_t>(v);
  case Dtype::I64: return static_cast<double>(saturate<int64_t>(v));
  case Dtype::U8: return saturate<uint8_t>(v);
  case Dtype::Bool: return v != 0 && !std::isnan(v) ? 1.0 : 0.0;
  }
  return v;
}

} // namespace temper::core
