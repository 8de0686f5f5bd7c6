// The filesystem sandbox an agent turn runs in: bubblewrap (bwrap) with fresh user, pid, ipc,
// uts, cgroup and (unless the driver needs its model service) network namespaces. Inside, the
// root is an empty read-only tmpfs with only these visible:
//   - system directories read-only: /usr, /bin, /sbin, /lib*, and a minimal /etc (loader cache,
//     alternatives, passwd/group, nsswitch, TLS certificates, resolver files, time zone);
//   - the workspace read-write, at its own path, as the working directory;
//   - the paths the request names, read-only, at their own paths;
//   - the harness socket at kSandboxSocketPath and the harness executable in kSandboxBinDir;
//   - a private HOME (kSandboxHome, a host directory the driver seeds), private /tmp, /proc, /dev.
// Everything else (the vault, the campaign state, the other role's workspace, the user's home)
// is absent. The environment is cleared and rebuilt from what the spec lists.
#pragma once

#include "util/error.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace temper::agent {

inline constexpr const char* kSandboxSocketPath = "/run/temper/harness.sock";
inline constexpr const char* kSandboxBinDir = "/run/temper/bin";
inline constexpr const char* kSandboxHome = "/home/agent";

struct SandboxSpec {
  std::filesystem::path workspace;
  std::vector<std::filesystem::path> readonly;                                       // at their own paths
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> readonly_at;  // host -> inside
  std::filesystem::path harness_socket;                                              // empty: none
  std::filesystem::path home;                                                        // host dir -> kSandboxHome
  bool network = false;
  std::vector<std::pair<std::string, std::string>> env;                              // the whole environment
};

// The bwrap command line that runs `command` (argv inside the sandbox) under `spec`.
std::vector<std::string> bwrap_command(const SandboxSpec& spec, const std::vector<std::string>& command);

// Whether bwrap is installed and can create its namespaces here; checked once per process. The
// error says why not (not installed, user namespaces disabled, ...).
Status sandbox_available();

} // namespace temper::agent
