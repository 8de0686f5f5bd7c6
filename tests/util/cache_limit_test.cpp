#include "util/cache_limit.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

namespace temper::util::cache_limit_test {
namespace {

namespace fs = std::filesystem;

void write_aged(const fs::path& f, size_t bytes, int age_s) {
  ASSERT_TRUE(write_file_atomic(f, std::string(bytes, 'x')).has_value());
  fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
}

TEST(CacheLimit, RemovesLeastRecentlyUsedDownToEightyPercent) {
  TempDir tmp("temper-cache-limit");
  ASSERT_TRUE(make_dirs(tmp.path() / "ab").has_value());
  for (int i = 0; i < 10; ++i) write_aged(tmp.path() / "ab" / ("f" + std::to_string(i)), 1000, 100 - i); // f0 oldest
  // f0 was just used: it survives, the next oldest go.
  touch_for_lru(tmp.path() / "ab" / "f0");
  PruneResult r = prune_cache(tmp.path(), 9000);
  EXPECT_EQ(r.bytes_before, 10000u);
  EXPECT_EQ(r.files_removed, 3); // 10000 -> 7000 <= 7200
  EXPECT_EQ(r.bytes_after, 7000u);
  EXPECT_TRUE(fs::exists(tmp.path() / "ab" / "f0"));
  EXPECT_FALSE(fs::exists(tmp.path() / "ab" / "f1"));
  EXPECT_FALSE(fs::exists(tmp.path() / "ab" / "f3"));
  EXPECT_TRUE(fs::exists(tmp.path() / "ab" / "f4"));
}

TEST(CacheLimit, UnderTheLimitOrUnlimitedRemovesNothingAndKeepIsKept) {
  TempDir tmp("temper-cache-limit");
  write_aged(tmp.path() / "a", 500, 50);
  write_aged(tmp.path() / "b", 500, 10);
  EXPECT_EQ(prune_cache(tmp.path(), 1000).files_removed, 0);
  EXPECT_EQ(prune_cache(tmp.path(), 0).files_removed, 0);
  // The oldest file is the one just written by the caller: kept, the other goes.
  PruneResult r = prune_cache(tmp.path(), 600, tmp.path() / "a");
  EXPECT_EQ(r.files_removed, 1);
  EXPECT_TRUE(fs::exists(tmp.path() / "a"));
  EXPECT_FALSE(fs::exists(tmp.path() / "b"));
  EXPECT_EQ(prune_cache(tmp.path() / "missing", 1).files_removed, 0);
}

// Half of the filesystem's room (available space plus what the cache holds), within the bounds.
TEST(CacheLimit, DiskShareIsHalfTheRoomWithinBounds) {
  TempDir tmp("temper-cache-limit");
  write_aged(tmp.path() / "held", 3 << 20, 0);
  const fs::space_info space = fs::space(tmp.path());
  const uint64_t room_mib = (static_cast<uint64_t>(space.available) + (uint64_t{3} << 20)) / 2 >> 20;
  const uint64_t share = disk_share_mib(tmp.path(), 1, uint64_t{1} << 40);
  // The available space moves with other writers: within 1%.
  EXPECT_NEAR(static_cast<double>(share), static_cast<double>(room_mib), static_cast<double>(room_mib) / 100 + 1);
  EXPECT_EQ(disk_share_mib(tmp.path(), 1, 5), std::min<uint64_t>(5, share));
  EXPECT_EQ(disk_share_mib(tmp.path(), uint64_t{1} << 40, uint64_t{1} << 41), uint64_t{1} << 40);
  EXPECT_EQ(disk_share_mib(tmp.path() / "no" / "such" / "dir", 7, 9), 7u); // unreadable: the minimum
}

TEST(CacheLimit, LimitFromEnvironmentInMiB) {
  ::setenv("TEMPER_TEST_CACHE_MB", "3", 1);
  EXPECT_EQ(cache_limit_from_env("TEMPER_TEST_CACHE_MB", 8), uint64_t{3} << 20);
  ::setenv("TEMPER_TEST_CACHE_MB", "lots", 1);
  EXPECT_EQ(cache_limit_from_env("TEMPER_TEST_CACHE_MB", 8), uint64_t{8} << 20);
  ::unsetenv("TEMPER_TEST_CACHE_MB");
  EXPECT_EQ(cache_limit_from_env("TEMPER_TEST_CACHE_MB", 0), 0u);
}

} // namespace
} // namespace temper::util::cache_limit_test
