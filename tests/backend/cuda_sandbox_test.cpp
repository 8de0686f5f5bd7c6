// temper-cuda-worker's sandbox (src/worker/cuda_sandbox.h): the ruleset as data, computed from
// fake paths (the artifact file and not its directory, nothing covering the cache, the vault,
// HOME or the task, missing paths skipped, the device nodes), then applied in a forked child:
// the child still reads /proc, libraries and the artifact but no other file of the "cache".
#include "backend/arena.h"
#include "backend/cuda_device.h"
#include "backend/worker.h"
#include "util/fs.h"
#include "util/process.h"
#include "worker/cuda_sandbox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cuda_sandbox_test {

using namespace temper;
using namespace temper::worker;
namespace fs = std::filesystem;
namespace la = temper::worker::landlock_access;

namespace {

// A temporary tree standing for temper's places: the cache with one compiled artifact and a
// golden beside it, the vault, a home, a task, and a /dev with some of the NVIDIA nodes.
struct FakeHost {
  util::TempDir dir{"temper-cuda-sandbox-test"};
  fs::path root = fs::canonical(dir.path());
  fs::path cache = root / "cache";
  fs::path entry = cache / "compile" / "0123abcd";
  fs::path artifact = entry / "artifact";
  fs::path golden = cache / "golden" / "case-1.bundle";
  fs::path vault = root / "home" / ".temper" / "refs" / "ref" / "vault";
  fs::path home = root / "home";
  fs::path task = root / "task";
  fs::path dev = root / "dev";

  FakeHost() {
    for (const fs::path& d : {entry, golden.parent_path(), vault, task, dev / "nvidia-caps"}) fs::create_directories(d);
    write(artifact, "the artifact");
    write(entry / "result.json", "{}");
    write(golden, "the golden");
    write(vault / "reference.cu", "the reference");
    write(task / "golden.cpp", "the task");
    for (const char* node : {"nvidiactl", "nvidia0", "nvidia-modeset"}) write(dev / node, ""); // no nvidia-uvm here
    write(dev / "nvidia-caps" / "nvidia-cap1", "");
  }

  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

  CudaSandboxPaths paths() const {
    CudaSandboxPaths p;
    p.artifact = artifact.string();
    p.protected_paths = {cache.string(), vault.string(), home.string(), task.string()};
    p.dev_dir = dev.string();
    return p;
  }
};

const LandlockRule* find_rule(const CudaRuleset& r, const fs::path& p) {
  auto it = std::find_if(r.rules.begin(), r.rules.end(), [&](const LandlockRule& x) { return x.path == p.string(); });
  return it == r.rules.end() ? nullptr : &*it;
}

// True when a rule on `rule` grants something at or beneath `p`.
bool covers(const std::string& rule, const fs::path& p) {
  std::string s = p.string();
  return rule == "/" || s == rule || s.rfind(rule + "/", 0) == 0;
}

bool landlock_available() { return ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1U) >= 1; }

// Runs `body` in a forked child (one thread, so Landlock binds all of it) and returns what it
// wrote: "ok" or the first failed check.
template <typename Body>
std::string in_child(Body body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out = body();
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "the child died: " + out;
  return out;
}

// "" when opening `p` for reading gives `want_errno` (0: success), else what happened.
std::string open_gives(const fs::path& p, int want_errno) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  int e = fd < 0 ? errno : 0;
  if (fd >= 0) ::close(fd);
  if (e == want_errno) return {};
  return "open " + p.string() + ": " + (e ? std::strerror(e) : "opened") + ", wanted " + (want_errno ? std::strerror(want_errno) : "success");
}

// The checks a confined child runs: reads of /proc, a library and the artifact still work; the
// cache entry's other files, the golden, the vault and the task are refused.
std::string confined_checks(const FakeHost& h) {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&::open), &info) == 0 || info.dli_fname == nullptr) return "dladdr(open) failed";
  for (const auto& [path, want] : std::vector<std::pair<fs::path, int>>{{"/proc/self/status", 0},
                                                                        {info.dli_fname, 0},
                                                                        {h.artifact, 0},
                                                                        {h.entry / "result.json", EACCES},
                                                                        {h.golden, EACCES},
                                                                        {h.vault / "reference.cu", EACCES},
                                                                        {h.task / "golden.cpp", EACCES}}) {
    if (std::string bad = open_gives(path, want); !bad.empty()) return bad;
  }
  int fd = ::open((h.cache / "planted").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0 || errno != EACCES) return "creating a file in the cache was not refused with EACCES";
  return "ok";
}

} // namespace

