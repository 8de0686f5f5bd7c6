// The Student's and Teacher's harness requests, and attempts: each probe, submission or
// escalation is attempts/NNNN/ in the round, written ahead (intent.json and the candidate
// snapshot), then its reports as the judge finishes them, then result.json with the decision;
// only then is it applied to campaign.json and the ledger. Resume finishes what a kill left.
#include "campaign/orchestrator.h"

#include "campaign/stagnation.h"
#include "judge/common.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <cmath>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;
using agent::HarnessRequest;
using agent::HarnessResponse;

namespace {

HarnessResponse reply(bool ok, std::string message, json body = json::object()) {
  HarnessResponse r;
  r.ok = ok;
  r.message = std::move(message);
  r.body = std::move(body);
  return r;
}

json gate_json(const std::optional<PerformanceGate>& g) {
  if (!g) return nullptr;
  json out = {{"tier", g->tier}, {"cases", g->cases}, {"against", g->against}};
  if (g->min_speedup) out["min_speedup"] = *g->min_speedup;
  if (g->min_roofline) out["min_roofline"] = *g->min_roofline;
  return out;
}

// Why a timed submission misses its gate (empty: it meets it); records relative_speedup in
// `result`. Intents written before min_roofline existed always carry min_speedup.
std::vector<std::string> gate_reasons(const json& gate, const ReportSummary& last, double baseline, json& result) {
  if (!last.timed || !last.speedup || !std::isfinite(*last.speedup)) return {"performance: no timing came back"};
  const double rel = *last.speedup / baseline;
  result["relative_speedup"] = rel;
  std::vector<std::string> misses; // one per measure the gate gives; meeting any one is enough
  bool met = false;
  if (gate.contains("min_speedup")) {
    const double min = gate.at("min_speedup");
    if (rel >= min) met = true;
    else if (gate.value("against", "reference") == "previous") misses.push_back(fmt::format("{:.3f}x over the previous milestone's kernel, below the gate's {:.3g}x", rel, min));
    else misses.push_back(fmt::format("{:.3f}x over the reference, below the gate's {:.3g}x", rel, min));
  }
  if (gate.contains("min_roofline")) {
    const double want = gate.at("min_roofline");
    if (last.roofline_fraction && *last.roofline_fraction >= want) met = true;
    else if (last.roofline_fraction) misses.push_back(fmt::format("{:.1f}% of the roofline (geometric mean over the gate's cases), below the gate's {:.3g}%", 100 * *last.roofline_fraction, 100 * want));
    else misses.push_back("no fraction of the roofline (no certified peaks for this machine, or a case without a cost)");
  }
  std::vector<std::string> reasons;
  if (!met) reasons.push_back(fmt::format("performance: {}", fmt::join(misses, "; and ")));
  const bool asks_more = gate.value("min_speedup", 1.0) > 1 || gate.contains("min_roofline");
  if (asks_more && last.slower > 0) reasons.push_back(fmt::format("performance: {} case(s) SLOWER than the reference", last.slower));
  return reasons;
}

// What the Student sees of a report: statuses, errors, timing verdicts; not the context block.
json report_excerpt(const json& report) {
  json cases = json::array();
  for (const auto& c : report.value("cases", json::array())) {
    json e = {{"case_id", c.value("case_id", int64_t{0})}, {"status", c.value("status", "")},
              {"max_abs_error", c.value("max_abs_error", json())}, {"max_rel_error", c.value("max_rel_error", json())},
              {"kernel_seconds", c.value("kernel_seconds", 0.0)}};
    if (c.contains("message")) e["message"] = c["message"];
    if (c.contains("reason_code")) e["reason_code"] = c["reason_code"];
    if (c.contains("compile") && c["compile"].contains("diagnostics")) e["compile_diagnostics"] = c["compile"]["diagnostics"];
    if (c.contains("timing")) {
      const json& t = c["timing"];
      e["timing"] = {{"verdict", t.value("verdict", "")}, {"confirmed", t.value("confirmed", false)},
                     {"speedup", t.value("speedup", json())}, {"ci", t.value("ci", json())}};
    }
    cases.push_back(e);
  }
  json out = {{"kind", report.value("kind", "")}, {"summary", report.value("summary", json())}, {"cases", cases}};
  if (report.contains("variants")) {
    json vs = json::array();
    for (const auto& v : report["variants"]) {
      vs.push_back({{"label", v.value("label", "")}, {"status", v.value("status", "")}, {"rank", v.value("rank", json())},
                    {"timing", v.value("timing", json())}, {"message", v.value("message", "")}});
    }
    out["variants"] = vs;
  }
  if (report.contains("timing") && report["timing"].is_object()) {
    const json& t = report["timing"];
    out["timing"] = {{"tier", t.value("tier", "")}, {"geomean_speedup", t.value("geomean_speedup", json())},
                     {"verdicts", t.value("verdicts", json())}};
  }
  return out;
}

// A probe report's variants in brief: knobs, status, speedup, interval and verdict.
json probe_variants(const json& report) {
  json out = json::array();
  for (const auto& v : report.value("variants", json::array())) {
    json e = {{"label", v.value("label", "")}, {"knobs", v.value("knobs", json::object())}, {"status", v.value("status", "")},
              {"rank", v.value("rank", json())}, {"speedup", nullptr}, {"ci", nullptr}, {"verdict", nullptr}};
    if (v.contains("timing") && v["timing"].is_object()) {
      const json& t = v["timing"];
      e["speedup"] = t.value("speedup", json());
      e["ci"] = t.value("ci", json());
      e["verdict"] = t.value("verdict", json());
      e["timing_status"] = t.value("status", json());
      // Behind the probe's best checked variant: stopped early, outputs unchecked, no verdict.
      if (!t.value("checked", true)) e["behind"] = true;
      if (t.contains("roofline_fraction")) e["roofline_fraction"] = t["roofline_fraction"];
    }
    if (v.contains("message")) e["message"] = v["message"];
    out.push_back(e);
  }
  return out;
}

} // namespace

