// temper-worker: runs one kernel artifact on tensors in a shared arena, driven by the judge over
// the pipes described in backend/protocol.h. Deliberately small: the standard library, POSIX,
// libdl and libseccomp only, so that the process a kernel shares holds as little as possible.
// It sandboxes itself (worker/sandbox.h) before it opens the artifact.
//
//   temper-worker --protocol 2
//
// fds 3 (commands), 4 (replies) and 5 (the arena) are set up by the judge; 0 is /dev/null and
// 1/2 go to a pipe the judge drains. Every other inherited fd is closed at startup.
#include "backend/protocol.h"
#include "worker/evict.h"
#include "worker/sandbox.h"
#include "worker/worker_io.h"

#include <temper/kernel.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace proto = temper::backend::protocol;
namespace io = temper::worker::io;

namespace {

// Address space allowed beyond the arena and the requested memory limit: the artifact's code,
// libraries it pulls in (libgomp, libm), and per thread a stack plus a glibc malloc arena,
// which reserves 64 MiB of address space by itself.
constexpr uint64_t kBaseMargin = uint64_t{256} << 20;
constexpr uint64_t kPerThreadMargin = uint64_t{96} << 20;
constexpr const char* kName = "temper-worker";

[[noreturn]] void die(const char* what) { io::die(kName, what); }
using io::load_failed;

// --- process setup ----------------------------------------------------------------------------

// Bytes of address space this process uses now (VmSize), or 0 if /proc is unavailable.
uint64_t current_address_space() {
  int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  return std::strtoull(buf, nullptr, 10) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// --- the loaded kernel ------------------------------------------------------------------------

struct Kernel {
  proto::LoadCommand load; // owns the strings and lists the attrs point into
  temper_kernel_fn fn = nullptr;
  int per_set = 0;
  std::vector<temper_tensor> inputs;  // pristine descriptors, set-major
  std::vector<temper_tensor> outputs;
  std::vector<temper_attr> attrs;
  int32_t abi = 1; // the kernel ABI version the artifact was built for
  // Per-call copies: a kernel may scribble on its argument structs; every call starts clean.
  io::InputView call_inputs;
  std::vector<temper_tensor> call_outputs;
  std::vector<temper_attr> call_attrs;
};

Kernel g_kernel;

// The cold-cache buffer: writing all of it (at least twice the last-level cache) before a timed
// call evicts the kernel's data from every cache level this core sees.
std::vector<unsigned char> g_flush;
unsigned char g_flush_value = 0;

// One store per 64-byte line rather than memset: every line of the buffer is still brought in
// and dirtied (so it displaces the kernel's data just the same), at about half memset's cost
// on this machine kind, and a large memset may use cache-bypassing stores that evict nothing.
// The other cold-cache step (LoadCommand::cold_step): flush what this process holds.
temper::worker::OwnMemoryEvictor g_evictor;

void handle_flush() {
  if (g_evictor.active()) {
    g_evictor.evict();
    return;
  }
  if (g_flush.empty()) return;
  ++g_flush_value;
  constexpr size_t kLine = 64;
  unsigned char* p = g_flush.data();
  for (size_t i = 0; i < g_flush.size(); i += kLine) *reinterpret_cast<volatile unsigned char*>(p + i) = g_flush_value;
  // Keep the compiler from dropping the stores as dead.
  asm volatile("" : : "r"(p) : "memory");
}

bool make_tensor(const proto::TensorDesc& d, unsigned char* base, uint64_t arena_size, temper_tensor& t) {
  if (d.shape.size() > TEMPER_MAX_RANK || d.strides.size() != d.shape.size()) return false;
  if (d.offset > arena_size || d.bytes > arena_size - d.offset) return false;
  t = temper_tensor{};
  t.data = base + d.offset;
  t.dtype = d.dtype;
  t.rank = static_cast<int32_t>(d.shape.size());
  for (size_t k = 0; k < d.shape.size(); ++k) {
    t.shape[k] = d.shape[k];
    t.strides[k] = d.strides[k];
  }
  return true;
}

// Handles LOAD; the reply frame to send.
std::string handle_load(std::string_view payload) {
  auto cmd = proto::decode_load(payload);
  if (!cmd) return load_failed(true, "malformed LOAD command");
  Kernel& k = g_kernel;
  k.load = std::move(*cmd);
  proto::LoadCommand& c = k.load;
  if (std::string bad = io::check_load(c); !bad.empty()) return load_failed(true, bad);
  k.per_set = static_cast<int>(c.inputs.size() / static_cast<size_t>(c.input_sets));
  if (std::string bad = io::check_input_groups(c, static_cast<size_t>(k.per_set)); !bad.empty()) return load_failed(true, bad);

  // Populated now: a new worker life's first calls would otherwise pay a page fault per page
  // of inputs and outputs that later calls do not (milliseconds on a 32 MiB case).
  void* base = ::mmap(nullptr, c.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, c.arena_fd, 0);
  if (base == MAP_FAILED) return load_failed(true, std::string("cannot map the arena: ") + std::strerror(errno));
  ::close(c.arena_fd); // the mapping is all the kernel needs

  auto* b = static_cast<unsigned char*>(base);
  k.inputs.resize(c.inputs.size());
  k.outputs.resize(c.outputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!make_tensor(c.inputs[i], b, c.arena_size, k.inputs[i])) return load_failed(true, "invalid input tensor descriptor");
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!make_tensor(c.outputs[i], b, c.arena_size, k.outputs[i])) return load_failed(true, "invalid output tensor descriptor");
  }
  k.attrs = io::kernel_attrs(c);
  k.call_inputs.resize(static_cast<size_t>(k.per_set), c.input_groups);
  k.call_outputs = k.outputs;
  k.call_attrs = k.attrs;

