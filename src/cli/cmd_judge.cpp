#include "cli/case_list.h"
#include "cli/commands.h"
#include "cli/profile_flags.h"
#include "cli/timing_flags.h"
#include "core/task_loader.h"
#include "kb/store.h"
#include "judge/judge.h"
#include "judge/report.h"
#include "judge/seal.h"
#include "kb/target.h"
#include "report/render.h"
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
struct JudgeArgs : TimingArgs, ProfileArgs {
  std::string task;
  std::string candidate;
  std::string cases;
  std::string json;
  std::string html;
  std::string compiler = "g++";
  std::string flags;
  uint64_t seed = 0;
  bool fresh_seed = false;
  int jobs = 0;
  double timeout_s = 60;
  int trials = 0;
  bool quiet = false;
  std::string store;
  std::string profile_cases; // --profile
  std::string kb; // knowledge base for roofline bounds; default kb::default_kb_roots()
  std::string backend = "cpu";
  std::string cuda_arch;
  judge::PyptoOptions pypto;
  std::string pypto_python;
  std::string pypto_runner;
};

// --backend, --cuda-arch and the --pypto-* options, for judge and calibrate.
void add_backend_options(CLI::App* cmd, JudgeArgs& a) {
  cmd->add_option("--backend", a.backend,
                  "Where kernels run: cpu (C++ kernels, kernel.h), cuda (.cu kernels, cuda_kernel.h, built with nvcc) "
                  "or pypto (PyPTO Python files, docs/pypto.md)")
      ->check(CLI::IsMember({"cpu", "cuda", "pypto"}))
      ->capture_default_str();
  cmd->add_option("--cuda-arch", a.cuda_arch, "cuda: target architecture, e.g. sm_90 (default: the GPU's, else sm_90)");
  cmd->add_option("--pypto-mode", a.pypto.mode, "pypto: sim (cost model; no outputs, so UNCHECKED), npu, or plain")
      ->check(CLI::IsMember({"sim", "npu", "plain"}))
      ->capture_default_str();
  cmd->add_option("--pypto-python", a.pypto_python, "pypto: the Python with pypto installed (default $TEMPER_PYPTO_PYTHON or python3)");
  cmd->add_option("--pypto-runner", a.pypto_runner, "pypto: the runner script (default: runners/pypto/temper_pypto_runner.py)");
  cmd->add_option("--pypto-entry", a.pypto.entry, "pypto: the host wrapper to call (default: the operator's schema name)");
  cmd->add_option("--pypto-time", a.pypto.time,
                  "pypto: what a sample's kernel time is: device (the NPU profiler's kernel_details.csv) or host (wall clock "
                  "around the synchronized call); default device in npu mode, host in plain mode; sim mode is simulated")
      ->check(CLI::IsMember({"device", "host"}));
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
  o.backend = a.backend;
  o.cuda_arch = a.cuda_arch;
  if (a.backend == "cuda") cuda_compiler_defaults(cmd, !a.flags.empty(), o.compiler);
  if (const CLI::Option* seed = cmd.get_option_no_throw("--seed"); seed && seed->count() > 0) o.seed = a.seed;
  o.fresh_seed = a.fresh_seed;
  o.jobs = a.jobs;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  if (a.trials > 0) o.trials = a.trials;
  auto threads = threads_flag(a.threads);
  if (!threads) {
    std::cerr << "temper: " << threads.error().message << "\n";
    return kExitUsage;
  }
  o.threads = *threads;
  if (!a.torch_threads.empty() && a.reference != "torch") {
    std::cerr << "temper: --torch-threads applies to --reference torch\n";
    return kExitUsage;
  }
  if (!a.also_torch.empty() && a.reference.empty()) {
    std::cerr << "temper: --also-torch times PyTorch beside a reference: add --reference\n";
    return kExitUsage;
  }
  o.progress = !a.quiet;
  o.temper_version = TEMPER_VERSION;
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
    // A path that exists stays a source; "torch" is the task's PyTorch function; anything else
    // names a sealed reference.
    std::error_code ec;
    if (a.reference == "torch" && !std::filesystem::exists(a.reference, ec)) {
      o.timing->torch_reference = true;
      o.timing->reference.clear();
    } else if (!a.reference.empty() && !std::filesystem::exists(a.reference, ec)) {
      auto sealed = judge::find_sealed(a.store.empty() ? judge::default_store() : std::filesystem::path(a.store), a.reference);
      if (!sealed) {
        std::cerr << "temper: --reference " << a.reference << " is neither a file nor a sealed reference: " << sealed.error().message
                  << "\n";
        return kExitUsage;
      }
      // The candidate is built as the reference was, unless the flags say otherwise (then the
      // judge refuses to compare, naming the difference).
      if (a.flags.empty()) o.compiler.flags = sealed->flags;
      if (const CLI::Option* c = cmd.get_option_no_throw("--compiler"); !c || c->count() == 0) o.compiler.program = sealed->compiler;
      o.timing->sealed = *sealed;
      if (calibrate) o.sealed_candidate = *sealed;
    }
    // Certified peaks of this target give cases without an explicit hardware bound one from the
    // task's cost model (CANN-Bench score, fraction of roofline). The knowledge base's current
    // target is this host, which pypto's kernels (NPU or its cost model) do not run on.
    if (a.backend != "pypto") {
      if (auto roof = task_roofline(a.task, a.kb.empty() ? std::vector<std::filesystem::path>{} : std::vector<std::filesystem::path>{a.kb}, o.threads)) o.timing->roofline = *roof;
    }
  }

  if (a.profile_cases.empty() && a.expect.empty() && (!a.with.empty() || !a.baseline_report.empty())) {
    std::cerr << "temper: --with and --baseline-report apply to profiled cases: add --profile CASES or --expect\n";
    return kExitUsage;
  }
  if (!a.profile_cases.empty() || !a.expect.empty()) {
    auto p = parse_profile_args(a);
    auto ids = a.profile_cases.empty() ? Expected<std::vector<int64_t>>{} : parse_case_list(a.profile_cases);
    if (!p || !ids) {
      std::cerr << "temper: " << (!p ? p.error().message : "--profile: " + ids.error().message) << "\n";
      return kExitUsage;
    }
    judge::profile::ProfilePhaseOptions po;
    po.case_ids = *ids;
    po.cachegrind = p->cachegrind;
    po.calls = a.calls;
    po.expectations = p->expectations;
    po.baseline = p->baseline;
    if (!a.baseline_report.empty()) po.baseline_source = "baseline report " + a.baseline_report;
    o.profile = po;
  }

  auto report = judge::run_judge(o, util::default_process_runner());
  if (!report) {
    std::cerr << "temper: error: " << report.error().message << "\n";
    return kExitUsage;
  }
  judge::print_table(*report, std::cout, ::isatty(1) != 0);
  // The PyTorch arms timed beside the reference (--also-torch): a table each, or why not.
  for (const auto& also : report->also) {
    const std::string at = also.torch_threads == 0 ? "its default threads" : fmt::format("{} thread{}", also.torch_threads, also.torch_threads == 1 ? "" : "s");
    if (!also.report) {
      std::cout << "\nagainst PyTorch at " << at << ": not timed: " << also.error << "\n";
      continue;
    }
    std::cout << "\nagainst PyTorch at " << at << " (the same judgement):\n";
    judge::print_table(*also.report, std::cout, ::isatty(1) != 0);
  }
  nlohmann::json doc = judge::report_to_json(*report);
  // The knowledge base's name for this machine, for readers of the report (the judge below
  // the kb layer does not know it).
  if (a.backend != "pypto") doc["context"]["target_class"] = kb::current_target().target_class();
  if (!a.json.empty()) {
    auto written = util::write_file_atomic(a.json, doc.dump(2) + "\n");
    if (!written) {
      std::cerr << "temper: error: " << written.error().message << "\n";
      return kExitUsage;
    }
    std::cout << "report: " << a.json << "\n";
  }
  if (!a.html.empty()) {
    auto page = report::render_judge_report(doc);
    Status written = page ? util::write_file_atomic(a.html, *page) : Status(tl::unexpected(page.error()));
    if (!written) {
      std::cerr << "temper: error: --html: " << written.error().message << "\n";
      return kExitUsage;
    }
    std::cout << "HTML report: " << a.html << "\n";
  }
  // An expectation that failed or could not be verified is something that did not pass.
  bool expectations_met = true;
  for (const auto& c : report->cases) {
    if (c.profile)
      for (const auto& e : c.profile->expectations) expectations_met = expectations_met && e.passed();
  }
  return report->all_passed() && expectations_met ? kExitOk : kExitFailed;
}

} // namespace

