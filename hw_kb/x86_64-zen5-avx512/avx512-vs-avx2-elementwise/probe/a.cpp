#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

// y = x * a + b with 256-bit AVX2 loads, FMAs and stores, unrolled four times.
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0];
  const float af = static_cast<float>(temper_attr_float(args, "a", 1.5)), bf = static_cast<float>(temper_attr_float(args, "b", 0.25));
  const __m256 a = _mm256_set1_ps(af), b = _mm256_set1_ps(bf);
  if (n % 64) {
    args->set_error("length must be a multiple of 64");
    return 1;
  }
  for (int64_t i = 0; i < n; i += 32) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), a, b));
    _mm256_storeu_ps(y + i + 8, _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), a, b));
    _mm256_storeu_ps(y + i + 16, _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), a, b));
    _mm256_storeu_ps(y + i + 24, _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), a, b));
  }
  return 0;
}
