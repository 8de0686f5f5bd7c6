// The worker's runtime sandbox (src/worker/sandbox.h, docs/security.md): kernels compiled here
// try what a cheating kernel would (new processes, exec, sockets, writes, ptrace, signals to the
// judge, reading files outside the allow-list, taking over SIGSYS) and must be stopped, while
// honest kernels (threads, OpenMP, the worker's own flush and timing) keep working.
#include "backend/arena.h"
#include "backend/protocol.h"
#include "backend/worker.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <thread>
#include <sys/syscall.h>
#include <unistd.h>

namespace sandbox_test {

using namespace temper;
using namespace temper::backend;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

fs::path worker_exe() { return fs::path(TEMPER_BINARY_DIR) / "temper-worker"; }

util::TempDir& scratch() {
  static util::TempDir dir("temper-sandbox-test");
  return dir;
}

// Compiles a kernel once per test process, with extra flags (-fopenmp).
fs::path kernel(const std::string& name, const std::string& body, std::vector<std::string> flags = {}) {
  static std::map<std::string, fs::path> built;
  if (auto it = built.find(name); it != built.end()) return it->second;
  fs::path src = scratch().path() / (name + ".cpp");
  fs::path so = scratch().path() / (name + ".so");
  std::ofstream(src) << "#include <temper/kernel.h>\n" << body;
  util::Command c;
  c.argv = {"g++", "-O2", "-shared", "-fPIC", std::string("-I") + TEMPER_SOURCE_DIR + "/include"};
  c.argv.insert(c.argv.end(), flags.begin(), flags.end());
  c.argv.insert(c.argv.end(), {"-o", so.string(), src.string()});
  c.timeout = 120s;
  util::ProcessResult r = util::default_process_runner().run(c);
  if (!r.ok()) ADD_FAILURE() << "compiling " << name << ": " << r.describe() << "\n" << r.output;
  built[name] = so;
  return so;
}

// One kernel that misbehaves in the way its string attr "do" names; "path" is a file to use.
// It returns 0 when the misdeed worked (the sandbox failed), else the errno with a message.
const char* kMisbehave = R"K(
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <string>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

static char g_msg[512];
static int report(const temper_args* a, const char* what, int rc) {
  snprintf(g_msg, sizeof g_msg, "%s: rc %d errno %d (%s)", what, rc, errno, strerror(errno));
  a->set_error(g_msg);
  return errno ? errno : 1;
}
static void on_sys(int) {}
static int do_fork() {
  pid_t p = fork();
  if (p == 0) _exit(0);
  if (p > 0) waitpid(p, nullptr, 0);
  return p;
}

TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  const temper_attr* w = temper_find_attr(a, "do");
  const temper_attr* pa = temper_find_attr(a, "path");
  std::string what = w ? w->s : "";
  const char* path = pa ? pa->s : "";
  errno = 0;
  if (what == "fork") {
    int p = do_fork();
    return p < 0 ? report(a, "fork", p) : 0;
  }
  if (what == "exec") {
    execl("/bin/true", "true", (char*)nullptr);
    return report(a, "execl", -1);
  }
  if (what == "socket") {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    return s < 0 ? report(a, "socket", s) : 0;
  }
  if (what == "write") {
    FILE* f = fopen(path, "w");
    if (!f) return report(a, "fopen for writing", -1);
    fputs("escaped", f);
    fclose(f);
    return 0;
  }
  if (what == "read") {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return report(a, "open for reading", fd);
    char buf[64];
    long n = read(fd, buf, sizeof buf);
    close(fd);
    return n < 0 ? report(a, "read", (int)n) : 0;
  }
  if (what == "dlopen") {
    void* h = dlopen(path, RTLD_NOW);
    if (!h) {
      snprintf(g_msg, sizeof g_msg, "dlopen: %s", dlerror());
      a->set_error(g_msg);
      return 2;
    }
    return 0;
  }
  if (what == "ptrace") {
    long r = ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    return r < 0 ? report(a, "ptrace", (int)r) : 0;
  }
  if (what == "signal_judge") {
    int r = kill(getppid(), 0);
    return r < 0 ? report(a, "kill", r) : 0;
  }
  if (what == "take_sigsys") {
    struct sigaction sa {};
    sa.sa_handler = on_sys;
    sigaction(SIGSYS, &sa, nullptr);
    int p = do_fork();
    return p < 0 ? report(a, "fork after sigaction", p) : 0;
  }
  if (what == "take_sigsys_high_bits") {
    // The kernel reads the signal number as an int: high bits must not dodge the rule.
    struct sigaction sa {};
    sa.sa_handler = on_sys;
    long r = syscall(SYS_rt_sigaction, (long)SIGSYS | (1L << 32), &sa, nullptr, 8);
    if (r != 0) return report(a, "rt_sigaction", (int)r);
    int p = do_fork();
    return p < 0 ? report(a, "fork after rt_sigaction", p) : 0;
  }
  if (what == "block_sigsys") {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGSYS);
    sigprocmask(SIG_BLOCK, &s, nullptr);
    int p = do_fork();
    return p < 0 ? report(a, "fork with SIGSYS blocked", p) : 0;
  }
  if (what == "thread_fork") {
    int p = 0;
    std::thread t([&] { p = do_fork(); });
    t.join();
    return p < 0 ? report(a, "fork from a thread", p) : 0;
  }
  if (what == "late_fork") {
    // Returns at once; a thread it leaves behind forks while the worker waits for a command.
    std::thread([] { usleep(100000); do_fork(); }).detach();
    return 0;
  }
  if (what == "abort") abort();
  if (what == "raise_limit") {
    rlimit r{RLIM_INFINITY, RLIM_INFINITY};
    int rc = setrlimit(RLIMIT_AS, &r);
    return rc < 0 ? report(a, "setrlimit", rc) : 0;
  }
  if (what == "shm") {
    long id = syscall(SYS_shmget, 0x7e3fe7, 4096, 01600); // IPC_CREAT | 0600
    return id < 0 ? report(a, "shmget", (int)id) : 0;
  }
  if (what == "io_uring") {
    char params[120] = {};
    long fd = syscall(SYS_io_uring_setup, 4, params);
    return fd < 0 ? report(a, "io_uring_setup", (int)fd) : 0;
  }
