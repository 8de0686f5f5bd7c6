#include "cli/case_list.h"
#include "cli/commands.h"
#include "cli/timing_flags.h"
#include "judge/judge.h"
#include "judge/report.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

namespace temper::cli {

namespace {

// The timing flags are TimingArgs (cli/timing_flags.h), shared with probe.
struct JudgeArgs : TimingArgs {
  std::string task;
  std::string candidate;
  std::string cases;
  std::string json;
  std::string compiler = "g++";
  std::string flags;
  uint64_t seed = 0;
  bool fresh_seed = false;
  int jobs = 0;
  double timeout_s = 60;
  int trials = 0;
  bool quiet = false;
  std::string backend = "cpu";
  judge::PyptoOptions pypto;
  std::string pypto_python;
  std::string pypto_runner;
};

int run(const JudgeArgs& a, const CLI::App& cmd, bool calibrate) {
  judge::JudgeOptions o;
  o.task_dir = a.task;
  o.candidate = a.candidate;
  if (!a.cases.empty()) {
    auto ids = parse_case_list(a.cases);
    if (!ids) {
      std::cerr << "temper: " << ids.error().message << "\n";
      return kExitUsage;
    }
    o.case_ids = *ids;
  }
  o.compiler.program = a.compiler;
  if (!a.flags.empty()) o.compiler.flags = split_flags(a.flags);
  if (const CLI::Option* seed = cmd.get_option_no_throw("--seed"); seed && seed->count() > 0) o.seed = a.seed;
  o.fresh_seed = a.fresh_seed;
  o.jobs = a.jobs;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  if (a.trials > 0) o.trials = a.trials;
  o.progress = !a.quiet;
  o.temper_version = TEMPER_VERSION;
  o.backend = a.backend;
  o.pypto = a.pypto;
  o.pypto.python = a.pypto_python;
  o.pypto.runner = a.pypto_runner;
  if (!a.reference.empty() || calibrate) {
    auto t = timing_options(a, calibrate);
    if (!t) {
      std::cerr << "temper: " << t.error().message << "\n";
      return kExitUsage;
    }
    o.timing = *t;
  }

  auto report = judge::run_judge(o, util::default_process_runner());
  if (!report) {
    std::cerr << "temper: error: " << report.error().message << "\n";
    return kExitUsage;
  }
  judge::print_table(*report, std::cout, ::isatty(1) != 0);
  if (!a.json.empty()) {
    auto written = util::write_file_atomic(a.json, judge::report_to_json(*report).dump(2) + "\n");
    if (!written) {
      std::cerr << "temper: error: " << written.error().message << "\n";
      return kExitUsage;
    }
    std::cout << "report: " << a.json << "\n";
  }
  return report->all_passed() ? kExitOk : kExitFailed;
}

} // namespace

void register_judge_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<JudgeArgs>();
  CLI::App* cmd = app.add_subcommand("judge", "Judge a candidate kernel: correctness on every selected case");
  cmd->add_option("task", args->task, "Task directory (proto.yaml, cases, temper.yaml)")->required();
  cmd->add_option("candidate", args->candidate, "Candidate kernel source (C++ implementing include/temper/kernel.h)")->required();
  cmd->add_option("--cases", args->cases, "Cases to judge, e.g. 1,5,12 or 1-4 (default: all)");
  cmd->add_option("--json", args->json, "Write the JSON report to this file");
  cmd->add_option("--compiler", args->compiler, "C++ compiler for the candidate (g++ or clang++)")->capture_default_str();
  cmd->add_option("--flags", args->flags, "Optimization flags for the candidate (default: \"-O3 -march=native\")");
  cmd->add_option("--seed", args->seed, "Job seed (default: this machine's secret seed, so goldens are reused)");
  cmd->add_flag("--fresh-seed", args->fresh_seed, "Draw a new random job seed (fresh inputs, no golden reuse)");
  cmd->add_option("--jobs,-j", args->jobs, "Parallel compiles, goldens and cases (default: one per core)");
  cmd->add_option("--timeout", args->timeout_s, "Per-call time limit in seconds")->capture_default_str();
  cmd->add_option("--trials", args->trials, "Correctness trials per case (at least 3; default from temper.yaml)");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress lines on stderr");
  cmd->add_option("--backend", args->backend, "cpu (C++ kernels) or pypto (PyPTO Python files, docs/pypto.md)")
      ->check(CLI::IsMember({"cpu", "pypto"}))
      ->capture_default_str();
  cmd->add_option("--pypto-mode", args->pypto.mode, "pypto: sim (cost model; no outputs, so UNCHECKED), npu, or plain")
      ->check(CLI::IsMember({"sim", "npu", "plain"}))
      ->capture_default_str();
  cmd->add_option("--pypto-python", args->pypto_python, "pypto: the Python with pypto installed (default $TEMPER_PYPTO_PYTHON or python3)");
  cmd->add_option("--pypto-runner", args->pypto_runner, "pypto: the runner script (default: runners/pypto/temper_pypto_runner.py)");
  cmd->add_option("--pypto-entry", args->pypto.entry, "pypto: the host wrapper to call (default: the operator's schema name)");
  add_timing_options(cmd, *args);
  cmd->callback([args, cmd, &action] { action = [args, cmd] { return run(*args, *cmd, false); }; });

  auto cal = std::make_shared<JudgeArgs>();
  CLI::App* c = app.add_subcommand("calibrate", "Measure the A/A timing noise of a reference per case and store it for later judgements here");
  c->add_option("task", cal->task, "Task directory")->required();
  c->add_option("--reference", cal->reference, "Reference kernel source")->required();
  c->add_option("--cases", cal->cases, "Cases to calibrate (default: all)");
  c->add_option("--json", cal->json, "Write the JSON report to this file");
  c->add_option("--compiler", cal->compiler, "C++ compiler")->capture_default_str();
  c->add_option("--flags", cal->flags, "Optimization flags");
  c->add_flag("--quiet,-q", cal->quiet, "No progress lines on stderr");
  add_timing_options(c, *cal);
  c->callback([cal, c, &action] {
    action = [cal, c] {
      cal->candidate = cal->reference;
      return run(*cal, *c, true);
    };
  });
}

} // namespace temper::cli
