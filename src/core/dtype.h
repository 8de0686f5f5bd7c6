// Element types: names as proto.yaml spells them, sizes, and conversions to and from double.
#pragma once

#include <temper/kernel.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace temper::core {

// Values equal the ABI's temper_dtype.
enum class Dtype : int32_t {
  F32 = TEMPER_F32,
  F16 = TEMPER_F16,
  BF16 = TEMPER_BF16,
  F64 = TEMPER_F64,
  I8 = TEMPER_I8,
  I16 = TEMPER_I16,
  I32 = TEMPER_I32,
  I64 = TEMPER_I64,
  U8 = TEMPER_U8,
  Bool = TEMPER_BOOL,
};

// Accepts the proto.yaml names (float16, bfloat16, float32, float64, int8..int64, uint8, bool)
// and common aliases (fp16, half, bf16, fp32, float, fp64, double).
std::optional<Dtype> parse_dtype(std::string_view name);
std::string_view dtype_name(Dtype d); // canonical: float16, bfloat16, float32, ...
size_t dtype_size(Dtype d);
bool is_floating(Dtype d);

// Element i of a dense buffer of dtype d, widened to double (exact for every supported dtype
// except int64 beyond 2^53).
double load_double(const void* data, Dtype d, size_t i);
// Elements [0, n) of a dense buffer of dtype d widened into out, each bit for bit
// load_double(data, d, i): the dtype resolved once, not per element (a large case's output is
// 10^8 elements).
void widen_to_double(const void* data, Dtype d, size_t n, double* out);

// Stores v into element i, rounding to nearest even for fp16/bf16/fp32 (inf and NaN kept) and
// rounding then saturating for integers (NaN stores 0).
void store_double(void* data, Dtype d, size_t i, double v);

// v rounded to d exactly as store_double then load_double would give it (round to nearest even,
// saturating for integers), without the round trip through memory: the comparison's inner loop.
double round_to_dtype(Dtype d, double v);
// in[0, n) rounded into out, each bit for bit round_to_dtype(d, in[i]) except that a NaN may
// come back with another payload: the dtype resolved once, and fp16 through F16C where the CPU
// has it (a large case's golden is 10^8 elements, rounded on every comparison).
void round_to_dtype_all(Dtype d, const double* in, size_t n, double* out);

// floats to IEEE half, out[i] bit for bit temper_f32_to_f16(in[i]) (round to nearest even,
// overflow to infinity, subnormals rounded, a NaN quieted with its sign and top payload bits);
// by the F16C instruction where the CPU has it, several times faster than one at a time.
void floats_to_f16(const float* in, uint16_t* out, size_t n);

} // namespace temper::core
