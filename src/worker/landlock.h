// Landlock for temper-worker: confines what the worker, and every thread it creates afterwards,
// may do with files. Called through syscall(): the libc headers of this toolchain predate the
// Landlock ABI the kernels we run on offer, so the structures and flags are defined here.
#pragma once

#include <string>
#include <vector>

namespace temper::worker {

struct LandlockResult {
  int abi = 0;             // the kernel's Landlock ABI; 0 when Landlock is unavailable
  std::string unavailable; // why Landlock is absent (not built, disabled at boot); empty if present
  std::string error;       // Landlock is present but could not be applied: the sandbox fails closed
  int paths = 0;           // allow-list entries granted (ones that do not exist are skipped)
};

// Allows reading files and listing directories beneath each path of `readable`, and nothing
// else: no writing, creating, removing, renaming, truncating or device ioctls anywhere; from ABI
// 4 no TCP bind or connect; from ABI 6 no signals to processes outside this one and no abstract
// unix sockets. Sets no_new_privs. Landlock restricts the calling thread and the threads it
// creates later, not threads that already exist: call it while the process has one thread.
LandlockResult restrict_to_reading(const std::vector<std::string>& readable);

} // namespace temper::worker
