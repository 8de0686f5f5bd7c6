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

// Block sums with four 256-bit (AVX2) accumulators; each 1024-element chunk is summed in float32
// and added to a double total, so rounding stays far inside the tolerance.
static float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static float block_sum(const float* p, int64_t block) {
  double total = 0;
  for (int64_t c = 0; c < block; c += 1024) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = c; i < c + 1024; i += 32) {
      a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
      a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
      a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
      a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    }
    total += hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
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
  parallel(n / block, 1, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) s[b] = block_sum(x + b * block, block);
  });
  return 0;
}
