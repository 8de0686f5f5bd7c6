#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

// Splits [0, n) into `threads` contiguous parts (multiples of grain) and runs them in parallel.
template <typename F>
static void parallel(int64_t n, int threads, int64_t grain, F body) {
  if (threads <= 1) {
    body(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t units = n / grain, per = units / threads, extra = units % threads;
  int64_t begin = 0;
  for (int t = 0; t < threads; ++t) {
    const int64_t end = begin + (per + (t < extra ? 1 : 0)) * grain;
    if (t == threads - 1) pool.emplace_back(body, begin, n);
    else pool.emplace_back(body, begin, end);
    begin = end;
  }
  for (auto& th : pool) th.join();
}

// Writes the 16-element pattern with 512-bit stores (regular stores: the write allocates).
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* v = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->outputs[0].shape[0];
  const __m512 pattern = _mm512_loadu_ps(v);
  parallel(n, 1, 64, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i += 64) {
      _mm512_storeu_ps(y + i, pattern);
      _mm512_storeu_ps(y + i + 16, pattern);
      _mm512_storeu_ps(y + i + 32, pattern);
      _mm512_storeu_ps(y + i + 48, pattern);
    }
  });
  return 0;
}
