#include "backend/arena.h"
#include "backend/protocol.h"
#include "backend/worker.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace worker_test {

using namespace temper;
using namespace temper::backend;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

fs::path worker_exe() { return fs::path(TEMPER_BINARY_DIR) / "temper-worker"; }

// Compiles a kernel source once per test process; the directory goes away at exit.
// `with_header` false: the source brings its own declarations, as a kernel built against an
// older <temper/kernel.h> did.
fs::path kernel(const std::string& name, const std::string& body, bool with_header = true) {
  static util::TempDir dir("temper-worker-test");
  static std::map<std::string, fs::path> built;
  if (auto it = built.find(name); it != built.end()) return it->second;
  fs::path src = dir.path() / (name + ".cpp");
  fs::path so = dir.path() / (name + ".so");
  std::ofstream(src) << (with_header ? "#include <temper/kernel.h>\n" : "") << "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
                     << body;
  util::Command c;
  c.argv = {"g++", "-O2", "-shared", "-fPIC", std::string("-I") + TEMPER_SOURCE_DIR + "/include", "-o", so.string(),
            src.string()};
  c.timeout = 120s;
  util::ProcessResult r = util::default_process_runner().run(c);
  if (!r.ok()) ADD_FAILURE() << "compiling " << name << ": " << r.describe() << "\n" << r.output;
  built[name] = so;
  return so;
}

const char* kAdder = R"(
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  const float* y = (const float*)a->inputs[1].data;
  float* out = (float*)a->outputs[0].data;
  int64_t n = temper_numel(&a->outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
  return 0;
}
)";

const char* kError = R"(
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  a->set_error("unsupported layout: expected a contiguous input");
  return 7;
}
)";

const char* kSegfault = R"(
static volatile unsigned long bad_address = 64;
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  printf("about to crash\n"); /* no fflush: the worker line-buffers stdout */
  *(volatile int*)bad_address = a->num_threads;
  return 0;
}
)";

const char* kLoop = R"(
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  volatile unsigned long spin = 0;
  for (;;) spin = spin + (unsigned long)a->num_threads;
  return 0;
}
)";

const char* kHog = R"(
static char* volatile sink;
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  size_t n = (size_t)64 << 30;
  char* p = (char*)malloc(n);
  if (!p) {
    a->set_error("malloc of 64 GiB failed");
    return 12;
  }
  sink = p;
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  free(p);
  return 0;
}
)";

// Grows by touched megabytes until allocation fails: the limit must stop it, not the machine.
const char* kLeak = R"(
static void* volatile sink;
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  for (size_t total = 0;; total += 1 << 20) {
    char* p = (char*)malloc(1 << 20);
    if (!p) {
      a->set_error("out of memory");
      return 13;
    }
    memset(p, 1, 1 << 20);
    sink = p;
    if (total > ((size_t)64 << 30)) return 0;
  }
}
)";

const char* kChatty = R"(
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  for (int i = 0; i < 100000; ++i) printf("line %06d: ........................................................................................\n", i);
  fprintf(stderr, "chatty done\n");
  float* out = (float*)a->outputs[0].data;
  for (int64_t i = 0; i < temper_numel(&a->outputs[0]); ++i) out[i] = 1.0f;
  return 0;
}
)";

const char* kNoSymbol = R"(
TEMPER_EXPORT int temper_kernel_v2(const temper_args* a) { return a->num_inputs; }
)";

const char* kAttrs = R"(
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  double* out = (double*)a->outputs[0].data;
  const temper_attr* n = temper_find_attr(a, "n");
  const temper_attr* alpha = temper_find_attr(a, "alpha");
  const temper_attr* flag = temper_find_attr(a, "flag");
  const temper_attr* mode = temper_find_attr(a, "mode");
  const temper_attr* dims = temper_find_attr(a, "dims");
  const temper_attr* w = temper_find_attr(a, "weights");
  if (!n || !alpha || !flag || !mode || !dims || !w) { a->set_error("missing attr"); return 1; }
  if (n->kind != TEMPER_ATTR_INT || alpha->kind != TEMPER_ATTR_FLOAT || flag->kind != TEMPER_ATTR_BOOL ||
      mode->kind != TEMPER_ATTR_STRING || dims->kind != TEMPER_ATTR_INT_LIST || w->kind != TEMPER_ATTR_FLOAT_LIST) {
    a->set_error("wrong attr kind"); return 2;
  }
  out[0] = (double)n->i;
  out[1] = alpha->f;
  out[2] = (double)flag->i;
  out[3] = (double)strlen(mode->s);
  out[4] = strcmp(mode->s, "reflect") == 0 ? 1.0 : 0.0;
  out[5] = (double)dims->count;
  for (int64_t k = 0; k < dims->count && k < 3; ++k) out[6 + k] = (double)dims->ints[k];
  out[9] = (double)w->count;
  out[10] = w->count > 1 ? w->floats[1] : -1.0;
  out[11] = (double)a->num_threads;
  out[12] = (double)a->abi_version;
  out[13] = (double)a->num_attrs;
  return 0;
}
)";

