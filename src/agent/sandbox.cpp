#include "agent/sandbox.h"

#include "util/process.h"

#include <mutex>

namespace temper::agent {

namespace {

namespace fs = std::filesystem;

// Top-level system directories a toolchain needs. Usr-merged systems have /bin, /lib* as
// symlinks into /usr; those stay symlinks inside.
constexpr const char* kSystemDirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

// The least of /etc that compilers, shells, the loader and TLS clients read.
constexpr const char* kEtcEntries[] = {
    "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
    "/etc/passwd",       "/etc/group",       "/etc/nsswitch.conf", "/etc/hosts",
    "/etc/resolv.conf",  "/etc/ssl",         "/etc/ca-certificates", "/etc/localtime",
    "/etc/timezone",     "/etc/mime.types",  "/etc/os-release",
};

void add(std::vector<std::string>& argv, std::initializer_list<std::string> words) {
  argv.insert(argv.end(), words);
}

} // namespace

std::vector<std::string> bwrap_command(const SandboxSpec& spec, const std::vector<std::string>& command) {
  std::vector<std::string> a = {"bwrap", "--unshare-all"};
  if (spec.network) a.push_back("--share-net");
  add(a, {"--die-with-parent", "--new-session", "--clearenv"});
  for (const char* dir : kSystemDirs) {
    std::error_code ec;
    auto st = fs::symlink_status(dir, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st)) {
      add(a, {"--symlink", fs::read_symlink(dir, ec).string(), dir});
    } else {
      add(a, {"--ro-bind", dir, dir});
    }
  }
  for (const char* entry : kEtcEntries) add(a, {"--ro-bind-try", entry, entry});
  add(a, {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"});
  // Binds below /tmp (a workspace in a temp dir) come after the private /tmp, so they land in it.
  if (!spec.home.empty()) add(a, {"--bind", spec.home.string(), kSandboxHome});
  for (const auto& p : spec.readonly) add(a, {"--ro-bind", p.string(), p.string()});
  for (const auto& [host, inside] : spec.readonly_at) add(a, {"--ro-bind", host.string(), inside.string()});
  if (!spec.harness_socket.empty()) add(a, {"--bind", spec.harness_socket.string(), kSandboxSocketPath});
  add(a, {"--bind", spec.workspace.string(), spec.workspace.string()});
  // Last: nothing outside the binds above can be written, not even the sandbox's own root.
  add(a, {"--remount-ro", "/", "--chdir", spec.workspace.string()});
  for (const auto& [k, v] : spec.env) add(a, {"--setenv", k, v});
  a.push_back("--");
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

Status sandbox_available() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] {
    if (util::find_program("bwrap").empty()) {
      status = fail("the agent sandbox needs bubblewrap (bwrap), which is not installed "
                    "(Debian package bubblewrap; scripts/setup.sh installs it)");
      return;
    }
    util::Command c;
    c.argv = {"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"};
    c.timeout = std::chrono::seconds(20);
    auto r = util::default_process_runner().run(c);
    if (!r.ok()) {
      std::string out = r.output;
      while (!out.empty() && out.back() == '\n') out.pop_back();
      status = fail("bubblewrap cannot create its namespaces here ({}: {}); unprivileged user "
                    "namespaces may be disabled (sysctl kernel.unprivileged_userns_clone or "
                    "user.max_user_namespaces)",
                    r.describe(), out);
    }
  });
  return status;
}

} // namespace temper::agent
