// `temper target` and `temper kb list|show|propose|certify|export`: the hardware knowledge base.
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/timing_flags.h"
#include "judge/common.h"
#include "kb/bootstrap.h"
#include "kb/certify.h"
#include "kb/judge_runner.h"
#include "kb/store.h"
#include "util/fs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <iostream>
#include <memory>

namespace temper::cli {

namespace {

namespace fs = std::filesystem;

struct KbArgs {
  std::string kb;
  bool json = false;
  std::string target;
  std::vector<std::string> statuses;
  std::string id;
  std::string dir;
  bool all = false;
  bool dry_run = false;
  bool quiet = false;
  std::string reports;
  std::string output;
  // bootstrap
  std::string from;
  std::string into;
  double cap_s = 0.5;
  double certify_cap_s = 0; // certify --cap; 0: the entry's own
  bool plan_only = false;
  bool propose_only = false;
  // certify and bootstrap on a cluster node (docs/scale-out.md)
  std::string executor = "local";
  std::string partition, account, constraint;
  std::string result; // what a node writes when the command ends (--result)
  std::string backend = "cpu"; // certify: cuda certifies the GPU's entries (kb/gpu_target.h)
};

// Where `propose` files an entry: the named knowledge base, else the default one.
fs::path root_of(const KbArgs& a) { return a.kb.empty() ? kb::default_kb_root() : fs::path(a.kb); }

// What the other commands read: the named knowledge base alone, else the default one with the
// user's layered over it.
std::vector<fs::path> roots_of(const KbArgs& a) { return a.kb.empty() ? kb::default_kb_roots() : std::vector<fs::path>{a.kb}; }

int error(const std::string& message) {
  std::cerr << "temper: error: " << message << "\n";
  return kExitUsage;
}

// Entries that did not load are reported, never skipped silently.
bool print_problems(const kb::KnowledgeBase& base) {
  for (const auto& p : base.problems) std::cerr << p.to_string() << "\n";
  return !base.problems.empty();
}

int run_target(const KbArgs& a) {
  const kb::TargetFingerprint& t = kb::current_target();
  if (a.json) {
    std::cout << t.to_json().dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("target class  {}\nfingerprint   {}\ncpu           {} ({}, family {} model {} stepping {})\n", t.target_class(), t.id(),
                           t.cpu_model, t.cpu_vendor, t.family, t.model, t.stepping);
  std::cout << fmt::format("caches        L1d {} KiB, L2 {} KiB, LLC {} KiB\ncores         {}\nmemory        {} GiB\ncompiler      {}\n",
                           t.l1d_bytes >> 10, t.l2_bytes >> 10, t.llc_bytes >> 10, t.cores, t.memory_gib, t.compiler);
  std::cout << fmt::format("flags         {}\n", fmt::join(t.flags, " "));
  // The GPU, where there is one: the class its entries are certified for (kb certify --backend cuda).
  if (auto gpu = cuda_kb_target()) std::cout << fmt::format("gpu class     {} (fingerprint {}: {})\n", gpu->target_class(), gpu->id(), gpu->device);
  else std::cout << fmt::format("gpu           none ({})\n", gpu.error().message);
  return kExitOk;
}

int run_list(const KbArgs& a) {
  kb::KnowledgeBase base = kb::load_kb(roots_of(a));
  const std::string here = kb::current_target().id();
  for (const auto& s : a.statuses) {
    if (!kb::parse_status(s)) return error(fmt::format("--status '{}' is not one of proposed, certified, refuted, stale", s));
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : base.entries) {
    if (!a.target.empty() && e.target != a.target) continue;
    const std::string status(kb::status_name(e.effective_status(here)));
    if (!a.statuses.empty() && std::find(a.statuses.begin(), a.statuses.end(), status) == a.statuses.end()) continue;
    if (a.json) {
      rows.push_back(e.to_json(here));
      continue;
    }
    std::cout << fmt::format("{:<24} {:<28} {:<9} {:<8} {}\n", e.target, e.id, status, kb::probe_kind_name(e.probe.kind), e.title);
  }
  if (a.json) std::cout << nlohmann::json{{"schema_version", 1}, {"kind", "temper.kb.list"}, {"root", base.root.string()}, {"entries", rows}}.dump(2) << "\n";
  return print_problems(base) ? kExitFailed : kExitOk;
}

int run_show(const KbArgs& a) {
  kb::KnowledgeBase base = kb::load_kb(roots_of(a));
  const kb::Entry* e = base.find(a.id);
  if (!e) {
    print_problems(base);
    return error(fmt::format("no entry '{}' in {}", a.id, base.root.string()));
  }
  const std::string here = kb::current_target().id();
  if (a.json) {
    std::cout << e->to_json(here).dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{} — {}\n  target     {}\n  status     {}{}\n  claim      {}\n  mechanism  {}\n  usage      {}\n", e->id, e->title,
                           e->target, kb::status_name(e->effective_status(here)),
                           e->effective_status(here) == kb::EntryStatus::Stale ? " (decided on another fingerprint; certify again here)" : "",
                           e->claim, e->mechanism, e->usage);
  std::cout << fmt::format("  probe      {} ({}), task {}, case {}\n", kb::probe_kind_name(e->probe.kind),
                           e->probe.kind == kb::ProbeKind::Paired     ? fmt::format("b over a, speedup in {}", e->probe.expect.to_string())
                           : e->probe.kind == kb::ProbeKind::Measure ? fmt::format("{} in {} {}", e->probe.figure.name, e->probe.accept.to_string(), e->probe.figure.unit)
                                                                      : fmt::format("{} in {}, {} profiled calls per job", e->probe.metric.name, e->probe.metric.expect.to_string(), e->probe.calls),
                           (e->dir / e->probe.task).string(), e->probe.case_id);
  std::cout << fmt::format("  files      {}\n", e->dir.string());
  for (const auto& ev : e->evidence) {
    std::cout << fmt::format("  evidence   {} {} on {}{}: {}\n", ev.date, ev.outcome, ev.fingerprint, ev.fingerprint == here ? " (here)" : "", ev.reason);
  }
  return kExitOk;
}

int run_propose(const KbArgs& a) {
  auto dest = kb::propose_entry(root_of(a), a.dir);
  if (!dest) return error(dest.error().message);
  std::cout << fmt::format("proposed: {}\n", dest->string());
  return kExitOk;
}

// How certify and bootstrap run probes: progress unless --quiet, reports kept in --reports.
kb::JudgeRunnerOptions runner_options(const KbArgs& a) {
  kb::JudgeRunnerOptions ro;
  ro.progress = !a.quiet;
  ro.temper_version = TEMPER_VERSION;
  if (!a.reports.empty()) {
    ro.reports_dir = a.reports;
    std::error_code ec;
    fs::create_directories(ro.reports_dir, ec);
  }
  ro.backend = a.backend;
  return ro;
}

int run_certify(const KbArgs& a) {
  kb::KnowledgeBase base = kb::load_kb(roots_of(a));
  print_problems(base);
  // The GPU's target for --backend cuda: its class (nvidia-sm90-h200) and its id.
  kb::TargetFingerprint gpu;
  if (a.backend == "cuda") {
    auto t = cuda_kb_target();
    if (!t) return error(fmt::format("--backend cuda: {}", t.error().message));
    gpu = *t;
  }
  const kb::TargetFingerprint& here = a.backend == "cuda" ? gpu : kb::current_target();
  std::vector<kb::Entry*> todo;
  if (a.all) {
    for (auto& e : base.entries) {
      if (e.target == here.target_class()) todo.push_back(&e);
    }
    if (todo.empty()) return error(fmt::format("no entries for this target ({}) in {}", here.target_class(), base.root.string()));
  } else {
    kb::Entry* e = base.find(a.id);
    if (!e) return error(fmt::format("no entry '{}' in {}", a.id, base.root.string()));
    todo.push_back(e);
  }
  kb::JudgeProbeRunner runner(runner_options(a), util::default_process_runner());
  int certified = 0, refuted = 0, ambiguous = 0, failed = 0;
  for (kb::Entry* e : todo) {
    if (a.certify_cap_s > 0) e->probe.cap_s = a.certify_cap_s; // for this run only: entry.yaml keeps its own
    std::cerr << fmt::format("certifying {} ...\n", e->id);
    auto r = kb::certify(*e, runner, here, !a.dry_run);
    if (!r) {
      ++failed;
      std::cout << fmt::format("{:<28} error      {}\n", e->id, r.error().message);
      continue;
    }
    const std::string& outcome = r->decision.outcome;
    certified += outcome == "certified";
    refuted += outcome == "refuted";
    ambiguous += outcome == "ambiguous";
    std::cout << fmt::format("{:<28} {:<10} {}\n", e->id, outcome == "ambiguous" ? "proposed" : outcome, r->decision.reason);
  }
  std::cout << fmt::format("{} certified, {} refuted, {} left proposed (ambiguous), {} could not run{}\n", certified, refuted, ambiguous, failed,
                           a.dry_run ? " (dry run: nothing written)" : "");
  return failed ? kExitFailed : kExitOk;
}

int run_export(const KbArgs& a) {
  kb::KnowledgeBase base = kb::load_kb(roots_of(a));
  print_problems(base);
  const std::string target = a.target.empty() ? kb::current_target().target_class() : a.target;
  std::string doc = kb::export_markdown(base, target, kb::current_target());
  if (a.output.empty()) {
    std::cout << doc;
    return kExitOk;
  }
  if (auto w = util::write_file_atomic(a.output, doc); !w) return error(w.error().message);
  std::cout << "written: " << a.output << "\n";
  return kExitOk;
}

std::string roofline_line(const kb::KnowledgeBase& base, const kb::TargetFingerprint& here, int threads) {
  const judge::Roofline r = kb::roofline_from_kb(base, here, threads);
  return fmt::format("{} thread{}: bandwidth {}, flops {}", threads, threads == 1 ? "" : "s",
                     r.bytes_per_s > 0 ? fmt::format("{:.4g} GB/s", r.bytes_per_s / 1e9) : "none",
                     r.flops_per_s > 0 ? fmt::format("{:.4g} GFLOP/s", r.flops_per_s / 1e9) : "none");
}

int run_bootstrap(const KbArgs& a) {
  const auto started = std::chrono::steady_clock::now();
  const kb::TargetFingerprint& here = kb::current_target();
  const fs::path destination = a.into.empty() ? kb::user_kb_root() : fs::path(a.into);
  std::vector<fs::path> roots = roots_of(a);
  if (std::none_of(roots.begin(), roots.end(), [&](const fs::path& r) { return kb::same_root(r, destination); })) roots.push_back(destination);
  kb::KnowledgeBase base = kb::load_kb(roots);
  print_problems(base);
  if (!a.from.empty() && kb::roofline_entries(base, a.from).empty())
    return error(fmt::format("--from {}: no roofline entries for that class in {}", a.from, base.root.string()));

  const kb::BootstrapPlan plan = kb::plan_bootstrap(base, here, destination, a.from);
  std::cout << fmt::format("bootstrap {} (fingerprint {}), into {}\n", plan.target_class, here.id(), destination.string());
  if (plan.items.empty()) {
    std::cout << fmt::format("no class of this architecture ({}) has certified roofline entries to start from: write a measure probe "
                             "(docs/kb.md) and certify it\n",
                             kb::parse_target_class(plan.target_class).arch);
    return kExitFailed;
  }
  if (!plan.source_class.empty()) std::cout << fmt::format("  missing entries derived from {} (the nearest class with certified ones)\n", plan.source_class);
  for (const auto& item : plan.items) {
    const std::string what = item.action == kb::BootstrapItem::Action::Derive  ? fmt::format("from {}", item.source->id)
                             : item.action == kb::BootstrapItem::Action::Shadow ? fmt::format("copy of {} (stale here), re-certified", item.source->dir.string())
                                                                                : item.reason;
    std::cout << fmt::format("  {:<8} {:<24} {}\n", kb::action_name(item.action), item.id, what);
  }
  if (plan.to_run() == 0) {
    std::cout << fmt::format("nothing to bootstrap: roofline here, {}\n", roofline_line(base, here, 1));
    return kExitOk;
  }
  if (a.plan_only) {
    std::cout << fmt::format("{} probe(s) to run, cap {:g} s per arm (--plan: nothing run)\n", plan.to_run(), a.cap_s);
    return kExitOk;
  }

  kb::JudgeProbeRunner runner(runner_options(a), util::default_process_runner());
  kb::BootstrapOptions bo;
  bo.destination = destination;
  bo.cap_s = a.cap_s;
  bo.certify = !a.propose_only;
  bo.on_start = [&](int i, int n, const kb::BootstrapItem& item) {
    std::cerr << fmt::format("[{}/{}] {} {} ({}) ...\n", i, n, a.propose_only ? "filing" : "certifying", item.id,
                             item.action == kb::BootstrapItem::Action::Derive ? fmt::format("derived from {} of {}", item.source->id, item.source->target)
                                                                              : std::string(kb::action_name(item.action)));
  };
  bo.on_done = [&](const kb::BootstrapRow& row) {
    if (row.action == "have" || row.action == "skip") return;
    std::cout << fmt::format("{:<24} {:<10} {}\n", row.id, row.outcome == "ambiguous" ? "proposed" : row.outcome, row.detail);
  };
  const std::vector<kb::BootstrapRow> rows = kb::run_bootstrap(plan, runner, here, bo);
  int certified = 0, refuted = 0, proposed = 0, failed = 0;
  for (const auto& r : rows) {
    certified += r.outcome == "certified";
    refuted += r.outcome == "refuted";
    proposed += r.outcome == "ambiguous" || r.outcome == "proposed";
    failed += r.outcome == "error";
  }
  const kb::KnowledgeBase after = kb::load_kb(roots);
  const int seconds = static_cast<int>(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  std::cout << fmt::format("{} certified, {} refuted, {} left proposed, {} could not run, in {}m{:02}s\n", certified, refuted, proposed, failed,
                           seconds / 60, seconds % 60);
  std::cout << fmt::format("roofline here, {}\n", roofline_line(after, here, 1));
  if (here.cores > 1) std::cout << fmt::format("roofline here, {}\n", roofline_line(after, here, here.cores));
  std::cout << fmt::format("entries are in {}; `temper kb export` shows them\n", (destination / plan.target_class).string());
  return failed ? kExitFailed : kExitOk;
}

// `temper kb certify|bootstrap ... --executor slurm`: the same command as one job on a node of
// the class to certify (--constraint), its entries written where the nodes and this machine both
// see them.
int kb_on_cluster(const KbArgs& a, const std::string& command) {
  exec::ExecutorSettings s;
  s.kind = a.executor;
  s.partition = a.partition;
  s.account = a.account;
  s.constraint = a.constraint;
  if (auto ok = s.validate(); !ok) return error(ok.error().message);
  std::vector<std::string> argv = {self_executable().string(), "kb"};
  if (!a.kb.empty()) argv.insert(argv.end(), {"--kb", fs::absolute(a.kb).string()});
  argv.push_back(command);
  if (command == "bootstrap") {
    argv.insert(argv.end(), {"--into", fs::absolute(a.into.empty() ? kb::user_kb_root() : fs::path(a.into)).string(), "--cap", fmt::format("{}", a.cap_s)});
    if (!a.from.empty()) argv.insert(argv.end(), {"--from", a.from});
    if (a.plan_only) argv.push_back("--plan");
    if (a.propose_only) argv.push_back("--propose-only");
  } else {
    if (a.all) argv.push_back("--all");
    else argv.push_back(a.id);
    if (a.dry_run) argv.push_back("--dry-run");
    if (a.certify_cap_s > 0) argv.insert(argv.end(), {"--cap", fmt::format("{}", a.certify_cap_s)});
  }
  if (!a.reports.empty()) argv.insert(argv.end(), {"--reports", fs::absolute(a.reports).string()});
  if (a.quiet) argv.push_back("--quiet");
  std::string stamp = judge::utc_now();
  for (char& ch : stamp) if (ch == ':') ch = '-';
  const fs::path job_dir = kb::user_kb_root().parent_path() / "jobs" / fmt::format("kb-{}-{}", command, stamp);
  return run_command_on_cluster(s, job_dir, argv, fmt::format("kb {}", command), a.quiet);
}

// Runs `here` unless the command goes to a cluster; a node's run writes its --result.
Action kb_action(std::shared_ptr<KbArgs> args, const std::string& command, int (*here)(const KbArgs&)) {
  return [args, command, here] {
    if (args->executor != "local") return kb_on_cluster(*args, command);
    if (!args->partition.empty() || !args->account.empty() || !args->constraint.empty())
      return error("--partition, --account and --constraint need --executor slurm");
    const int rc = here(*args);
    return args->result.empty() ? rc : write_command_result(args->result, rc);
  };
}

void add_cluster_options(CLI::App* sub, KbArgs& a) {
  sub->add_option("--executor", a.executor, "local (here) or slurm: run it as a job on a cluster node of the class to certify (docs/scale-out.md)")
      ->capture_default_str();
  sub->add_option("--partition", a.partition, "--executor slurm: the partition");
  sub->add_option("--account", a.account, "--executor slurm: the account");
  sub->add_option("--constraint", a.constraint, "--executor slurm: node features naming the class of node to certify");
  sub->add_option("--result", a.result, "Write the exit status and this node's facts to FILE when done (what a cluster job writes)")->group("");
}

} // namespace

void register_kb_commands(CLI::App& app, Action& action) {
  auto args = std::make_shared<KbArgs>();
  CLI::App* target = app.add_subcommand("target", "Print this machine's target fingerprint and target class");
  target->add_flag("--json", args->json, "JSON output");
  target->callback([args, &action] { action = [args] { return run_target(*args); }; });

  CLI::App* kbc = app.add_subcommand("kb", "The hardware knowledge base: claims about a target, certified by probes");
  kbc->add_option("--kb", args->kb, "Knowledge base root, read alone (default: the repository's hw_kb/ with $TEMPER_HOME/hw_kb layered over it; $TEMPER_KB alone when set)");
  kbc->require_subcommand(1);

  CLI::App* list = kbc->add_subcommand("list", "List entries with their status here (stale: decided on another fingerprint)");
  list->add_option("--target", args->target, "Only this target class");
  list->add_option("--status", args->statuses, "Only these statuses (proposed, certified, refuted, stale)");
  list->add_flag("--json", args->json, "JSON output");
  list->callback([args, &action] { action = [args] { return run_list(*args); }; });

  CLI::App* show = kbc->add_subcommand("show", "Show one entry and its evidence");
  show->add_option("id", args->id, "Entry id")->required();
  show->add_flag("--json", args->json, "JSON output");
  show->callback([args, &action] { action = [args] { return run_show(*args); }; });

  CLI::App* propose = kbc->add_subcommand("propose", "Validate an entry directory and file it under <kb>/<target>/<id>/ as proposed");
  propose->add_option("dir", args->dir, "Entry directory (entry.yaml, README.md, probe/)")->required();
  propose->callback([args, &action] { action = [args] { return run_propose(*args); }; });

  CLI::App* certify = kbc->add_subcommand("certify", "Run entries' probes here through the judge and record the evidence in entry.yaml");
  certify->add_option("id", args->id, "Entry id");
  certify->add_flag("--all", args->all, "Every entry of this machine's target class");
  certify->add_flag("--dry-run", args->dry_run, "Decide, but write nothing");
  certify->add_option("--cap", args->certify_cap_s, "Seconds per arm and job for this run (default: the entry's probe.cap_s)")
      ->check(CLI::PositiveNumber);
  certify->add_option("--reports", args->reports, "Keep each probe's judge report (JSON) in this directory");
  certify->add_flag("--quiet,-q", args->quiet, "No judge progress lines on stderr");
  certify->add_option("--backend", args->backend,
                      "cpu: this machine's CPU entries; cuda: the GPU's (class nvidia-<sm>-<name>), probe kernels built with nvcc")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  certify->callback([args, &action] {
    if (args->all == !args->id.empty()) throw CLI::ValidationError("kb certify", "give an entry id or --all (not both)");
    action = kb_action(args, "certify", run_certify);
  });
  add_cluster_options(certify, *args);

  CLI::App* boot = kbc->add_subcommand("bootstrap", "Certify here the roofline entries this machine's target class lacks, from the nearest class's probes");
  boot->add_option("--from", args->from, "Derive missing entries from this target class (default: the nearest with certified roofline entries)");
  boot->add_option("--into", args->into, "Knowledge base to file entries in (default: $TEMPER_HOME/hw_kb, ~/.temper/hw_kb)");
  boot->add_option("--cap", args->cap_s, "Seconds per arm and job for every probe run")->capture_default_str()->check(CLI::PositiveNumber);
  boot->add_flag("--plan", args->plan_only, "Show what would be done, run nothing");
  boot->add_flag("--propose-only", args->propose_only, "File the entries as proposed (to review their ranges), certify nothing");
  boot->add_option("--reports", args->reports, "Keep each probe's judge report (JSON) in this directory");
  boot->add_flag("--quiet,-q", args->quiet, "No judge progress lines on stderr");
  add_cluster_options(boot, *args);
  boot->callback([args, &action] { action = kb_action(args, "bootstrap", run_bootstrap); });

  CLI::App* exp = kbc->add_subcommand("export", "The certified entries of a target as one Markdown document (for an agent's workspace)");
  exp->add_option("--target", args->target, "Target class (default: this machine's)");
  exp->add_option("--output,-o", args->output, "Write to this file instead of stdout");
  exp->callback([args, &action] { action = [args] { return run_export(*args); }; });
}

} // namespace temper::cli
