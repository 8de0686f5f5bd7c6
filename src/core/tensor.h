// Host tensors: a spec (name, dtype, shape) and an aligned, uninitialized byte buffer.
#pragma once

#include "core/dtype.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace temper::core {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& shape);
Shape row_major_strides(const Shape& shape); // in elements
std::string shape_string(const Shape& shape); // "[2, 3, 4]"

struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::F32;
  Shape shape;

  int64_t numel() const { return core::numel(shape); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

// 64-byte aligned storage; contents start uninitialized.
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(size_t bytes);
  size_t size() const { return m_size; }
  unsigned char* data() { return m_data.get(); }
  const unsigned char* data() const { return m_data.get(); }

private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char[], Free> m_data;
  size_t m_size = 0;
};

struct HostTensor {
  TensorSpec spec;
  Buffer buffer;

  HostTensor() = default;
  explicit HostTensor(TensorSpec s) : spec(std::move(s)), buffer(spec.bytes()) {}
  double at(size_t i) const { return load_double(buffer.data(), spec.dtype, i); }
};

// Converts a multi-index flat offset (row-major) back to indices, for reports.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape);

} // namespace temper::core