const char* kExits = R"(
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  fprintf(stderr, "giving up\n");
  exit(3 + a->num_inputs - a->num_inputs);
}
)";

const char* kBadConstructor = R"(
static volatile unsigned long bad_address = 64;
__attribute__((constructor)) static void setup(void) { *(volatile int*)bad_address = 1; }
TEMPER_EXPORT int temper_kernel(const temper_args* a) { return a->num_inputs * 0; }
)";

ArenaLayout adder_layout(int64_t n, int sets) {
  ArenaLayout l;
  l.inputs = {{"a", core::Dtype::F32, {n}}, {"b", core::Dtype::F32, {n}}};
  l.outputs = {{"out", core::Dtype::F32, {n}}};
  l.input_sets = sets;
  return l;
}

WorkerOptions options_for(const fs::path& artifact) {
  WorkerOptions o;
  o.worker_exe = worker_exe();
  o.artifact = artifact;
  o.call_timeout = 10s;
  return o;
}

float* f32(unsigned char* p) { return reinterpret_cast<float*>(p); }

// True when `pid` is no child of ours any more: reaped, not a zombie, not running.
bool fully_reaped(int pid) {
  int status = 0;
  errno = 0;
  return ::waitpid(pid, &status, WNOHANG) == -1 && errno == ECHILD;
}

} // namespace

// --- arena ------------------------------------------------------------------------------------

TEST(SharedArena, LaysOutInputsSetMajorThenOutputsAligned) {
  ArenaLayout l;
  l.inputs = {{"x", core::Dtype::F16, {3, 5}}, {"y", core::Dtype::I64, {7}}};
  l.outputs = {{"o", core::Dtype::F32, {2, 2}}, {"p", core::Dtype::U8, {1}}};
  l.input_sets = 3;
  auto arena = SharedArena::create(l);
  ASSERT_TRUE(arena) << arena.error().message;
  std::vector<size_t> order;
  for (int s = 0; s < 3; ++s) {
    for (size_t k = 0; k < 2; ++k) order.push_back(arena->input_offset(s, k));
  }
  for (size_t k = 0; k < 2; ++k) order.push_back(arena->output_offset(k));
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i] % 4096, 0u) << i;
    if (i > 0) {
      EXPECT_GT(order[i], order[i - 1]) << "not set-major then outputs at " << i;
    }
  }
  EXPECT_GE(arena->size(), arena->output_offset(1) + 1);
  EXPECT_EQ(arena->size() % 4096, 0u);
  EXPECT_EQ(arena->input(1, 1), arena->input(0, 0) + arena->input_offset(1, 1));
  EXPECT_EQ(arena->layout().input_sets, 3);
  EXPECT_THROW(arena->input_offset(3, 0), std::out_of_range);
}

