// `temper ref list|run|time|disasm|profile`: black-box operations on sealed references, by name.
// None of them reads or prints the vaulted source.
#include "cli/commands.h"
#include "cli/ref_profile.h"
#include "cli/timing_flags.h"
#include "judge/judge.h"
#include "judge/report.h"
#include "judge/seal.h"
#include "util/fs.h"
#include "util/process.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>
#include <unistd.h>

namespace temper::cli {

namespace {

struct RefArgs {
  std::string name;
  int64_t case_id = 0;
  std::string store;
  std::string json;
  double timeout_s = 60;
  // ref time
  std::string tier = "probe";
  double cap_s = 3;
  std::string cache_mode = "cold";
  bool quiet = false;
  // ref profile
  std::string threads;
};

std::filesystem::path store_of(const RefArgs& a) { return a.store.empty() ? judge::default_store() : std::filesystem::path(a.store); }

Expected<judge::SealedRef> lookup(const RefArgs& a) { return judge::find_sealed(store_of(a), a.name); }

int usage_error(const Error& e) {
  std::cerr << "temper: error: " << e.message << "\n";
  return kExitUsage;
}

int run_list(const RefArgs& a) {
  auto refs = judge::list_sealed(store_of(a));
  if (!refs) return usage_error(refs.error());
  if (refs->empty()) {
    std::cout << "no sealed references in " << store_of(a).string() << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:<24} {:<14} {:>5}  {:<20}  {:<12}  {}\n", "name", "task", "cases", "sealed", "hash", "compiler, flags");
  for (const auto& r : *refs) {
    std::cout << fmt::format("{:<24} {:<14} {:>5}  {:<20}  {:<12}  {} {}\n", r.name, r.task, r.case_artifacts.size(), r.date,
                             r.content_hash.substr(0, 12), r.compiler, fmt::join(r.flags, " "));
  }
  return kExitOk;
}

// ref run and ref time: the judge itself, on the sealed artifacts (JudgeOptions::sealed_candidate).
int run_judged(const RefArgs& a, bool timed) {
  auto ref = lookup(a);
  if (!ref) return usage_error(ref.error());
  judge::JudgeOptions o;
  o.task_dir = ref->task_dir;
  o.sealed_candidate = *ref;
  o.case_ids = {a.case_id};
  o.compiler.program = ref->compiler;
  o.compiler.flags = ref->flags;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  o.progress = !a.quiet;
  o.temper_version = TEMPER_VERSION;
  if (timed) {
    // A/A: the sealed reference against itself, through the judge's paired machinery.
    judge::TimingOptions t;
    t.sealed = *ref;
    t.tier = a.tier;
    t.protocol.cache_mode = a.cache_mode;
    t.protocol.rule.cap_s = a.cap_s;
    t.use_calibration = false;
    o.timing = t;
  }
  auto report = judge::run_judge(o, util::default_process_runner());
  if (!report) return usage_error(report.error());
  judge::print_table(*report, std::cout, ::isatty(1) != 0);
  if (timed) {
    for (const auto& c : report->cases) {
      if (!c.timing || c.timing->jobs.empty()) continue;
      const auto& p = c.timing->jobs.front().result.paired;
      std::cout << fmt::format("{} case {}: median {:.6g} s per call ({} samples, {} cache); A/A ratio {:.4f}\n", a.name,
                               c.case_id, p.candidate.stats.median, p.candidate.samples.size(), a.cache_mode,
                               p.estimate.speedup);
    }
  }
  if (!a.json.empty()) {
    auto written = util::write_file_atomic(a.json, judge::report_to_json(*report).dump(2) + "\n");
    if (!written) return usage_error(written.error());
    std::cout << "report: " << a.json << "\n";
  }
  return report->all_passed() ? kExitOk : kExitFailed;
}

int run_disasm(const RefArgs& a) {
  auto ref = lookup(a);
  if (!ref) return usage_error(ref.error());
  auto artifact = judge::sealed_artifact(*ref, a.case_id);
  if (!artifact) return usage_error(artifact.error());
  std::string objdump = util::find_program("objdump");
  if (objdump.empty()) {
    std::cerr << "temper: error: objdump not found on PATH (install binutils)\n";
    return kExitUsage;
  }
  // Machine code only: no source interleaving (-S, -l), which debug info could feed.
  util::Command cmd;
  cmd.argv = {objdump, "-d", "--no-show-raw-insn", "-C", artifact->string()};
  cmd.timeout = std::chrono::seconds(60);
  cmd.max_output_bytes = size_t{64} << 20;
  auto r = util::default_process_runner().run(cmd);
  if (!r.ok()) {
    std::cerr << "temper: error: objdump failed (" << r.describe() << "):\n" << r.output;
    return kExitUsage;
  }
  std::cout << fmt::format("# sealed reference {} case {} ({}, {} {})\n", ref->name, a.case_id, ref->content_hash.substr(0, 12),
                           ref->compiler, fmt::join(ref->flags, " "));
  std::cout << r.output;
  return kExitOk;
}

int run_profile(const RefArgs& a) {
  auto ref = lookup(a);
  if (!ref) return usage_error(ref.error());
  auto artifact = judge::sealed_artifact(*ref, a.case_id);
  if (!artifact) return usage_error(artifact.error());
  auto threads = threads_flag(a.threads);
  if (!threads) return usage_error(threads.error());
  return profile_sealed(*ref, a.case_id, *artifact, std::cout, std::cerr, threads->value_or(0));
}

CLI::App* add_named(CLI::App* ref, const char* name, const char* help, RefArgs& a) {
  CLI::App* c = ref->add_subcommand(name, help);
  c->add_option("name", a.name, "Sealed reference name (`temper ref list`)")->required();
  c->add_option("--case", a.case_id, "Case id")->required();
  c->add_option("--store", a.store, "Store of sealed references (default: $TEMPER_HOME/refs, ~/.temper/refs)");
  return c;
}

} // namespace

void register_ref_commands(CLI::App& app, Action& action) {
  CLI::App* ref = app.add_subcommand("ref", "Sealed references as black boxes: list, run, time, disassemble, profile");
  ref->require_subcommand(1);

  auto list = std::make_shared<RefArgs>();
  CLI::App* l = ref->add_subcommand("list", "List the sealed references in the store");
  l->add_option("--store", list->store, "Store of sealed references (default: $TEMPER_HOME/refs, ~/.temper/refs)");
  l->callback([list, &action] { action = [list] { return run_list(*list); }; });

  auto run = std::make_shared<RefArgs>();
  CLI::App* r = add_named(ref, "run", "Run a sealed reference on one case through the judge and check it against the golden", *run);
  r->add_option("--json", run->json, "Write the JSON report to this file");
  r->add_option("--timeout", run->timeout_s, "Per-call time limit in seconds")->capture_default_str()->check(CLI::PositiveNumber);
  r->add_flag("--quiet,-q", run->quiet, "No progress lines on stderr");
  r->callback([run, &action] { action = [run] { return run_judged(*run, false); }; });

  auto time = std::make_shared<RefArgs>();
  CLI::App* t = add_named(ref, "time", "Time a sealed reference on one case with the judge's paired protocol (A/A against itself)", *time);
  t->add_option("--tier", time->tier, "probe (one short job) or gate (measurement and confirmation jobs)")->capture_default_str();
  t->add_option("--cap", time->cap_s, "Seconds per arm at most")->capture_default_str()->check(CLI::PositiveNumber);
  t->add_option("--cache", time->cache_mode, "cold or warm")->capture_default_str();
  t->add_option("--json", time->json, "Write the JSON report to this file");
  t->add_flag("--quiet,-q", time->quiet, "No progress lines on stderr");
  t->callback([time, &action] { action = [time] { return run_judged(*time, true); }; });

  auto dis = std::make_shared<RefArgs>();
  CLI::App* d = add_named(ref, "disasm", "Disassemble a sealed reference's artifact for one case (objdump, machine code only)", *dis);
  d->callback([dis, &action] { action = [dis] { return run_disasm(*dis); }; });

  auto prof = std::make_shared<RefArgs>();
  CLI::App* p = add_named(ref, "profile", "Profile a sealed reference on one case", *prof);
  p->add_option("--threads", prof->threads, "The kernel's threads, N or all (default: the task's)");
  p->callback([prof, &action] { action = [prof] { return run_profile(*prof); }; });
}

} // namespace temper::cli