fs::path Orchestrator::attempt_dir(int n) const { return round_dir() / "attempts" / fmt::format("{:04}", n); }

Expected<fs::path> Orchestrator::resolve_candidate(const fs::path& file) const {
  if (file.empty()) return fail("name the candidate file: ./harness submit kernel.cpp");
  const fs::path ws = fs::weakly_canonical(student_workspace());
  const fs::path p = fs::weakly_canonical(file.is_absolute() ? file : ws / file);
  const auto rel = p.lexically_relative(ws);
  if (rel.empty() || rel.begin()->string() == "..") return fail("{} is outside your workspace", file.string());
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return fail("{}: no such file in your workspace", file.string());
  if (fs::file_size(p, ec) > (size_t{1} << 20)) return fail("{}: larger than 1 MiB", file.string());
  return p;
}

Expected<int> Orchestrator::begin_attempt(const std::string& op, const json& intent_extra, const std::optional<fs::path>& candidate) {
  CampaignState& s = m_file.state;
  const int n = s.next_attempt++;
  TEMPER_TRY(save()); // the number is taken before anything of the attempt exists
  const fs::path dir = attempt_dir(n);
  TEMPER_TRY(util::make_dirs(dir));
  json intent = intent_extra;
  intent["schema_version"] = 1;
  intent["number"] = n;
  intent["op"] = op;
  intent["round"] = s.round;
  intent["reference_id"] = s.reference_id;
  intent["time"] = judge::utc_now();
  if (candidate) {
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(*candidate));
    TEMPER_TRY(util::write_file_atomic(dir / "candidate.cpp", text));
    intent["candidate_sha"] = util::hash_hex(text);
  }
  TEMPER_TRY(util::write_file_atomic(dir / "intent.json", intent.dump(2) + "\n"));
  checkpoint("after_intent");
  return n;
}