TEST(SharedArena, SecondMappingOfTheFdSharesTheBytes) {
  auto arena = SharedArena::create(adder_layout(1000, 2));
  ASSERT_TRUE(arena) << arena.error().message;
  void* m = ::mmap(nullptr, arena->size(), PROT_READ | PROT_WRITE, MAP_SHARED, arena->fd(), 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* second = static_cast<unsigned char*>(m);
  f32(arena->output(0))[999] = 42.5f;
  EXPECT_EQ(f32(second + arena->output_offset(0))[999], 42.5f);
  f32(second + arena->input_offset(1, 0))[3] = -1.25f;
  EXPECT_EQ(f32(arena->input(1, 0))[3], -1.25f);
  ::munmap(m, arena->size());
}

TEST(SharedArena, IsSealedAgainstResizing) {
  auto arena = SharedArena::create(adder_layout(16, 1));
  ASSERT_TRUE(arena) << arena.error().message;
  EXPECT_NE(::ftruncate(arena->fd(), 0), 0);
  EXPECT_NE(::ftruncate(arena->fd(), static_cast<off_t>(arena->size() * 2)), 0);
}

TEST(SharedArena, LargeArenaWorksAndMoves) {
  ArenaLayout l;
  l.inputs = {{"big", core::Dtype::U8, {int64_t{3} << 30}}};
  l.outputs = {{"o", core::Dtype::F32, {4}}};
  auto arena = SharedArena::create(l);
  ASSERT_TRUE(arena) << arena.error().message;
  EXPECT_GE(arena->size(), (size_t{3} << 30) + 16);
  arena->input(0, 0)[(size_t{3} << 30) - 1] = 7; // only the touched pages take memory
  SharedArena moved = std::move(*arena);
  EXPECT_EQ(moved.input(0, 0)[(size_t{3} << 30) - 1], 7);
  EXPECT_EQ(arena->fd(), -1);
}

TEST(SharedArena, RejectsBadLayouts) {
  ArenaLayout none = adder_layout(4, 0);
  EXPECT_FALSE(SharedArena::create(none));
  ArenaLayout negative = adder_layout(-4, 1);
  EXPECT_FALSE(SharedArena::create(negative));
  ArenaLayout huge;
  huge.inputs = {{"h", core::Dtype::F64, {int64_t{1} << 40, int64_t{1} << 30}}};
  EXPECT_FALSE(SharedArena::create(huge));
}

// --- protocol ---------------------------------------------------------------------------------

TEST(WorkerProtocol, LoadRoundTripsAndTruncationIsRejected) {
  protocol::LoadCommand c;
  c.artifact = "/tmp/k.so";
  c.arena_size = 1 << 20;
  c.memory_limit = 123;
  c.num_threads = 4;
  c.input_sets = 2;
  c.inputs = {{0, {2, 3}, {3, 1}, 4096, 24}, {6, {5}, {1}, 8192, 20}};
  c.outputs = {{3, {}, {}, 12288, 8}};
  c.attrs = {{"eps", TEMPER_ATTR_FLOAT, 0, 1e-5, "", {}, {}}, {"dims", TEMPER_ATTR_INT_LIST, 0, 0, "", {1, -2}, {}}};
  std::string frame = protocol::encode(c);
  std::string buf = frame.substr(0, 10);
  protocol::Frame f;
  EXPECT_EQ(protocol::take_frame(buf, f), protocol::FrameStatus::Incomplete);
  buf = frame + protocol::encode(protocol::RunCommand{1});
  ASSERT_EQ(protocol::take_frame(buf, f), protocol::FrameStatus::Complete);
  EXPECT_EQ(f.type, protocol::MsgType::Load);
  auto back = protocol::decode_load(f.payload);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->artifact, c.artifact);
  EXPECT_EQ(back->num_threads, 4);
  ASSERT_EQ(back->inputs.size(), 2u);
  EXPECT_EQ(back->inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back->inputs[1].offset, 8192u);
  ASSERT_EQ(back->attrs.size(), 2u);
  EXPECT_EQ(back->attrs[0].f, 1e-5);
  EXPECT_EQ(back->attrs[1].ints, (std::vector<int64_t>{1, -2}));
  EXPECT_FALSE(protocol::decode_load(std::string_view(f.payload).substr(0, f.payload.size() - 1)));
  ASSERT_EQ(protocol::take_frame(buf, f), protocol::FrameStatus::Complete);
  EXPECT_EQ(f.type, protocol::MsgType::Run);
  EXPECT_TRUE(buf.empty());
  std::string corrupt("\xff\xff\xff\x7f", 4);
  EXPECT_EQ(protocol::take_frame(corrupt, f), protocol::FrameStatus::Corrupt);
}

// RUN_INFO's profile_dir is a trailing field: frames without it (every runner before device
// time) decode as before, and it is only written when set.
TEST(WorkerProtocol, RunInfoCarriesAnOptionalProfileDirectory) {
  protocol::RunInfoReply info{"host", 5, 7, true, ""};
  std::string plain = protocol::encode(info);
  protocol::Frame f;
  ASSERT_EQ(protocol::take_frame(plain, f), protocol::FrameStatus::Complete);
  EXPECT_EQ(f.type, protocol::MsgType::RunInfo);
  auto back = protocol::decode_run_info(f.payload);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->time_kind, "host");
  EXPECT_EQ(back->wall_ns, 7);
  EXPECT_TRUE(back->profile_dir.empty());
  const size_t plain_size = f.payload.size();

  std::string device = protocol::encode(protocol::RunInfoReply{"device", 0, 9, true, "/tmp/p/call_000001"});
  ASSERT_EQ(protocol::take_frame(device, f), protocol::FrameStatus::Complete);
  EXPECT_EQ(f.payload.size(), plain_size + 2 + 4 + std::string("/tmp/p/call_000001").size()); // "device" is 2 longer than "host"
  back = protocol::decode_run_info(f.payload);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->time_kind, "device");
  EXPECT_EQ(back->profile_dir, "/tmp/p/call_000001");
  // A truncated or overlong trailing field is a malformed frame.
  EXPECT_FALSE(protocol::decode_run_info(std::string_view(f.payload).substr(0, f.payload.size() - 1)));
  EXPECT_FALSE(protocol::decode_run_info(f.payload + "x"));
}

