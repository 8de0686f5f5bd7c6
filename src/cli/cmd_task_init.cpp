// `temper task init DIR`: writes a commented temper.yaml beside an official task's files for what
// temper adds (golden override, reference kernel, tolerance, threads, trials, cost model), then
// loads the task to show it is complete. The official files are never touched.
#include "cli/commands.h"
#include "core/task_loader.h"
#include "judge/python_golden.h"
#include "util/fs.h"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace temper::cli {

namespace {

namespace fs = std::filesystem;

struct InitArgs {
  std::string dir;
};

std::string golden_section(const fs::path& dir) {
  auto source = util::read_file(dir / "golden.py");
  if (!source) {
    return "# The golden: this task has no golden.py, so write one and name it here (a C++ fp64 golden,\n"
           "# include/temper/golden.h):\n"
           "# golden: golden.cpp\n";
  }
  if (judge::imports_torch_npu(*source)) {
    return "# The golden: golden.py imports torch_npu (an Ascend NPU library), so it cannot run on the CPU.\n"
           "# Write a CPU golden and name it here: a C++ fp64 golden (include/temper/golden.h) or the same\n"
           "# function with torch alone (cpu_golden.py).\n"
           "# golden: golden.cpp\n";
  }
  return "# The golden: golden.py, the function CANN-Bench's evaluator calls, run on the CPU with inputs\n"
         "# upcast to float64 (docs/goldens.md). To use a C++ fp64 golden instead (include/temper/golden.h):\n"
         "# golden: golden.cpp\n";
}

std::string template_for(const core::Task& task) {
  return fmt::format(R"(# What temper adds to the {} task (schema version 1). The official files (proto.yaml,
# cases.yaml, cases.csv, desc.md, golden.py) stay as they are; this file only adds to them.
schema_version: 1
{}
# The kernel to beat, per backend: the baseline of `temper judge TASK CAND --reference` and of
# campaigns (`temper run`). A plain, correct kernel against include/temper/kernel.h.
# reference:
#   cpu: reference.cpp

# How outputs are compared (docs/tolerance.md): CANN-Bench's own standard, per dtype.
tolerance:
  standard: cann-bench

# Threads a kernel may use (and the reference runs with), and correctness trials per case (>= 3).
threads: 1
trials: 3

# The roofline: bytes moved and operations done per case, as expressions of the case's inputs
# (in0.bytes, in0.numel, in0.shape[k], attr.NAME), for each case's fraction of the roofline.
# cost:
#   bytes: "in0.bytes * 2"
#   flops: "in0.numel"
)",
                     task.op.name, golden_section(task.dir));
}

int run_init(const InitArgs& a) {
  fs::path dir = a.dir;
  std::error_code ec;
  if (!fs::exists(dir / "proto.yaml", ec)) {
    std::cerr << fmt::format("temper: {} is not a task directory: proto.yaml is missing\n", a.dir);
    return kExitUsage;
  }
  fs::path config = dir / "temper.yaml";
  if (fs::exists(config, ec)) {
    std::cerr << fmt::format("temper: {} exists; task init writes a new one only\n", config.string());
    return kExitUsage;
  }
  auto task = core::load_task(dir);
  if (!task) {
    std::cerr << task.error().message << "\n"
              << fmt::format("temper: {} has problems; `temper task check {}` lists them\n", a.dir, a.dir);
    return kExitUsage;
  }
  if (auto w = util::write_file_atomic(config, template_for(*task)); !w) {
    std::cerr << "temper: " << w.error().message << "\n";
    return kExitUsage;
  }
  auto reloaded = core::load_task(dir);
  if (!reloaded) { // the template must always load; say so rather than leave a broken file unexplained
    std::cerr << reloaded.error().message << "\n";
    return kExitFailed;
  }
  std::cout << fmt::format("wrote {}: golden {}, tolerance {}, {} cases\n", config.string(),
                           reloaded->config.golden.empty() ? std::string("none yet") : reloaded->config.golden.filename().string(),
                           reloaded->config.tolerance.standard,
                           reloaded->cases.size());
  return kExitOk;
}

} // namespace

void register_task_init_command(CLI::App& task, Action& action) {
  auto args = std::make_shared<InitArgs>();
  CLI::App* cmd = task.add_subcommand("init", "Write a commented temper.yaml for what temper adds to an official task");
  cmd->add_option("dir", args->dir, "Task directory (proto.yaml, cases.yaml, golden.py)")->required();
  cmd->callback([args, &action] { action = [args] { return run_init(*args); }; });
}

} // namespace temper::cli
