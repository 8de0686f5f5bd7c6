// A task's golden.py (PyTorch, as CANN-Bench ships it) as its golden: run by
// runners/golden/temper_golden_runner.py in the pinned environment scripts/setup.sh makes, one
// process per input set, writing the fp64 golden and the same-precision run as output bundles
// (docs/goldens.md). This module finds the interpreter and the runner and builds the command.
#pragma once

#include "core/task.h"
#include "util/error.h"

#include <filesystem>
#include <string>
#include <vector>

namespace temper::judge {

struct PythonGolden {
  std::vector<std::string> argv; // interpreter, runner and flags; the three bundle paths follow
  std::string key;               // content key: golden.py, runner, environment, flags
};

bool is_python_golden(const std::filesystem::path& golden);

// The names the official evaluator tries, in order: the function proto.yaml's schema names
// ("gelu(Tensor x, ...) -> ..."), then the operator's name in lower case.
std::vector<std::string> golden_function_names(const core::Operator& op);

// True when the source imports torch_npu, which needs an Ascend NPU and cannot run here.
bool imports_torch_npu(const std::string& source);

// The interpreter of the golden runner's environment: $TEMPER_GOLDEN_PYTHON, else
// $TEMPER_GOLDEN_VENV/bin/python, else the environment under
// ${XDG_CACHE_HOME:-~/.cache}/temper/venv-* whose marker matches `requirements`. The error says
// how to make one.
Expected<std::filesystem::path> find_golden_python(const std::filesystem::path& requirements);

// The runner script: $TEMPER_GOLDEN_RUNNER, else the one in the source tree.
std::filesystem::path golden_runner_script();

// Checks the golden can run here (no torch_npu, an environment, the runner) and builds the
// command. Errors are task errors that say what to do.
Expected<PythonGolden> prepare_python_golden(const core::Task& task);

// The PyTorch reference arm (`temper judge --reference torch`): the golden runner with --serve,
// a long-lived worker speaking the worker protocol, calling the task's PyTorch function
// (reference.torch in temper.yaml, else its golden.py) in the case's dtype at `threads` torch
// threads. `argv` is the worker command without "--protocol N"; `key` names it for calibrations.
struct TorchReference {
  std::vector<std::string> argv;
  std::filesystem::path source;
  std::string key;
};
Expected<TorchReference> prepare_torch_reference(const core::Task& task, int threads);

// The task's PyTorch function, if it has one: reference.torch in temper.yaml, else its golden.py
// (empty when neither: the task cannot be timed against PyTorch).
std::filesystem::path torch_function_of(const core::Task& task);

} // namespace temper::judge
