// The judge's side of a temper-worker process: starts it on one kernel artifact and a shared
// arena, and drives it over a pipe one command at a time. Whatever the kernel does (crash, hang,
// error return, runaway memory) comes back as a CallResult, never as a failure of temper.
#pragma once

#include "backend/arena.h"
#include "core/task.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace temper::backend {

class Forkserver;

struct WorkerOptions {
  std::filesystem::path worker_exe;  // the temper-worker binary (or the runner's interpreter)
  std::vector<std::string> worker_args; // put before "--protocol N": a runner script and its flags
  // "NAME=value" added to the fixed environment (replacing a fixed one of the same name): what a
  // runner's toolchain needs (PYTHONPATH, CANN's variables). The same for every worker of a
  // judgement, both arms alike, never a TEMPER_* variable.
  std::vector<std::string> worker_env;
  std::filesystem::path artifact;    // the kernel's shared object
  int threads = 1;                   // passed to the kernel as num_threads
  std::chrono::milliseconds call_timeout{60'000};
  size_t memory_limit_bytes = size_t{4} << 30; // address space beyond the arena (RLIMIT_AS)
  std::vector<std::pair<std::string, core::AttrValue>> attrs;
  // The case's declared inputs over its flat tensors (core::Case::slots): how the worker groups
  // them into tensor lists and absent inputs for the kernel (ABI 2). Empty or all single
  // tensors: each tensor is its own input, as in ABI 1.
  std::vector<core::InputSlot> input_slots;
  size_t flush_bytes = 0;            // cold-cache buffer for flush(); 0: flush() does nothing
  // flush() flushes the worker's own resident memory instead of writing a buffer
  // (MeasurementProtocol::cold_step "evict"; temper-worker only, flush_bytes is then unused).
  bool evict_cold = false;
  std::vector<int> cpus;             // CPU affinity; empty: inherit temper's
  // The runner times calls on the NPU's profiler (runners/pypto --time device): it gets
  // "--profile-root DIR", a private directory for its exports, removed with the worker; a call
  // whose RUN_INFO names an export there gets its kernel time from it (device_profile.h).
  bool device_profiles = false;
  // temper-cuda-worker: the device-content library (LoadCommand::device_content). Timed calls
  // then mix their inputs on the device (run()'s DeviceCall) instead of copying them from the
  // arena; the arena's input sets 0 and 1 must hold the two draws when the worker starts.
  std::filesystem::path device_content;
  // Set: the worker is forked from this server instead of started afresh (a runner whose start
  // is slow: the PyTorch arm's import of torch). The server is started with this worker's
  // command and environment; where it cannot be used the worker is started as usual.
  std::shared_ptr<Forkserver> forkserver;
};

// A call whose inputs are made on the device (temper-cuda-worker with a device-content
// library): each element from input set 0 or 1 as the bits of `content_seed` say. The outputs
// stay on the device (their hash comes back) unless `fetch_outputs`.
struct DeviceCall {
  uint64_t content_seed = 0;
  bool fetch_outputs = false;
};

// The whole environment a worker gets ("NAME=value"), whatever temper's own: fixed, the same
// for every role and phase, with no TEMPER_* variable. OMP_NUM_THREADS is `threads`; with 0 it
// is left out, so a runtime picks its own default (the PyTorch arm at PyTorch's default).
std::vector<std::string> worker_environment(int threads);

enum class CallOutcome {
  Ok,           // the kernel returned 0
  KernelError,  // the kernel returned non-zero, or could not be loaded (missing symbol, ...)
  Crashed,      // the worker died on a signal or exited during a call
  TimedOut,     // the call exceeded call_timeout; the worker was killed
  HarnessError, // temper itself could not start or talk to the worker
  SandboxViolation, // the kernel made a system call the worker's sandbox forbids; the worker
                    // stopped it before it ran and ended (docs/security.md)
};

std::string_view call_outcome_name(CallOutcome o);

// The LOAD frame a worker would get for these options and arena, for tools that call the kernel
// outside a worker (temper-profile-driver under valgrind).
Expected<std::string> encoded_load_command(const WorkerOptions& options, const SharedArena& arena);

struct CallResult {
  CallOutcome outcome = CallOutcome::HarnessError;
  int kernel_status = 0;       // the kernel's return value
  std::string message;         // the kernel's error text, the signal, or the harness problem
  std::string violation;       // SandboxViolation: the forbidden call ("clone (a new process or
                               // namespace)"); empty when the worker could not name it
  std::string reason_code;     // SandboxViolation from a runtime boundary check of the worker
                               // (e.g. "work_outside_timed_window"); empty: a forbidden syscall
  double kernel_seconds = 0;   // measured by the worker around the call (monotonic clock)
  double cpu_seconds = 0;      // the worker thread's CPU time around the same call
  double round_trip_seconds = 0; // measured by the judge around the command
  // From a runner's RUN_INFO (protocol.h); temper-worker's calls keep these defaults.
  std::string time_kind = "host";  // what kernel_seconds is: host wall clock, "simulated", or
                                   // "device" (the NPU profiler's kernel time of the call)
  double compile_seconds = 0;      // JIT compile this call paid, not in kernel_seconds
  double wall_seconds = 0;         // the runner's host wall time of the call (0: not reported)
  int device_kernels = 0;          // "device": kernel launches the profiler counted in the call
  bool outputs_valid = true;       // false: the outputs hold no computed values (RunMode.SIM)
  std::optional<uint64_t> outputs_hash; // a DeviceCall's outputs, hashed on the device

  bool ok() const { return outcome == CallOutcome::Ok; }
};

class Worker {
public:
  // Starts the process and loads the artifact. The result says whether loading worked; a
  // Worker whose load failed can only be destroyed.
  static std::pair<std::unique_ptr<Worker>, CallResult> start(const WorkerOptions& options,
                                                               const SharedArena& arena);
  ~Worker(); // asks the worker to exit, kills its process group if it does not
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Runs the kernel once on input set `set` (tensors as laid out in the arena).
  CallResult run(int set);
  // The same with the inputs made on the device (WorkerOptions::device_content).
  CallResult run(int set, const DeviceCall& device);

  // Cold-cache step: the worker writes its flush buffer (WorkerOptions::flush_bytes), evicting
  // the kernel's data from the caches of the CPU it runs on. A separate command, so run()'s
  // round trip stays comparable with the kernel time.
  CallResult flush();

  // Stops the worker (SIGSTOP to its process: every thread) and waits until all of its threads
  // have stopped, so that nothing of the kernel runs until the next command: the timing job
  // freezes the arm that is not being timed (docs/security.md). run() and flush() thaw it
  // first; so does the destructor. Nothing happens to a worker that has ended.
  void freeze();
  void thaw();
  bool frozen() const;

  // CPU time of the worker's threads other than its main thread (the one that runs commands and
  // the kernel's call), in seconds: all threads by the process's CPU-time clock minus the main
  // thread's (/proc). What the kernel's own threads did; none once the worker has ended.
  std::optional<double> other_threads_cpu_seconds() const;
  int thread_count() const;

  // What the worker's sandbox enforces, as it reported when loading ("seccomp: ...; landlock
  // ABI 7: ..."); empty when loading failed.
  std::string sandbox() const;

  // The last bytes the worker (and the kernel) wrote to stderr/stdout, for diagnostics.
  std::string output_tail() const;
  int pid() const;

  struct Impl;

private:
  explicit Worker(std::unique_ptr<Impl> impl);
  CallResult run_command(int set, uint8_t flags, uint64_t content_seed);
  std::unique_ptr<Impl> m_impl;
};

} // namespace temper::backend
