#include "campaign/final_report.h"

#include "campaign/campaign_state.h"
#include "campaign/ledger.h"
#include "campaign/orchestrator.h"
#include "judge/common.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <cmath>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json num_or_null(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? *it : json();
}

// Per-case rows from the judge's report: what the summary prints and keeps.
json case_rows(const json& report) {
  json rows = json::array();
  for (const auto& c : report.value("cases", json::array())) {
    json row = {{"case_id", c.value("case_id", int64_t{0})}, {"status", c.value("status", "")}};
    if (c.contains("timing") && c["timing"].is_object()) {
      const json& t = c["timing"];
      row["speedup"] = num_or_null(t, "speedup");
      row["ci"] = t.value("ci", json());
      row["verdict"] = t.value("verdict", "");
      row["confirmed"] = t.value("confirmed", false);
      row["roofline_fraction"] = num_or_null(t, "roofline_fraction");
      row["hardware_bound_us"] = num_or_null(t, "hardware_bound_us");
      row["cann_bench_score"] = num_or_null(t, "cann_bench_score");
    }
    if (c.contains("kernel_seconds")) row["kernel_seconds"] = c["kernel_seconds"];
    rows.push_back(row);
  }
  return rows;
}

// The "vs PyTorch" columns: each case's row gains the speedup, interval and verdict the final
// kernel has against the task's PyTorch function, under the arm's key ("torch_speedup", ...).
void add_torch_columns(json& rows, const json& torch_rows, const std::string& key) {
  for (auto& row : rows) {
    for (const auto& t : torch_rows) {
      if (t.value("case_id", int64_t{-1}) != row.value("case_id", int64_t{-2})) continue;
      row[key + "_speedup"] = t.value("speedup", json());
      row[key + "_ci"] = t.value("ci", json());
      row[key + "_verdict"] = t.value("verdict", "");
      row[key + "_confirmed"] = t.value("confirmed", false);
      if (t.value("status", "") != "PASSED") row[key + "_status"] = t.value("status", "");
    }
  }
}

// The PyTorch arms of the final report: PyTorch at one thread, and at its own default thread
// count (what a user who sets nothing runs) where more than one CPU is there to use.
struct TorchArm {
  const char* key;    // summary key and per-case column prefix
  int threads;        // JudgeCall::torch_threads
  const char* file;   // under final/
  const char* label;  // ledger label of a judgement of its own (a retry)
  const char* head;   // the terminal summary's column
  const char* suffix; // after the reference's name in its geomean line
};
constexpr TorchArm kTorchArms[] = {
    {"torch", 1, "torch_report.json", "final-torch", "vs PyTorch", ""},
    {"torch_default", 0, "torch_default_report.json", "final-torch-default", "vs PyTorch*", " (* PyTorch's default threads)"},
};

std::vector<TorchArm> torch_arms(const FinalReportOptions& options) {
  std::vector<TorchArm> arms;
  for (const TorchArm& arm : kTorchArms)
    if (options.vs_torch && (arm.threads != 0 || options.torch_default_threads)) arms.push_back(arm);
  return arms;
}

// The report `file` holds for the final reference `final_ref`, if it holds one.
std::optional<json> stored_for(const fs::path& file, const std::string& final_ref) {
  if (!fs::exists(file)) return std::nullopt;
  auto text = util::read_file(file);
  if (!text) return std::nullopt;
  json old = json::parse(*text, nullptr, false);
  if (old.is_discarded() || old.value("final_reference", "") != final_ref) return std::nullopt;
  return old;
}

