// `temper status CAMPAIGN`: read-only, from campaign.json, the round's plan and attempts, and
// the ledger.
#include "campaign/orchestrator.h"
#include "exec/slurm_client.h"

#include "util/fs.h"

#include <fmt/format.h>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

json cost_breakdown(const LedgerTotals& t, double elapsed_s) {
  // The final report runs after the campaign's own clock stopped; its judge time adds to it.
  const double wall = elapsed_s + t.final_s;
  // What no category holds: the orchestrator's own work (workspaces, sealing, profiles of the
  // reference, disassembly). The agents' turns count only their own time (agent_own_s), so
  // the six categories add up to the wall time.
  const double other = std::max(0.0, wall - t.agent_own_s - t.judge_s - t.queue_s);
  return {{"agent_own_s", t.agent_own_s}, {"probe_s", t.probe_s},   {"gate_s", t.gate_s}, {"queue_s", t.queue_s},
          {"cluster_jobs", t.cluster_jobs}, {"cluster_failed", t.cluster_failed},
          {"confirmation_s", t.confirmation_s}, {"compile_s", t.compile_s}, {"other_s", other},
          {"wall_s", wall},   {"campaign_s", elapsed_s}, {"final_s", t.final_s},
          {"judge_s", t.judge_s}, {"agent_s", t.agent_s}, {"agent_judge_s", t.agent_judge_s},
          {"agent_cost_usd", t.agent_cost_usd}, {"tokens", t.tokens}};
}

std::string format_costs(const json& c) {
  // The queue only where a cluster ran the judge: on one machine it is always 0.
  const std::string queue = c.value("cluster_jobs", 0) > 0 ? fmt::format(", queue {:.1f} s", c.value("queue_s", 0.0)) : "";
  std::string text = fmt::format("costs: agent (own) {:.1f} s, probe/exploration {:.1f} s, gate {:.1f} s, confirmation {:.1f} s, compile "
                                 "{:.1f} s{}, other {:.1f} s; together the wall time, {:.0f} s\n"
                                 "agent turns: {:.1f} s, of which {:.1f} s judge runs through the harness (${:.2f}, {} tokens)\n",
                                 c.value("agent_own_s", 0.0), c.value("probe_s", 0.0), c.value("gate_s", 0.0), c.value("confirmation_s", 0.0),
                                 c.value("compile_s", 0.0), queue, c.value("other_s", 0.0), c.value("wall_s", 0.0), c.value("agent_s", 0.0),
                                 c.value("agent_judge_s", 0.0), c.value("agent_cost_usd", 0.0), c.value("tokens", int64_t{0}));
  if (c.value("cluster_jobs", 0) > 0) {
    text += fmt::format("cluster: {} submission(s), {} without a result (submitted again, or the step failed)\n", c.value("cluster_jobs", 0),
                        c.value("cluster_failed", 0));
  }
  return text;
}

Expected<json> campaign_status(const fs::path& dir) {
  TEMPER_TRY_ASSIGN(CampaignFile c, load_campaign(dir));
  const CampaignState& s = c.state;
  TEMPER_TRY_ASSIGN(Ledger ledger, Ledger::open(dir / "ledger.sqlite"));
  TEMPER_TRY_ASSIGN(LedgerTotals t, ledger.totals());
  const fs::path round_dir = dir / "rounds" / fmt::format("R{}", s.round);
  json out = {{"schema_version", 1}, {"kind", "temper.campaign.status"}, {"task", c.config.task_name},
              {"round", s.round}, {"rounds", c.config.rounds}, {"phase", phase_name(s.phase)},
              {"reference", s.reference_id}, {"revisions_this_round", s.revisions}, {"accepted", s.accepted},
              {"end_reason", s.end_reason}};
  // Milestone and attempts of the current round.
  int attempts = 0, submissions = 0;
  double round_best = 0;
  for (int n = 1; n < s.next_attempt; ++n) {
    auto text = util::read_file(round_dir / "attempts" / fmt::format("{:04}", n) / "result.json");
    if (!text) continue;
    json r = json::parse(*text, nullptr, false);
    if (r.is_discarded()) continue;
    ++attempts;
    submissions += r.value("op", "") == "submit";
    if (r.value("gate_faster", false) && r["speedup"].is_number()) round_best = std::max(round_best, r["speedup"].get<double>());
  }
  out["attempts_this_round"] = attempts;
  out["submissions_this_round"] = submissions;
  if (auto plan_text = util::read_file(round_dir / "plan.json")) {
    json plan = json::parse(*plan_text, nullptr, false);
    if (!plan.is_discarded() && plan.contains("milestones") && s.milestone < static_cast<int>(plan["milestones"].size())) {
      const json& m = plan["milestones"][static_cast<size_t>(s.milestone)];
      out["milestone"] = {{"id", m.value("id", "")}, {"title", m.value("title", "")}, {"submissions", s.milestone_submissions},
                          {"budget", m.value("budget", json())}};
    }
    if (!plan.is_discarded()) out["milestones"] = plan.value("milestones", json::array()).size();
  }
  // Best verified speedup over the starting reference: the promoted rounds chain, times this
  // round's best confirmed FASTER gate.
  double chain = 1;
  json rounds = json::array();
  for (const auto& r : s.rounds_done) {
    if (r.promoted && r.speedup > 0) chain *= r.speedup;
    rounds.push_back({{"round", r.round}, {"promoted", r.promoted}, {"reference_before", r.reference_before},
                      {"reference_after", r.reference_after}, {"attempt", r.attempt}, {"speedup", r.speedup},
                      {"end_reason", r.end_reason}, {"note", r.note}});
  }
  out["rounds_done"] = rounds;
  const double best = chain * (round_best > 0 && s.phase != Phase::Done ? round_best : 1);
  out["best_verified_speedup"] = best > 1 ? json(best) : json();
  out["costs"] = cost_breakdown(t, s.elapsed_s);
  out["counts"] = {{"compiles", t.compiles}, {"compile_cache_hits", t.compile_cache_hits}, {"judge_runs", t.judge_runs},
                   {"agent_turns", t.agent_turns}, {"revisions", t.revisions}, {"promotions", t.promotions}};
  // Judge runs on a cluster that have not brought their result yet: what is queued or running
  // now (or was, when temper stopped; `temper resume` waits for them).
  if (c.config.executor.slurm()) {
    json out_jobs = json::array();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "jobs", ec)) {
      if (fs::exists(e.path() / "result.json", ec)) continue;
      auto text = util::read_file(e.path() / "submissions.json");
      if (!text) continue;
      const json rec = json::parse(*text, nullptr, false);
      if (rec.is_discarded() || rec.value("attempts", json::array()).empty()) continue;
      const json& a = rec["attempts"].back();
      if (exec::slurm_state_final(a.value("state", ""))) continue;
      out_jobs.push_back({{"job", rec.value("key", "")}, {"label", rec.value("label", "")}, {"slurm_id", a.value("slurm_id", "")},
                          {"state", a.value("state", "")}, {"node", a.value("node", "")}, {"submission", a.value("number", 1)}});
    }
    out["cluster"] = {{"executor", c.config.executor.to_json()}, {"jobs_out", out_jobs}};
  }
  // Where the kernels run: the CPU, or CUDA with the nvcc and architecture the campaign recorded.
  out["backend"] = {{"name", c.config.judge.backend}};
  if (c.config.judge.cuda()) {
    out["backend"]["nvcc"] = c.config.judge.compiler;
    out["backend"]["cuda_arch"] = c.config.judge.cuda_arch;
  }
  const Budgets& b = c.config.budgets;
  out["budget"] = {{"wall_s", b.wall_s}, {"elapsed_s", s.elapsed_s},
                   {"wall_left_s", b.wall_s > 0 ? json(std::max(0.0, b.wall_s - s.elapsed_s)) : json()},
                   {"cost_usd", b.cost_usd},
                   {"cost_left_usd", b.cost_usd > 0 ? json(std::max(0.0, b.cost_usd - t.agent_cost_usd)) : json()},
                   {"job_s", b.job_s}};
  return out;
}

