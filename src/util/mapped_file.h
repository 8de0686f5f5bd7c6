// A file mapped read-only into memory. Large files the judge reads once (a large case's golden
// outputs are hundreds of MB) are mapped from the page cache rather than read into fresh pages:
// on a VM a first touch of a fresh page costs ten times writing it (docs/benchmarks.md).
#pragma once

#include "util/error.h"

#include <cstddef>
#include <filesystem>
#include <memory>

namespace temper::util {

class MappedFile {
public:
  // The whole file, its pages mapped at once. The mapping stays valid after the file is
  // unlinked or replaced by a rename (a file rewritten in place would not be: temper publishes
  // by rename). An empty file maps to no bytes.
  static Expected<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& file);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return m_data; }
  size_t size() const { return m_size; }

private:
  MappedFile(const unsigned char* data, size_t size) : m_data(data), m_size(size) {}
  const unsigned char* m_data = nullptr;
  size_t m_size = 0;
};

} // namespace temper::util
