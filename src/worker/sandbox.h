// The worker's sandbox: Landlock (read-only access to an allow-list of paths) plus a seccomp
// deny-list (syscall_filter.h). Installed once while loading, after the worker's own setup
// (arena mapping, limits, flush buffer) and before the artifact is opened, so no code of the
// artifact, its constructors included, ever runs outside it. docs/security.md has the details.
#pragma once

#include <string>

namespace temper::worker {

struct SandboxResult {
  std::string error;       // not installed (a harness failure: the worker must not run the kernel)
  std::string description; // one line for LOADED: what is enforced
  std::string warning;     // a part this kernel cannot enforce (no Landlock); empty if none
};

// Confines this process for good. Must be called while the process has a single thread.
// `artifact` is the kernel's shared object, the one file outside the system paths it may read.
SandboxResult install_sandbox(const std::string& artifact, int reply_fd);

} // namespace temper::worker
