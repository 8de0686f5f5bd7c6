#include "backend/device_content.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace temper::backend::device_content {

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kLengthMix = 0x632be59bd9b4e019ULL;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t group_bits(uint64_t seed, uint64_t g) { return mix64(seed + (g + 1) * kGamma); }

constexpr std::string_view kSource =
#include "device_content_source.inc"
    ;

} // namespace

std::string_view library_source() { return kSource; }

bool takes_first(uint64_t seed, uint64_t element) { return (group_bits(seed, element >> 6) >> (element & 63)) & 1; }

namespace {

// Groups [g0, g1) of 64 elements.
void mix_groups(unsigned char* dst, const unsigned char* a, const unsigned char* b, size_t elements, size_t elem_bytes,
                uint64_t seed, size_t g0, size_t g1) {
  for (size_t g = g0; g < g1 && g * 64 < elements; ++g) {
    const uint64_t bits = group_bits(seed, g);
    const size_t end = std::min(elements, (g + 1) * 64);
    for (size_t e = g * 64; e < end; ++e) {
      const size_t off = e * elem_bytes;
      const unsigned char* src = ((bits >> (e & 63)) & 1) ? a + off : b + off;
      if (src != dst + off) std::memcpy(dst + off, src, elem_bytes); // dst may be a or b
    }
  }
}

} // namespace

void mix(unsigned char* dst, const unsigned char* a, const unsigned char* b, size_t bytes, size_t elem_bytes, uint64_t seed) {
  if (elem_bytes == 0) elem_bytes = 1;
  const size_t elements = bytes / elem_bytes;
  const size_t groups = (elements + 63) / 64;
  // Large tensors (the sampled check rebuilds hundreds of megabytes) on every core.
  const size_t threads = bytes < (size_t{8} << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  if (threads == 1) {
    mix_groups(dst, a, b, elements, elem_bytes, seed, 0, groups);
  } else {
    std::vector<std::thread> pool;
    const size_t per = (groups + threads - 1) / threads;
    for (size_t t = 0; t < threads; ++t)
      pool.emplace_back(mix_groups, dst, a, b, elements, elem_bytes, seed, t * per, std::min(groups, (t + 1) * per));
    for (auto& th : pool) th.join();
  }
  // A partial element at the end (never for tensors): byte by byte, as the device does.
  for (size_t i = elements * elem_bytes; i < bytes; ++i) dst[i] = takes_first(seed, i / elem_bytes) ? a[i] : b[i];
}

uint64_t hash_bytes(const unsigned char* p, size_t bytes) {
  const size_t words = bytes / 8;
  uint64_t sum = 0;
  for (size_t j = 0; j < words; ++j) {
    uint64_t w;
    std::memcpy(&w, p + 8 * j, 8);
    sum += mix64(w ^ ((j + 1) * kGamma));
  }
  if (bytes % 8 != 0) {
    uint64_t last = 0;
    for (size_t k = 0; k < bytes % 8; ++k) last |= static_cast<uint64_t>(p[words * 8 + k]) << (8 * k);
    sum += mix64(last ^ ((words + 1) * kGamma));
  }
  return sum;
}

uint64_t combine(uint64_t h, uint64_t buffer_hash, size_t buffer_bytes) {
  return mix64(h ^ mix64(buffer_hash ^ (static_cast<uint64_t>(buffer_bytes) * kLengthMix)));
}

uint64_t call_seed(uint64_t job_seed, int64_t case_id, int content) {
  // Apart from every other use of the job seed (core::derive_seed's inputs, the sampled check).
  return mix64(mix64(job_seed ^ 0x6465766963652d63ULL) + static_cast<uint64_t>(case_id) * kGamma +
               static_cast<uint64_t>(content) * 0xd1b54a32d192ed03ULL);
}

} // namespace temper::backend::device_content