Status Orchestrator::finish_attempt(int n, bool resuming) {
  const fs::path dir = attempt_dir(n);
  if (fs::exists(dir / "result.json")) return {};
  TEMPER_TRY_ASSIGN(json intent, util::read_json(dir / "intent.json"));
  const std::string op = intent.value("op", "");
  json result = {{"schema_version", 1}, {"number", n}, {"op", op}, {"milestone", intent.value("milestone", "")},
                 {"accepted", false}, {"gate_faster", false}, {"speedup", nullptr}, {"reasons", json::array()},
                 {"reports", json::array()}, {"seconds", 0.0}};
  if (op == "escalate") {
    result["status"] = "escalation";
    result["text"] = intent.value("text", "");
  } else {
    TEMPER_TRY_ASSIGN(SealedReference ref, m_deps.references->get(intent.value("reference_id", m_file.state.reference_id)));
    std::vector<ReportSummary> summaries;
    json last_report;
    json by_case = json::object(); // a probe of several cases: each case's variants
    std::string status;
    auto make_call = [&](const json& step) {
      JudgeCall call;
      call.task_dir = m_file.config.task_dir;
      call.candidate = dir / "candidate.cpp";
      call.tier = step.at("tier");
      if (call.tier != "correctness") {
        set_reference(call, ref);
        call.reference_seconds = measured_reference_seconds(m_dir, ref.id); // the cap fits its slowest case
        call.roofline = m_deps.roofline;
      }
      call.cases = step.at("cases").get<std::vector<int64_t>>();
      call.grid = step.value("grid", std::vector<std::string>());
      call.variants = step.value("variants", std::vector<std::map<std::string, std::string>>());
      call.time_limit_s = m_file.config.budgets.job_s;
      return call;
    };
    const bool multi_probe = op == "probe" && intent.at("steps").size() > 1;
    // A probe of several cases: every case's run goes to the judge at once (a cluster runs them
    // side by side, a tuner's whole rung), then each is recorded as a single case's would be.
    std::map<std::string, Expected<JudgeOutcome>> prefetched;
    if (multi_probe) {
      std::vector<JudgeCall> calls;
      std::vector<std::string> names;
      for (const auto& step : intent.at("steps")) {
        const std::string name = step.at("report");
        if (fs::exists(dir / name)) continue;
        JudgeCall call = make_call(step);
        if (resuming && !m_deps.judge->has_job(call, true)) continue; // the loop says it was interrupted
        calls.push_back(std::move(call));
        names.push_back(name);
      }
      if (!calls.empty()) {
        auto outs = m_deps.judge->probe_grids(calls);
        for (size_t i = 0; i < names.size() && i < outs.size(); ++i) prefetched.emplace(names[i], std::move(outs[i]));
      }
    }
    for (const auto& step : intent.at("steps")) {
      const std::string name = step.at("report");
      const fs::path file = dir / name;
      json report;
      if (fs::exists(file)) {
        TEMPER_TRY_ASSIGN(report, util::read_json(file)); // a finished run is never repeated
      } else {
        JudgeCall call = make_call(step);
        const bool probe = !call.grid.empty() || !call.variants.empty();
        auto ahead = prefetched.find(name);
        // A run handed to a cluster before temper stopped is waited for or read back; one that
        // ran here is gone with the process that ran it.
        if (ahead == prefetched.end() && resuming && !m_deps.judge->has_job(call, probe)) {
          status = "interrupted";
          result["reasons"].push_back("temper stopped while the judge ran; this attempt was not judged: submit again");
          break;
        }
        auto out = ahead != prefetched.end() ? std::move(ahead->second) : probe ? m_deps.judge->probe_grid(call) : m_deps.judge->judge(call);
        if (!out) {
          status = "error";
          result["reasons"].push_back("the judge could not run: " + out.error().message);
          break;
        }
        report = out->report;
        TEMPER_TRY(util::write_file_atomic(file, report.dump(2) + "\n"));
        checkpoint("after_report");
      }
      result["reports"].push_back(name);
      summaries.push_back(summarize_report(report));
      last_report = report;
      const ReportSummary& sm = summaries.back();
      result["seconds"] = result["seconds"].get<double>() + sm.wall_seconds;
      if (multi_probe) {
        const auto ids = step.at("cases").get<std::vector<int64_t>>();
        if (!ids.empty() && report.value("kind", "") == "temper.probe.report") by_case[std::to_string(ids.front())] = probe_variants(report);
        continue; // each case is a probe of its own: one that fails does not stop the others
      }
      if (!sm.all_passed) break; // a failed correctness run ends the attempt before timing
    }
    if (status.empty() && !summaries.empty()) {
      const ReportSummary& last = summaries.back();
      result["cases"] = last.cases;
      result["passed"] = last.passed;
      result["tier"] = last.tier;
      if (last.speedup && std::isfinite(*last.speedup)) result["speedup"] = *last.speedup;
      if (last.roofline_fraction) result["roofline_fraction"] = *last.roofline_fraction;
      result["verdicts"] = {{"FASTER", last.faster}, {"SLOWER", last.slower}, {"SAME", last.same}, {"AMBIGUOUS", last.ambiguous}};
      result["confirmed"] = last.all_confirmed;
      if (!last.best_variant.empty()) result["best_variant"] = last.best_variant;
      // Every variant of a probe, so a Student (the tuner) ranks them from the response.
      if (op == "probe" && last.kind == "temper.probe.report") result["variants"] = probe_variants(last_report);
      if (multi_probe) result["variants_by_case"] = by_case;
      bool all_passed = true;
      for (const auto& sm : summaries) all_passed = all_passed && sm.all_passed;
      if (op == "probe") {
        status = "probe";
        for (const auto& sm : summaries) {
          if (!sm.all_passed) result["reasons"].push_back(sm.first_failure);
        }
      } else {
        // The acceptance decision, from the milestone's acceptance as it was when submitted.
        std::vector<std::string> reasons;
        const json& acc = intent.at("acceptance");
        const json& gate = acc.at("performance");
        if (!all_passed) {
          for (const auto& sm : summaries) {
            if (!sm.all_passed) reasons.push_back(fmt::format("correctness: {} of {} cases passed; {}", sm.passed, sm.cases, sm.first_failure));
          }
        } else if (!gate.is_null()) {
          for (auto& r : gate_reasons(gate, last, intent.value("baseline_speedup", 1.0), result)) reasons.push_back(std::move(r));
        }
        std::vector<std::string> expectations = acc.value("expectations", std::vector<std::string>());
        std::vector<ExpectationResult> ex;
        if (!expectations.empty()) {
          if (!all_passed) {
            ex = unevaluated(expectations, "not evaluated: the submission did not pass correctness");
          } else if (m_deps.expectations) {
            ExpectationRequest req{expectations, last_report, dir / "candidate.cpp", m_file.config.task_dir, ref};
            ex = m_deps.expectations->evaluate(req);
          } else {
            ex = unevaluated(expectations, "no profiler was given to this campaign");
          }
        }
        json exj = json::array();
        for (const auto& e : ex) {
          exj.push_back({{"expectation", e.expectation}, {"status", e.status}, {"detail", e.detail}});
          if (e.status == "failed" && all_passed) reasons.push_back(fmt::format("mechanism: '{}' failed: {}", e.expectation, e.detail));
        }
        result["expectations"] = exj;
        result["accepted"] = reasons.empty();
        result["gate_faster"] = !gate.is_null() && all_passed && last.gate_faster();
        for (const auto& r : reasons) result["reasons"].push_back(r);
        status = reasons.empty() ? "accepted" : "rejected";
      }
    } else if (status.empty()) {
      status = "error";
    }
    result["status"] = status;
  }
  TEMPER_TRY(util::write_file_atomic(dir / "result.json", result.dump(2) + "\n"));
  checkpoint("after_result");
  return {};
}