TEST(WorkerProtocol, ColdStepIsATrailingFieldSentOnlyForEvict) {
  protocol::LoadCommand c;
  c.artifact = "/tmp/k.so";
  c.flush_bytes = 4096;
  std::string plain = protocol::encode(c);
  c.cold_step = protocol::kColdEvict;
  std::string evict = protocol::encode(c);
  EXPECT_GT(evict.size(), plain.size());
  protocol::Frame f;
  ASSERT_EQ(protocol::take_frame(plain, f), protocol::FrameStatus::Complete);
  auto back = protocol::decode_load(f.payload);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cold_step, protocol::kColdBuffer);
  ASSERT_EQ(protocol::take_frame(evict, f), protocol::FrameStatus::Complete);
  back = protocol::decode_load(f.payload);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cold_step, protocol::kColdEvict);
  EXPECT_EQ(back->flush_bytes, 4096u);
  EXPECT_TRUE(back->input_groups.empty());
  EXPECT_TRUE(back->device_content.empty());
}

// --- worker -----------------------------------------------------------------------------------

// The evict cold-cache step: FLUSH works in a sandboxed worker, allocates no buffer (a flush
// buffer would show in the worker's resident memory), and the kernel still computes.
TEST(Worker, EvictColdStepFlushesWithoutABuffer) {
  auto arena = SharedArena::create(adder_layout(1024, 1));
  ASSERT_TRUE(arena) << arena.error().message;
  for (int i = 0; i < 1024; ++i) {
    f32(arena->input(0, 0))[i] = static_cast<float>(i);
    f32(arena->input(0, 1))[i] = 1.0f;
  }
  WorkerOptions o = options_for(kernel("adder", kAdder));
  o.flush_bytes = size_t{256} << 20; // unused under evict: the worker must not allocate it
  o.evict_cold = true;
  auto [worker, loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  for (int round = 0; round < 3; ++round) {
    CallResult f = worker->flush();
    ASSERT_TRUE(f.ok()) << f.message;
    CallResult r = worker->run(0);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(f32(arena->output(0))[1023], 1024.0f);
  }
  std::ifstream statm("/proc/" + std::to_string(worker->pid()) + "/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  ASSERT_TRUE(statm >> size_pages >> resident_pages);
  EXPECT_LT(resident_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)), uint64_t{128} << 20);
}


TEST(Worker, AddsAndRotatesInputSets) {
  auto arena = SharedArena::create(adder_layout(1024, 2));
  ASSERT_TRUE(arena) << arena.error().message;
  for (int i = 0; i < 1024; ++i) {
    f32(arena->input(0, 0))[i] = static_cast<float>(i);
    f32(arena->input(0, 1))[i] = 0.5f;
    f32(arena->input(1, 0))[i] = static_cast<float>(-i);
    f32(arena->input(1, 1))[i] = 2.0f;
  }
  auto [worker, loaded] = Worker::start(options_for(kernel("adder", kAdder)), *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  ASSERT_TRUE(worker);
  EXPECT_GT(worker->pid(), 0);

  for (int round = 0; round < 3; ++round) {
    for (int set = 0; set < 2; ++set) {
      std::fill_n(f32(arena->output(0)), 1024, NAN);
      CallResult r = worker->run(set);
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_EQ(r.kernel_status, 0);
      EXPECT_GT(r.kernel_seconds, 0);
      EXPECT_LE(r.kernel_seconds, r.round_trip_seconds);
      // The thread's CPU time is read just outside the monotonic reads: never more than the
      // wall time by more than those reads, and positive.
      EXPECT_GT(r.cpu_seconds, 0);
      EXPECT_LE(r.cpu_seconds, r.kernel_seconds + 1e-4);
      const float* out = f32(arena->output(0));
      for (int i : {0, 1, 500, 1023}) {
        EXPECT_EQ(out[i], set == 0 ? static_cast<float>(i) + 0.5f : static_cast<float>(-i) + 2.0f) << set << " " << i;
      }
    }
  }
  CallResult bad = worker->run(2);
  EXPECT_EQ(bad.outcome, CallOutcome::HarnessError);
  EXPECT_TRUE(worker->run(0).ok()); // a bad request does not hurt the worker

  int pid = worker->pid();
  worker.reset();
  EXPECT_TRUE(fully_reaped(pid));
}

TEST(Worker, KernelErrorCarriesTheMessageAndTheWorkerStaysUsable) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for(kernel("error", kError)), *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  for (int k = 0; k < 2; ++k) {
    CallResult r = worker->run(0);
    EXPECT_EQ(r.outcome, CallOutcome::KernelError);
    EXPECT_EQ(r.kernel_status, 7);
    EXPECT_EQ(r.message, "unsupported layout: expected a contiguous input");
  }
}

