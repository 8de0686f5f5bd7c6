// temper-cuda-worker: runs one CUDA kernel artifact (include/temper/cuda_kernel.h), driven by
// the judge over backend/protocol.h exactly as temper-worker is. The tensors live twice: in the
// judge's shared arena (host) and in one device allocation each. RUN copies the set's inputs
// and the poisoned outputs to the device, runs the cold-L2 step when FLUSH asked for it, times
// one call with events on the worker's stream, then copies outputs and inputs back so the judge
// checks them as it checks CPU kernels.
//
//   temper-cuda-worker [--driver LIB] [--runtime LIB] [--sandbox off] --protocol N   (started by temper)
//   temper-cuda-worker [--driver LIB] [--runtime LIB] --probe        (one JSON line: the device, or why there is none)
//
// With a device-content library (LOAD's device_content; backend/device/device_content.cu), a
// timed call's inputs are made on the device instead: each element from one of the two draws
// the arena's sets 0 and 1 hold (uploaded once, at LOAD) as the call's seed says; the outputs
// are poisoned, hashed and checked for late work there, and come back to the host only when
// RUN asks (the judge's sampled check). Then a call costs the kernel, the cold-L2 step and a few
// launches, not host copies of every tensor.
//
// It loads the CUDA driver and runtime with dlopen (worker/cuda_api.h), so it starts anywhere;
// without a GPU, --probe and LOAD say "no GPU: <reason>". At the end of LOAD, before the
// artifact is opened, it confines itself with Landlock (worker/cuda_sandbox.h): device files,
// libraries and the artifact, nothing of temper's cache, vault, home or task; no seccomp filter
// (the driver needs ioctls and threads of its own). The static boundary checks run before it is
// started.
#include "backend/protocol.h"
#include "worker/cuda_api.h"
#include "worker/cuda_sandbox.h"
#include "worker/worker_io.h"

#include <temper/cuda_kernel.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace proto = temper::backend::protocol;
namespace io = temper::worker::io;
namespace cu = temper::worker::cuda;