  if (!c.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int32_t cpu : c.cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) {
      return load_failed(true, std::string("sched_setaffinity: ") + std::strerror(errno));
    }
  }
  if (c.cold_step == proto::kColdEvict) {
    std::string why;
    if (!g_evictor.open(base, c.arena_size, why)) {
      return load_failed(true, "the evict cold-cache step cannot run here (" + why + "); use --cold-step buffer");
    }
  } else if (c.flush_bytes > 0) {
    // Allocated and touched now, before the address-space limit, so FLUSH never allocates.
    g_flush.assign(static_cast<size_t>(c.flush_bytes), 1);
  }

  // A runaway allocation must fail inside this process rather than take the machine. The
  // arena is already mapped, so the current size accounts for it.
  uint64_t threads = c.num_threads > 0 ? static_cast<uint64_t>(c.num_threads) : 1;
  uint64_t used = current_address_space();
  if (used == 0) used = c.arena_size + (uint64_t{64} << 20);
  uint64_t limit = used + kBaseMargin + threads * kPerThreadMargin;
  limit = c.memory_limit > UINT64_MAX - limit ? UINT64_MAX : limit + c.memory_limit;
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) != 0) return load_failed(true, std::string("getrlimit: ") + std::strerror(errno));
  as.rlim_cur = as.rlim_max == RLIM_INFINITY ? limit : std::min<rlim_t>(limit, as.rlim_max);
  if (::setrlimit(RLIMIT_AS, &as) != 0) return load_failed(true, std::string("setrlimit(RLIMIT_AS): ") + std::strerror(errno));

  // The sandbox goes on before the artifact is opened: dlopen runs the artifact's constructors,
  // which are the kernel's code as much as temper_kernel is.
  temper::worker::SandboxResult sandbox = temper::worker::install_sandbox(c.artifact, proto::kReplyFd);
  if (!sandbox.error.empty()) return load_failed(true, "cannot install the sandbox: " + sandbox.error);
  if (!sandbox.warning.empty()) std::fprintf(stderr, "temper-worker: %s\n", sandbox.warning.c_str());
  // After the sandbox, so the watchdog thread is confined too (worker/worker_io.h).
  if (!io::start_watchdog()) return load_failed(true, "cannot start the watchdog thread");

  void* handle = ::dlopen(c.artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    return load_failed(false, std::string("cannot load the artifact: ") + (e ? e : c.artifact.c_str()));
  }
  ::dlerror();
  void* sym = ::dlsym(handle, "temper_kernel");
  if (sym == nullptr) {
    const char* e = ::dlerror();
    return load_failed(false, std::string("the artifact does not export temper_kernel") + (e ? std::string(": ") + e : ""));
  }
  k.fn = reinterpret_cast<temper_kernel_fn>(sym);
  k.abi = io::kernel_abi_version(handle);
  if (k.abi < 2 && !c.input_groups.empty()) {
    return load_failed(false, "the kernel was built for kernel ABI version 1, which cannot pass this case's tensor-list or "
                              "absent inputs; rebuild it with this temper's <temper/kernel.h> (version 2)");
  }
  return proto::encode_loaded(sandbox.description);
}

std::string handle_run(std::string_view payload) {
  auto cmd = proto::decode_run(payload);
  Kernel& k = g_kernel;
  if (!cmd) die("malformed RUN command");
  if (k.fn == nullptr) die("RUN before a successful LOAD");
  if (cmd->set < 0 || cmd->set >= k.load.input_sets) die("RUN names an input set out of range");

  const temper_tensor* set_inputs = k.inputs.data() + static_cast<size_t>(cmd->set) * static_cast<size_t>(k.per_set);
  k.call_inputs.arrange(set_inputs, k.load.input_groups);
  std::copy(k.outputs.begin(), k.outputs.end(), k.call_outputs.begin());
  std::copy(k.attrs.begin(), k.attrs.end(), k.call_attrs.begin());
  temper_args args = io::call_args(k.call_inputs.inputs, k.call_outputs, k.call_attrs, k.load.num_threads,
                                   k.call_inputs.lists.data(), k.abi);

  timespec c0{};
  timespec c1{};
  timespec t0{};
  timespec t1{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  int status = k.fn(&args);
  ::clock_gettime(CLOCK_MONOTONIC, &t1);
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);

  // Whatever the kernel printed reaches the judge's output tail now, not at exit.
  std::fflush(nullptr);
  proto::DoneReply done;
  done.status = status;
  done.kernel_ns = (static_cast<int64_t>(t1.tv_sec) - t0.tv_sec) * 1'000'000'000 + (t1.tv_nsec - t0.tv_nsec);
  done.cpu_ns = (static_cast<int64_t>(c1.tv_sec) - c0.tv_sec) * 1'000'000'000 + (c1.tv_nsec - c0.tv_nsec);
  done.message = io::kernel_error();
  return proto::encode(done);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--protocol") != 0 || std::strtoul(argv[2], nullptr, 10) != proto::kVersion) {
    std::fprintf(stderr, "usage: temper-worker --protocol %u (started by temper, not by hand)\n", proto::kVersion);
    return 2;
  }
  // Before the sandbox, which goes on in LOAD (worker/worker_io.h says why the order matters).
  io::start_conversation(kName);
  io::serve(kName, {handle_load, handle_run, handle_flush});
}