TEST(Worker, SegfaultIsCrashedWithTheSignalAndOutput) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for(kernel("segv", kSegfault)), *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  int pid = worker->pid();
  CallResult r = worker->run(0);
  EXPECT_EQ(r.outcome, CallOutcome::Crashed);
  EXPECT_NE(r.message.find("killed by SIGSEGV"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("during the call"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("about to crash"), std::string::npos) << r.message;
  EXPECT_NE(worker->output_tail().find("about to crash"), std::string::npos);
  EXPECT_TRUE(fully_reaped(pid)); // reaped as soon as the crash was seen
  CallResult again = worker->run(0);
  EXPECT_EQ(again.outcome, CallOutcome::Crashed);
  EXPECT_EQ(again.message, r.message);
}

TEST(Worker, ExitDuringTheCallIsCrashedWithTheStatus) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for(kernel("exits", kExits)), *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  CallResult r = worker->run(0);
  EXPECT_EQ(r.outcome, CallOutcome::Crashed);
  EXPECT_EQ(r.message.rfind("exited with status 3 during the call", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("giving up"), std::string::npos) << r.message;
}

TEST(Worker, CrashInAConstructorIsCrashedWhileLoading) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for(kernel("badctor", kBadConstructor)), *arena);
  EXPECT_EQ(loaded.outcome, CallOutcome::Crashed);
  EXPECT_EQ(loaded.message.rfind("killed by SIGSEGV", 0), 0u) << loaded.message;
  EXPECT_NE(loaded.message.find("while loading"), std::string::npos) << loaded.message;
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->run(0).outcome, CallOutcome::Crashed);
}

TEST(Worker, EndsWhenTheJudgeDiesDuringAHungCall) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  fs::path so = kernel("loop", kLoop);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t judge = ::fork();
  ASSERT_GE(judge, 0);
  if (judge == 0) {
    // A stand-in judge: starts a worker, reports its pid, and hangs in a call until killed.
    ::close(fds[0]);
    WorkerOptions o = options_for(so);
    o.call_timeout = 60s;
    auto [worker, loaded] = Worker::start(o, *arena);
    int pid = worker && loaded.ok() ? worker->pid() : -1;
    (void)!::write(fds[1], &pid, sizeof pid);
    worker->run(0);
    ::_exit(1);
  }
  ::close(fds[1]);
  int worker_pid = -1;
  ASSERT_EQ(::read(fds[0], &worker_pid, sizeof worker_pid), static_cast<ssize_t>(sizeof worker_pid));
  ::close(fds[0]);
  ASSERT_GT(worker_pid, 0);
  std::this_thread::sleep_for(200ms);
  ::kill(judge, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(judge, &status, 0), judge);
  // Orphaned, the worker is reaped by init (or a subreaper) once it ends; /proc tells.
  bool gone = false;
  for (int k = 0; k < 300 && !gone; ++k) {
    std::ifstream stat(fmt::format("/proc/{}/stat", worker_pid));
    std::string line;
    std::getline(stat, line);
    gone = !stat || line.find(") Z ") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "worker " << worker_pid << " outlived its judge";
  if (!gone) ::kill(worker_pid, SIGKILL);
}

TEST(Worker, EndlessLoopTimesOutAndIsKilled) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("loop", kLoop));
  o.call_timeout = 500ms;
  auto [worker, loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  int pid = worker->pid();
  auto t0 = std::chrono::steady_clock::now();
  CallResult r = worker->run(0);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.outcome, CallOutcome::TimedOut) << r.message;
  EXPECT_GE(r.round_trip_seconds, 0.5);
  EXPECT_LT(took, 3.0);
  EXPECT_NE(r.message.find("timed out"), std::string::npos) << r.message;
  EXPECT_TRUE(fully_reaped(pid));
  EXPECT_EQ(worker->run(0).outcome, CallOutcome::TimedOut);
}