// One judgement into `file` under final/, stored with the final reference it judged, and its
// cost as a "final" row of the ledger. `also` (JudgeReport::also) is taken out of the report.
Expected<JudgeOutcome> judge_into(const fs::path& dir, const fs::path& file, const std::string& final_ref, const std::string& label,
                                  int round, JudgeService& judge, const JudgeCall& call, json* also = nullptr) {
  TEMPER_TRY_ASSIGN(JudgeOutcome out, judge.judge(call));
  if (also) *also = out.report.value("also", json::array());
  out.report.erase("also");
  out.report["final_reference"] = final_ref;
  TEMPER_TRY(util::make_dirs(file.parent_path()));
  TEMPER_TRY(util::write_file_atomic(file, out.report.dump(2) + "\n"));
  const ReportSummary sm = summarize_report(out.report);
  TEMPER_TRY_ASSIGN(Ledger ledger, Ledger::open(dir / "ledger.sqlite"));
  JudgeRunRow row{fmt::format("{}-{}", label, final_ref), round, "", 0, "final", "gate", sm.cases, sm.wall_seconds,
                  sm.compile_seconds, sm.confirm_seconds, /*turn: after the campaign*/ "", sm.queue_seconds};
  TEMPER_TRY(ledger.add(row).map([](bool) {}));
  for (const auto& job : cluster_job_rows(row.key, out.report)) TEMPER_TRY(ledger.add(job).map([](bool) {}));
  return out;
}

// The final report's judgements: the final kernel against R0 and, in the same judgement,
// against each PyTorch arm (JudgeCall::also_torch_threads): one correctness phase, and the
// kernel's calls and sampled checks paid once per protocol (docs/benchmarks.md, lever 22). Each is stored with the
// reference it judged (report.json, each arm's file), so a run that died after them reads them
// back; an arm that could not be timed keeps why in its file, and a rerun judges that arm again
// on its own (PyTorch installed since, say).
struct FinalJudgements {
  JudgeOutcome start;                        // against R0
  std::vector<Expected<JudgeOutcome>> torch; // per arm, in order
};

Expected<FinalJudgements> judge_final(const fs::path& dir, const fs::path& final_dir, const std::string& final_ref, int round,
                                      JudgeService& judge, const JudgeCall& call, const std::vector<TorchArm>& arms) {
  FinalJudgements out;
  const std::optional<json> start = stored_for(final_dir / "report.json", final_ref);
  if (start) {
    out.start = JudgeOutcome{*start, start->value("campaign_note", "")};
  } else {
    JudgeCall all = call;
    for (const TorchArm& arm : arms) all.also_torch_threads.push_back(arm.threads);
    json also;
    TEMPER_TRY_ASSIGN(out.start, judge_into(dir, final_dir / "report.json", final_ref, "final", round, judge, all, &also));
    for (size_t k = 0; k < arms.size(); ++k) {
      json doc;
      if (k < also.size() && also[k].contains("report")) {
        doc = also[k]["report"];
        if (!out.start.note.empty()) doc["campaign_note"] = out.start.note;
      } else {
        doc = {{"kind", "temper.final.not_timed"}, {"error", k < also.size() ? also[k].value("error", "") : "the judge gave no result for it"}};
      }
      doc["final_reference"] = final_ref;
      TEMPER_TRY(util::write_file_atomic(final_dir / arms[k].file, doc.dump(2) + "\n"));
    }
  }
  for (const TorchArm& arm : arms) {
    auto stored = stored_for(final_dir / arm.file, final_ref);
    if (stored && !stored->contains("error")) {
      out.torch.emplace_back(JudgeOutcome{*stored, stored->value("campaign_note", "")});
      continue;
    }
    if (stored && !start) { // not timed in the judgement just made
      out.torch.emplace_back(fail("{}", stored->value("error", "")));
      continue;
    }
    // Not judged yet, or not timed when it was: a judgement of its own, against PyTorch alone.
    JudgeCall vs = call;
    vs.reference.clear();
    vs.store.clear();
    vs.torch_reference = true;
    vs.torch_threads = arm.threads;
    out.torch.push_back(judge_into(dir, final_dir / arm.file, final_ref, arm.label, round, judge, vs));
  }
  return out;
}

} // namespace

