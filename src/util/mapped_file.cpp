#include "util/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace temper::util {

Expected<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open {}: {}", file.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return fail("cannot stat {}: {}", file.string(), std::strerror(err));
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* p = nullptr;
  if (size > 0) {
    // MAP_POPULATE: one pass in the kernel instead of a fault per few pages.
    p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return fail("cannot map {}: {}", file.string(), std::strerror(err));
    }
  }
  ::close(fd);
  return std::shared_ptr<const MappedFile>(new MappedFile(static_cast<const unsigned char*>(p), size));
}

MappedFile::~MappedFile() {
  if (m_data) ::munmap(const_cast<unsigned char*>(m_data), m_size);
}

} // namespace temper::util
