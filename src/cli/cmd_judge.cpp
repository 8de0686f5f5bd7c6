#include "cli/case_list.h"
#include "cli/commands.h"
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

struct JudgeArgs {
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
  // Timing.
  std::string reference;
  std::string reference_flags;
  std::string tier = "gate";
  int measure_jobs = 3;
  int confirm_jobs = 3;
  double cap_s = 15;
  double target_pct = 0.5;
  int min_samples = 10;
  double min_time_s = 0.5;
  double warmup_s = 0.025;
  std::string cache_mode = "cold";
  double flush_mb = 0;
  std::string cpus;
  double noise_floor_pct = 1.0;
  bool no_calibration = false;
};

std::vector<std::string> split_flags(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

Expected<std::vector<int>> parse_cpus(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) return out;
  auto ids = parse_case_list(text); // same syntax: 0,1 or 0-3
  if (!ids) return fail("--cpus '{}': use a list such as 0,1 or 0-3", text);
  for (auto v : *ids) out.push_back(static_cast<int>(v));
  return out;
}

// Timing options from the flags; an error names the flag to fix.
Expected<judge::TimingOptions> timing_options(const JudgeArgs& a, bool calibrate) {
  judge::TimingOptions t;
  t.reference = a.reference;
  t.reference_flags = split_flags(a.reference_flags);
  if (a.tier != "probe" && a.tier != "gate") return fail("--tier must be probe or gate, not '{}'", a.tier);
  t.tier = a.tier;
  t.measure_jobs = a.measure_jobs;
  t.confirm_jobs = a.confirm_jobs;
  t.calibrate = calibrate;
  t.use_calibration = !a.no_calibration;
  t.noise_floor = a.noise_floor_pct / 100.0;
  auto& p = t.protocol;
  if (a.cache_mode != "cold" && a.cache_mode != "warm") return fail("--cache must be cold or warm, not '{}'", a.cache_mode);
  p.cache_mode = a.cache_mode;
  p.flush_bytes = static_cast<size_t>(a.flush_mb * 1024 * 1024);
  TEMPER_TRY_ASSIGN(p.cpus, parse_cpus(a.cpus));
  p.rule.cap_s = a.tier == "probe" ? std::min(a.cap_s, 3.0) : a.cap_s;
  p.rule.target_half_width = std::log1p(a.target_pct / 100.0);
  p.rule.min_samples = a.min_samples;
  p.rule.min_time_s = a.min_time_s;
  p.rule.warmup_s = a.warmup_s;
  TEMPER_TRY(judge::validate_stop_rule(p.rule));
  if (t.measure_jobs < 1 || t.confirm_jobs < 0) return fail("--measure-jobs must be at least 1 and --confirm-jobs at least 0");
  return t;
}


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
  if (cmd.count("--seed")) o.seed = a.seed;
  o.fresh_seed = a.fresh_seed;
  o.jobs = a.jobs;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  if (a.trials > 0) o.trials = a.trials;
  o.progress = !a.quiet;
  o.temper_version = TEMPER_VERSION;
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

void add_timing_options(CLI::App* cmd, JudgeArgs& a) {
  const char* group = "Timing against a reference";
  if (!cmd->get_option_no_throw("--reference")) {
    cmd->add_option("--reference", a.reference, "Reference kernel source: also time the candidate against it")->group(group);
  }
  cmd->add_option("--reference-flags", a.reference_flags, "Optimization flags for the reference (must equal the candidate's)")->group(group);
  cmd->add_option("--tier", a.tier, "probe (first case, short cap) or gate (every case, measurement + confirmation jobs)")->capture_default_str()->group(group);
  cmd->add_option("--measure-jobs", a.measure_jobs, "Gate: independent measurement jobs")->capture_default_str()->group(group);
  cmd->add_option("--confirm-jobs", a.confirm_jobs, "Gate: confirmation jobs (fresh processes, new seeds, reversed order)")->capture_default_str()->group(group);
  cmd->add_option("--cap", a.cap_s, "Seconds of measurement per arm per case per job")->capture_default_str()->group(group);
  cmd->add_option("--target", a.target_pct, "Stop when the 95% interval is within +-this percent")->capture_default_str()->group(group);
  cmd->add_option("--min-samples", a.min_samples, "Samples per arm before stopping")->capture_default_str()->group(group);
  cmd->add_option("--min-time", a.min_time_s, "Kernel seconds accumulated before stopping")->capture_default_str()->group(group);
  cmd->add_option("--warmup", a.warmup_s, "Warm-up seconds per arm")->capture_default_str()->group(group);
  cmd->add_option("--cache", a.cache_mode, "cold (flush before every sample) or warm")->capture_default_str()->group(group);
  cmd->add_option("--flush-mb", a.flush_mb, "Cold-cache buffer in MiB (default: 2x the last-level cache)")->group(group);
  cmd->add_option("--cpus", a.cpus, "CPU set for both arms, e.g. 0 or 0-1 (default: all)")->group(group);
  cmd->add_option("--noise-floor", a.noise_floor_pct, "Smallest difference in percent a verdict may call real")->capture_default_str()->group(group);
  cmd->add_flag("--no-calibration", a.no_calibration, "Ignore a stored A/A calibration")->group(group);
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