namespace {

constexpr const char* kName = "temper-cuda-worker";
using io::load_failed;
// Device synchronization after the end event may take this long (plus a tenth of the kernel's
// time) before the wait counts as work left running: an idle device answers in microseconds.
constexpr double kLateWorkSeconds = 0.5e-3;

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

// --driver and --runtime (before --protocol or --probe): libraries to try first.
std::string g_driver, g_runtime;

int probe() {
  cu::Api api;
  cu::Device d;
  std::string why = cu::load(api, d, g_driver, g_runtime);
  if (!why.empty()) {
    std::printf("{\"schema_version\":1,\"supported\":false,\"reason\":\"%s\"}\n", json_escape(why).c_str());
    return 0;
  }
  std::printf("{\"schema_version\":1,\"supported\":true,\"device\":\"%s\",\"compute_capability\":\"%d.%d\","
              "\"arch\":\"sm_%d%d\",\"sm_count\":%d,\"l2_bytes\":%lld,\"driver_version\":%d,\"runtime_version\":%d}\n",
              json_escape(d.name).c_str(), d.cc_major, d.cc_minor, d.cc_major, d.cc_minor, d.sm_count,
              static_cast<long long>(d.l2_bytes), d.driver_version, d.runtime_version);
  return 0;
}

// One tensor: its host copy in the arena and its device allocation.
struct Buffer {
  unsigned char* host = nullptr;
  void* device = nullptr;
  size_t bytes = 0;
  temper_tensor view{}; // data = device
};

struct State {
  cu::Api api;
  cu::Device device;
  proto::LoadCommand load;
  temper_cuda_kernel_fn fn = nullptr;
  int per_set = 0;
  std::vector<std::vector<Buffer>> inputs; // [set][k]: host sides differ, device sides are shared per k
  std::vector<Buffer> outputs;
  std::vector<temper_attr> attrs;
  std::vector<temper_tensor> call_inputs, call_outputs;
  std::vector<temper_attr> call_attrs;
  std::vector<unsigned char> snapshot; // outputs after the timed window, before device sync
  cu::Stream stream = nullptr;
  cu::Event start = nullptr, end = nullptr;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  int flush_value = 0;
  bool flush_pending = false;
  // The device-content library, when LOAD named one.
  int (*dc_mix)(void*, const void*, const void*, uint64_t, int32_t, uint64_t, void*) = nullptr;
  int (*dc_hash)(const void* const*, const uint64_t*, int32_t, uint64_t*, void*) = nullptr;
  std::vector<void*> draws[2];        // per input slot: the arena's sets 0 and 1, on the device
  std::vector<int32_t> element_bytes; // per input slot
  std::vector<const void*> out_ptrs;  // the outputs' device buffers and sizes, for dc_hash
  std::vector<uint64_t> out_bytes;
};

State g;

bool make_view(const proto::TensorDesc& d, unsigned char* base, uint64_t arena_size, Buffer& b) {
  if (d.shape.size() > TEMPER_MAX_RANK || d.strides.size() != d.shape.size()) return false;
  if (d.offset > arena_size || d.bytes > arena_size - d.offset) return false;
  b.host = base + d.offset;
  b.bytes = static_cast<size_t>(d.bytes);
  b.view = temper_tensor{};
  b.view.dtype = d.dtype;
  b.view.rank = static_cast<int32_t>(d.shape.size());
  for (size_t k = 0; k < d.shape.size(); ++k) {
    b.view.shape[k] = d.shape[k];
    b.view.strides[k] = d.strides[k];
  }
  return true;
}

void* device_alloc(size_t bytes, std::string& err) {
  void* p = nullptr;
  // A zero-byte tensor still gets a distinct, valid pointer.
  if (cu::Error e = g.api.cudaMalloc(&p, std::max<size_t>(bytes, 256)); e != 0) {
    err = "cudaMalloc(" + std::to_string(bytes) + " bytes): " + g.api.error_text(e);
    return nullptr;
  }
  return p;
}

int32_t dtype_bytes(int32_t dtype) {
  switch (dtype) {
  case TEMPER_F64:
  case TEMPER_I64: return 8;
  case TEMPER_F32:
  case TEMPER_I32: return 4;
  case TEMPER_F16:
  case TEMPER_BF16:
  case TEMPER_I16: return 2;
  default: return 1;
  }
}

// The device-content library and the two draws on the device. Empty on success.
std::string load_device_content(const std::string& library) {
  if (g.load.input_sets != 2) return "device content needs exactly two input sets (the two draws), got " + std::to_string(g.load.input_sets);
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = ::dlerror();
    return std::string("cannot load the device-content library: ") + (e ? e : library.c_str());
  }
  g.dc_mix = reinterpret_cast<decltype(g.dc_mix)>(::dlsym(lib, "temper_dc_mix"));
  g.dc_hash = reinterpret_cast<decltype(g.dc_hash)>(::dlsym(lib, "temper_dc_hash"));
  if (g.dc_mix == nullptr || g.dc_hash == nullptr) return "the device-content library lacks temper_dc_mix or temper_dc_hash";
  std::string err;
  for (size_t k = 0; k < static_cast<size_t>(g.per_set); ++k) {
    g.element_bytes.push_back(dtype_bytes(g.inputs[0][k].view.dtype));
    for (int d = 0; d < 2; ++d) {
      const Buffer& in = g.inputs[static_cast<size_t>(d)][k];
      void* p = device_alloc(in.bytes, err);
      if (p == nullptr) return err;
      g.draws[d].push_back(p);
      if (in.bytes > 0) {
        if (cu::Error e = g.api.cudaMemcpyAsync(p, in.host, in.bytes, cu::kMemcpyHostToDevice, g.stream)) return "uploading a draw: " + g.api.error_text(e);
      }
    }
  }
  for (const auto& out : g.outputs) {
    g.out_ptrs.push_back(out.device);
    g.out_bytes.push_back(out.bytes);
  }
  if (cu::Error e = g.api.cudaStreamSynchronize(g.stream)) return "uploading the draws: " + g.api.error_text(e);
  return {};
}