Status Orchestrator::apply_attempt(int n) {
  CampaignState& s = m_file.state;
  const fs::path dir = attempt_dir(n);
  TEMPER_TRY_ASSIGN(json intent, util::read_json(dir / "intent.json"));
  TEMPER_TRY_ASSIGN(json result, util::read_json(dir / "result.json"));
  const std::string op = result.value("op", "");
  const std::string milestone = result.value("milestone", "");
  // Ledger rows first (keyed, so a replay adds nothing), then the state.
  for (const auto& name : result.value("reports", json::array())) {
    TEMPER_TRY_ASSIGN(json report, util::read_json(dir / name.get<std::string>()));
    const ReportSummary sm = summarize_report(report);
    const std::string key = fmt::format("R{}-A{:04}-{}", s.round, n, name.get<std::string>());
    JudgeRunRow jr{key, s.round, milestone, n, op, sm.tier, sm.cases, sm.wall_seconds, sm.compile_seconds, sm.confirm_seconds, m_turn_key,
                   sm.queue_seconds};
    TEMPER_TRY(m_ledger->add(jr).map([](bool) {}));
    for (const auto& job : cluster_job_rows(key, report)) TEMPER_TRY(m_ledger->add(job).map([](bool) {}));
    CompileRow cr{key + "-compile", s.round, n, "candidate", sm.compile_seconds, sm.compile_cache_hit};
    TEMPER_TRY(m_ledger->add(cr).map([](bool) {}));
  }
  checkpoint("after_ledger");
  if (n <= s.applied_attempt) return {};
  const std::string status = result.value("status", "");
  const bool current = m_plan && s.milestone < static_cast<int>(m_plan->milestones.size()) &&
                       m_plan->milestones[static_cast<size_t>(s.milestone)].id == milestone;
  if (current && status != "interrupted" && status != "error") {
    std::optional<double> speedup;
    if (result["speedup"].is_number()) speedup = result["speedup"].get<double>();
    s.milestone_seconds += result.value("seconds", 0.0);
    if (op == "probe") {
      s.window.push_back({n, op, false, speedup});
    } else if (op == "submit") {
      s.milestone_submissions++;
      const bool accepted = result.value("accepted", false);
      s.window.push_back({n, op, accepted, speedup});
      if (accepted) {
        s.accepted[milestone] = n;
        s.accepted_speedup[milestone] = speedup.value_or(0);
        s.consecutive_rejected = 0;
        s.pending_trigger.clear();
        s.pending_detail.clear();
      } else {
        s.consecutive_rejected++;
      }
    } else if (op == "escalate") {
      s.pending_trigger = "escalation";
      s.pending_detail = result.value("text", "");
    }
    if (s.pending_trigger.empty() && !s.accepted.count(milestone)) {
      if (auto st = check_stagnation(s, m_file.config.triggers, m_plan->milestones[static_cast<size_t>(s.milestone)])) {
        s.pending_trigger = st->trigger;
        s.pending_detail = st->detail;
      }
    }
  }
  TEMPER_TRY(write_feedback(n, result));
  s.applied_attempt = n;
  TEMPER_TRY(save());
  checkpoint("after_apply");
  return {};
}

