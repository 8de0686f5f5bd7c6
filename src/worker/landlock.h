// Landlock for the workers: confines what a worker, and every thread it creates afterwards, may
// do with files. Called through syscall(): the libc headers of this toolchain predate the
// Landlock ABI the kernels we run on offer, so the structures and flags are defined here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace temper::worker {

// File-system rights, the kernel's LANDLOCK_ACCESS_FS_* bits (include/uapi/linux/landlock.h).
namespace landlock_access {
inline constexpr uint64_t kExecute = 1ULL << 0; // execve only: mmap(PROT_EXEC) needs kReadFile
inline constexpr uint64_t kWriteFile = 1ULL << 1;
inline constexpr uint64_t kReadFile = 1ULL << 2;
inline constexpr uint64_t kReadDir = 1ULL << 3;
inline constexpr uint64_t kRemoveDir = 1ULL << 4;
inline constexpr uint64_t kRemoveFile = 1ULL << 5;
inline constexpr uint64_t kMakeChar = 1ULL << 6;
inline constexpr uint64_t kMakeDir = 1ULL << 7;
inline constexpr uint64_t kMakeReg = 1ULL << 8;
inline constexpr uint64_t kMakeSock = 1ULL << 9;
inline constexpr uint64_t kMakeFifo = 1ULL << 10;
inline constexpr uint64_t kMakeBlock = 1ULL << 11;
inline constexpr uint64_t kMakeSym = 1ULL << 12;
inline constexpr uint64_t kRefer = 1ULL << 13;    // ABI 2
inline constexpr uint64_t kTruncate = 1ULL << 14; // ABI 3
inline constexpr uint64_t kIoctlDev = 1ULL << 15; // ABI 5
// The rights a rule on a file (not a directory) may carry.
inline constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
} // namespace landlock_access

// One allow rule: `access` (landlock_access bits) on `path` and, for a directory, beneath it.
struct LandlockRule {
  std::string path;
  uint64_t access = 0;
};

struct LandlockResult {
  int abi = 0;             // the kernel's Landlock ABI; 0 when Landlock is unavailable
  std::string unavailable; // why Landlock is absent (not built, disabled at boot); empty if present
  std::string error;       // Landlock is present but could not be applied: the sandbox fails closed
  int paths = 0;           // allow-list entries granted (ones that do not exist are skipped)
  bool all_threads = false; // the domain covers every thread of the process (ABI 8's TSYNC)
};

// Handles every file-system right the kernel's ABI knows, from ABI 4 TCP bind and connect, from
// ABI 6 signals to processes outside this one and abstract unix sockets, and grants only what
// `rules` allow (on a file, only its file rights; rights this ABI lacks are dropped; a path that
// does not exist is skipped). Sets no_new_privs. Landlock restricts the calling thread and the
// threads it creates later, not threads that already exist, unless `all_threads` is asked for
// and the kernel has ABI 8 (LANDLOCK_RESTRICT_SELF_TSYNC): then every thread of the process.
LandlockResult restrict_paths(const std::vector<LandlockRule>& rules, bool all_threads = false);

// restrict_paths with reading files and listing directories beneath each path of `readable`,
// and nothing else: no writing, creating, removing, renaming, truncating, executing or device
// ioctls anywhere. Call it while the process has one thread.
LandlockResult restrict_to_reading(const std::vector<std::string>& readable);

} // namespace temper::worker