TEST(Worker, RunawayAllocationFailsInsideTheWorker) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("hog", kHog));
  o.memory_limit_bytes = size_t{256} << 20;
  o.call_timeout = 30s;
  auto [worker, loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  CallResult r = worker->run(0);
  EXPECT_TRUE(r.outcome == CallOutcome::KernelError || r.outcome == CallOutcome::Crashed)
      << call_outcome_name(r.outcome) << ": " << r.message;
  if (r.outcome == CallOutcome::KernelError) {
    EXPECT_EQ(r.message, "malloc of 64 GiB failed");
  }

  o.artifact = kernel("leak", kLeak);
  auto [leaker, leaker_loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(leaker_loaded.ok()) << leaker_loaded.message;
  CallResult leaked = leaker->run(0);
  EXPECT_TRUE(leaked.outcome == CallOutcome::KernelError || leaked.outcome == CallOutcome::Crashed)
      << call_outcome_name(leaked.outcome) << ": " << leaked.message;
  if (leaked.outcome == CallOutcome::KernelError) {
    EXPECT_EQ(leaked.message, "out of memory");
  }
}

TEST(Worker, HeavyPrintingDoesNotDeadlockAndTheTailIsBounded) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for(kernel("chatty", kChatty)), *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  for (int k = 0; k < 2; ++k) {
    CallResult r = worker->run(0);
    ASSERT_TRUE(r.ok()) << call_outcome_name(r.outcome) << ": " << r.message;
  }
  std::string tail = worker->output_tail();
  EXPECT_LE(tail.size(), size_t{64} << 10);
  EXPECT_GT(tail.size(), size_t{1} << 10);
  EXPECT_NE(tail.find("line 099999"), std::string::npos);
  EXPECT_NE(tail.find("chatty done"), std::string::npos);
  EXPECT_EQ(tail.find("line 000000"), std::string::npos);
}

TEST(Worker, MissingEntryPointFailsToLoadNamingTheSymbol) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for(kernel("nosym", kNoSymbol)), *arena);
  EXPECT_EQ(loaded.outcome, CallOutcome::KernelError);
  EXPECT_NE(loaded.message.find("temper_kernel"), std::string::npos) << loaded.message;
  ASSERT_TRUE(worker);
  int pid = worker->pid();
  EXPECT_EQ(worker->run(0).outcome, CallOutcome::KernelError);
  worker.reset();
  EXPECT_TRUE(fully_reaped(pid));
}

TEST(Worker, UnloadableArtifactIsAKernelError) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  auto [worker, loaded] = Worker::start(options_for("/nonexistent/kernel.so"), *arena);
  EXPECT_EQ(loaded.outcome, CallOutcome::KernelError);
  EXPECT_NE(loaded.message.find("cannot load"), std::string::npos) << loaded.message;
}

TEST(Worker, AttributesArrive) {
  ArenaLayout l;
  l.inputs = {{"x", core::Dtype::F32, {4}}};
  l.outputs = {{"out", core::Dtype::F64, {16}}};
  auto arena = SharedArena::create(l);
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("attrs", kAttrs));
  o.threads = 3;
  core::AttrValue n{core::AttrKind::Int, -42, 0, "", {}, {}};
  core::AttrValue alpha{core::AttrKind::Float, 0, 0.08838, "", {}, {}};
  core::AttrValue flag{core::AttrKind::Bool, 1, 0, "", {}, {}};
  core::AttrValue mode{core::AttrKind::String, 0, 0, "reflect", {}, {}};
  core::AttrValue dims{core::AttrKind::IntList, 0, 0, "", {2, -1, 7}, {}};
  core::AttrValue weights{core::AttrKind::FloatList, 0, 0, "", {}, {0.5, 1.5}};
  o.attrs = {{"n", n}, {"alpha", alpha}, {"flag", flag}, {"mode", mode}, {"dims", dims}, {"weights", weights}};
  auto [worker, loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  CallResult r = worker->run(0);
  ASSERT_TRUE(r.ok()) << r.message;
  const double* out = reinterpret_cast<const double*>(arena->output(0));
  EXPECT_EQ(out[0], -42);
  EXPECT_EQ(out[1], 0.08838);
  EXPECT_EQ(out[2], 1);
  EXPECT_EQ(out[3], 7);
  EXPECT_EQ(out[4], 1);
  EXPECT_EQ(out[5], 3);
  EXPECT_EQ(out[6], 2);
  EXPECT_EQ(out[7], -1);
  EXPECT_EQ(out[8], 7);
  EXPECT_EQ(out[9], 2);
  EXPECT_EQ(out[10], 1.5);
  EXPECT_EQ(out[11], 3);
  EXPECT_EQ(out[12], TEMPER_ABI_VERSION);
  EXPECT_EQ(out[13], 6);
}

