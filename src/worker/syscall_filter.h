// The worker's seccomp filter: a deny-list of system calls a kernel has no business making
// (new processes, exec, sockets, ptrace, writes to the file system, signals to other processes,
// system administration), and the SIGSYS handler that turns a trapped call into a
// SANDBOX_VIOLATION frame naming it. docs/security.md lists the rules and the reasoning.
#pragma once

#include <string>

namespace temper::worker {

struct FilterResult {
  std::string error; // the filter could not be built or loaded: the sandbox fails closed
  int trapped = 0;   // system calls that trap (wholly or for some arguments)
  int refused = 0;   // system calls answered ENOSYS so that callers fall back (clone3, openat2)
};

// Installs the SIGSYS handler, then loads the filter on every thread of the process (TSYNC).
// After it returns, a trapped call never executes: the calling thread enters the handler, which
// writes one SANDBOX_VIOLATION frame to `reply_fd` and ends the process. `pid` is this process
// (signals to it stay allowed; no new process can ever take another pid here).
FilterResult install_syscall_filter(int reply_fd, int pid);

} // namespace temper::worker
