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

// STREAM triad with 512-bit loads and regular stores.
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* b = static_cast<const float*>(args->inputs[0].data);
  const float* c = static_cast<const float*>(args->inputs[1].data);
  float* a = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0];
  const __m512 s = _mm512_set1_ps(static_cast<float>(temper_attr_float(args, "s", 3.0)));
  parallel(n, args->num_threads, 64, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i += 16) _mm512_storeu_ps(a + i, _mm512_fmadd_ps(s, _mm512_loadu_ps(c + i), _mm512_loadu_ps(b + i)));
  });
  return 0;
}
