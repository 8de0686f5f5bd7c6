#include "judge/common.h"
#include "judge/correctness.h"

#include "backend/arena.h"
#include "core/inputs.h"
#include "judge/output_check.h"
#include "judge/boundary.h"
#include "util/hash.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

namespace temper::judge {

namespace {

CaseStatus status_for(backend::CallOutcome o) {
  switch (o) {
  case backend::CallOutcome::Crashed: return CaseStatus::Crashed;
  case backend::CallOutcome::TimedOut: return CaseStatus::Timeout;
  case backend::CallOutcome::SandboxViolation: return CaseStatus::RejectedCheat;
  default: return CaseStatus::RuntimeError;
  }
}

// Poison patterns, alternating by trial. 0xFF bytes are NaN in every float format and an
// implausible value in every integer one; but where the right answer is NaN, an unwritten NaN
// would pass, so other trials use 0x7B bytes, a large finite value in fp32, fp16 and bf16.
unsigned char poison_byte(int trial) { return trial % 2 == 0 ? 0xFF : 0x7B; }

void restore_and_poison(backend::SharedArena& arena, const std::vector<core::HostTensor>& inputs, unsigned char poison) {
  for (size_t k = 0; k < inputs.size(); ++k) std::memcpy(arena.input(0, k), inputs[k].buffer.data(), inputs[k].spec.bytes());
  const auto& outs = arena.layout().outputs;
  for (size_t k = 0; k < outs.size(); ++k) std::memset(arena.output(k), poison, outs[k].bytes());
}

// The first input the kernel changed, or -1.
int modified_input(backend::SharedArena& arena, const std::vector<core::HostTensor>& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (std::memcmp(arena.input(0, k), inputs[k].buffer.data(), inputs[k].spec.bytes()) != 0) return static_cast<int>(k);
  }
  return -1;
}

std::vector<double> widen(const unsigned char* data, const core::TensorSpec& spec) {
  std::vector<double> v(static_cast<size_t>(spec.numel()));
  core::widen_to_double(data, spec.dtype, v.size(), v.data());
  return v;
}

// Every output's bytes, copied the moment the call returns: the checks read this copy, so a
// thread the kernel left running cannot finish the output while it is being compared.
std::vector<unsigned char> snapshot(backend::SharedArena& arena) {
  std::vector<unsigned char> out;
  const auto& outs = arena.layout().outputs;
  for (size_t k = 0; k < outs.size(); ++k) out.insert(out.end(), arena.output(k), arena.output(k) + outs[k].bytes());
  return out;
}

bool output_changed(backend::SharedArena& arena, const std::vector<unsigned char>& snap) {
  const auto& outs = arena.layout().outputs;
  for (size_t k = 0, off = 0; k < outs.size(); off += outs[k].bytes(), ++k) {
    if (std::memcmp(arena.output(k), snap.data() + off, outs[k].bytes()) != 0) return true;
  }
  return false;
}

// Whether the output moves after the call returned, watching for up to `window`: the trace of
// work left to a thread. Only called on an output that failed, so honest kernels never wait.
bool changes_within(backend::SharedArena& arena, const std::vector<unsigned char>& snap, std::chrono::milliseconds window) {
  const auto until = std::chrono::steady_clock::now() + window;
  do {
    if (output_changed(arena, snap)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } while (std::chrono::steady_clock::now() < until);
  return output_changed(arena, snap);
}

// Trial 0's inputs with a few pairs of floating-point elements swapped, at positions drawn from the job seed:
// values any input may hold, in an arrangement no earlier call saw. A kernel that keys a cache
// on part of its inputs (or on their address) answers it with trial 0's output. Empty when no
// swap changes anything (constant inputs).
std::vector<core::HostTensor> twin_inputs(std::vector<core::HostTensor> inputs, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x7417'7417'7417'7417ull);
  bool changed = false;
  for (auto& t : inputs) {
    const size_t n = static_cast<size_t>(t.spec.numel());
    const size_t w = core::dtype_size(t.spec.dtype);
    if (n < 2 || !core::is_floating(t.spec.dtype)) continue; // indices and masks may have to stay ordered
    for (int k = 0; k < 8; ++k) {
      size_t i = rng() % n, j = rng() % n;
      unsigned char* a = t.buffer.data() + i * w;
      unsigned char* b = t.buffer.data() + j * w;
      if (i == j || std::memcmp(a, b, w) == 0) continue;
      std::swap_ranges(a, a + w, b);
      changed = true;
    }
  }
  if (!changed) inputs.clear();
  return inputs;
}

void fail_call(CaseResult& result, const backend::CallResult& call, const backend::Worker* worker) {
  result.status = status_for(call.outcome);
  if (call.outcome == backend::CallOutcome::SandboxViolation) {
    result.reason_code = call.reason_code.empty() ? std::string(kForbiddenSyscall) : call.reason_code;
  }
  result.message = call.message;
  if (worker) result.output_tail = worker->output_tail();
}

} // namespace

Status check_case(const core::Task& task, const core::Case& c, const std::filesystem::path& artifact,
                  GoldenRunner& golden, const CorrectnessConfig& config, CaseResult& result) {
  backend::ArenaLayout layout;
  std::optional<backend::SharedArena> arena;
  std::unique_ptr<backend::Worker> worker;
  std::vector<unsigned char> first_call_bytes;
  std::vector<double> kernel_times;
  std::vector<double> wall_times; // the runner's host wall times, reported beside device time
  std::vector<double> cpu_times;  // the worker thread's CPU time of the same calls
  std::vector<std::pair<int, uint64_t>> passed_outputs; // (trial, hash of its output bytes)
  bool any_failed = false;

  auto reject = [&](std::string_view reason, std::string message, int trials_run) {
    result.status = CaseStatus::RejectedCheat;
    result.reason_code = std::string(reason);
    result.message = std::move(message);
    result.trials_run = trials_run;
    if (worker) result.output_tail = worker->output_tail();
  };

  // Trials 0..trials-1 on fresh inputs, then the twin of trial 0 (twin_inputs), reported as
  // trial `trials`. The twin runs only while everything passed: it is there to expose a stale
  // output, which a failing kernel does not need.
  for (int trial = 0; trial <= config.trials; ++trial) {
    const bool twin = trial == config.trials;
    std::vector<core::HostTensor> inputs;
    if (twin) {
      if (any_failed) break;
      inputs = twin_inputs(core::generate_inputs(task.op, c, config.job_seed, 0), config.job_seed ^ static_cast<uint64_t>(c.id));
      if (inputs.empty()) break;
    } else {
      inputs = core::generate_inputs(task.op, c, config.job_seed, trial);
    }
    TEMPER_TRY_ASSIGN(GoldenResult gold, golden.outputs(c, inputs, GoldenPrecision::Fp64));
    std::optional<GoldenResult> lowp;
    if (always_needs_low_precision(task, gold.outputs)) {
      TEMPER_TRY_ASSIGN(lowp, golden.outputs(c, inputs, GoldenPrecision::LowPrecision));
    }

    if (!worker) {
      for (const auto& in : inputs) layout.inputs.push_back(in.spec);
      for (const auto& o : gold.outputs) layout.outputs.push_back(core::TensorSpec{o.name, o.dtype, o.shape});
      TEMPER_TRY_ASSIGN(arena, backend::SharedArena::create(layout));
      backend::WorkerOptions wo;
      wo.worker_exe = config.worker_exe;
      wo.worker_args = config.worker_args;
      wo.worker_env = config.worker_env;
      wo.device_profiles = config.device_profiles;
      wo.artifact = artifact;
      wo.threads = config.threads;
      wo.call_timeout = config.call_timeout;
      wo.memory_limit_bytes = config.memory_limit_bytes;
      wo.attrs = c.attrs;
      wo.input_slots = c.slots;
      auto [w, loaded] = backend::Worker::start(wo, *arena);
      if (loaded.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", loaded.message);
      if (!loaded.ok()) {
        fail_call(result, loaded, w.get());
        if (loaded.outcome != backend::CallOutcome::SandboxViolation) {
          result.message = "cannot load the kernel: " + loaded.message;
        }
        return {};
      }
      worker = std::move(w);
      result.sandbox = worker->sandbox();
    }

    // Trial 0 runs twice: the second call must reproduce the first byte for byte.
    int calls = trial == 0 ? 2 : 1;
    for (int call = 0; call < calls; ++call) {
      restore_and_poison(*arena, inputs, poison_byte(trial));
      backend::CallResult r = worker->run(0);
      if (r.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", r.message);
      const std::vector<unsigned char> got_bytes = r.ok() ? snapshot(*arena) : std::vector<unsigned char>{};
      if (!r.ok()) {
        fail_call(result, r, worker.get());
        result.trials_run = trial + 1;
        return {};
      }
      if (!task.config.in_place) {
        if (int k = modified_input(*arena, inputs); k >= 0) {
          reject(kWritesInputs,
                 fmt::format("the kernel wrote its input '{}' (trial {}); the task does not declare the op in-place",
                             layout.inputs[static_cast<size_t>(k)].name, trial),
                 trial + 1);
          return {};
        }
      }
      result.jit_compile_seconds += r.compile_seconds;
      result.time_kind = r.time_kind;
      if (!r.outputs_valid) {
        // PyPTO's RunMode.SIM estimates time and writes no outputs: there is nothing to check.
        result.status = CaseStatus::Unchecked;
        result.message = "unsupported: this backend mode computes no output values (PyPTO RunMode.SIM is a cost model); "
                         "correctness needs NPU mode; kernel_s is the simulated time";
        result.kernel_seconds = r.kernel_seconds;
        result.trials_run = trial + 1;
        if (worker) result.output_tail = worker->output_tail();
        return {};
      }
      if (call == 1) {
        if (got_bytes != first_call_bytes) result.nondeterministic = true;
        continue;
      }
      kernel_times.push_back(r.kernel_seconds);
      wall_times.push_back(r.wall_seconds);
      cpu_times.push_back(r.cpu_seconds);
      if (trial == 0) first_call_bytes = got_bytes;

      TrialSummary ts{trial, true, r.kernel_seconds, 0, 0};
      std::string first_failure;
      // The same bytes on the same inputs were compared before (another variant, an earlier
      // judgement): that comparison is this one.
      const std::string compared_key = config.compared ? ComparedOutputs::key(task.op, c, inputs, got_bytes) : std::string();
      std::optional<std::vector<OutputCheck>> known = config.compared ? config.compared->find(compared_key) : std::nullopt;
      if (known) {
        ++result.comparisons_reused;
      } else {
        std::vector<std::vector<double>> got;
        size_t offset = 0;
        for (size_t k = 0; k < gold.outputs.size(); ++k) {
          got.push_back(widen(got_bytes.data() + offset, layout.outputs[k]));
          offset += layout.outputs[k].bytes();
        }
        TEMPER_TRY_ASSIGN(known, check_outputs_lowp_on_demand(task, c, inputs, gold, lowp, got, [&] {
                            return golden.outputs(c, inputs, GoldenPrecision::LowPrecision);
                          }));
        if (config.compared) config.compared->insert(compared_key, *known);
      }
      std::vector<OutputCheck>& checks = *known;
      for (OutputCheck& check : checks) {
        const std::string& name = check.name;
        const core::Comparison& cmp = check.cmp;
        ts.max_abs = std::max(ts.max_abs, cmp.max_abs);
        ts.max_rel = std::max(ts.max_rel, cmp.max_rel);
        result.max_abs = std::max(result.max_abs, cmp.max_abs);
        result.max_rel = std::max(result.max_rel, cmp.max_rel);
        result.mean_rel = std::max(result.mean_rel, cmp.mean_rel);
        result.mismatches = std::max(result.mismatches, cmp.mismatches);
        if (!cmp.passed) {
          ts.passed = false;
          if (first_failure.empty()) first_failure = fmt::format("output '{}', {}: {}", name, twin ? fmt::format("trial {} (trial 0's inputs with a few elements swapped)", trial) : fmt::format("trial {}", trial), cmp.reason);
          if (!any_failed) {
            for (const auto& m : cmp.first) result.first_mismatches.push_back({name, m});
          }
        }
        // Keep, per output, the comparison of the first failing trial, else of the last one.
        auto it = std::find_if(result.comparisons.begin(), result.comparisons.end(),
                               [&](const auto& p) { return p.first == name; });
        if (it == result.comparisons.end()) {
          result.comparisons.emplace_back(name, cmp);
        } else if (it->second.passed) {
          it->second = cmp;
        }
      }
      result.trials.push_back(ts);

      // The output must be what the call left behind: finishing it later is deferred work,
      // whether or not the copy we checked happened to be complete.
      if (output_changed(*arena, got_bytes) || (!ts.passed && changes_within(*arena, got_bytes, std::chrono::milliseconds(200)))) {
        reject(kDeferredWork,
               fmt::format("the output changed after the call returned (trial {}): the kernel left work to a thread", trial),
               trial + 1);
        return {};
      }
      const uint64_t hash = util::hash64(got_bytes.data(), got_bytes.size());
      if (!ts.passed) {
        // Byte for byte an output that passed for other inputs: a cached or reused result.
        for (const auto& [earlier, h] : passed_outputs) {
          if (h != hash) continue;
          reject(kStaleOutput,
                 fmt::format("{}; the output is byte for byte the one trial {} produced for other inputs (a cached result)",
                             first_failure, earlier),
                 trial + 1);
          return {};
        }
        if (!any_failed) {
          any_failed = true;
          result.status = CaseStatus::IncorrectNumerical;
          result.message = first_failure;
        }
      } else {
        passed_outputs.emplace_back(trial, hash);
      }
    }
    result.trials_run = std::min(trial + 1, config.trials);
  }
  if (!kernel_times.empty()) {
    std::sort(kernel_times.begin(), kernel_times.end());
    result.kernel_seconds = kernel_times[kernel_times.size() / 2];
    std::sort(wall_times.begin(), wall_times.end());
    if (result.time_kind == "device") result.host_wall_seconds = wall_times[wall_times.size() / 2];
    std::sort(cpu_times.begin(), cpu_times.end());
    result.kernel_cpu_seconds = cpu_times[cpu_times.size() / 2];
  }
  if (result.status == CaseStatus::Passed && result.nondeterministic) {
    result.message = "passed, but two calls on the same inputs gave different bytes (nondeterministic)";
  }
  if (worker) result.output_tail = worker->output_tail();
  return {};
}

} // namespace temper::judge
