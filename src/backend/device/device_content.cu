// temper's device-content library (docs/cuda.md, "Timed calls on the device"): what
// temper-cuda-worker does on the GPU between timed calls, so that a call costs the kernel, the
// cold-L2 step and a few launches instead of host copies of every tensor.
//
//  - temper_dc_mix: a call's inputs, element by element from one of two host-generated draws
//    (the arena's input sets 0 and 1) as the bits of the call's seed say. Every element of a draw
//    is independent and identically distributed (core/inputs.h), so the mix is a draw of the
//    same distribution, and no two calls of a job share their content.
//  - temper_dc_hash: the outputs' hash, where they are, for the judge's identity proofs.
//
// backend/device_content.h computes both on the host, bit for bit; tests compare the two. The
// judge compiles this file with nvcc for the device at hand (through the compile cache) and the
// worker loads it beside the candidate. Plain CUDA C++: no library besides the runtime.
#include <cuda_runtime.h>
#include <stdint.h>

#define TEMPER_DC_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kLengthMix = 0x632be59bd9b4e019ULL;

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The 64 selection bits of elements [64 g, 64 g + 64): bit set = the element of draw 0.
__device__ __forceinline__ uint64_t group_bits(uint64_t seed, uint64_t g) { return mix64(seed + (g + 1) * kGamma); }

// 16 bytes at a time; EB bytes per element (1, 2, 4, 8 or 16), so a chunk's elements lie in one
// group of 64.
template <int EB>
__global__ void mix16(uint4* dst, const uint4* a, const uint4* b, uint64_t chunks, uint64_t seed) {
  for (uint64_t c = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; c < chunks; c += (uint64_t)gridDim.x * blockDim.x) {
    const uint64_t first = c * (16 / EB); // the chunk's first element
    const uint64_t bits = group_bits(seed, first >> 6) >> (first & 63);
    uint32_t m[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t mq = 0;
#pragma unroll
      for (int t = 0; t < 4; ++t) mq |= ((bits >> ((4 * q + t) / EB)) & 1) ? (0xFFu << (8 * t)) : 0u;
      m[q] = mq;
    }
    const uint4 x = a[c], y = b[c];
    dst[c] = make_uint4((x.x & m[0]) | (y.x & ~m[0]), (x.y & m[1]) | (y.y & ~m[1]), (x.z & m[2]) | (y.z & ~m[2]),
                        (x.w & m[3]) | (y.w & ~m[3]));
  }
}

// Byte by byte, from byte `begin`: the tail after the 16-byte chunks, or any element size.
__global__ void mix_bytes(unsigned char* dst, const unsigned char* a, const unsigned char* b, uint64_t begin, uint64_t bytes,
                          uint64_t eb, uint64_t seed) {
  for (uint64_t i = begin + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < bytes; i += (uint64_t)gridDim.x * blockDim.x) {
    const uint64_t e = i / eb;
    dst[i] = ((group_bits(seed, e >> 6) >> (e & 63)) & 1) ? a[i] : b[i];
  }
}

// The sum over 8-byte words w_j of mix64(w_j ^ (j + 1) * gamma), the last word zero-padded.
__global__ void hash_words(const unsigned char* p, uint64_t bytes, unsigned long long* acc) {
  const uint64_t words = bytes / 8;
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t sum = 0;
  const uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  for (uint64_t j = tid; j < words; j += (uint64_t)gridDim.x * blockDim.x) sum += mix64(w[j] ^ ((j + 1) * kGamma));
  if (tid == 0 && bytes % 8 != 0) {
    uint64_t last = 0;
    for (uint64_t k = 0; k < bytes % 8; ++k) last |= static_cast<uint64_t>(p[words * 8 + k]) << (8 * k);
    sum += mix64(last ^ ((words + 1) * kGamma));
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, static_cast<unsigned long long>(sum));
}

uint64_t host_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int grid_for(uint64_t items, int threads) {
  int sms = 0;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  uint64_t want = (items + threads - 1) / threads;
  uint64_t cap = static_cast<uint64_t>(sms > 0 ? sms : 1) * 8;
  return static_cast<int>(want < 1 ? 1 : want > cap ? cap : want);
}

