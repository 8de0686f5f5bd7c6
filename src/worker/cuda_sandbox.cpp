#include "worker/cuda_sandbox.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <link.h>
#include <pwd.h>
#include <system_error>
#include <unistd.h>

namespace temper::worker {

namespace {

namespace fs = std::filesystem;
using namespace landlock_access;

constexpr uint64_t kRead = kReadFile | kReadDir;
constexpr uint64_t kReadExec = kRead | kExecute;
constexpr uint64_t kDevice = kRead | kWriteFile | kIoctlDev;
// /dev/shm: the runtime's shared-memory files (IPC, MPS), made and removed there.
constexpr uint64_t kScratch = kRead | kWriteFile | kTruncate | kMakeReg | kRemoveFile;

struct Fixed {
  const char* path;
  uint64_t access;
};

// Libraries the driver may still load after cuInit (the PTX JIT, the GPU compiler) live beside
// libcuda, which library_dirs adds when it is elsewhere.
const Fixed kSystem[] = {
    {"/usr", kReadExec}, {"/lib", kReadExec}, {"/lib64", kReadExec}, {"/lib32", kReadExec},
    {"/libx32", kReadExec}, {"/opt", kReadExec},
    {"/etc/ld.so.cache", kRead}, {"/etc/ld.so.conf", kRead}, {"/etc/ld.so.conf.d", kRead},
    {"/etc/nvidia", kRead}, {"/etc/localtime", kRead},
    // The driver reads /proc/driver/nvidia and /proc/self. Other processes' entries that need
    // ptrace access (environ, mem, fd, maps) stay closed: Landlock denies it outside the domain.
    {"/proc", kRead},
    {"/sys", kRead},  // PCI topology, NUMA nodes, CPU lists
};

const Fixed kDev[] = {
    {"null", kRead | kWriteFile}, {"zero", kRead | kWriteFile}, {"urandom", kRead}, {"random", kRead},
    {"shm", kScratch},
};

// The canonical path, or "" when it does not exist.
std::string existing(const std::string& path) {
  if (path.empty()) return {};
  std::error_code ec;
  fs::path p = fs::canonical(path, ec);
  return ec ? std::string() : p.string();
}

// True when `dir` is `p` or one of its ancestors.
bool covers(const std::string& dir, const std::string& p) {
  if (dir == "/") return true;
  return p.size() >= dir.size() && p.compare(0, dir.size(), dir) == 0 && (p.size() == dir.size() || p[dir.size()] == '/');
}

class Builder {
public:
  explicit Builder(std::vector<std::string> protected_paths) : m_protected(std::move(protected_paths)) {}

  void add(const std::string& path, uint64_t access) {
    std::string p = existing(path);
    if (p.empty()) return; // absent here (no /dev/nvidia-uvm before the module loads, /lib32)
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const std::string& guarded : m_protected) {
        if (covers(p, guarded)) {
          std::string why = p + " (covers " + guarded + ")";
          if (std::find(m_out.dropped.begin(), m_out.dropped.end(), why) == m_out.dropped.end()) m_out.dropped.push_back(why);
          return;
        }
      }
    }
    for (LandlockRule& r : m_out.rules) {
      if (r.path == p) { // /lib is /usr/lib on a merged-/usr system
        r.access |= access;
        return;
      }
    }
    m_out.rules.push_back({p, access});
  }

  CudaRuleset take() { return std::move(m_out); }

private:
  std::vector<std::string> m_protected;
  CudaRuleset m_out;
};

// Directories of the CUDA and NVIDIA libraries this process has loaded.
std::vector<std::string> loaded_cuda_library_dirs() {
  std::vector<std::string> dirs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name == nullptr || std::strchr(name, '/') == nullptr) return 0; // the executable, the vdso
        std::string base = fs::path(name).filename().string();
        if (base.rfind("libcu", 0) == 0 || base.rfind("libnv", 0) == 0) {
          std::error_code ec;
          fs::path real = fs::canonical(name, ec);
          if (!ec) static_cast<std::vector<std::string>*>(out)->push_back(real.parent_path().string());
        }
        return 0;
      },
      &dirs);
  return dirs;
}

