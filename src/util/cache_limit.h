// Size bound of an on-disk cache directory, like ccache's max_size: when the files under a cache
// exceed their limit, the least recently used ones go until the cache is at 80% of it. "Used"
// is the file's modification time; a cache touches a file on every hit (touch_for_lru).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace temper::util {

struct PruneResult {
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;
  int files_removed = 0;
};

// Removes the oldest regular files under `dir` (recursively, `keep` excepted) while the total
// exceeds `max_bytes`, down to 80% of it. Best effort: files that vanish or cannot be removed
// (another process) are skipped. max_bytes 0: no limit.
PruneResult prune_cache(const std::filesystem::path& dir, uint64_t max_bytes, const std::filesystem::path& keep = {});

// Marks a cache file as just used (its modification time becomes now).
void touch_for_lru(const std::filesystem::path& file);

// A limit in bytes from the environment variable `name` in MiB ("8192"), else `default_mib`
// MiB; "0" means no limit.
uint64_t cache_limit_from_env(std::string_view name, uint64_t default_mib);

// Half of the room a cache under `dir` has on its filesystem (the space available there plus what
// the cache already holds), in MiB, within [min_mib, max_mib]: a default bound that lets a large
// working set stay cached where the disk allows it. min_mib when the filesystem cannot be read.
uint64_t disk_share_mib(const std::filesystem::path& dir, uint64_t min_mib, uint64_t max_mib);

} // namespace temper::util
