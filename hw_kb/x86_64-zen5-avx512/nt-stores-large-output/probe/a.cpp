#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

// y = x * a + b with 512-bit AVX-512 loads, FMAs and regular stores, unrolled four times.
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0];
  const float af = static_cast<float>(temper_attr_float(args, "a", 1.5)), bf = static_cast<float>(temper_attr_float(args, "b", 0.25));
  const __m512 a = _mm512_set1_ps(af), b = _mm512_set1_ps(bf);
  if (n % 64) {
    args->set_error("length must be a multiple of 64");
    return 1;
  }
  for (int64_t i = 0; i < n; i += 64) {
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_loadu_ps(x + i), a, b));
    _mm512_storeu_ps(y + i + 16, _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), a, b));
    _mm512_storeu_ps(y + i + 32, _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), a, b));
    _mm512_storeu_ps(y + i + 48, _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), a, b));
  }
  return 0;
}
