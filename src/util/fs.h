// Filesystem helpers: whole-file reads, atomic publication, temporary directories.
#pragma once

#include "util/error.h"

#include <filesystem>
#include <string>
#include <string_view>

namespace temper::util {

namespace fs = std::filesystem;

Expected<std::string> read_file(const fs::path& path);

// Writes `content` to a temporary file beside `path` and renames it into place, so readers see
// either the old file or the whole new one, never a partial write.
Status write_file_atomic(const fs::path& path, std::string_view content);

Status make_dirs(const fs::path& dir);

// The user's cache root: $TEMPER_CACHE_DIR, else $XDG_CACHE_HOME/temper, else ~/.cache/temper.
fs::path cache_root();

// A directory removed with its contents when the object dies.
class TempDir {
public:
  explicit TempDir(std::string_view prefix = "temper");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

} // namespace temper::util
