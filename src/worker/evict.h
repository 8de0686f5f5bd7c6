#pragma once
// The cold-cache step without a cache-sized buffer ("evict", MeasurementProtocol::cold_step).
// Writing a buffer of twice the last-level cache costs time in proportion to that cache: on a
// server whose LLC is 300 MiB it is 80 ms per timed call, several times the kernel. What makes a
// call cold is that nothing the kernel's process touched is cached, so this step flushes exactly
// that: every resident page of every readable mapping of this process (the kernel's code, data
// and own buffers, the heap, the stacks) is flushed line by line from every cache level, at a
// cost in proportion to what the process holds. The arena is left alone: the judge rewrites the
// call's inputs and poisons its outputs with streaming stores after this step, which leaves
// them in memory and in no cache.
//
// Everything is opened in open(), before the sandbox; evict() allocates nothing (the worker's
// address space is limited by then).
#include <cstddef>
#include <cstdint>
#include <string>

namespace temper::worker {

class OwnMemoryEvictor {
 public:
  // Opens /proc/self/maps and /proc/self/pagemap; `skip` and `skip_bytes`: the arena. False
  // with `error` set when this machine cannot do it (no /proc, an architecture without a
  // cache-line flush instruction here).
  bool open(const void* skip, size_t skip_bytes, std::string& error);
  bool active() const { return m_maps_fd >= 0; }
  // Flushes every resident line of this process outside the arena; the bytes flushed.
  uint64_t evict();

 private:
  void evict_range(uintptr_t begin, uintptr_t end);
  int m_maps_fd = -1;
  int m_pagemap_fd = -1;
  uintptr_t m_skip_begin = 0;
  uintptr_t m_skip_end = 0;
  size_t m_page = 4096;
  bool m_clflushopt = false;
  uint64_t m_flushed = 0;
};

} // namespace temper::worker
