#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

// 12 independent 512-bit FMA chains at a time (16 lanes each): a chain's next FMA waits for
// its previous one (the latency), independent chains overlap (the throughput).
constexpr int kAcc = 12;

// Each thread runs its own groups of chains (the length is split in whole groups).
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
  auto chains = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; g += 16 * kAcc) {
      __m512 acc[kAcc];
      for (int k = 0; k < kAcc; ++k) acc[k] = _mm512_loadu_ps(x + g + 16 * k);
      for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
        for (int k = 0; k < kAcc; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
      }
      for (int k = 0; k < kAcc; ++k) _mm512_storeu_ps(y + g + 16 * k, acc[k]);
    }
  };
  const int64_t groups = n / (16 * kAcc);
  const int threads = static_cast<int>(std::min<int64_t>(args->num_threads > 0 ? args->num_threads : 1, groups));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(chains, groups * t / threads * 16 * kAcc, groups * (t + 1) / threads * 16 * kAcc);
  chains(0, groups / threads * 16 * kAcc);
  for (auto& th : pool) th.join();
  return 0;
}
