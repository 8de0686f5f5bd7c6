#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

// float32 -> bfloat16 (round to nearest even, NaN kept quiet) in portable scalar code
// (temper/half.h); the compiler is free to vectorize what it can.
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  uint16_t* y = static_cast<uint16_t*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0];
  for (int64_t i = 0; i < n; ++i) y[i] = temper_f32_to_bf16(x[i]);
  return 0;
}