#if defined(__x86_64__)
  if (what == "int80") {
    long r;
    asm volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); // i386 getpid
    return r < 0 ? report(a, "int 0x80", (int)r) : 0;
  }
#endif
  a->set_error("unknown misdeed");
  return 99;
}
)K";

// What honest kernels do besides computing: two std::threads, libc facts that read /proc and
// /sys, a clock, a big allocation, printing.
const char* kHonestThreads = R"K(
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <unistd.h>

TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  const float* y = (const float*)a->inputs[1].data;
  float* out = (float*)a->outputs[0].data;
  int64_t n = temper_numel(&a->outputs[0]);
  auto part = [&](int64_t lo, int64_t hi) { for (int64_t i = lo; i < hi; ++i) out[i] = x[i] + y[i]; };
  std::thread t0(part, 0, n / 2), t1(part, n / 2, n);
  t0.join();
  t1.join();
  if (std::thread::hardware_concurrency() == 0 || sysconf(_SC_NPROCESSORS_ONLN) < 1) {
    a->set_error("cannot see the CPUs");
    return 1;
  }
  FILE* maps = fopen("/proc/self/maps", "r");
  if (!maps) { a->set_error("cannot read /proc/self/maps"); return 2; }
  fclose(maps);
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  void* big = malloc(64 << 20);
  if (!big) { a->set_error("malloc"); return 3; }
  memset(big, 1, 64 << 20);
  free(big);
  printf("honest kernel done\n");
  return 0;
}
)K";

const char* kOpenMp = R"K(
#include <omp.h>
#include <atomic>

TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  const float* y = (const float*)a->inputs[1].data;
  float* out = (float*)a->outputs[0].data;
  int64_t n = temper_numel(&a->outputs[0]);
  std::atomic<int> seen{0};
