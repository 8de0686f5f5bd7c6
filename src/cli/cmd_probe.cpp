// `temper probe TASK CANDIDATE --case N --grid NAME=v1,v2 ...`: builds every combination of the
// candidate's knob macros, checks each on one case and times the correct ones against the
// reference, then prints them ranked.
#include "cli/commands.h"
#include "cli/timing_flags.h"
#include "judge/probe.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <unistd.h>

namespace temper::cli {

namespace {

struct ProbeArgs : TimingArgs {
  std::string task;
  std::string candidate;
  int64_t case_id = 0;
  std::vector<std::string> grid;
  std::string json;
  std::string compiler = "g++";
  std::string flags;
  uint64_t seed = 0;
  bool fresh_seed = false;
  bool no_race = false;
  int variants_per_job = judge::ProbeOptions{}.variants_per_job;
  int jobs = 0;
  double timeout_s = 60;
  int trials = 3;
  bool quiet = false;
  std::string kb; // knowledge base for the roofline bound; empty: kb::default_kb_roots()
  std::string backend = "cpu";
  std::string cuda_arch;
};

int usage_error(const std::string& message) {
  std::cerr << "temper: error: " << message << "\n";
  return kExitUsage;
}

int run(const ProbeArgs& a, const CLI::App& cmd) {
  judge::ProbeOptions o;
  o.task_dir = a.task;
  o.candidate = a.candidate;
  o.case_id = a.case_id;
  for (const auto& text : a.grid) {
    auto axis = judge::parse_knob_axis(text);
    if (!axis) return usage_error(axis.error().message);
    o.grid.push_back(std::move(*axis));
  }
  // Checked before anything is built, so a grid mistake costs nothing.
  if (auto grid = judge::expand_grid(o.grid); !grid) return usage_error(grid.error().message);
  if (a.trials < 3) return usage_error(fmt::format("--trials must be at least 3, not {}", a.trials));
  o.compiler.program = a.compiler;
  if (!a.flags.empty()) o.compiler.flags = split_flags(a.flags);
  o.backend = a.backend;
  o.cuda_arch = a.cuda_arch;
  if (a.backend == "cuda") {
    cuda_compiler_defaults(cmd, !a.flags.empty(), o.compiler);
  } else if (!a.cuda_arch.empty()) {
    return usage_error("--cuda-arch applies to --backend cuda");
  }
  if (const CLI::Option* seed = cmd.get_option_no_throw("--seed"); seed && seed->count() > 0) o.seed = a.seed;
  o.fresh_seed = a.fresh_seed;
  o.race = !a.no_race;
  o.variants_per_job = a.variants_per_job;
  o.jobs = a.jobs;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  o.trials = a.trials;
  auto threads = threads_flag(a.threads);
  if (!threads) return usage_error(threads.error().message);
  o.threads = *threads;
  o.progress = !a.quiet;
  o.temper_version = TEMPER_VERSION;
  // The tier stays "gate" here so timing_options does not clamp --cap: the probe's cap is its
  // own flag (default 3 s), and run_probe runs one measurement job per variant whatever the tier.
  auto t = timing_options(a, false);
  if (!t) return usage_error(t.error().message);
  o.timing = *t;
  // Each timed variant's fraction of the roofline, where this machine has certified peaks (of
  // its CPU: none for CUDA kernels).
  if (a.backend == "cpu")
    if (auto roof = task_roofline(a.task, a.kb.empty() ? std::vector<std::filesystem::path>{} : std::vector<std::filesystem::path>{a.kb}, o.threads)) o.timing.roofline = *roof;

  auto report = judge::run_probe(o, util::default_process_runner());
  if (!report) return usage_error(report.error().message);
  judge::print_probe_table(*report, std::cout, ::isatty(1) != 0);
  if (!a.json.empty()) {
    auto written = util::write_file_atomic(a.json, judge::probe_report_to_json(*report).dump(2) + "\n");
    if (!written) return usage_error(written.error().message);
    std::cout << "report: " << a.json << "\n";
  }
  return report->timed_count() > 0 ? kExitOk : kExitFailed;
}

} // namespace

void register_probe_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ProbeArgs>();
  args->cap_s = 3; // a probe is a quick look; a gate is the judgement
  CLI::App* cmd = app.add_subcommand("probe", "Rank the variants of a kernel's knob macros on one case: build, check, time against the reference");
  cmd->add_option("task", args->task, "Task directory (proto.yaml, cases, temper.yaml)")->required();
  cmd->add_option("candidate", args->candidate, "Candidate kernel source that reads its knobs as macros (#ifndef TILE ...)")->required();
  cmd->add_option("--case", args->case_id, "The case to probe on")->required();
  cmd->add_option("--grid", args->grid, "Knob values, NAME=v1,v2,... (repeat for more knobs; every combination is built, at most 256)")
      ->required()
      ->allow_extra_args(false); // one NAME=values per --grid, so positionals after it stay positionals
  cmd->add_option("--json", args->json, "Write the JSON report to this file");
  cmd->add_option("--kb", args->kb, "Knowledge base whose certified peaks bound the case (default: the repository's hw_kb/ and $TEMPER_HOME/hw_kb)");
  cmd->add_option("--compiler", args->compiler, "C++ compiler for the candidate (g++ or clang++)")->capture_default_str();
  cmd->add_option("--flags", args->flags, "Optimization flags for every variant and the reference (default: \"-O3 -march=native\")");
  cmd->add_option("--seed", args->seed, "Job seed (default: this machine's secret seed, so goldens are reused)");
  cmd->add_flag("--fresh-seed", args->fresh_seed, "Draw a new random job seed (fresh inputs, no golden reuse)");
  cmd->add_option("--jobs,-j", args->jobs, "Parallel compiles and checks (default: one per core)")->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", args->timeout_s, "Per-call time limit in seconds")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--trials", args->trials, "Correctness trials per variant (at least 3)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--no-race", args->no_race,
               "Time every variant in full and check its timed outputs (default: a variant clearly behind the best checked one "
               "stops early, unchecked)");
  cmd->add_option("--variants-per-job", args->variants_per_job,
                  "Variants timed together in one job against one run of the reference (fewer where memory is short; 1: a job "
                  "per variant)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", args->quiet, "No progress lines on stderr");
  cmd->add_option("--backend", args->backend, "Where kernels run: cpu (C++ kernels) or cuda (.cu kernels built with nvcc, docs/cuda.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--cuda-arch", args->cuda_arch, "cuda: target architecture, e.g. sm_90 (default: the GPU's, else sm_90)");
  cmd->add_option("--reference", args->reference, "Reference kernel source (default: the task's reference for the backend)")
      ->group("Timing against a reference");
  add_timing_options(cmd, *args, TimingFlagSet::SingleJob);
  cmd->callback([args, cmd, &action] { action = [args, cmd] { return run(*args, *cmd); }; });
}

} // namespace temper::cli
