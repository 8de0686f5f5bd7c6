#include "worker/sandbox.h"

#include "worker/landlock.h"
#include "worker/syscall_filter.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace temper::worker {

namespace {

// What a running kernel, glibc, libstdc++, libm and libgomp read: libraries (dlopen of the
// artifact and what it needs), the loader cache, this process's own /proc entries (maps,
// status, thread-self), CPU topology for thread pools (sysconf, get_nprocs, hardware
// concurrency), and the harmless character devices. Not $HOME, the task, the cache of
// goldens and compiled kernels, the vault, /tmp, or another process's /proc entries.
const char* const kReadable[] = {
    "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/etc/ld.so.cache",
    "/proc/self", // opened, it is this process's /proc/<pid>; /proc/thread-self lies beneath
    "/proc/cpuinfo", "/proc/meminfo", "/proc/stat",
    "/sys/devices/system/cpu", "/sys/devices/system/node",
    "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
};

// Threads this process has, from /proc/self/status; 0 if it cannot tell.
int thread_count() {
  FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return 0;
  char line[256];
  int n = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "Threads:", 8) == 0) {
      n = std::atoi(line + 8);
      break;
    }
  }
  std::fclose(f);
  return n;
}

} // namespace

SandboxResult install_sandbox(const std::string& artifact, int reply_fd) {
  SandboxResult r;
  // Landlock binds the calling thread and its later children only: a thread that already
  // existed would stay free, and a kernel could run code on it through a signal handler.
  if (int threads = thread_count(); threads != 1) {
    r.error = threads == 0 ? "cannot count the worker's threads in /proc/self/status"
                           : "the worker has " + std::to_string(threads) + " threads; it must have one";
    return r;
  }

  std::vector<std::string> readable(std::begin(kReadable), std::end(kReadable));
  readable.push_back(artifact); // absent: skipped here, and dlopen reports it as before
  LandlockResult fs = restrict_to_reading(readable);
  if (!fs.error.empty()) {
    r.error = "landlock: " + fs.error;
    return r;
  }

  FilterResult filter = install_syscall_filter(reply_fd, static_cast<int>(::getpid()));
  if (!filter.error.empty()) {
    r.error = filter.error;
    return r;
  }

  r.description = "seccomp: " + std::to_string(filter.trapped) + " system calls trapped, " +
                  std::to_string(filter.refused) + " answered ENOSYS; ";
  if (fs.abi > 0) {
    r.description += "landlock ABI " + std::to_string(fs.abi) + ": read-only, " + std::to_string(fs.paths) +
                     " paths readable";
  } else {
    r.warning = "Landlock unavailable (" + fs.unavailable +
                "): file reads are not confined; writes, exec, sockets and the rest are still denied by seccomp";
    r.description += "landlock unavailable (" + fs.unavailable + "): file reads are NOT confined";
  }
  return r;
}

} // namespace temper::worker