#pragma omp parallel num_threads(a->num_threads)
  {
    seen.fetch_add(1);
#pragma omp for
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
  }
  if (seen.load() != a->num_threads) {
    a->set_error("fewer OpenMP threads than asked for");
    return 1;
  }
  return 0;
}
)K";

const char* kForkingConstructor = R"K(
#include <unistd.h>
#include <sys/wait.h>
__attribute__((constructor)) static void escape(void) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  if (p > 0) waitpid(p, 0, 0);
}
TEMPER_EXPORT int temper_kernel(const temper_args* a) { return a->num_inputs * 0; }
)K";

ArenaLayout adder_layout(int64_t n) {
  ArenaLayout l;
  l.inputs = {{"a", core::Dtype::F32, {n}}, {"b", core::Dtype::F32, {n}}};
  l.outputs = {{"out", core::Dtype::F32, {n}}};
  return l;
}

WorkerOptions options_for(const fs::path& artifact, const std::string& misdeed = "", const std::string& path = "") {
  WorkerOptions o;
  o.worker_exe = worker_exe();
  o.artifact = artifact;
  o.call_timeout = 20s;
  if (!misdeed.empty()) {
    o.attrs.push_back({"do", core::AttrValue{core::AttrKind::String, 0, 0, misdeed, {}, {}}});
    o.attrs.push_back({"path", core::AttrValue{core::AttrKind::String, 0, 0, path, {}, {}}});
  }
  return o;
}

// Runs the misbehaving kernel once.
CallResult misbehave(const std::string& misdeed, const std::string& path = "") {
  auto arena = SharedArena::create(adder_layout(8));
  if (!arena) return CallResult{};
  fs::path so = kernel("misbehave", kMisbehave, {"-pthread"});
  auto [worker, loaded] = Worker::start(options_for(so, misdeed, path), *arena);
  if (!loaded.ok()) return loaded;
  return worker->run(0);
}

bool landlock_available() {
  long abi = ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1U);
  return abi >= 1;
}

void expect_violation(const CallResult& r, const std::vector<std::string>& names) {
  EXPECT_EQ(r.outcome, CallOutcome::SandboxViolation) << call_outcome_name(r.outcome) << ": " << r.message;
  bool named = false;
  for (const auto& n : names) named = named || r.violation.rfind(n, 0) == 0;
  EXPECT_TRUE(named) << "violation '" << r.violation << "' is none of the expected; message: " << r.message;
  EXPECT_NE(r.message.find(r.violation), std::string::npos) << r.message;
}

} // namespace

TEST(WorkerProtocol, SandboxFramesRoundTrip) {
  std::string buf = protocol::encode(protocol::SandboxViolationReply{"openat (for writing)", 257}) +
                    protocol::encode_loaded("seccomp: 1 system calls trapped");
  protocol::Frame f;
  ASSERT_EQ(protocol::take_frame(buf, f), protocol::FrameStatus::Complete);
  EXPECT_EQ(f.type, protocol::MsgType::SandboxViolation);
  auto v = protocol::decode_sandbox_violation(f.payload);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->syscall, "openat (for writing)");
  EXPECT_EQ(v->number, 257);
  EXPECT_FALSE(protocol::decode_sandbox_violation(std::string_view(f.payload).substr(0, f.payload.size() - 1)));
  ASSERT_EQ(protocol::take_frame(buf, f), protocol::FrameStatus::Complete);
  EXPECT_EQ(f.type, protocol::MsgType::Loaded);
  EXPECT_EQ(protocol::decode_loaded(f.payload), "seccomp: 1 system calls trapped");
}

TEST(WorkerSandbox, ForkIsAViolationNamingTheCall) { expect_violation(misbehave("fork"), {"clone", "fork"}); }

TEST(WorkerSandbox, ForkFromAKernelThreadIsAViolation) {
  expect_violation(misbehave("thread_fork"), {"clone", "fork"});
}

