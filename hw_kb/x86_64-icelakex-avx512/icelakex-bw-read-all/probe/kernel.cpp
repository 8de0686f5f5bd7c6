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

// Block sums with four 512-bit accumulators; each 1024-element chunk is summed in float32 and
// added to a double total, so rounding stays far inside the tolerance.
static float block_sum(const float* p, int64_t block) {
  double total = 0;
  for (int64_t c = 0; c < block; c += 1024) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = c; i < c + 1024; i += 64) {
      a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
      a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
      a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
      a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    total += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  }
  return static_cast<float>(total);
}

TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* s = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0], block = temper_attr_int(args, "block", 65536);
  if (block % 1024 || n % block || reinterpret_cast<uintptr_t>(x) % 64) {
    args->set_error("block must be a multiple of 1024 dividing n, and x 64-byte aligned");
    return 1;
  }
  parallel(n / block, args->num_threads, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) s[b] = block_sum(x + b * block, block);
  });
  return 0;
}
