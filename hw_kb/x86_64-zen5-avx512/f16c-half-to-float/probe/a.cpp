#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

// float16 -> float32 in portable scalar code (temper/half.h's bit manipulation), as a kernel
// written without intrinsics does it; the compiler is free to vectorize what it can.
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const uint16_t* x = static_cast<const uint16_t*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0];
  for (int64_t i = 0; i < n; ++i) y[i] = temper_f16_to_f32(x[i]);
  return 0;
}
