#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

// 12 independent 512-bit FMA chains at a time (16 lanes each): a chain's next FMA waits for
// its previous one (the latency), independent chains overlap (the throughput).
constexpr int kAcc = 12;

TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0], iters = temper_attr_int(args, "iters", 250000);
  const __m512 a = _mm512_set1_ps(static_cast<float>(temper_attr_float(args, "a", 0.5)));
  const __m512 b = _mm512_set1_ps(static_cast<float>(temper_attr_float(args, "b", 1.0)));
  if (n % (16 * kAcc)) {
    args->set_error("length must be a multiple of 16 * accumulators");
    return 1;
  }
  for (int64_t g = 0; g < n; g += 16 * kAcc) {
    __m512 acc[kAcc];
    for (int k = 0; k < kAcc; ++k) acc[k] = _mm512_loadu_ps(x + g + 16 * k);
    for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
      for (int k = 0; k < kAcc; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
    }
    for (int k = 0; k < kAcc; ++k) _mm512_storeu_ps(y + g + 16 * k, acc[k]);
  }
  return 0;
}
