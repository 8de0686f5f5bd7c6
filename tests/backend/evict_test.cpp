// The evict cold-cache step's walk over this process's memory (worker/evict.h), run in the test
// process itself: what it flushes is the resident memory of readable mappings, the skipped range
// excepted, and pages never touched are not faulted in.
#include "worker/evict.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <sys/mman.h>

namespace evict_test {

using temper::worker::OwnMemoryEvictor;

constexpr size_t kMiB = size_t{1} << 20;

struct Mapping {
  explicit Mapping(size_t bytes) : size(bytes) {
    data = static_cast<unsigned char*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Mapping() {
    if (data != MAP_FAILED) ::munmap(data, size);
  }
  unsigned char* data;
  size_t size;
};

TEST(OwnMemoryEvictor, FlushesResidentMemoryAndSkipsTheArena) {
#if !defined(__x86_64__) && !defined(__aarch64__)
  GTEST_SKIP() << "no cache-line flush instruction is known for this architecture";
#endif
  Mapping touched(64 * kMiB), untouched(256 * kMiB), arena(64 * kMiB);
  ASSERT_NE(touched.data, MAP_FAILED);
  ASSERT_NE(untouched.data, MAP_FAILED);
  ASSERT_NE(arena.data, MAP_FAILED);
  std::memset(touched.data, 1, touched.size);
  std::memset(arena.data, 2, arena.size);

  OwnMemoryEvictor skipping_arena;
  std::string error;
  ASSERT_TRUE(skipping_arena.open(arena.data, arena.size, error)) << error;
  const uint64_t without_arena = skipping_arena.evict();
  // The touched 64 MiB are in; the untouched 256 MiB are not (nothing was faulted in).
  EXPECT_GE(without_arena, 64 * kMiB);
  EXPECT_LT(without_arena, 64 * kMiB + 200 * kMiB);

  OwnMemoryEvictor everything;
  ASSERT_TRUE(everything.open(nullptr, 0, error)) << error;
  const uint64_t with_arena = everything.evict();
  EXPECT_GE(with_arena, without_arena + 60 * kMiB); // the arena counts once it is not skipped
  // A second walk finds the same memory resident: flushing keeps pages mapped, faults none in.
  const uint64_t again = skipping_arena.evict();
  EXPECT_LT(again > without_arena ? again - without_arena : without_arena - again, 8 * kMiB);
  EXPECT_EQ(touched.data[12345], 1);
  EXPECT_EQ(arena.data[54321], 2);
}

TEST(OwnMemoryEvictor, UnopenedEvictsNothing) {
  OwnMemoryEvictor e;
  EXPECT_FALSE(e.active());
  EXPECT_EQ(e.evict(), 0u);
}

} // namespace evict_test