TEST(CudaSandbox, GrantsTheArtifactFileNotItsDirectory) {
  FakeHost h;
  CudaRuleset r = cuda_landlock_rules(h.paths());
  const LandlockRule* a = find_rule(r, h.artifact);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->access, la::kReadFile | la::kExecute);
  for (const LandlockRule& rule : r.rules) {
    EXPECT_FALSE(covers(rule.path, h.entry)) << rule.path << " covers the artifact's directory";
    EXPECT_FALSE(covers(rule.path, h.entry / "result.json")) << rule.path;
  }
}

TEST(CudaSandbox, NoRuleCoversTheCacheVaultHomeOrTask) {
  FakeHost h;
  CudaSandboxPaths p = h.paths();
  fs::create_directories(h.home / "cuda" / "lib64");
  // A $CUDA_HOME at the root of everything and a library directory that is the task: both would
  // open protected places. A toolkit inside the home is fine: it does not cover the home.
  p.library_dirs = {h.root.string(), h.task.string(), (h.home / "cuda" / "lib64").string()};
  CudaRuleset r = cuda_landlock_rules(p);
  for (const LandlockRule& rule : r.rules) {
    for (const fs::path& guarded : {h.cache, h.vault, h.home, h.task, h.golden.parent_path()}) {
      EXPECT_FALSE(covers(rule.path, guarded)) << rule.path << " covers " << guarded;
    }
  }
  EXPECT_NE(find_rule(r, h.home / "cuda" / "lib64"), nullptr);
  EXPECT_EQ(find_rule(r, h.root), nullptr);
  EXPECT_EQ(find_rule(r, h.task), nullptr);
  auto dropped = [&](const fs::path& d) {
    return std::any_of(r.dropped.begin(), r.dropped.end(), [&](const std::string& s) { return s.rfind(d.string() + " (covers ", 0) == 0; });
  };
  EXPECT_TRUE(dropped(h.root));
  EXPECT_TRUE(dropped(h.task));
}

TEST(CudaSandbox, SkipsMissingPathsAndGrantsTheDeviceNodes) {
  FakeHost h;
  CudaSandboxPaths p = h.paths();
  p.library_dirs = {(h.root / "no-such-toolkit").string()};
  p.artifact = (h.entry / "missing-artifact").string();
  CudaRuleset r = cuda_landlock_rules(p);
  for (const LandlockRule& rule : r.rules) {
    EXPECT_EQ(rule.path.find("no-such"), std::string::npos) << rule.path;
    EXPECT_EQ(rule.path.find("missing"), std::string::npos) << rule.path;
    EXPECT_TRUE(fs::exists(rule.path)) << rule.path;
  }
  EXPECT_EQ(find_rule(r, h.dev / "nvidia-uvm"), nullptr);
  EXPECT_EQ(find_rule(r, h.dev / "null"), nullptr); // this fake /dev has none
  const uint64_t device = la::kReadFile | la::kWriteFile | la::kIoctlDev;
  for (const char* node : {"nvidiactl", "nvidia0", "nvidia-modeset"}) {
    const LandlockRule* d = find_rule(r, h.dev / node);
    ASSERT_NE(d, nullptr) << node;
    EXPECT_EQ(d->access & device, device) << node;
  }
  const LandlockRule* caps = find_rule(r, h.dev / "nvidia-caps");
  ASSERT_NE(caps, nullptr);
  EXPECT_TRUE(caps->access & la::kReadDir);
}

TEST(CudaSandbox, SystemDirectoriesAreReadOnlyAndTheRealDevIsUsable) {
  FakeHost h;
  CudaSandboxPaths p = h.paths();
  p.dev_dir = "/dev";
  CudaRuleset r = cuda_landlock_rules(p);
  const LandlockRule* usr = find_rule(r, "/usr");
  ASSERT_NE(usr, nullptr);
  EXPECT_EQ(usr->access, la::kReadFile | la::kReadDir | la::kExecute);
  const LandlockRule* proc = find_rule(r, "/proc");
  ASSERT_NE(proc, nullptr);
  EXPECT_EQ(proc->access, la::kReadFile | la::kReadDir);
  const LandlockRule* null = find_rule(r, "/dev/null");
  ASSERT_NE(null, nullptr);
  EXPECT_TRUE(null->access & la::kWriteFile);
  EXPECT_EQ(find_rule(r, "/tmp"), nullptr);
  EXPECT_EQ(find_rule(r, "/dev"), nullptr);
  for (const LandlockRule& rule : r.rules) {
    EXPECT_FALSE(covers(rule.path, "/etc/passwd")) << rule.path; // /etc only for the loader and NVIDIA's files
  }
}