Status Orchestrator::reconcile_attempts() {
  for (int n = m_file.state.applied_attempt + 1; n < m_file.state.next_attempt; ++n) {
    if (!fs::exists(attempt_dir(n) / "intent.json")) {
      // The number was taken but nothing written: an empty attempt.
      TEMPER_TRY(util::make_dirs(attempt_dir(n)));
      TEMPER_TRY(util::write_file_atomic(attempt_dir(n) / "intent.json", json{{"schema_version", 1}, {"number", n}, {"op", "none"}, {"steps", json::array()}}.dump() + "\n"));
    }
    TEMPER_TRY(finish_attempt(n, true));
    TEMPER_TRY(apply_attempt(n));
  }
  return {};
}

Status Orchestrator::write_feedback(int n, const json& result) {
  const fs::path fb = student_workspace() / "feedback";
  TEMPER_TRY(util::make_dirs(fb));
  const fs::path dir = attempt_dir(n);
  json excerpt = {{"result", result}, {"reports", json::array()}};
  for (const auto& name : result.value("reports", json::array())) {
    if (auto r = util::read_json(dir / name.get<std::string>())) excerpt["reports"].push_back(report_excerpt(*r));
  }
  TEMPER_TRY(util::write_file_atomic(fb / fmt::format("{:04}.json", n), excerpt.dump(2) + "\n"));
  std::string md = fmt::format("# Attempt {} ({} {}): {}\n\n", n, result.value("op", ""), result.value("milestone", ""), result.value("status", ""));
  if (result["speedup"].is_number()) md += fmt::format("speedup over the reference: {:.3f}x\n", result["speedup"].get<double>());
  for (const auto& r : result.value("reasons", json::array())) md += "- " + r.get<std::string>() + "\n";
  for (const auto& e : result.value("expectations", json::array())) {
    md += fmt::format("- expectation '{}': {} {}\n", e.value("expectation", ""), e.value("status", ""), e.value("detail", ""));
  }
  md += fmt::format("\nDetails: feedback/{:04}.json\n", n);
  TEMPER_TRY(util::write_file_atomic(fb / fmt::format("{:04}.md", n), md));
  if (fs::exists(dir / "candidate.cpp")) {
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(dir / "candidate.cpp"));
    TEMPER_TRY(util::write_file_atomic(fb / fmt::format("{:04}.cpp", n), text));
  }
  return {};
}

Status Orchestrator::write_trajectory() {
  const fs::path traj = teacher_workspace() / "trajectory";
  TEMPER_TRY(util::make_dirs(traj));
  std::string index = "# Trajectory of this round\n\n| attempt | milestone | op | status | speedup | reasons |\n|---|---|---|---|---|---|\n";
  for (int n = 1; n < m_file.state.next_attempt; ++n) {
    const fs::path dir = attempt_dir(n);
    auto result = util::read_json(dir / "result.json");
    if (!result) continue;
    const fs::path out = traj / fmt::format("{:04}", n);
    TEMPER_TRY(util::make_dirs(out));
    for (const char* name : {"result.json", "candidate.cpp"}) {
      if (!fs::exists(dir / name)) continue;
      TEMPER_TRY_ASSIGN(std::string text, util::read_file(dir / name));
      TEMPER_TRY(util::write_file_atomic(out / name, text));
    }
    for (const auto& name : result->value("reports", json::array())) {
      if (auto r = util::read_json(dir / name.get<std::string>())) {
        TEMPER_TRY(util::write_file_atomic(out / name.get<std::string>(), report_excerpt(*r).dump(2) + "\n"));
      }
    }
    std::string reasons;
    for (const auto& r : result->value("reasons", json::array())) reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
    if (result->value("op", "") == "escalate") reasons = "escalation: " + result->value("text", "");
    index += fmt::format("| {:04} | {} | {} | {} | {} | {} |\n", n, result->value("milestone", ""), result->value("op", ""),
                         result->value("status", ""),
                         (*result)["speedup"].is_number() ? fmt::format("{:.3f}", (*result)["speedup"].get<double>()) : "-", reasons);
  }
  return util::write_file_atomic(traj / "INDEX.md", index);
}