// Kernel ABI 2: x is a tensor list of two, s a tensor, bias an absent optional input.
const char* kListSum = R"(
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  if (a->abi_version != 2 || a->num_inputs != 3 || !a->input_lists) { a->set_error("wrong ABI view"); return 1; }
  if (a->inputs[0].data || a->input_lists[0].count != 2) { a->set_error("x is not a list of two"); return 2; }
  if (a->input_lists[1].count != 1 || a->input_lists[1].tensors != &a->inputs[1]) { a->set_error("s is not a tensor"); return 3; }
  if (temper_input_present(a, 2) || a->inputs[2].data || a->input_lists[2].tensors) { a->set_error("bias is not absent"); return 4; }
  const float* x0 = (const float*)temper_input_tensor(a, 0, 0)->data;
  const float* x1 = (const float*)temper_input_tensor(a, 0, 1)->data;
  const float* s = (const float*)a->inputs[1].data;
  float* out = (float*)a->outputs[0].data;
  for (int64_t i = 0; i < temper_numel(&a->outputs[0]); ++i) out[i] = x0[i] + x1[i] + s[i];
  return 0;
}
)";

// A kernel built against kernel ABI 1: its own copy of the start of temper_args, no
// temper_kernel_abi symbol. It reports the version it was handed.
const char* kVersionOne = R"(
typedef struct { void* data; int dtype, rank; long shape[8], strides[8]; } tensor1;
typedef struct { int abi_version; int num_inputs; const tensor1* inputs; int num_outputs; tensor1* outputs; } args1;
extern "C" __attribute__((visibility("default"))) int temper_kernel(const args1* a) {
  float* out = (float*)a->outputs[0].data;
  out[0] = (float)a->abi_version;
  out[1] = (float)a->num_inputs;
  return 0;
}
)";

ArenaLayout list_layout() {
  ArenaLayout l;
  l.inputs = {{"x[0]", core::Dtype::F32, {8}}, {"x[1]", core::Dtype::F32, {8}}, {"s", core::Dtype::F32, {8}}};
  l.outputs = {{"out", core::Dtype::F32, {8}}};
  return l;
}

std::vector<core::InputSlot> list_slots() {
  return {{core::InputKind::List, 0, 2}, {core::InputKind::Tensor, 2, 1}, {core::InputKind::Absent, 3, 0}};
}

TEST(Worker, TensorListsAndAbsentInputsReachAVersionTwoKernel) {
  auto arena = SharedArena::create(list_layout());
  ASSERT_TRUE(arena);
  for (int i = 0; i < 8; ++i) {
    f32(arena->input(0, 0))[i] = static_cast<float>(i);
    f32(arena->input(0, 1))[i] = 100;
    f32(arena->input(0, 2))[i] = 0.5f;
  }
  WorkerOptions o = options_for(kernel("listsum", kListSum));
  o.input_slots = list_slots();
  auto [worker, loaded] = Worker::start(o, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  for (int call = 0; call < 2; ++call) {
    CallResult r = worker->run(0);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(f32(arena->output(0))[3], 103.5f);
  }
}

TEST(Worker, VersionOneKernelsKeepWorkingOnPlainCasesAndAreRefusedListsAndAbsentInputs) {
  auto arena = SharedArena::create(list_layout());
  ASSERT_TRUE(arena);
  fs::path v1 = kernel("version1", kVersionOne, /*with_header=*/false);
  auto [plain, loaded] = Worker::start(options_for(v1), *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  CallResult r = plain->run(0);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(f32(arena->output(0))[0], 1.0f); // handed the version it was built for
  EXPECT_EQ(f32(arena->output(0))[1], 3.0f);

  WorkerOptions o = options_for(v1);
  o.input_slots = list_slots();
  auto [grouped, refused] = Worker::start(o, *arena);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.outcome, CallOutcome::KernelError);
  EXPECT_NE(refused.message.find("kernel ABI version 1"), std::string::npos) << refused.message;
}

TEST(WorkerProtocol, InputGroupsAreATrailingFieldOnlyWhenPresent) {
  protocol::LoadCommand c;
  c.artifact = "/k.so";
  c.arena_size = 4096;
  std::string plain = protocol::encode(c);
  c.input_groups = {{1, 0, 2}, {0, 2, 1}, {2, 3, 0}};
  std::string grouped = protocol::encode(c);
  EXPECT_EQ(grouped.size(), plain.size() + 4 + 3 * 12);
  protocol::Frame f;
  ASSERT_EQ(protocol::take_frame(grouped, f), protocol::FrameStatus::Complete);
  auto back = protocol::decode_load(f.payload);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->input_groups.size(), 3u);
  EXPECT_EQ(back->input_groups[0].count, 2);
  EXPECT_EQ(back->input_groups[2].kind, 2);
  ASSERT_EQ(protocol::take_frame(plain, f), protocol::FrameStatus::Complete);
  EXPECT_TRUE(protocol::decode_load(f.payload)->input_groups.empty());
}

