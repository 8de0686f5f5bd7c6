#include "util/fs.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace temper::util {

Expected<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read {}: {}", path.string(), std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("cannot create directory {}: {}", dir.string(), ec.message());
  return {};
}

Status write_file_atomic(const fs::path& path, std::string_view content) {
  if (path.has_parent_path()) TEMPER_TRY(make_dirs(path.parent_path()));
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail("cannot write {}: {}", tmp.string(), std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) return fail("write failed for {}", tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return fail("cannot rename {} into place: {}", path.string(), ec.message());
  }
  return {};
}

fs::path cache_root() {
  if (const char* d = std::getenv("TEMPER_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "temper";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "temper";
  return fs::temp_directory_path() / "temper-cache";
}

TempDir::TempDir(std::string_view prefix) {
  std::string tmpl = (fs::temp_directory_path() / (std::string(prefix) + ".XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error(fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
  }
  m_path = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

} // namespace temper::util