std::string handle_load(std::string_view payload) {
  auto cmd = proto::decode_load(payload);
  if (!cmd) return load_failed(true, "malformed LOAD command");
  g.load = std::move(*cmd);
  proto::LoadCommand& c = g.load;
  if (std::string bad = io::check_load(c); !bad.empty()) return load_failed(true, bad);
  g.per_set = static_cast<int>(c.inputs.size() / static_cast<size_t>(c.input_sets));
  // The CUDA ABI has no tensor lists or absent inputs yet (include/temper/cuda_kernel.h).
  if (!c.input_groups.empty()) return load_failed(true, "the CUDA worker cannot pass tensor-list or absent inputs");

  // The device first: without one nothing else matters, and the judge reports it as such.
  if (std::string why = cu::load(g.api, g.device, g_driver, g_runtime); !why.empty()) return load_failed(true, "unsupported: " + why);

  // Populated now, as in the CPU worker: no page faults in a new life's first copies.
  void* base = ::mmap(nullptr, c.arena_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, c.arena_fd, 0);
  if (base == MAP_FAILED) return load_failed(true, std::string("cannot map the arena: ") + std::strerror(errno));
  ::close(c.arena_fd);
  auto* b = static_cast<unsigned char*>(base);

  std::string err;
  g.inputs.assign(static_cast<size_t>(c.input_sets), std::vector<Buffer>(static_cast<size_t>(g.per_set)));
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    size_t set = i / static_cast<size_t>(g.per_set), k = i % static_cast<size_t>(g.per_set);
    if (!make_view(c.inputs[i], b, c.arena_size, g.inputs[set][k])) return load_failed(true, "invalid input tensor descriptor");
  }
  // One device allocation per input slot: every set is copied into it before its call.
  for (size_t k = 0; k < static_cast<size_t>(g.per_set); ++k) {
    size_t bytes = 0;
    for (const auto& set : g.inputs) bytes = std::max(bytes, set[k].bytes);
    void* d = device_alloc(bytes, err);
    if (d == nullptr) return load_failed(true, err);
    for (auto& set : g.inputs) {
      set[k].device = d;
      set[k].view.data = d;
    }
  }
  g.outputs.resize(c.outputs.size());
  size_t out_total = 0;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!make_view(c.outputs[i], b, c.arena_size, g.outputs[i])) return load_failed(true, "invalid output tensor descriptor");
    g.outputs[i].device = device_alloc(g.outputs[i].bytes, err);
    if (g.outputs[i].device == nullptr) return load_failed(true, err);
    g.outputs[i].view.data = g.outputs[i].device;
    out_total += g.outputs[i].bytes;
  }
  g.snapshot.resize(out_total);
  g.attrs = io::kernel_attrs(c);
  g.call_inputs.resize(static_cast<size_t>(g.per_set));
  g.call_outputs.resize(g.outputs.size());
  g.call_attrs = g.attrs;

  // A blocking stream: work a kernel puts on the legacy default stream is ordered with it, so
  // it falls inside the timed window too.
  if (cu::Error e = g.api.cudaStreamCreateWithFlags(&g.stream, 0); e != 0) return load_failed(true, "cudaStreamCreate: " + g.api.error_text(e));
  if (g.api.cudaEventCreate(&g.start) != 0 || g.api.cudaEventCreate(&g.end) != 0) return load_failed(true, "cudaEventCreate failed");
  if (c.flush_bytes > 0) {
    // At least twice the L2, whatever the judge's host-side default was.
    g.flush_bytes = std::max<size_t>(static_cast<size_t>(c.flush_bytes), static_cast<size_t>(2 * g.device.l2_bytes));
    g.flush = device_alloc(g.flush_bytes, err);
    if (g.flush == nullptr) return load_failed(true, err);
  }
  if (!c.device_content.empty()) {
    if (std::string why = load_device_content(c.device_content); !why.empty()) return load_failed(true, why);
  }
  if (!c.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int32_t cpu : c.cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) return load_failed(true, std::string("sched_setaffinity: ") + std::strerror(errno));
  }
  if (!io::start_watchdog()) return load_failed(true, "cannot start the watchdog thread");

  // The sandbox last, once the driver, the runtime and the device-content library are loaded
  // and every allocation is made: nothing after this needs temper's files (worker/cuda_sandbox.h).
  temper::worker::CudaSandboxResult box = temper::worker::install_cuda_sandbox(c.artifact);
  if (!box.error.empty()) return load_failed(true, box.error);
  void* handle = ::dlopen(c.artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    return load_failed(false, std::string("cannot load the artifact: ") + (e ? e : c.artifact.c_str()));
  }
  void* sym = ::dlsym(handle, "temper_cuda_kernel");
  if (sym == nullptr) return load_failed(false, "the artifact does not export temper_cuda_kernel (include/temper/cuda_kernel.h)");
  g.fn = reinterpret_cast<temper_cuda_kernel_fn>(sym);
  return proto::encode_loaded(box.description);
}