Expected<json> ensure_final_report(const fs::path& dir, ReferenceStore& references, JudgeService& judge,
                                   const FinalReportOptions& options) {
  TEMPER_TRY_ASSIGN(CampaignFile c, load_campaign(dir));
  if (c.state.phase != Phase::Done) {
    return fail("the campaign in {} is not finished (phase {}): continue it with `temper resume {}`", dir.string(),
                phase_name(c.state.phase), dir.string());
  }
  const fs::path final_dir = dir / "final";
  const fs::path summary_file = final_dir / "summary.json";
  const std::string final_ref = c.state.reference_id;
  if (fs::exists(summary_file)) {
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(summary_file));
    json old = json::parse(text, nullptr, false);
    if (!old.is_discarded() && old.value("final_reference", "") == final_ref) {
      // Costs and status move on (a later status call may see more rows); the judgement does not.
      if (auto st = campaign_status(dir)) old["status"] = *st;
      return old;
    }
  }
  TEMPER_TRY_ASSIGN(SealedReference start, references.get("R0"));
  json summary = {{"schema_version", kFinalSummarySchemaVersion},
                  {"kind", "temper.campaign.summary"},
                  {"task", c.config.task_name},
                  {"campaign", fs::absolute(dir).lexically_normal().string()},
                  {"starting_reference", start.to_json()},
                  {"final_reference", final_ref},
                  {"end_reason", c.state.end_reason},
                  {"time", judge::utc_now()}};
  json rounds = json::array();
  for (const auto& r : c.state.rounds_done) {
    rounds.push_back({{"round", r.round}, {"promoted", r.promoted}, {"reference_after", r.reference_after}, {"speedup", r.speedup},
                      {"end_reason", r.end_reason}, {"note", r.note}});
  }
  summary["rounds"] = rounds;
  if (final_ref == "R0") {
    summary["improved"] = false;
    summary["note"] = "no round promoted a kernel with a confirmed FASTER verdict: the starting reference is still the best verified kernel";
  } else {
    TEMPER_TRY_ASSIGN(SealedReference fin, references.get(final_ref));
    summary["final"] = fin.to_json();
    // The promoted kernel's source is the attempt that was sealed (the store keeps its copy in
    // the vault, which only the judge reads).
    fs::path source;
    for (const auto& r : c.state.rounds_done) {
      if (r.promoted && r.reference_after == final_ref) {
        source = dir / "rounds" / fmt::format("R{}", r.round) / "attempts" / fmt::format("{:04}", r.attempt) / "candidate.cpp";
      }
    }
    if (source.empty() || !fs::exists(source)) {
      return fail("the campaign's final reference {} has no promoted attempt on record in {}", final_ref, dir.string());
    }
    JudgeCall call;
    call.task_dir = c.config.task_dir;
    call.candidate = source;
    call.reference = start.id;
    call.store = start.store;
    call.tier = "gate";
    call.cases = c.config.judge.cases;
    call.time_limit_s = c.config.budgets.job_s;
    call.roofline = options.roofline;
    call.progress = true; // every case of the task, timed: the longest judge run of a campaign
    // R0's times as round 1 measured them: the cap fits the slowest case's reference.
    call.reference_seconds = measured_reference_seconds(dir, start.id);
    // The PyTorch arms ride in the same judgement: the same kernel, cases and tier, against what
    // the user runs today. PyTorch's time per call is not known before it is timed; R0's (the
    // slowest kernel of the campaign as a rule) raises the cap as it does against R0, so that a
    // large case still fits a verdict instead of ending TOO_SLOW at the configured cap.
    const std::vector<TorchArm> arms = torch_arms(options);
    TEMPER_TRY_ASSIGN(FinalJudgements judged, judge_final(dir, final_dir, final_ref, c.state.round, judge, call, arms));
    const JudgeOutcome& out = judged.start;
    const ReportSummary sm = summarize_report(out.report);
    summary["improved"] = sm.all_passed && sm.speedup && *sm.speedup > 1;
    summary["report"] = (final_dir / "report.json").string();
    summary["all_passed"] = sm.all_passed;
    summary["cases"] = case_rows(out.report);
    const json& t = out.report.value("timing", json::object());
    summary["geomean_speedup"] = num_or_null(t, "geomean_speedup");
    summary["geomean_ci"] = t.value("geomean_ci", json());
    summary["verdicts"] = t.value("verdicts", json::object());
    summary["tier"] = t.value("tier", "");
    summary["measurement_jobs"] = t.value("measurement_jobs", 0);
    summary["confirmation_jobs"] = t.value("confirmation_jobs", 0);
    if (!out.note.empty()) summary["note"] = out.note;
    for (size_t k = 0; k < arms.size(); ++k) {
      const TorchArm& arm = arms[k];
      const Expected<JudgeOutcome>& torch = judged.torch[k];
      if (!torch) {
        summary[arm.key] = {{"note", "not timed against PyTorch: " + torch.error().message}};
      } else {
        const json& tt = torch->report.value("timing", json::object());
        const json ref = torch->report.value("context", json::object()).value("reference", json::object());
        summary[arm.key] = {{"reference", ref.is_object() ? ref.value("torch", "PyTorch") : std::string("PyTorch")},
                            {"function", ref.is_object() ? ref.value("function", "") : std::string()},
                            {"threads", arm.threads == 0 ? json("default") : json(arm.threads)},
                            {"report", (final_dir / arm.file).string()},
                            {"geomean_speedup", num_or_null(tt, "geomean_speedup")},
                            {"geomean_ci", tt.value("geomean_ci", json())},
                            {"verdicts", tt.value("verdicts", json::object())}};
        if (!torch->note.empty()) summary[arm.key]["note"] = torch->note;
        add_torch_columns(summary["cases"], case_rows(torch->report), arm.key);
      }
    }
  }
  TEMPER_TRY(util::make_dirs(final_dir));
  if (auto st = campaign_status(dir)) summary["status"] = *st;
  TEMPER_TRY(util::write_file_atomic(summary_file, summary.dump(2) + "\n"));
  return summary;
}