TEST(CudaSandbox, AppliedInAChildItReadsLibrariesAndTheArtifactButNotTheCache) {
  if (!landlock_available()) GTEST_SKIP() << "Landlock is unavailable on this kernel: " << std::strerror(errno);
  FakeHost h;
  std::string result = in_child([&] {
    CudaRuleset r = cuda_landlock_rules(h.paths());
    LandlockResult l = restrict_paths(r.rules, /*all_threads=*/true);
    if (!l.error.empty()) return "restrict_paths: " + l.error;
    if (l.abi < 1) return std::string("Landlock vanished in the child");
    return confined_checks(h);
  });
  EXPECT_EQ(result, "ok");
}

// The worker's entry point, in a child standing in at the judge's working directory (the task):
// the protected paths come from the process, not from parameters.
TEST(CudaSandbox, InstalledForThisProcessItProtectsTheWorkingDirectory) {
  if (!landlock_available()) GTEST_SKIP() << "Landlock is unavailable on this kernel: " << std::strerror(errno);
  FakeHost h;
  std::string result = in_child([&] {
    if (::chdir(h.task.c_str()) != 0) return std::string("chdir failed");
    ::unsetenv("TEMPER_CUDA_SANDBOX");
    CudaSandboxResult s = install_cuda_sandbox(h.artifact.string());
    if (!s.error.empty()) return s.error;
    if (s.description.rfind("landlock (abi ", 0) != 0) return "description: " + s.description;
    if (s.description.find("seccomp: none") == std::string::npos) return "description: " + s.description;
    return confined_checks(h);
  });
  EXPECT_EQ(result, "ok");
}

TEST(CudaSandbox, OffLeavesTheProcessAloneAndSaysSo) {
  FakeHost h;
  std::string result = in_child([&] {
    ::setenv("TEMPER_CUDA_SANDBOX", "off", 1);
    CudaSandboxResult s = install_cuda_sandbox(h.artifact.string());
    if (!s.error.empty()) return s.error;
    if (s.description.rfind("none: TEMPER_CUDA_SANDBOX=off", 0) != 0) return "description: " + s.description;
    if (std::string bad = open_gives(h.golden, 0); !bad.empty()) return bad;
    return std::string("ok");
  });
  EXPECT_EQ(result, "ok");
}

// The adversarial case through the worker: a candidate whose host code opens a file beside its
// artifact in the cache, through a path it builds at run time, is refused. On the GPU where
// there is one, else on the fake driver and runtime (tests/fixtures/cuda_fake).
TEST(CudaSandbox, AKernelCannotOpenTheCacheThroughARunTimePath) {
  if (!landlock_available()) GTEST_SKIP() << "Landlock is unavailable on this kernel: " << std::strerror(errno);
  const fs::path worker = fs::path(TEMPER_BINARY_DIR) / "temper-cuda-worker";
  const fs::path fake = TEMPER_FAKE_CUDA;
  auto device = backend::probe_cuda_device(worker, util::default_process_runner());
  ASSERT_TRUE(device.has_value()) << device.error().message;
  FakeHost h;
  fs::copy_file(fake / "libtemper_fake_reads_cache.so", h.artifact, fs::copy_options::overwrite_existing);
  std::ofstream(h.entry / "secret.txt") << "the cache\n";
  backend::ArenaLayout layout;
  layout.inputs.push_back(core::TensorSpec{"x", core::Dtype::F32, {4}});
  layout.outputs.push_back(core::TensorSpec{"y", core::Dtype::F32, {4}});
  auto arena = backend::SharedArena::create(layout);
  ASSERT_TRUE(arena.has_value()) << arena.error().message;
  backend::WorkerOptions wo;
  wo.worker_exe = worker;
  wo.artifact = h.artifact;
  if (!device->supported) {
    wo.worker_args = {"--driver", (fake / "lib64" / "libcuda.so.1").string(), "--runtime", (fake / "lib64" / "libcudart.so").string()};
  }
  auto [w, loaded] = backend::Worker::start(wo, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message << "\n" << (w ? w->output_tail() : "");
  EXPECT_NE(w->sandbox().find("landlock"), std::string::npos) << w->sandbox();
  backend::CallResult r = w->run(0);
  EXPECT_TRUE(r.ok()) << (device->supported ? "on the GPU: " : "on the fake runtime: ") << r.message;
}

} // namespace cuda_sandbox_test
