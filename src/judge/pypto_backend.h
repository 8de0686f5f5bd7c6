// The judge's side of the pypto backend: how to start temper's PyPTO runner (a Python process
// that speaks temper-worker's protocol, runners/pypto/temper_pypto_runner.py) for one arm, and
// which host wrapper of a candidate it calls. Candidates are Python files: nothing is compiled
// ahead of time (PyPTO compiles per shape on the first call, and the runner reports that cost
// apart from the kernel time).
#pragma once

#include "core/task.h"
#include "util/error.h"

#include <filesystem>
#include <string>
#include <vector>

namespace temper::judge {

struct PyptoOptions {
  std::string mode = "sim";                 // sim (cost model, no outputs) | npu | plain (no PyPTO setup)
  std::filesystem::path python;             // default: $TEMPER_PYPTO_PYTHON, else python3 on PATH
  std::filesystem::path runner;             // default: $TEMPER_PYPTO_RUNNER, else the source tree's
  std::string entry;                        // host wrapper name; default: from the operator's schema
  // What a sample's kernel time is: "device" (torch_npu's profiler, kernel_details.csv), "host"
  // (wall clock around the synchronized call); empty: device in npu mode, host in plain mode.
  // sim mode always reports the cost model's simulated time and takes neither.
  std::string time;
};

struct RunnerLaunch {
  std::filesystem::path exe;     // the interpreter
  std::vector<std::string> args; // the runner script and its flags, before "--protocol N"
  std::string mode;
  std::string entry;
  std::string time_kind; // of the samples: "device", "host" or "simulated"
  bool device_profiles() const { return time_kind == "device"; }
};

// The wrapper CANN-Bench's layout names after the operator: the schema's function name
// ("swi_glu(Tensor input, int dim=-1) -> Tensor output" -> swi_glu), else the snake-cased
// operator name (SwiGlu -> swi_glu).
std::string pypto_entry_name(const core::Operator& op);

// What the runner inherits from temper's environment on top of the workers' fixed one: the
// Python search path and CANN's setup (set_env.sh), taken once so both arms get the same.
std::vector<std::string> pypto_worker_environment();

// Resolves interpreter and runner; errors say what is missing and how to provide it.
Expected<RunnerLaunch> pypto_launch(const PyptoOptions& options, const core::Operator& op);

} // namespace temper::judge
