#include "util/streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define TEMPER_HAVE_STREAM_STORES 1
#endif

namespace temper::util {

#ifdef TEMPER_HAVE_STREAM_STORES
namespace {

// Bytes up to the next 16-byte boundary of `p` (at most n).
size_t head_bytes(const void* p, size_t n) {
  const auto misalign = reinterpret_cast<uintptr_t>(p) & 15u;
  return misalign == 0 ? 0 : std::min<size_t>(16 - misalign, n);
}

} // namespace

void copy_streaming(void* dst, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const size_t head = head_bytes(d, n);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 64; d += 64, s += 64, n -= 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  for (; n >= 16; d += 16, s += 16, n -= 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  std::memcpy(d, s, n);
  _mm_sfence();
}

void fill_streaming(void* dst, unsigned char byte, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  const size_t head = head_bytes(d, n);
  std::memset(d, byte, head);
  d += head, n -= head;
  const __m128i v = _mm_set1_epi8(static_cast<char>(byte));
  for (; n >= 16; d += 16, n -= 16) _mm_stream_si128(reinterpret_cast<__m128i*>(d), v);
  std::memset(d, byte, n);
  _mm_sfence();
}
#else
// Elsewhere ordinary stores: the cold-cache step then only precedes the call, not the restore.
void copy_streaming(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
void fill_streaming(void* dst, unsigned char byte, size_t n) { std::memset(dst, byte, n); }
#endif

} // namespace temper::util