std::string format_status(const json& st) {
  std::string s = fmt::format("campaign {}: round {} of {}, phase {}, reference {}\n", st.value("task", ""), st.value("round", 0),
                              st.value("rounds", 0), st.value("phase", ""), st.value("reference", ""));
  if (const json& b = st.value("backend", json::object()); b.value("name", "cpu") == "cuda")
    s += fmt::format("backend: cuda, {} for {}\n", b.value("nvcc", ""), b.value("cuda_arch", ""));
  if (st.contains("milestone")) {
    const json& m = st["milestone"];
    s += fmt::format("milestone {} ({}): {} submission(s)\n", m.value("id", ""), m.value("title", ""), m.value("submissions", 0));
  }
  s += fmt::format("attempts this round: {} ({} submissions); revisions this round: {}\n", st.value("attempts_this_round", 0),
                   st.value("submissions_this_round", 0), st.value("revisions_this_round", 0));
  std::string accepted;
  for (auto it = st["accepted"].begin(); it != st["accepted"].end(); ++it) accepted += fmt::format(" {}(#{})", it.key(), it.value().get<int>());
  s += "accepted:" + (accepted.empty() ? std::string(" none") : accepted) + "\n";
  s += "best verified speedup: " + (st["best_verified_speedup"].is_number() ? fmt::format("{:.3f}x over the starting reference", st["best_verified_speedup"].get<double>()) : std::string("none yet")) + "\n";
  for (const auto& r : st.value("rounds_done", json::array())) s += fmt::format("round {}: {}\n", r.value("round", 0), r.value("note", ""));
  s += format_costs(st["costs"]);
  if (st.contains("cluster")) {
    const json& cl = st["cluster"];
    const json& ex = cl["executor"];
    s += fmt::format("cluster: Slurm{}{}, up to {} job(s) at once; {} out now\n",
                     ex.contains("partition") ? " partition " + ex["partition"].get<std::string>() : std::string(),
                     ex.contains("constraint") ? " constraint " + ex["constraint"].get<std::string>() : std::string(), ex.value("max_jobs", 0),
                     cl["jobs_out"].size());
    for (const auto& j : cl["jobs_out"]) {
      s += fmt::format("  Slurm job {} {}{}: {}\n", j.value("slurm_id", ""), j.value("state", ""),
                       j.value("node", "").empty() ? std::string() : " on " + j.value("node", ""), j.value("label", ""));
    }
  }
  const json& b = st["budget"];
  s += fmt::format("budget: {:.0f} s elapsed{}{}; per-job limit {:.0f} s\n", b.value("elapsed_s", 0.0),
                   b["wall_left_s"].is_number() ? fmt::format(", {:.0f} s left", b["wall_left_s"].get<double>()) : std::string(", no wall limit"),
                   b["cost_left_usd"].is_number() ? fmt::format(", ${:.2f} agent cost left", b["cost_left_usd"].get<double>()) : std::string(""),
                   b.value("job_s", 0.0));
  if (!st.value("end_reason", "").empty()) s += "ended: " + st.value("end_reason", "") + "\n";
  return s;
}

} // namespace temper::campaign
