#include "backend/arena.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace temper::backend {

namespace {

// Page alignment: every tensor starts on its own page, which satisfies any vector alignment a
// kernel may assume and keeps one tensor's poison/restore from sharing pages with another's.
constexpr size_t kAlign = 4096;

bool align_up(size_t x, size_t& out) {
  if (x > SIZE_MAX - (kAlign - 1)) return false;
  out = (x + kAlign - 1) & ~(kAlign - 1);
  return true;
}

// Bytes of a tensor, or false when its shape is negative or its size overflows.
bool tensor_bytes(const core::TensorSpec& t, size_t& out) {
  size_t n = core::dtype_size(t.dtype);
  for (int64_t d : t.shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(n, static_cast<size_t>(d), &n)) return false;
  }
  out = n;
  return true;
}

// Appends one tensor at the next aligned offset of `cursor`.
Status place(const core::TensorSpec& t, size_t& cursor, std::vector<size_t>& offsets) {
  size_t bytes = 0;
  size_t at = 0;
  if (!tensor_bytes(t, bytes)) return fail("tensor '{}' has an invalid shape {}", t.name, core::shape_string(t.shape));
  if (!align_up(cursor, at) || at > SIZE_MAX - bytes) return fail("arena size overflows at tensor '{}'", t.name);
  offsets.push_back(at);
  cursor = at + bytes;
  return {};
}

} // namespace

Expected<SharedArena> SharedArena::create(const ArenaLayout& layout) {
  if (layout.input_sets < 1) return fail("an arena needs at least one input set, got {}", layout.input_sets);
  SharedArena a;
  a.m_layout = layout;
  size_t cursor = 0;
  for (int s = 0; s < layout.input_sets; ++s) {
    for (const auto& t : layout.inputs) TEMPER_TRY(place(t, cursor, a.m_input_offsets));
  }
  for (const auto& t : layout.outputs) TEMPER_TRY(place(t, cursor, a.m_output_offsets));
  size_t size = 0;
  if (!align_up(cursor, size)) return fail("arena size overflows");
  a.m_size = size == 0 ? kAlign : size; // mmap refuses zero-length mappings

  // Close-on-exec so that processes other threads start never inherit it; the worker gets a
  // copy without the flag when it is spawned. Sealing lets the judge trust the size: nobody
  // holding the fd (a kernel included) can shrink it and make the judge's accesses SIGBUS.
  a.m_fd = ::memfd_create("temper-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (a.m_fd < 0) return fail("memfd_create: {}", std::strerror(errno));
  if (::ftruncate(a.m_fd, static_cast<off_t>(a.m_size)) != 0) {
    return fail("cannot size the shared arena to {} bytes: {}", a.m_size, std::strerror(errno));
  }
  if (::fcntl(a.m_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return fail("cannot seal the shared arena: {}", std::strerror(errno));
  }
  void* p = ::mmap(nullptr, a.m_size, PROT_READ | PROT_WRITE, MAP_SHARED, a.m_fd, 0);
  if (p == MAP_FAILED) return fail("cannot map a shared arena of {} bytes: {}", a.m_size, std::strerror(errno));
  a.m_base = static_cast<unsigned char*>(p);
  return a;
}

SharedArena::SharedArena(SharedArena&& o) noexcept
    : m_layout(std::move(o.m_layout)), m_fd(o.m_fd), m_base(o.m_base), m_size(o.m_size),
      m_input_offsets(std::move(o.m_input_offsets)), m_output_offsets(std::move(o.m_output_offsets)) {
  o.m_fd = -1;
  o.m_base = nullptr;
  o.m_size = 0;
}

SharedArena& SharedArena::operator=(SharedArena&& o) noexcept {
  if (this != &o) {
    if (m_base != nullptr) ::munmap(m_base, m_size);
    if (m_fd >= 0) ::close(m_fd);
    m_layout = std::move(o.m_layout);
    m_fd = std::exchange(o.m_fd, -1);
    m_base = std::exchange(o.m_base, nullptr);
    m_size = std::exchange(o.m_size, 0);
    m_input_offsets = std::move(o.m_input_offsets);
    m_output_offsets = std::move(o.m_output_offsets);
  }
  return *this;
}

SharedArena::~SharedArena() {
  if (m_base != nullptr) ::munmap(m_base, m_size);
  if (m_fd >= 0) ::close(m_fd);
  m_base = nullptr;
  m_fd = -1;
}

size_t SharedArena::input_offset(int set, size_t k) const {
  if (set < 0 || set >= m_layout.input_sets || k >= m_layout.inputs.size()) {
    throw std::out_of_range("SharedArena::input_offset");
  }
  return m_input_offsets[static_cast<size_t>(set) * m_layout.inputs.size() + k];
}

size_t SharedArena::output_offset(size_t k) const { return m_output_offsets.at(k); }

unsigned char* SharedArena::input(int set, size_t k) { return m_base + input_offset(set, k); }

unsigned char* SharedArena::output(size_t k) { return m_base + output_offset(k); }

} // namespace temper::backend
