#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

// y[j] = x[j * stride]: one read per stride, without software prefetch.
constexpr int64_t kDistance = 32;

TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t stride = temper_attr_int(args, "stride", 1040), m = args->outputs[0].shape[0];
  (void)kDistance;
  for (int64_t j = 0; j < m; ++j) {
    y[j] = x[j * stride];
  }
  return 0;
}
