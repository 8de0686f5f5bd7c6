#include "cli/commands.h"
#include "cli/profile_flags.h"
#include "judge/profile/metrics_table.h"
#include "judge/profile/profile_job.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <sstream>

namespace temper::cli {

namespace {

struct ProfileCmdArgs : ProfileArgs {
  std::string task;
  std::string candidate;
  int64_t case_id = 0;
  std::string reference;
  std::string json;
  std::string compiler = "g++";
  std::string flags;
  uint64_t seed = 0;
  double timeout_s = 60;
  bool quiet = false;
};

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

int run(const ProfileCmdArgs& a, const CLI::App& cmd) {
  auto parsed = parse_profile_args(a);
  if (!parsed) {
    std::cerr << "temper: " << parsed.error().message << "\n";
    return kExitUsage;
  }
  judge::profile::ProfileJobOptions o;
  o.task_dir = a.task;
  o.candidate = a.candidate;
  o.case_id = a.case_id;
  o.compiler.program = a.compiler;
  if (!a.flags.empty()) o.compiler.flags = split_words(a.flags);
  o.reference = a.reference;
  o.cachegrind = parsed->cachegrind;
  o.calls = a.calls;
  o.expectations = parsed->expectations;
  if (!parsed->baseline.empty()) {
    auto it = parsed->baseline.find(a.case_id);
    if (it == parsed->baseline.end()) {
      std::cerr << "temper: --baseline-report " << a.baseline_report << " has no metrics for case " << a.case_id << "\n";
      return kExitUsage;
    }
    o.baseline = it->second;
    o.baseline_label = "baseline report " + a.baseline_report;
  }
  if (const CLI::Option* seed = cmd.get_option_no_throw("--seed"); seed && seed->count() > 0) o.seed = a.seed;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  o.progress = !a.quiet;
  o.temper_version = TEMPER_VERSION;

  auto report = judge::profile::run_profile_job(o, util::default_process_runner());
  if (!report) {
    std::cerr << "temper: error: " << report.error().message << "\n";
    return kExitUsage;
  }
  if (!report->ran) {
    std::cout << fmt::format("case {}: {}: {}\n", report->case_id, report->status, report->message);
  } else {
    const auto& p = report->profile;
    std::string label = p.baseline_source == "reference" ? "reference" : "baseline";
    std::cout << fmt::format("case {}: {}\n\n", report->case_id, a.candidate);
    judge::profile::print_metrics(p.candidate, p.baseline ? &*p.baseline : nullptr, label, std::cout);
    judge::profile::print_expectations(p, report->case_id, std::cout);
  }
  if (!a.json.empty()) {
    auto written = util::write_file_atomic(a.json, report->to_json().dump(2) + "\n");
    if (!written) {
      std::cerr << "temper: error: " << written.error().message << "\n";
      return kExitUsage;
    }
    std::cout << "report: " << a.json << "\n";
  }
  return report->ran && report->all_expectations_passed() ? kExitOk : kExitFailed;
}

} // namespace

void register_profile_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ProfileCmdArgs>();
  CLI::App* cmd = app.add_subcommand("profile", "Profile a candidate on one case: metrics beside the reference's, mechanism expectations");
  cmd->add_option("task", args->task, "Task directory")->required();
  cmd->add_option("candidate", args->candidate, "Candidate kernel source")->required();
  cmd->add_option("--case", args->case_id, "The case to profile")->required();
  cmd->add_option("--reference", args->reference, "Reference to compare with: a kernel source or a built artifact (default: none)");
  cmd->add_option("--json", args->json, "Write the JSON report to this file");
  cmd->add_option("--compiler", args->compiler, "C++ compiler (g++ or clang++)")->capture_default_str();
  cmd->add_option("--flags", args->flags, "Optimization flags (default: \"-O3 -march=native\")");
  cmd->add_option("--seed", args->seed, "Job seed (default: this machine's secret seed)");
  cmd->add_option("--timeout", args->timeout_s, "Per-call time limit in seconds")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", args->quiet, "No progress lines on stderr");
  add_profile_options(cmd, *args);
  cmd->callback([args, cmd, &action] { action = [args, cmd] { return run(*args, *cmd); }; });
}

} // namespace temper::cli
