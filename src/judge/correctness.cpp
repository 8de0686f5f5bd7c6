#include "judge/common.h"
#include "judge/correctness.h"

#include "backend/arena.h"
#include "core/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace temper::judge {

namespace {

// REJECTED_CHEAT's reason when the worker's sandbox stopped a system call (as in timing.cpp).
constexpr std::string_view kForbiddenSyscall = "forbidden_syscall";

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
  for (size_t i = 0; i < v.size(); ++i) v[i] = core::load_double(data, spec.dtype, i);
  return v;
}

void fail_call(CaseResult& result, const backend::CallResult& call, const backend::Worker* worker) {
  result.status = status_for(call.outcome);
  if (call.outcome == backend::CallOutcome::SandboxViolation) result.reason_code = std::string(kForbiddenSyscall);
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
  bool any_failed = false;

  for (int trial = 0; trial < config.trials; ++trial) {
    std::vector<core::HostTensor> inputs = core::generate_inputs(task.op, c, config.job_seed, trial);
    TEMPER_TRY_ASSIGN(GoldenResult gold, golden.outputs(c, inputs, GoldenPrecision::Fp64));
    std::optional<GoldenResult> lowp;
    if (needs_low_precision(task, gold.outputs)) {
      TEMPER_TRY_ASSIGN(lowp, golden.outputs(c, inputs, GoldenPrecision::LowPrecision));
    }

    if (!worker) {
      for (const auto& in : inputs) layout.inputs.push_back(in.spec);
      for (const auto& o : gold.outputs) layout.outputs.push_back(core::TensorSpec{o.name, o.dtype, o.shape});
      TEMPER_TRY_ASSIGN(arena, backend::SharedArena::create(layout));
      backend::WorkerOptions wo;
      wo.worker_exe = config.worker_exe;
      wo.worker_args = config.worker_args;
      wo.artifact = artifact;
      wo.threads = config.threads;
      wo.call_timeout = config.call_timeout;
      wo.memory_limit_bytes = config.memory_limit_bytes;
      wo.attrs = c.attrs;
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
    }

    // Trial 0 runs twice: the second call must reproduce the first byte for byte.
    int calls = trial == 0 ? 2 : 1;
    for (int call = 0; call < calls; ++call) {
      restore_and_poison(*arena, inputs, poison_byte(trial));
      backend::CallResult r = worker->run(0);
      if (r.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", r.message);
      if (!r.ok()) {
        fail_call(result, r, worker.get());
        result.trials_run = trial + 1;
        return {};
      }
      if (!task.config.in_place) {
        if (int k = modified_input(*arena, inputs); k >= 0) {
          result.status = CaseStatus::RejectedCheat;
          result.reason_code = "writes_inputs";
          result.message = fmt::format("the kernel wrote its input '{}' (trial {}); the task does not declare the op in-place",
                                       layout.inputs[static_cast<size_t>(k)].name, trial);
          result.trials_run = trial + 1;
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
        for (size_t k = 0, off = 0; k < layout.outputs.size(); ++k) {
          size_t n = layout.outputs[k].bytes();
          if (std::memcmp(arena->output(k), first_call_bytes.data() + off, n) != 0) result.nondeterministic = true;
          off += n;
        }
        continue;
      }
      kernel_times.push_back(r.kernel_seconds);
      if (trial == 0) {
        first_call_bytes.clear();
        for (size_t k = 0; k < layout.outputs.size(); ++k) {
          first_call_bytes.insert(first_call_bytes.end(), arena->output(k), arena->output(k) + layout.outputs[k].bytes());
        }
      }

      TrialSummary ts{trial, true, r.kernel_seconds, 0, 0};
      for (size_t k = 0; k < gold.outputs.size(); ++k) {
        const GoldenOutput& g = gold.outputs[k];
        std::vector<double> got = widen(arena->output(k), layout.outputs[k]);
        core::OutputView view{g.dtype, g.shape, got.data(), g.values.data(),
                              lowp ? lowp->outputs[k].values.data() : nullptr};
        core::Comparison cmp = core::compare_output(task.tolerance_for(g.name), view);
        ts.max_abs = std::max(ts.max_abs, cmp.max_abs);
        ts.max_rel = std::max(ts.max_rel, cmp.max_rel);
        result.max_abs = std::max(result.max_abs, cmp.max_abs);
        result.max_rel = std::max(result.max_rel, cmp.max_rel);
        result.mean_rel = std::max(result.mean_rel, cmp.mean_rel);
        result.mismatches = std::max(result.mismatches, cmp.mismatches);
        if (!cmp.passed) {
          ts.passed = false;
          if (!any_failed) {
            any_failed = true;
            result.status = CaseStatus::IncorrectNumerical;
            result.message = fmt::format("output '{}', trial {}: {}", g.name, trial, cmp.reason);
            for (const auto& m : cmp.first) result.first_mismatches.push_back({g.name, m});
          }
        }
        // Keep, per output, the comparison of the first failing trial, else of the last one.
        auto it = std::find_if(result.comparisons.begin(), result.comparisons.end(),
                               [&](const auto& p) { return p.first == g.name; });
        if (it == result.comparisons.end()) {
          result.comparisons.emplace_back(g.name, cmp);
        } else if (it->second.passed) {
          it->second = cmp;
        }
      }
      result.trials.push_back(ts);
    }
    result.trials_run = trial + 1;
  }
  if (!kernel_times.empty()) {
    std::sort(kernel_times.begin(), kernel_times.end());
    result.kernel_seconds = kernel_times[kernel_times.size() / 2];
  }
  if (result.status == CaseStatus::Passed && result.nondeterministic) {
    result.message = "passed, but two calls on the same inputs gave different bytes (nondeterministic)";
  }
  if (worker) result.output_tail = worker->output_tail();
  return {};
}

} // namespace temper::judge