std::string done(int status, int64_t ns, const std::string& message) {
  proto::DoneReply d;
  d.status = status;
  d.kernel_ns = ns;
  d.message = message;
  return proto::encode(d);
}

// A CUDA error outside the kernel's own return: a RUNTIME_ERROR with the error text.
std::string cuda_failed(const char* step, cu::Error e) {
  std::fflush(nullptr);
  return done(-1, 0, std::string("CUDA error ") + step + ": " + g.api.error_text(e));
}

cu::Error copy(void* dst, const void* src, size_t bytes, int kind) {
  return bytes == 0 ? 0 : g.api.cudaMemcpyAsync(dst, src, bytes, kind, g.stream);
}

// The cold-L2 step (after FLUSH), then one call of the kernel on input set `set` between two
// events. Fills `t`; a non-empty return is the DONE reply for a failure outside the kernel's
// own return value.
struct TimedCall {
  int status = 0;
  double seconds = 0;
  std::string message;
};

std::string timed_call(size_t set, TimedCall& t) {
  cu::Api& api = g.api;
  if (g.flush_pending && g.flush != nullptr) {
    // Cold L2, after the inputs were written (which passes through L2) and before the start event.
    api.cudaCtxResetPersistingL2Cache();
    g.flush_value = (g.flush_value + 1) & 0xFF;
    if (cu::Error e = api.cudaMemsetAsync(g.flush, g.flush_value, g.flush_bytes, g.stream)) return cuda_failed("flushing L2", e);
  }
  g.flush_pending = false;
  if (cu::Error e = api.cudaStreamSynchronize(g.stream)) return cuda_failed("before the call", e);

  const auto& ins = g.inputs[set];
  for (size_t k = 0; k < ins.size(); ++k) g.call_inputs[k] = ins[k].view;
  for (size_t k = 0; k < g.outputs.size(); ++k) g.call_outputs[k] = g.outputs[k].view;
  std::copy(g.attrs.begin(), g.attrs.end(), g.call_attrs.begin());
  temper_args args = io::call_args(g.call_inputs, g.call_outputs, g.call_attrs, g.load.num_threads);
  api.cudaGetLastError(); // clear: an error after the call is the kernel's

  api.cudaEventRecord(g.start, g.stream);
  t.status = g.fn(&args, g.stream);
  cu::Error launch = api.cudaGetLastError();
  api.cudaEventRecord(g.end, g.stream);
  cu::Error waited = api.cudaEventSynchronize(g.end);
  std::fflush(nullptr);
  t.message = io::kernel_error();
  if (t.status == 0 && launch != 0) return done(-1, 0, "the kernel launch failed: " + api.error_text(launch));
  if (t.status == 0 && waited != 0) return done(-1, 0, "the kernel failed on the device: " + api.error_text(waited));
  float ms = 0;
  api.cudaEventElapsedTime(&ms, g.start, g.end);
  t.seconds = static_cast<double>(ms) * 1e-3;
  return {};
}