// ---- Student requests ----------------------------------------------------------------------

HarnessResponse Orchestrator::handle_student(const HarnessRequest& r) {
  if (r.op == "status") return student_status();
  const CampaignState& s = m_file.state;
  if (s.phase != Phase::Student || !m_plan || s.milestone >= static_cast<int>(m_plan->milestones.size())) {
    return reply(false, "no milestone is open: end your turn");
  }
  const Milestone& m = m_plan->milestones[static_cast<size_t>(s.milestone)];
  if (s.accepted.count(m.id)) return reply(false, fmt::format("{} is already accepted: end your turn", m.id));
  if (!s.pending_trigger.empty()) return reply(false, fmt::format("the Teacher is revising the plan ({}): end your turn", s.pending_trigger));
  if (r.op == "probe") return student_probe(r);
  if (r.op == "submit") return student_submit(r);
  if (r.op == "escalate") return student_escalate(r);
  return reply(false, fmt::format("unknown request '{}': use probe, submit, escalate or status", r.op));
}

HarnessResponse Orchestrator::student_status() {
  const CampaignState& s = m_file.state;
  json body = {{"round", s.round}, {"phase", phase_name(s.phase)}, {"accepted", s.accepted}, {"campaign_cases", m_file.config.judge.cases}};
  // What probes are measured against (the tuner keys its cache by it).
  if (auto ref = m_deps.references->get(s.reference_id)) body["reference_sha"] = ref->sha;
  const JudgeSettings& j = m_file.config.judge;
  body["measurement"] = {{"compiler", j.compiler}, {"flags", j.flags}, {"cache_mode", j.cache_mode}, {"cpus", j.cpus}};
  // Where probes run: on a cluster, a probe of several cases (--cases) runs them side by side.
  body["executor"] = m_file.config.executor.to_json();
  std::string msg = fmt::format("round {}, phase {}", s.round, phase_name(s.phase));
  if (m_plan && s.milestone < static_cast<int>(m_plan->milestones.size())) {
    const Milestone& m = m_plan->milestones[static_cast<size_t>(s.milestone)];
    body["milestone"] = m.id;
    body["submissions"] = s.milestone_submissions;
    body["submission_budget"] = m.budget.attempts;
    body["consecutive_rejected"] = s.consecutive_rejected;
    body["milestone_seconds"] = s.milestone_seconds;
    body["seconds_budget"] = m.budget.seconds;
    msg += fmt::format(", {}: {} of {} submissions used{}", m.id, s.milestone_submissions, m.budget.attempts,
                       s.accepted.count(m.id) ? " (accepted)" : "");
  }
  return reply(true, msg, body);
}