TEST(WorkerSandbox, AViolationBetweenCallsIsReportedByTheNextCommand) {
  auto arena = SharedArena::create(adder_layout(8));
  ASSERT_TRUE(arena);
  fs::path so = kernel("misbehave", kMisbehave, {"-pthread"});
  auto [worker, loaded] = Worker::start(options_for(so, "late_fork"), *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  CallResult first = worker->run(0);
  EXPECT_TRUE(first.ok()) << call_outcome_name(first.outcome) << ": " << first.message;
  std::this_thread::sleep_for(500ms);
  expect_violation(worker->run(0), {"clone", "fork"});
}

TEST(WorkerSandbox, AbortIsACrashNotAViolation) {
  CallResult r = misbehave("abort");
  EXPECT_EQ(r.outcome, CallOutcome::Crashed) << call_outcome_name(r.outcome) << ": " << r.message;
  EXPECT_NE(r.message.find("SIGABRT"), std::string::npos) << r.message;
}

TEST(WorkerSandbox, ExecIsAViolation) { expect_violation(misbehave("exec"), {"execve"}); }

TEST(WorkerSandbox, SocketIsAViolation) { expect_violation(misbehave("socket"), {"socket"}); }

TEST(WorkerSandbox, OpeningAFileForWritingIsAViolation) {
  fs::path target = scratch().path() / "escaped.txt";
  CallResult r = misbehave("write", target.string());
  expect_violation(r, {"openat (for writing)", "open (for writing)"});
  EXPECT_FALSE(fs::exists(target));
  expect_violation(misbehave("write", "/tmp/temper-sandbox-test-escape.txt"), {"openat", "open"});
  EXPECT_FALSE(fs::exists("/tmp/temper-sandbox-test-escape.txt"));
}

TEST(WorkerSandbox, PtraceIsAViolation) { expect_violation(misbehave("ptrace"), {"ptrace"}); }

TEST(WorkerSandbox, SignallingTheJudgeIsAViolation) { expect_violation(misbehave("signal_judge"), {"kill"}); }

TEST(WorkerSandbox, RaisingTheMemoryLimitIsAViolation) {
  expect_violation(misbehave("raise_limit"), {"prlimit64", "setrlimit"});
}

TEST(WorkerSandbox, SysVSharedMemoryIsAViolation) { expect_violation(misbehave("shm"), {"shmget"}); }

TEST(WorkerSandbox, IoUringIsAViolation) { expect_violation(misbehave("io_uring"), {"io_uring_setup"}); }

#if defined(__x86_64__)
TEST(WorkerSandbox, NonNativeSystemCallIsAViolation) {
  expect_violation(misbehave("int80"), {"non-native system call 20"});
}
#endif

TEST(WorkerSandbox, AKernelCannotTakeOverSigsys) {
  // Replacing the handler is itself the violation, so the fork after it never happens.
  expect_violation(misbehave("take_sigsys"), {"rt_sigaction"});
  expect_violation(misbehave("take_sigsys_high_bits"), {"rt_sigaction"});
}

TEST(WorkerSandbox, BlockingSigsysStillStopsTheCallUnnamed) {
  CallResult r = misbehave("block_sigsys");
  EXPECT_EQ(r.outcome, CallOutcome::SandboxViolation) << call_outcome_name(r.outcome) << ": " << r.message;
  EXPECT_TRUE(r.violation.empty()) << r.violation;
  EXPECT_NE(r.message.find("SIGSYS"), std::string::npos) << r.message;
}

TEST(WorkerSandbox, ReadingOutsideTheAllowListIsRefusedNotReported) {
  if (!landlock_available()) GTEST_SKIP() << "Landlock is unavailable on this kernel";
  // A file next to the artifact (the compile cache keeps goldens and references alike), the
  // judge's cache, and a path reached through the worker's own /proc entry.
  fs::path secret = scratch().path() / "golden.bundle";
  std::ofstream(secret) << "the expected outputs";
  for (const std::string& path : {secret.string(), std::string("/etc/passwd"),
                                  "/proc/self/cwd/" + fs::relative(secret, fs::current_path()).string(),
                                  "/proc/self/root" + secret.string()}) {
    CallResult r = misbehave("read", path);
    EXPECT_EQ(r.outcome, CallOutcome::KernelError) << path << ": " << call_outcome_name(r.outcome) << ": " << r.message;
    EXPECT_NE(r.message.find("Permission denied"), std::string::npos) << path << ": " << r.message;
  }
  // Allowed: system files and the process's own /proc entries.
  EXPECT_TRUE(misbehave("read", "/usr/include/stdio.h").ok());
  EXPECT_TRUE(misbehave("read", "/proc/self/status").ok());
  EXPECT_TRUE(misbehave("read", "/sys/devices/system/cpu/online").ok());
}

TEST(WorkerSandbox, AnotherArtifactCannotBeMapped) {
  if (!landlock_available()) GTEST_SKIP() << "Landlock is unavailable on this kernel";
  // The reference is just another artifact: a candidate's worker cannot open it.
  fs::path other = kernel("honest_threads", kHonestThreads, {"-pthread"});
  CallResult r = misbehave("dlopen", other.string());
  EXPECT_EQ(r.outcome, CallOutcome::KernelError) << call_outcome_name(r.outcome) << ": " << r.message;
  EXPECT_NE(r.message.find("Permission denied"), std::string::npos) << r.message;
}

TEST(WorkerSandbox, ForkInAConstructorIsAViolationWhileLoading) {
  auto arena = SharedArena::create(adder_layout(8));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for(kernel("forking_ctor", kForkingConstructor)), *arena);
  expect_violation(loaded, {"clone", "fork"});
  EXPECT_NE(loaded.message.find("while loading"), std::string::npos) << loaded.message;
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->run(0).outcome, CallOutcome::SandboxViolation);
}