[[noreturn]] void report_late_work(bool changed, double late) {
  proto::BoundaryViolationReply v;
  v.reason_code = "work_outside_timed_window";
  v.message = changed ? "the outputs changed after the timed window ended: the kernel left work running outside its stream"
                      : "the device was still busy " + std::to_string(late * 1e3) +
                            " ms after the timed window ended: the kernel left work running outside its stream";
  io::write_all(proto::kReplyFd, proto::encode(v));
  ::_exit(0);
}

// The inputs made on the device and the call; the outputs hashed where they are, checked for
// work left running, and copied to the arena only when asked.
std::string device_run(const proto::RunCommand& cmd) {
  cu::Api& api = g.api;
  const size_t set = static_cast<size_t>(cmd.set);
  for (size_t k = 0; k < static_cast<size_t>(g.per_set); ++k) {
    const Buffer& in = g.inputs[set][k];
    if (int e = g.dc_mix(in.device, g.draws[0][k], g.draws[1][k], in.bytes, g.element_bytes[k], cmd.content_seed, g.stream))
      return cuda_failed("making the inputs", e);
  }
  for (const auto& out : g.outputs)
    if (cu::Error e = api.cudaMemsetAsync(out.device, 0xFF, out.bytes, g.stream)) return cuda_failed("poisoning the outputs", e);
  TimedCall call;
  if (std::string failed = timed_call(set, call); !failed.empty()) return failed;

  // The outputs as the window left them, hashed in stream order; then, once the whole device is
  // idle, again: work another stream was still doing shows as a difference or as the wait.
  uint64_t at_end = 0, after = 0;
  const auto count = static_cast<int32_t>(g.outputs.size());
  if (int e = g.dc_hash(g.out_ptrs.data(), g.out_bytes.data(), count, &at_end, g.stream)) return cuda_failed("hashing the outputs", e);
  auto t0 = std::chrono::steady_clock::now();
  cu::Error synced = api.cudaDeviceSynchronize();
  double late = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (synced != 0) return done(-1, 0, "the kernel failed on the device after the timed window: " + api.error_text(synced));
  if (int e = g.dc_hash(g.out_ptrs.data(), g.out_bytes.data(), count, &after, g.stream)) return cuda_failed("rehashing the outputs", e);
  if (call.status == 0 && (after != at_end || late > kLateWorkSeconds + 0.1 * call.seconds)) report_late_work(after != at_end, late);
  if (cmd.flags & proto::kRunFetchOutputs) {
    for (const auto& out : g.outputs)
      if (cu::Error e = copy(out.host, out.device, out.bytes, cu::kMemcpyDeviceToHost)) return cuda_failed("copying outputs back", e);
    if (cu::Error e = api.cudaStreamSynchronize(g.stream)) return cuda_failed("copying outputs back", e);
  }
  proto::DoneReply d;
  d.status = call.status;
  d.kernel_ns = static_cast<int64_t>(call.seconds * 1e9);
  d.message = call.message;
  d.has_outputs_hash = true;
  d.outputs_hash = at_end;
  return proto::encode(d);
}

