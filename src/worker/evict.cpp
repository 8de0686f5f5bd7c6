#include "worker/evict.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace temper::worker {

namespace {

constexpr uint64_t kPagePresent = uint64_t{1} << 63; // /proc/<pid>/pagemap, bit 63
constexpr size_t kPagemapBatch = 8192;               // entries per read: 32 MiB of 4 KiB pages
uint64_t g_evict_pagemap[kPagemapBatch];
char g_evict_maps[1 << 16];

#if defined(__x86_64__)
constexpr size_t kLine = 64;

bool has_clflushopt() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & (1U << 23)) != 0;
}

__attribute__((target("clflushopt"))) void flush_lines_opt(uintptr_t p, uintptr_t end) {
  for (; p < end; p += kLine) _mm_clflushopt(reinterpret_cast<void*>(p));
}

void flush_lines(uintptr_t p, uintptr_t end) {
  for (; p < end; p += kLine) _mm_clflush(reinterpret_cast<void*>(p));
}

void flush_page(uintptr_t p, size_t bytes, bool clflushopt) {
  if (clflushopt) flush_lines_opt(p, p + bytes);
  else flush_lines(p, p + bytes);
}

void fence() { _mm_mfence(); }
#elif defined(__aarch64__)
constexpr size_t kLine = 64; // the smallest data-cache line of current cores; CTR_EL0 below checks

void flush_lines(uintptr_t p, uintptr_t end) {
  for (; p < end; p += kLine) asm volatile("dc civac, %0" : : "r"(p) : "memory");
}

void flush_page(uintptr_t p, size_t bytes, bool) { flush_lines(p, p + bytes); }

void fence() { asm volatile("dsb ish" : : : "memory"); }
#else
// open() refuses here, so nothing is ever flushed.
void flush_page(uintptr_t, size_t, bool) {}
void fence() {}
#endif

} // namespace

bool OwnMemoryEvictor::open(const void* skip, size_t skip_bytes, std::string& error) {
#if defined(__x86_64__)
  m_clflushopt = has_clflushopt();
#elif defined(__aarch64__)
  uint64_t ctr = 0;
  asm volatile("mrs %0, ctr_el0" : "=r"(ctr));
  if ((size_t{4} << ((ctr >> 16) & 0xF)) < kLine) {
    error = "this CPU's data-cache lines are shorter than 64 bytes";
    return false;
  }
#else
  error = "no cache-line flush instruction is known for this architecture";
  return false;
#endif
  m_page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  m_skip_begin = reinterpret_cast<uintptr_t>(skip);
  m_skip_end = m_skip_begin + skip_bytes;
  m_maps_fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (m_maps_fd < 0) {
    error = std::string("cannot open /proc/self/maps: ") + std::strerror(errno);
    return false;
  }
  m_pagemap_fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (m_pagemap_fd < 0) {
    error = std::string("cannot open /proc/self/pagemap: ") + std::strerror(errno);
    ::close(m_maps_fd);
    m_maps_fd = -1;
    return false;
  }
  return true;
}

// Only pages present in this process's page tables: flushing a page that is not would fault it
// in (and a file mapping's absent pages are nothing this process touched).
void OwnMemoryEvictor::evict_range(uintptr_t begin, uintptr_t end) {
  for (uintptr_t page = begin; page < end;) {
    const size_t pages = std::min<size_t>(kPagemapBatch, (end - page) / m_page);
    const off_t at = static_cast<off_t>(page / m_page * sizeof(uint64_t));
    const ssize_t got = ::pread(m_pagemap_fd, g_evict_pagemap, pages * sizeof(uint64_t), at);
    if (got <= 0) return;
    const size_t n = static_cast<size_t>(got) / sizeof(uint64_t);
    for (size_t k = 0; k < n; ++k) {
      if ((g_evict_pagemap[k] & kPagePresent) == 0) continue;
      const uintptr_t p = page + k * m_page;
      flush_page(p, m_page, m_clflushopt);
      m_flushed += m_page;
    }
    page += n * m_page;
  }
}

uint64_t OwnMemoryEvictor::evict() {
  if (!active()) return 0;
  m_flushed = 0;
  if (::lseek(m_maps_fd, 0, SEEK_SET) != 0) return 0;
  // One line at a time, a line being "begin-end perms offset dev inode [path]".
  size_t held = 0;
  for (;;) {
    const ssize_t got = ::read(m_maps_fd, g_evict_maps + held, sizeof g_evict_maps - held);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    held += static_cast<size_t>(got);
    const char* line = g_evict_maps;
    const char* const filled = g_evict_maps + held;
    for (const char* nl; (nl = static_cast<const char*>(std::memchr(line, '\n', static_cast<size_t>(filled - line)))) != nullptr;
         line = nl + 1) {
      const std::string_view text(line, static_cast<size_t>(nl - line));
      uintptr_t begin = 0, end = 0;
      auto [dash, e1] = std::from_chars(text.data(), text.data() + text.size(), begin, 16);
      if (e1 != std::errc() || dash == nl || *dash != '-') continue;
      auto [space, e2] = std::from_chars(dash + 1, nl, end, 16);
      if (e2 != std::errc() || space + 1 >= nl || space[1] != 'r') continue; // unreadable: a flush would fault
      // The kernel's special pages, which are not its memory (and [vsyscall] is not in pagemap).
      if (text.find("[vvar") != std::string_view::npos || text.find("[vsyscall]") != std::string_view::npos) continue;
      if (end <= m_skip_begin || begin >= m_skip_end) {
        evict_range(begin, end);
      } else {
        if (begin < m_skip_begin) evict_range(begin, m_skip_begin);
        if (end > m_skip_end) evict_range(m_skip_end, end);
      }
    }
    held = static_cast<size_t>(filled - line);
    std::memmove(g_evict_maps, line, held);
    if (held == sizeof g_evict_maps) held = 0; // a line longer than the buffer: drop it
  }
  fence();
  return m_flushed;
}

} // namespace temper::worker