unsigned long long* g_acc = nullptr;
int g_acc_count = 0;

} // namespace

TEMPER_DC_EXPORT int temper_dc_version() { return 1; }

// dst[i] = bit(i) ? a[i] : b[i] for every element (elem_bytes each) of `bytes` bytes.
TEMPER_DC_EXPORT int temper_dc_mix(void* dst, const void* a, const void* b, uint64_t bytes, int32_t elem_bytes, uint64_t seed,
                                   void* stream) {
  if (bytes == 0) return 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int threads = 256;
  const uint64_t eb = elem_bytes > 0 ? static_cast<uint64_t>(elem_bytes) : 1;
  const bool aligned = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15) == 0;
  uint64_t chunks = aligned && 16 % eb == 0 ? bytes / 16 : 0;
  if (chunks > 0) {
    const int grid = grid_for(chunks, threads);
    auto* d = static_cast<uint4*>(dst);
    auto* x = static_cast<const uint4*>(a);
    auto* y = static_cast<const uint4*>(b);
    switch (eb) {
    case 1: mix16<1><<<grid, threads, 0, s>>>(d, x, y, chunks, seed); break;
    case 2: mix16<2><<<grid, threads, 0, s>>>(d, x, y, chunks, seed); break;
    case 4: mix16<4><<<grid, threads, 0, s>>>(d, x, y, chunks, seed); break;
    case 8: mix16<8><<<grid, threads, 0, s>>>(d, x, y, chunks, seed); break;
    default: mix16<16><<<grid, threads, 0, s>>>(d, x, y, chunks, seed); break;
    }
  }
  const uint64_t begin = chunks * 16;
  if (begin < bytes) {
    mix_bytes<<<grid_for(bytes - begin, threads), threads, 0, s>>>(static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(a),
                                                                   static_cast<const unsigned char*>(b), begin, bytes, eb, seed);
  }
  return static_cast<int>(cudaGetLastError());
}

// One hash per buffer (each 8-byte aligned), combined in order into *out. Synchronizes `stream`.
TEMPER_DC_EXPORT int temper_dc_hash(const void* const* ptrs, const uint64_t* bytes, int32_t count, uint64_t* out, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (count > g_acc_count) {
    if (g_acc != nullptr) cudaFree(g_acc);
    g_acc = nullptr;
    g_acc_count = 0;
    if (cudaError_t e = cudaMalloc(&g_acc, sizeof(unsigned long long) * static_cast<size_t>(count)); e != cudaSuccess) return static_cast<int>(e);
    g_acc_count = count;
  }
  if (count > 0) {
    if (cudaError_t e = cudaMemsetAsync(g_acc, 0, sizeof(unsigned long long) * static_cast<size_t>(count), s); e != cudaSuccess)
      return static_cast<int>(e);
  }
  const int threads = 256;
  for (int32_t k = 0; k < count; ++k) {
    hash_words<<<grid_for(bytes[k] / 8 + 1, threads), threads, 0, s>>>(static_cast<const unsigned char*>(ptrs[k]), bytes[k], g_acc + k);
  }
  unsigned long long host[64];
  uint64_t h = 0;
  for (int32_t k0 = 0; k0 < count; k0 += 64) {
    const int32_t n = count - k0 < 64 ? count - k0 : 64;
    if (cudaError_t e = cudaMemcpyAsync(host, g_acc + k0, sizeof(unsigned long long) * static_cast<size_t>(n), cudaMemcpyDeviceToHost, s);
        e != cudaSuccess)
      return static_cast<int>(e);
    if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) return static_cast<int>(e);
    for (int32_t k = 0; k < n; ++k) h = host_mix64(h ^ host_mix64(static_cast<uint64_t>(host[k]) ^ (bytes[k0 + k] * kLengthMix)));
  }
  *out = h;
  return static_cast<int>(cudaGetLastError());
}
