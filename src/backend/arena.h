// Shared memory that holds a kernel call's tensors: inputs (possibly several rotated sets) and
// outputs, mapped by the judge and by one worker process. The judge owns the contents: it
// restores inputs and poisons outputs before every call.
#pragma once

#include "core/task.h"
#include "core/tensor.h"
#include "util/error.h"

#include <cstddef>
#include <vector>

namespace temper::backend {

struct ArenaLayout {
  std::vector<core::TensorSpec> inputs;
  std::vector<core::TensorSpec> outputs;
  int input_sets = 1; // copies of the inputs the judge rotates through (timing uses several)
};

// A memfd-backed mapping. Movable, not copyable; unmapped and closed on destruction.
class SharedArena {
public:
  static Expected<SharedArena> create(const ArenaLayout& layout);
  SharedArena(SharedArena&&) noexcept;
  SharedArena& operator=(SharedArena&&) noexcept;
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;
  ~SharedArena();

  const ArenaLayout& layout() const { return m_layout; }
  int fd() const { return m_fd; }            // inherited by the worker
  size_t size() const { return m_size; }
  unsigned char* input(int set, size_t k);    // start of input k of a set
  unsigned char* output(size_t k);
  size_t input_offset(int set, size_t k) const; // byte offsets within the arena (64-aligned)
  size_t output_offset(size_t k) const;

private:
  SharedArena() = default;
  ArenaLayout m_layout;
  int m_fd = -1;
  unsigned char* m_base = nullptr;
  size_t m_size = 0;
  std::vector<size_t> m_input_offsets; // set-major: [set * inputs + k]
  std::vector<size_t> m_output_offsets;
};

} // namespace temper::backend