std::string handle_run(std::string_view payload) {
  auto cmd = proto::decode_run(payload);
  if (!cmd) io::die(kName, "malformed RUN command");
  if (g.fn == nullptr) io::die(kName, "RUN before a successful LOAD");
  if (cmd->set < 0 || cmd->set >= g.load.input_sets) io::die(kName, "RUN names an input set out of range");
  if (cmd->flags & proto::kRunDeviceContent) {
    if (g.dc_mix == nullptr) io::die(kName, "a device-content RUN, but LOAD named no device-content library");
    return device_run(*cmd);
  }
  const auto& ins = g.inputs[static_cast<size_t>(cmd->set)];
  cu::Api& api = g.api;

  // Pristine inputs and poisoned outputs from the judge's host copies.
  for (const auto& in : ins)
    if (cu::Error e = copy(in.device, in.host, in.bytes, cu::kMemcpyHostToDevice)) return cuda_failed("copying inputs", e);
  for (const auto& out : g.outputs)
    if (cu::Error e = copy(out.device, out.host, out.bytes, cu::kMemcpyHostToDevice)) return cuda_failed("copying outputs", e);
  TimedCall call;
  if (std::string failed = timed_call(static_cast<size_t>(cmd->set), call); !failed.empty()) return failed;

  // Outputs as they stand at the end of the timed window, in stream order.
  for (const auto& out : g.outputs)
    if (cu::Error e = copy(out.host, out.device, out.bytes, cu::kMemcpyDeviceToHost)) return cuda_failed("copying outputs back", e);
  if (cu::Error e = api.cudaStreamSynchronize(g.stream)) return cuda_failed("copying outputs back", e);
  // Anything still running now was enqueued elsewhere (another stream) and escaped the window.
  auto t0 = std::chrono::steady_clock::now();
  cu::Error synced = api.cudaDeviceSynchronize();
  double late = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (synced != 0) return done(-1, 0, "the kernel failed on the device after the timed window: " + api.error_text(synced));
  size_t off = 0;
  for (const auto& out : g.outputs) {
    if (cu::Error e = copy(g.snapshot.data() + off, out.device, out.bytes, cu::kMemcpyDeviceToHost)) return cuda_failed("rechecking outputs", e);
    off += out.bytes;
  }
  // Inputs back too, so the judge sees a kernel that wrote them.
  for (const auto& in : ins)
    if (cu::Error e = copy(in.host, in.device, in.bytes, cu::kMemcpyDeviceToHost)) return cuda_failed("copying inputs back", e);
  if (cu::Error e = api.cudaStreamSynchronize(g.stream)) return cuda_failed("copying back", e);
  off = 0;
  bool changed = false;
  for (const auto& out : g.outputs) {
    changed = changed || std::memcmp(g.snapshot.data() + off, out.host, out.bytes) != 0;
    off += out.bytes;
  }
  if (call.status == 0 && (changed || late > kLateWorkSeconds + 0.1 * call.seconds)) report_late_work(changed, late);
  return done(call.status, static_cast<int64_t>(call.seconds * 1e9), call.message);
}

} // namespace

int main(int argc, char** argv) {
  int a = 1;
  for (; a + 1 < argc; a += 2) {
    if (std::strcmp(argv[a], "--driver") == 0) g_driver = argv[a + 1];
    // The judge's way to pass TEMPER_CUDA_SANDBOX=off (a worker's environment is fixed).
    else if (std::strcmp(argv[a], "--sandbox") == 0) ::setenv("TEMPER_CUDA_SANDBOX", argv[a + 1], 1);
    else if (std::strcmp(argv[a], "--runtime") == 0) g_runtime = argv[a + 1];
    else break;
  }
  if (argc - a == 1 && std::strcmp(argv[a], "--probe") == 0) return probe();
  if (argc - a != 2 || std::strcmp(argv[a], "--protocol") != 0 || std::strtoul(argv[a + 1], nullptr, 10) != proto::kVersion) {
    std::fprintf(stderr, "usage: %s [--driver LIB] [--runtime LIB] [--sandbox off] --protocol %u (started by temper) | --probe\n", kName, proto::kVersion);
    return 2;
  }
  io::start_conversation(kName);
  // FLUSH is done inside RUN, after the input copies.
  io::serve(kName, {handle_load, handle_run, [] { g.flush_pending = true; }});
}