TEST(WorkerSandbox, HonestThreadsWorkAndTheWorkerKeepsItsOwnDuties) {
  auto arena = SharedArena::create(adder_layout(4096));
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("honest_threads", kHonestThreads, {"-pthread"}));
  o.flush_bytes = 8 << 20;
  auto [worker, loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  RecordProperty("sandbox", worker->sandbox());
  EXPECT_NE(worker->sandbox().find("seccomp"), std::string::npos) << worker->sandbox();
  if (landlock_available()) {
    EXPECT_NE(worker->sandbox().find("landlock ABI"), std::string::npos) << worker->sandbox();
  }
  for (int k = 0; k < 4096; ++k) {
    reinterpret_cast<float*>(arena->input(0, 0))[k] = static_cast<float>(k);
    reinterpret_cast<float*>(arena->input(0, 1))[k] = 1.0f;
  }
  for (int round = 0; round < 3; ++round) {
    CallResult f = worker->flush();
    ASSERT_TRUE(f.ok()) << f.message;
    CallResult r = worker->run(0);
    ASSERT_TRUE(r.ok()) << call_outcome_name(r.outcome) << ": " << r.message;
    EXPECT_GT(r.kernel_seconds, 0);
    EXPECT_EQ(reinterpret_cast<float*>(arena->output(0))[4095], 4096.0f);
  }
  EXPECT_NE(worker->output_tail().find("honest kernel done"), std::string::npos);
}

TEST(WorkerSandbox, OpenMpWorks) {
  auto arena = SharedArena::create(adder_layout(1 << 16));
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("openmp", kOpenMp, {"-fopenmp"}));
  o.threads = 4;
  auto [worker, loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  for (int k = 0; k < (1 << 16); ++k) {
    reinterpret_cast<float*>(arena->input(0, 0))[k] = 2.0f;
    reinterpret_cast<float*>(arena->input(0, 1))[k] = static_cast<float>(k);
  }
  for (int round = 0; round < 3; ++round) {
    CallResult r = worker->run(0);
    ASSERT_TRUE(r.ok()) << call_outcome_name(r.outcome) << ": " << r.message << "\n" << worker->output_tail();
    EXPECT_EQ(reinterpret_cast<float*>(arena->output(0))[(1 << 16) - 1], 2.0f + static_cast<float>((1 << 16) - 1));
  }
}