namespace {

std::string speedup_text(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_number() ? fmt::format("{:.3f}x", it->get<double>()) : std::string("-");
}

std::string interval_text(const json& row, const char* key) {
  auto it = row.find(key);
  if (it == row.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number()) return "-";
  return fmt::format("[{:.3f}, {:.3f}]", (*it)[0].get<double>(), (*it)[1].get<double>());
}

std::string verdict_text(const json& row, const char* verdict, const char* confirmed) {
  if (!row.contains(verdict) || row.value(verdict, "").empty()) return "-";
  return row.value(verdict, "") + (row.value(confirmed, false) ? "" : "?");
}

std::string roofline_text(const json& row) {
  auto it = row.find("roofline_fraction");
  return it != row.end() && it->is_number() ? fmt::format("{:.1f}%", 100 * it->get<double>()) : std::string("-");
}

std::string geomean_text(const json& s) {
  std::string geo = speedup_text(s, "geomean_speedup");
  if (geo == "-") return "n/a";
  const std::string ci = interval_text(s, "geomean_ci");
  return ci == "-" ? geo : geo + " " + ci;
}

} // namespace

std::string format_final_summary(const json& s) {
  std::string out = fmt::format("\n== temper campaign summary: {} ==\n", s.value("task", ""));
  const json start = s.value("starting_reference", json::object());
  out += fmt::format("starting reference R0: {}\n", start.value("label", ""));
  for (const auto& r : s.value("rounds", json::array())) {
    out += fmt::format("round {}: {}\n", r.value("round", 0), r.value("note", ""));
  }
  if (!s.value("improved", false) && !s.contains("cases")) {
    out += s.value("note", "") + "\n";
  } else {
    out += fmt::format("final kernel {} ({}) against R0, {} tier, {}+{} jobs per case:\n", s.value("final_reference", ""),
                       s.value("final", json::object()).value("label", ""), s.value("tier", ""), s.value("measurement_jobs", 0),
                       s.value("confirmation_jobs", 0));
    // The PyTorch arms that were timed: one thread, then PyTorch's default thread count.
    struct Column {
      TorchArm arm;
      json summary;
    };
    std::vector<Column> torch_columns;
    for (const TorchArm& arm : kTorchArms) {
      const json a = s.value(arm.key, json::object());
      if (a.contains("geomean_speedup") || a.contains("verdicts")) torch_columns.push_back({arm, a});
    }
    std::string head = fmt::format("  {:>4}  {:<22} {:>8} {:>17}  {:<10} {:>9}", "case", "status", "speedup", "95% interval", "verdict", "roofline");
    for (const auto& col : torch_columns) head += fmt::format("  {:>11} {:>17}  {:<10}", col.arm.head, "95% interval", "verdict");
    out += head + "\n";
    for (const auto& c : s.value("cases", json::array())) {
      std::string line = fmt::format("  {:>4}  {:<22} {:>8} {:>17}  {:<10} {:>9}", c.value("case_id", int64_t{0}), c.value("status", ""),
                                     speedup_text(c, "speedup"), interval_text(c, "ci"), verdict_text(c, "verdict", "confirmed"),
                                     roofline_text(c));
      for (const auto& col : torch_columns) {
        const std::string k = col.arm.key;
        line += fmt::format("  {:>11} {:>17}  {:<10}", speedup_text(c, (k + "_speedup").c_str()), interval_text(c, (k + "_ci").c_str()),
                            c.contains(k + "_status") ? c.value(k + "_status", "")
                                                      : verdict_text(c, (k + "_verdict").c_str(), (k + "_confirmed").c_str()));
      }
      out += line + "\n";
    }
    const json& v = s.value("verdicts", json::object());
    out += fmt::format("geomean speedup over R0: {}; FASTER {}, SLOWER {}, SAME {}, AMBIGUOUS {} (? = not confirmed)\n", geomean_text(s),
                       v.value("FASTER", 0), v.value("SLOWER", 0), v.value("SAME", 0), v.value("AMBIGUOUS", 0));
    for (const auto& col : torch_columns) {
      const json& tv = col.summary.value("verdicts", json::object());
      out += fmt::format("geomean speedup over {}{}: {}; FASTER {}, SLOWER {}, SAME {}, AMBIGUOUS {}\n", col.summary.value("reference", "PyTorch"),
                         col.arm.suffix, geomean_text(col.summary), tv.value("FASTER", 0), tv.value("SLOWER", 0), tv.value("SAME", 0),
                         tv.value("AMBIGUOUS", 0));
    }
    for (const TorchArm& arm : kTorchArms)
      if (s.value(arm.key, json::object()).contains("note")) out += "PyTorch: " + s[arm.key].value("note", "") + "\n";
    if (s.contains("note")) out += s.value("note", "") + "\n";
  }
  if (s.contains("status")) {
    const json& c = s["status"].value("costs", json::object());
    const json& n = s["status"].value("counts", json::object());
    out += format_costs(c);
    out += fmt::format("compiles: {} ({} cache hits)\n", n.value("compiles", 0), n.value("compile_cache_hits", 0));
    out += fmt::format("campaign wall time: {:.0f} s ({:.0f} s campaign, {:.0f} s final report)\n", c.value("wall_s", 0.0),
                       c.value("campaign_s", 0.0), c.value("final_s", 0.0));
  }
  out += fmt::format("campaign directory: {}\n", s.value("campaign", ""));
  if (s.contains("report")) out += fmt::format("final report: {}\n", s.value("report", ""));
  out += fmt::format("summary: {}/final/summary.json\n", s.value("campaign", ""));
  return out;
}

} // namespace temper::campaign
