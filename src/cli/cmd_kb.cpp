// `temper target` and `temper kb list|show|propose|certify|export`: the hardware knowledge base.
#include "cli/commands.h"
#include "judge/common.h"
#include "kb/certify.h"
#include "kb/judge_runner.h"
#include "kb/store.h"
#include "util/fs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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
};

fs::path root_of(const KbArgs& a) { return a.kb.empty() ? kb::default_kb_root() : fs::path(a.kb); }

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
  return kExitOk;
}

int run_list(const KbArgs& a) {
  kb::KnowledgeBase base = kb::load_kb(root_of(a));
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
  kb::KnowledgeBase base = kb::load_kb(root_of(a));
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

int run_certify(const KbArgs& a) {
  kb::KnowledgeBase base = kb::load_kb(root_of(a));
  print_problems(base);
  const kb::TargetFingerprint& here = kb::current_target();
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
  kb::JudgeRunnerOptions ro;
  ro.progress = !a.quiet;
  ro.temper_version = TEMPER_VERSION;
  if (!a.reports.empty()) {
    ro.reports_dir = a.reports;
    std::error_code ec;
    fs::create_directories(ro.reports_dir, ec);
  }
  kb::JudgeProbeRunner runner(ro, util::default_process_runner());
  int certified = 0, refuted = 0, ambiguous = 0, failed = 0;
  for (kb::Entry* e : todo) {
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
  kb::KnowledgeBase base = kb::load_kb(root_of(a));
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

} // namespace

void register_kb_commands(CLI::App& app, Action& action) {
  auto args = std::make_shared<KbArgs>();
  CLI::App* target = app.add_subcommand("target", "Print this machine's target fingerprint and target class");
  target->add_flag("--json", args->json, "JSON output");
  target->callback([args, &action] { action = [args] { return run_target(*args); }; });

  CLI::App* kbc = app.add_subcommand("kb", "The hardware knowledge base: claims about a target, certified by probes");
  kbc->add_option("--kb", args->kb, "Knowledge base root (default: $TEMPER_KB, ./hw_kb, or the repository's hw_kb/)");
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
  certify->add_option("--reports", args->reports, "Keep each probe's judge report (JSON) in this directory");
  certify->add_flag("--quiet,-q", args->quiet, "No judge progress lines on stderr");
  certify->callback([args, &action] {
    if (args->all == !args->id.empty()) throw CLI::ValidationError("kb certify", "give an entry id or --all (not both)");
    action = [args] { return run_certify(*args); };
  });

  CLI::App* exp = kbc->add_subcommand("export", "The certified entries of a target as one Markdown document (for an agent's workspace)");
  exp->add_option("--target", args->target, "Target class (default: this machine's)");
  exp->add_option("--output,-o", args->output, "Write to this file instead of stdout");
  exp->callback([args, &action] { action = [args] { return run_export(*args); }; });
}

} // namespace temper::cli