CudaSandboxPaths paths_for_this_process(const std::string& artifact) {
  CudaSandboxPaths p;
  p.artifact = artifact;
  p.library_dirs = loaded_cuda_library_dirs();
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* d = std::getenv(var); d && *d) p.library_dirs.emplace_back(d);
  }
  // The worker's environment is fixed (HOME=/nonexistent), so the real home comes from passwd.
  for (const char* var : {"HOME", "TEMPER_CACHE_DIR", "TEMPER_HOME", "XDG_CACHE_HOME"}) {
    if (const char* d = std::getenv(var); d && *d) p.protected_paths.emplace_back(d);
  }
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) p.protected_paths.emplace_back(pw->pw_dir);
  std::error_code ec;
  if (fs::path cwd = fs::current_path(ec); !ec) p.protected_paths.push_back(cwd.string()); // the judge's, often the task's
  if (fs::path tmp = fs::temp_directory_path(ec); !ec) p.protected_paths.push_back(tmp.string()); // the cache without a HOME
  return p;
}

} // namespace

CudaRuleset cuda_landlock_rules(const CudaSandboxPaths& paths) {
  std::vector<std::string> guarded;
  for (const std::string& p : paths.protected_paths) {
    std::error_code ec;
    fs::path c = p.empty() ? fs::path() : fs::weakly_canonical(p, ec);
    if (!ec && !c.empty()) guarded.push_back(c.string());
  }
  const std::string artifact = existing(paths.artifact);
  std::error_code ec;
  const bool artifact_ok = !artifact.empty() && fs::is_regular_file(artifact, ec);
  if (artifact_ok) guarded.push_back(fs::path(artifact).parent_path().string()); // the cache entry, and what holds it

  Builder b(std::move(guarded));
  for (const Fixed& f : kSystem) b.add(f.path, f.access);
  for (const std::string& d : paths.library_dirs) b.add(d, kReadExec);

  const fs::path dev = paths.dev_dir;
  for (const Fixed& f : kDev) b.add((dev / f.path).string(), f.access);
  std::vector<std::string> nvidia;
  for (fs::directory_iterator it(dev, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("nvidia", 0) == 0) nvidia.push_back(it->path().string());
  }
  std::sort(nvidia.begin(), nvidia.end());
  for (const std::string& n : nvidia) b.add(n, kDevice); // nvidia-caps is a directory of such nodes

  if (artifact_ok) b.add(artifact, kReadFile | kExecute);
  return b.take();
}

CudaSandboxResult install_cuda_sandbox(const std::string& artifact) {
  CudaSandboxResult r;
  constexpr const char* kNoSeccomp = "; seccomp: none (the driver needs ioctls and threads)";
  if (const char* mode = std::getenv("TEMPER_CUDA_SANDBOX"); mode && std::strcmp(mode, "off") == 0) {
    r.description = "none: TEMPER_CUDA_SANDBOX=off; the kernel's host code can read and write whatever this user can";
    return r;
  }
  CudaRuleset rules = cuda_landlock_rules(paths_for_this_process(artifact));
  LandlockResult l = restrict_paths(rules.rules, /*all_threads=*/true);
  if (!l.error.empty()) {
    r.error = "the CUDA sandbox failed: landlock: " + l.error + " (TEMPER_CUDA_SANDBOX=off runs without it)";
    return r;
  }
  if (l.abi == 0) {
    r.description = "Landlock unavailable (" + l.unavailable + "): the kernel's host code is NOT confined" + kNoSeccomp;
    return r;
  }
  r.description = "landlock (abi " + std::to_string(l.abi) + "): device files, libraries, the artifact (" +
                  std::to_string(l.paths) + " paths; " +
                  (l.all_threads ? "every thread" : "this thread and its later ones, not the driver's earlier threads") + ")";
  if (!rules.dropped.empty()) {
    r.description += "; left out to keep protected paths closed: " + rules.dropped.front();
    if (rules.dropped.size() > 1) r.description += " and " + std::to_string(rules.dropped.size() - 1) + " more";
  }
  r.description += kNoSeccomp;
  return r;
}

} // namespace temper::worker