// A candidate that behaves through correctness and only then forks is caught while timed,
// with the same status and reason.
TEST(WorkerSandbox, JudgeRejectsAForkWhileTimed) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the candidate uses x86-64 inline assembly";
#else
  fs::path dir = scratch().path() / "late_fork";
  fs::create_directories(dir);
  std::ofstream(dir / "candidate.cpp") << "#define temper_kernel honest_kernel\n#include \"" << TEMPER_SOURCE_DIR
                                      << R"(/tests/fixtures/swi_glu/correct_fast.cpp"
#undef temper_kernel
static int calls = 0;
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  if (++calls > 12) { /* past the correctness trials: inside the timed samples */
    long r;
    asm volatile("syscall" : "=a"(r) : "a"(57L) : "rcx", "r11", "memory"); /* fork */
    if (r == 0) for (;;) {}
  }
  return honest_kernel(a);
}
)";
  util::Command c;
  const std::string task = std::string(TEMPER_SOURCE_DIR) + "/tasks/swi_glu";
  c.argv = {(fs::path(TEMPER_BINARY_DIR) / "temper").string(), "judge", task, (dir / "candidate.cpp").string(),
            "--reference", task + "/reference.cpp",
            "--cases", "1", "--measure-jobs", "1", "--confirm-jobs", "0", "--cap", "1", "--json",
            (dir / "report.json").string(), "--quiet",
            // One worker life: the kernel counts its calls per process, and a renewed worker
            // would start counting again (how many calls a life makes depends on the machine).
            "--lives", "0"};
  c.timeout = 300s;
  util::ProcessResult r = util::default_process_runner().run(c);
  EXPECT_EQ(r.exit_code, 1) << r.describe() << "\n" << r.output;
  auto text = util::read_file(dir / "report.json");
  ASSERT_TRUE(text) << r.output;
  nlohmann::json report = nlohmann::json::parse(*text);
  ASSERT_EQ(report["cases"].size(), 1u) << report.dump(2);
  const auto& kase = report["cases"][0];
  EXPECT_EQ(kase["status"], "REJECTED_CHEAT") << kase.dump(2);
  EXPECT_EQ(kase.value("reason_code", ""), "forbidden_syscall") << kase.dump(2);
  EXPECT_NE(kase.value("message", "").find("while timed"), std::string::npos) << kase.dump(2);
#endif
}

// The whole judge: a candidate that hides its fork from the static checks (a raw system call,
// no import) is stopped at run time and reported as REJECTED_CHEAT / forbidden_syscall.
TEST(WorkerSandbox, JudgeRejectsARawForkAsForbiddenSyscall) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the candidate uses x86-64 inline assembly";
#else
  fs::path candidate = scratch().path() / "raw_fork" / "candidate.cpp";
  fs::create_directories(candidate.parent_path());
  std::ofstream(candidate) << R"(#include <temper/kernel.h>
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(57L) : "rcx", "r11", "memory"); /* fork */
  if (r == 0) for (;;) {}
  return a->num_inputs * 0;
}
)";
  fs::path json = scratch().path() / "raw_fork" / "report.json";
  util::Command c;
  c.argv = {(fs::path(TEMPER_BINARY_DIR) / "temper").string(), "judge",
            std::string(TEMPER_SOURCE_DIR) + "/tasks/swi_glu", candidate.string(), "--json", json.string(),
            "--quiet", "--cases", "1"};
  c.timeout = 300s;
  util::ProcessResult r = util::default_process_runner().run(c);
  EXPECT_EQ(r.exit_code, 1) << r.describe() << "\n" << r.output;
  auto text = util::read_file(json);
  ASSERT_TRUE(text) << r.output;
  nlohmann::json report = nlohmann::json::parse(*text);
  ASSERT_EQ(report["cases"].size(), 1u) << report.dump(2);
  const auto& kase = report["cases"][0];
  EXPECT_EQ(kase["status"], "REJECTED_CHEAT") << kase.dump(2);
  EXPECT_EQ(kase.value("reason_code", ""), "forbidden_syscall") << kase.dump(2);
  EXPECT_NE(kase.value("message", "").find("fork"), std::string::npos) << kase.dump(2);
#endif
}

} // namespace sandbox_test
