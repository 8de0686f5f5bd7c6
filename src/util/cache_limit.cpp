#include "util/cache_limit.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <sys/statvfs.h>
#include <vector>

namespace temper::util {

namespace fs = std::filesystem;

PruneResult prune_cache(const fs::path& dir, uint64_t max_bytes, const fs::path& keep) {
  PruneResult r;
  struct Entry {
    fs::path path;
    fs::file_time_type time;
    uint64_t bytes;
  };
  std::vector<Entry> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e;
    if (!it->is_regular_file(e) || e) continue;
    const uint64_t bytes = it->file_size(e);
    if (e) continue;
    const auto time = it->last_write_time(e);
    if (e) continue;
    files.push_back({it->path(), time, bytes});
    r.bytes_before += bytes;
  }
  r.bytes_after = r.bytes_before;
  if (max_bytes == 0 || r.bytes_before <= max_bytes) return r;
  std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) { return a.time < b.time; });
  const uint64_t target = max_bytes / 10 * 8;
  for (const Entry& f : files) {
    if (r.bytes_after <= target) break;
    if (!keep.empty() && f.path == keep) continue;
    std::error_code e;
    if (fs::remove(f.path, e) && !e) {
      r.bytes_after -= f.bytes;
      ++r.files_removed;
    }
  }
  return r;
}

void touch_for_lru(const fs::path& file) {
  std::error_code ec;
  fs::last_write_time(file, fs::file_time_type::clock::now(), ec);
}

uint64_t cache_limit_from_env(std::string_view name, uint64_t default_mib) {
  uint64_t mib = default_mib;
  if (const char* v = std::getenv(std::string(name).c_str()); v && *v) {
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(v, &end, 10);
    if (end && *end == '\0') mib = parsed;
  }
  return mib << 20;
}

uint64_t disk_share_mib(const fs::path& dir, uint64_t min_mib, uint64_t max_mib) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return min_mib;
  const uint64_t available = static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
  const uint64_t held = prune_cache(dir, 0).bytes_before; // max_bytes 0: counts, removes nothing
  return std::clamp<uint64_t>((available + held) / 2 >> 20, min_mib, max_mib);
}

} // namespace temper::util