void register_judge_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<JudgeArgs>();
  CLI::App* cmd = app.add_subcommand("judge", "Judge a candidate kernel: correctness on every selected case");
  cmd->add_option("task", args->task, "Task directory (proto.yaml, cases, temper.yaml)")->required();
  cmd->add_option("candidate", args->candidate, "Candidate kernel source (C++ implementing include/temper/kernel.h)")->required();
  cmd->add_option("--cases", args->cases, "Cases to judge, e.g. 1,5,12 or 1-4 (default: all)");
  cmd->add_option("--json", args->json, "Write the JSON report to this file");
  cmd->add_option("--html", args->html, "Write a self-contained HTML report (charts, tables, context) to this file");
  cmd->add_option("--compiler", args->compiler, "C++ compiler for the candidate (g++ or clang++)")->capture_default_str();
  cmd->add_option("--flags", args->flags, "Optimization flags for the candidate (default: \"-O3 -march=native\")");
  cmd->add_option("--seed", args->seed, "Job seed (default: this machine's secret seed, so goldens are reused)");
  cmd->add_flag("--fresh-seed", args->fresh_seed, "Draw a new random job seed (fresh inputs, no golden reuse)");
  cmd->add_option("--jobs,-j", args->jobs, "Parallel compiles, goldens and cases (default: one per core)")->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", args->timeout_s, "Per-call time limit in seconds")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--trials", args->trials, "Correctness trials per case (at least 3; default from temper.yaml)")->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", args->quiet, "No progress lines on stderr");
  add_backend_options(cmd, *args);
  add_timing_options(cmd, *args);
  cmd->add_option("--store", args->store, "Store of sealed references, for --reference NAME (default: $TEMPER_HOME/refs)")
      ->group("Timing against a reference");
  cmd->add_option("--profile", args->profile_cases, "Profile these judged cases (e.g. 1,5) and add a metrics block per case to the report");
  add_profile_options(cmd, *args);
  cmd->add_option("--kb", args->kb, "Knowledge base whose certified peaks bound each case (default: the repository's hw_kb/ and $TEMPER_HOME/hw_kb)")
      ->group("Timing against a reference");
  cmd->callback([args, cmd, &action] { action = [args, cmd] { return run(*args, *cmd, false); }; });

  auto cal = std::make_shared<JudgeArgs>();
  CLI::App* c = app.add_subcommand("calibrate", "Measure the A/A timing noise of a reference per case and store it for later judgements here");
  c->add_option("task", cal->task, "Task directory")->required();
  c->add_option("--reference", cal->reference, "Reference kernel source, or a sealed reference's name")->required();
  c->add_option("--cases", cal->cases, "Cases to calibrate (default: all)");
  c->add_option("--json", cal->json, "Write the JSON report to this file");
  c->add_option("--compiler", cal->compiler, "C++ compiler")->capture_default_str();
  c->add_option("--flags", cal->flags, "Optimization flags");
  c->add_flag("--quiet,-q", cal->quiet, "No progress lines on stderr");
  add_backend_options(c, *cal);
  add_timing_options(c, *cal);
  c->add_option("--store", cal->store, "Store of sealed references, for --reference NAME (default: $TEMPER_HOME/refs)");
  c->callback([cal, c, &action] {
    action = [cal, c] {
      cal->candidate = cal->reference;
      return run(*cal, *c, true);
    };
  });
}

} // namespace temper::cli
