#include "core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <new>

namespace temper::core {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape row_major_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Buffer::Buffer(size_t bytes) : m_size(bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  m_data.reset(static_cast<unsigned char*>(std::aligned_alloc(64, rounded)));
  if (!m_data) throw std::bad_alloc();
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 0) continue;
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

} // namespace temper::core