HarnessResponse Orchestrator::student_probe(const HarnessRequest& r) {
  const CampaignState& s = m_file.state;
  const Milestone& m = m_plan->milestones[static_cast<size_t>(s.milestone)];
  auto file = resolve_candidate(r.file);
  if (!file) return reply(false, file.error().message);
  int64_t case_id = 0;
  if (r.case_id) case_id = *r.case_id;
  else if (!r.cases.empty()) case_id = r.cases.front();
  else if (m.acceptance.performance && !m.acceptance.performance->cases.empty()) case_id = m.acceptance.performance->cases.front();
  else if (!m.acceptance.correctness_cases.empty()) case_id = m.acceptance.correctness_cases.front();
  else if (!m_file.config.judge.cases.empty()) case_id = m_file.config.judge.cases.front();
  else case_id = 1;
  // One step per case: each is a probe of its own (its own report), run side by side where the
  // judge runs on a cluster.
  std::vector<int64_t> cases = r.cases.empty() ? std::vector<int64_t>{case_id} : r.cases;
  std::sort(cases.begin(), cases.end());
  cases.erase(std::unique(cases.begin(), cases.end()), cases.end());
  json steps = json::array();
  for (int64_t c : cases) {
    json step = {{"report", cases.size() == 1 ? std::string("report.json") : fmt::format("report-case-{}.json", c)},
                 {"tier", "probe"}, {"cases", {c}}, {"grid", r.grid}};
    if (!r.variants.empty()) step["variants"] = r.variants;
    steps.push_back(step);
  }
  json intent = {{"milestone", m.id}, {"file", r.file.string()}, {"steps", steps}};
  auto n = begin_attempt("probe", intent, *file);
  if (!n) return reply(false, "temper could not record the probe: " + n.error().message);
  if (auto st = finish_attempt(*n, false); !st) return reply(false, st.error().message);
  if (auto st = apply_attempt(*n); !st) return reply(false, st.error().message);
  auto result = util::read_json(attempt_dir(*n) / "result.json");
  if (!result) return reply(false, result.error().message);
  const std::string on = cases.size() == 1 ? fmt::format("case {}", case_id) : fmt::format("cases {}", fmt::join(cases, ","));
  std::string msg = fmt::format("probe {} on {}: {}", *n, on, result->value("status", ""));
  if ((*result)["speedup"].is_number()) msg += fmt::format(", speedup {:.3f}x over the reference", (*result)["speedup"].get<double>());
  if (result->contains("best_variant")) msg += fmt::format(" (best variant {})", (*result)["best_variant"].get<std::string>());
  for (const auto& reason : result->value("reasons", json::array())) msg += "\n  " + reason.get<std::string>();
  msg += fmt::format("\nfeedback/{:04}.md", *n);
  say(fmt::format("round {}: {} probe (attempt {}) on {}: {}{}{}", s.round, m.id, *n, on, result->value("status", ""),
                  (*result)["speedup"].is_number() ? fmt::format(", best {:.3f}x", (*result)["speedup"].get<double>()) : "",
                  result->contains("best_variant") ? " (" + (*result)["best_variant"].get<std::string>() + ")" : ""));
  return reply(result->value("status", "") == "probe" && result->value("reasons", json::array()).empty(), msg, *result);
}

HarnessResponse Orchestrator::student_submit(const HarnessRequest& r) {
  const CampaignState& s = m_file.state;
  const Milestone& m = m_plan->milestones[static_cast<size_t>(s.milestone)];
  auto file = resolve_candidate(r.file);
  if (!file) return reply(false, file.error().message);
  const std::vector<int64_t> cc = m.acceptance.correctness_cases.empty() ? m_file.config.judge.cases : m.acceptance.correctness_cases;
  json steps = json::array();
  double baseline = 1.0;
  if (const auto& g = m.acceptance.performance) {
    const std::vector<int64_t> gc = g->cases.empty() ? m_file.config.judge.cases : g->cases;
    if (gc != cc) steps.push_back({{"report", "report-correctness.json"}, {"tier", "correctness"}, {"cases", cc}});
    steps.push_back({{"report", "report.json"}, {"tier", g->tier}, {"cases", gc}});
    if (g->against == "previous" && s.milestone > 0) {
      const std::string prev = m_plan->milestones[static_cast<size_t>(s.milestone - 1)].id;
      auto it = s.accepted_speedup.find(prev);
      if (it != s.accepted_speedup.end() && it->second > 0) baseline = it->second;
    }
  } else {
    steps.push_back({{"report", "report.json"}, {"tier", "correctness"}, {"cases", cc}});
  }
  json intent = {{"milestone", m.id},
                 {"file", r.file.string()},
                 {"steps", steps},
                 {"acceptance", {{"correctness_cases", cc}, {"performance", gate_json(m.acceptance.performance)}, {"expectations", m.acceptance.expectations}}},
                 {"baseline_speedup", baseline}};
  auto n = begin_attempt("submit", intent, *file);
  if (!n) return reply(false, "temper could not record the submission: " + n.error().message);
  say(fmt::format("round {}: {} attempt {}: judging {}", s.round, m.id, *n, r.file.string()));
  if (auto st = finish_attempt(*n, false); !st) return reply(false, st.error().message);
  if (auto st = apply_attempt(*n); !st) return reply(false, st.error().message);
  auto result = util::read_json(attempt_dir(*n) / "result.json");
  if (!result) return reply(false, result.error().message);
  const bool accepted = result->value("accepted", false);
  std::string msg = fmt::format("{} attempt {}: {}", m.id, *n, accepted ? "ACCEPTED" : result->value("status", "rejected"));
  if ((*result)["speedup"].is_number()) msg += fmt::format(", speedup {:.3f}x over the reference", (*result)["speedup"].get<double>());
  for (const auto& reason : result->value("reasons", json::array())) msg += "\n  " + reason.get<std::string>();
  if (accepted) msg += "\nThe milestone is done: end your turn.";
  else if (!m_file.state.pending_trigger.empty()) msg += fmt::format("\nThe Teacher will revise the plan ({}): end your turn.", m_file.state.pending_trigger);
  msg += fmt::format("\nfeedback/{:04}.md", *n);
  say(fmt::format("round {}: {} attempt {}: {}{}", s.round, m.id, *n, accepted ? "accepted" : result->value("status", ""),
                  (*result)["speedup"].is_number() ? fmt::format(" ({:.3f}x)", (*result)["speedup"].get<double>()) : ""));
  return reply(accepted, msg, *result);
}