TEST(Worker, MissingWorkerBinaryIsAHarnessError) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("adder", kAdder));
  o.worker_exe = "/nonexistent/temper-worker";
  auto [worker, loaded] = Worker::start(o, *arena);
  EXPECT_EQ(loaded.outcome, CallOutcome::HarnessError);
  EXPECT_FALSE(worker);
  EXPECT_NE(loaded.message.find("/nonexistent/temper-worker"), std::string::npos) << loaded.message;
}

TEST(Worker, WorkerDyingBeforeReadyIsAHarnessError) {
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("adder", kAdder));
  o.worker_exe = "/bin/false";
  auto [worker, loaded] = Worker::start(o, *arena);
  EXPECT_EQ(loaded.outcome, CallOutcome::HarnessError);
  EXPECT_EQ(loaded.message.rfind("temper-worker failed to start: exited with status 1", 0), 0u) << loaded.message;
  ASSERT_TRUE(worker);
  int pid = worker->pid();
  EXPECT_TRUE(fully_reaped(pid));
  EXPECT_EQ(worker->run(0).outcome, CallOutcome::HarnessError);
}

TEST(Worker, ManyWorkersLeaveNoZombies) {
  auto arena = SharedArena::create(adder_layout(64, 1));
  ASSERT_TRUE(arena);
  std::vector<int> pids;
  for (const auto& [name, body] : {std::pair{"adder", kAdder}, {"error", kError}, {"segv", kSegfault}, {"nosym", kNoSymbol}}) {
    auto [worker, loaded] = Worker::start(options_for(kernel(name, body)), *arena);
    ASSERT_TRUE(worker) << loaded.message;
    pids.push_back(worker->pid());
    if (loaded.ok()) worker->run(0);
  }
  for (int pid : pids) EXPECT_TRUE(fully_reaped(pid)) << pid;
}

// The kernel sees the fixed environment and arguments, whatever temper's own environment holds:
// nothing that names temper, its cache, a role or a phase.
TEST(Worker, TheKernelSeesOnlyTheFixedEnvironmentAndArguments) {
  const char* kEnv = R"(
extern char** environ;
TEMPER_EXPORT int temper_kernel(const temper_args* a) {
  static char seen[4096];
  seen[0] = 0;
  for (char** e = environ; *e; ++e) { strncat(seen, *e, sizeof seen - strlen(seen) - 2); strcat(seen, ";"); }
  FILE* f = fopen("/proc/self/cmdline", "r");
  if (f) {
    char args[256] = {0};
    size_t n = fread(args, 1, sizeof args - 1, f);
    for (size_t i = 0; i < n; ++i) if (!args[i]) args[i] = ' ';
    strncat(seen, "argv=", sizeof seen - strlen(seen) - 1);
    strncat(seen, args, sizeof seen - strlen(seen) - 1);
    fclose(f);
  }
  a->set_error(seen);
  return 1;
}
)";
  ::setenv("TEMPER_SECRET_FOR_TEST", "leak", 1);
  auto arena = SharedArena::create(adder_layout(8, 1));
  ASSERT_TRUE(arena);
  WorkerOptions o = options_for(kernel("env", kEnv));
  o.threads = 3;
  auto [worker, loaded] = Worker::start(o, *arena);
  ::unsetenv("TEMPER_SECRET_FOR_TEST");
  ASSERT_TRUE(loaded.ok()) << loaded.message;
  CallResult r = worker->run(0);
  std::string expected;
  for (const auto& e : worker_environment(3)) expected += e + ";";
  EXPECT_EQ(r.message, expected + "argv=temper-worker --protocol " + std::to_string(protocol::kVersion) + " ");
  EXPECT_EQ(r.message.find("TEMPER"), std::string::npos) << r.message;
}

} // namespace worker_test