HarnessResponse Orchestrator::student_escalate(const HarnessRequest& r) {
  const Milestone& m = m_plan->milestones[static_cast<size_t>(m_file.state.milestone)];
  if (r.text.empty()) return reply(false, "say why: ./harness escalate \"only an architecture change helps because ...\"");
  json intent = {{"milestone", m.id}, {"text", r.text}, {"steps", json::array()}};
  auto n = begin_attempt("escalate", intent, std::nullopt);
  if (!n) return reply(false, n.error().message);
  if (auto st = finish_attempt(*n, false); !st) return reply(false, st.error().message);
  if (auto st = apply_attempt(*n); !st) return reply(false, st.error().message);
  say(fmt::format("round {}: {} escalated: {}", m_file.state.round, m.id, r.text));
  return reply(true, "escalation recorded: the Teacher will revise the plan; end your turn");
}

// ---- Teacher requests ----------------------------------------------------------------------

HarnessResponse Orchestrator::handle_teacher(const HarnessRequest& r) {
  const CampaignState& s = m_file.state;
  auto ref = m_deps.references->get(s.reference_id);
  if (!ref) return reply(false, ref.error().message);
  if (r.op == "status") {
    return reply(true, fmt::format("round {}, phase {}, reference {}", s.round, phase_name(s.phase), s.reference_id),
                 {{"round", s.round}, {"phase", phase_name(s.phase)}, {"reference", ref->to_json()}});
  }
  JudgeCall call;
  call.task_dir = m_file.config.task_dir;
  set_reference(call, *ref); // no candidate: the sealed reference itself is judged
  call.time_limit_s = m_file.config.budgets.job_s;
  if (r.op == "ref-time") {
    call.tier = "correctness";
    if (r.case_id) call.cases = {*r.case_id};
    else call.cases = m_file.config.judge.cases;
    auto out = m_deps.judge->judge(call);
    if (!out) return reply(false, out.error().message);
    const ReportSummary sm = summarize_report(out->report);
    JudgeRunRow row{fmt::format("R{}-ref-time-{}-{}", s.round, judge::utc_now(), ++m_ref_ops), s.round, "", 0, "ref-time",
                    "correctness", sm.cases, sm.wall_seconds, sm.compile_seconds, 0, m_turn_key, sm.queue_seconds};
    (void)m_ledger->add(row);
    for (const auto& job : cluster_job_rows(row.key, out->report)) (void)m_ledger->add(job);
    json times = json::array();
    std::string msg = "reference kernel seconds (median over correctness trials):";
    for (const auto& c : out->report.value("cases", json::array())) {
      times.push_back({{"case_id", c.value("case_id", int64_t{0})}, {"kernel_seconds", c.value("kernel_seconds", 0.0)}});
      msg += fmt::format("\n  case {}: {:.6f} s", c.value("case_id", int64_t{0}), c.value("kernel_seconds", 0.0));
    }
    return reply(true, msg, {{"cases", times}});
  }
  if (r.op == "ref-disasm") {
    if (r.case_id) call.cases = {*r.case_id};
    else if (!m_file.config.judge.cases.empty()) call.cases = {m_file.config.judge.cases.front()};
    auto text = m_deps.judge->disassemble(call);
    if (!text) return reply(false, text.error().message);
    return reply(true, *text);
  }
  if (r.op == "ref-profile") {
    if (!m_deps.ref_profile) return reply(false, "unsupported: no profiler was given to this campaign");
    auto text = m_deps.ref_profile(*ref, r.case_id.value_or(m_file.config.judge.cases.empty() ? 1 : m_file.config.judge.cases.front()));
    if (!text) return reply(false, text.error().message);
    return reply(true, *text);
  }
  return reply(false, fmt::format("unknown request '{}': the Teacher may use ref-time, ref-disasm, ref-profile, status", r.op));
}

} // namespace temper::campaign
