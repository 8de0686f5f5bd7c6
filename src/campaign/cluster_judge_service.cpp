#include "campaign/cluster_judge_service.h"

#include "core/task_loader.h"
#include "exec/stop_signals.h"
#include "judge/stats.h"
#include "judge/probe.h"
#include "util/fs.h"
#include "util/json_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Room around the per-job limit a judge run is shaped to: the node's start, goldens it has not
// cached, its compile cache cold.
constexpr double kJobTimeMarginS = 600;

bool timed_variant(const json& v) {
  return v.contains("timing") && v["timing"].is_object() && v["timing"].contains("speedup") && v["timing"]["speedup"].is_number();
}

} // namespace

json merge_judge_reports(const std::vector<json>& parts, const std::vector<int64_t>& order, double wall_seconds) {
  json merged = parts.front();
  std::vector<json> cases;
  for (const auto& p : parts) {
    for (const auto& c : p.value("cases", json::array())) cases.push_back(c);
  }
  auto position = [&](const json& c) {
    auto it = std::find(order.begin(), order.end(), c.value("case_id", int64_t{0}));
    return it - order.begin();
  };
  std::stable_sort(cases.begin(), cases.end(), [&](const json& a, const json& b) { return position(a) < position(b); });
  int passed = 0;
  std::map<std::string, int> counts;
  for (const auto& c : cases) {
    counts[c.value("status", "")]++;
    passed += c.value("status", "") == "PASSED";
  }
  double compile = 0, golden_compile = 0;
  for (const auto& p : parts) {
    compile += p["summary"].value("compile_seconds", 0.0);
    golden_compile += p["summary"].value("golden_compile_seconds", 0.0);
  }
  merged["cases"] = cases;
  json& summary = merged["summary"];
  summary["cases"] = cases.size();
  summary["passed"] = passed;
  summary["all_passed"] = !cases.empty() && passed == static_cast<int>(cases.size());
  summary["status_counts"] = counts;
  summary["wall_seconds"] = wall_seconds;
  summary["compile_seconds"] = compile;
  summary["golden_compile_seconds"] = golden_compile;
  if (!merged.contains("timing") || !merged["timing"].is_object()) return merged;
  // The aggregate over every part's timed cases, by the judge's own rule (judge::aggregate_cases)
  // from what each case's report holds: its first measurement job's estimate and its verdict.
  std::vector<judge::CaseComparison> comparisons;
  double score_sum = 0;
  int scored = 0;
  for (const auto& c : cases) {
    if (c.value("status", "") != "PASSED" || !c.contains("timing") || !c["timing"].is_object()) continue;
    const json& t = c["timing"];
    const json jobs = t.value("jobs", json::array());
    if (jobs.empty()) continue;
    const json& e = jobs[0]["estimate"];
    judge::CaseComparison cc;
    cc.estimate.n = e.value("n", 0);
    const double speedup = e.contains("speedup") && e["speedup"].is_number() ? e["speedup"].get<double>() : NAN;
    cc.estimate.speedup = speedup;
    cc.estimate.median_log_ratio = std::log(speedup);
    cc.estimate.ci_determined = e.contains("ci") && e["ci"].is_array() && e.contains("half_width_log") && e["half_width_log"].is_number();
    if (cc.estimate.ci_determined) cc.estimate.half_width = e["half_width_log"].get<double>();
    cc.verdict = judge::parse_verdict(t.value("verdict", "")).value_or(judge::Verdict::Ambiguous);
    comparisons.push_back(cc);
    if (t.contains("cann_bench_score") && t["cann_bench_score"].is_number()) {
      score_sum += t["cann_bench_score"].get<double>();
      ++scored;
    }
  }
  json& timing = merged["timing"];
  const judge::Aggregate agg = judge::aggregate_cases(comparisons, timing.value("noise_floor", judge::kDefaultNoiseFloor));
  timing["cases_timed"] = agg.cases;
  timing["geomean_speedup"] = std::isfinite(agg.geomean_speedup) ? json(agg.geomean_speedup) : json();
  timing["geomean_ci"] = agg.ci_determined ? json::array({agg.speedup_lo, agg.speedup_hi}) : json();
  timing["verdicts"] = {{"FASTER", agg.faster}, {"SLOWER", agg.slower}, {"SAME", agg.same}, {"AMBIGUOUS", agg.ambiguous}};
  timing["cann_bench_score"] = scored ? json(score_sum / scored) : json();
  timing["cann_bench_scored_cases"] = scored;
  return merged;
}

json merge_probe_reports(const std::vector<json>& parts, double wall_seconds) {
  json merged = parts.front();
  std::vector<json> variants;
  for (const auto& p : parts) {
    for (const auto& v : p.value("variants", json::array())) variants.push_back(v);
  }
  std::stable_sort(variants.begin(), variants.end(), [](const json& a, const json& b) {
    const bool ta = timed_variant(a), tb = timed_variant(b);
    if (ta != tb) return ta;
    if (!ta) return false;
    return a["timing"]["speedup"].get<double>() > b["timing"]["speedup"].get<double>();
  });
  std::map<std::string, int> counts;
  int rank = 0, timed = 0, behind = 0;
  for (auto& v : variants) {
    counts[v.value("status", "")]++;
    if (timed_variant(v)) {
      v["rank"] = ++rank;
      ++timed;
      behind += v["timing"].value("checked", true) ? 0 : 1;
    } else {
      v["rank"] = nullptr;
    }
  }
  merged["variants"] = variants;
  json& summary = merged["summary"];
  summary["variants"] = variants.size();
  summary["timed"] = timed;
  summary["behind"] = behind; // each part raced its own variants
  summary["status_counts"] = counts;
  summary["best"] = !variants.empty() && timed_variant(variants.front()) ? json(variants.front().value("label", "")) : json();
  summary["wall_seconds"] = wall_seconds;
  return merged;
}

exec::JobSpec ClusterJudgeService::spec_for(const JudgeJob& job) const {
  exec::JobSpec spec;
  spec.key = job.key();
  spec.dir = m_options.jobs_root / spec.key;
  spec.argv = {m_options.temper_exe.string(), "job", "run", spec.dir.string()};
  spec.time_limit_s = job.call.time_limit_s + kJobTimeMarginS;
  const std::string what = job.op == "probe_grid" ? fmt::format("probe of {} variant(s)", job.call.variants.size())
                                                  : fmt::format("{} judgement", job.call.tier);
  spec.label = fmt::format("{} on case(s) {}", what, job.call.cases.empty() ? std::string("all") : fmt::format("{}", fmt::join(job.call.cases, ",")));
  return spec;
}

Expected<std::vector<JudgeJob>> ClusterJudgeService::jobs_for(const JudgeCall& call, bool probe) const {
  JudgeJob base;
  base.op = probe ? "probe_grid" : "judge";
  base.settings = m_settings;
  base.call = call; // progress lines, where asked for, go to the job's slurm-ID.out
  base.kb_roots = m_options.kb_roots;
  if (!probe) {
    // A gate on several cases: its cases shared out, each part with its measurement and
    // confirmation jobs (a case is never split: both arms and every job of it on one node).
    if (call.tier != "gate" || m_options.max_jobs < 2) return std::vector<JudgeJob>{base};
    std::vector<int64_t> ids = call.cases;
    if (ids.empty()) {
      TEMPER_TRY_ASSIGN(core::Task task, core::load_task(call.task_dir));
      for (const auto& c : task.cases) ids.push_back(c.id);
    }
    const size_t parts = std::min<size_t>(static_cast<size_t>(m_options.max_jobs), ids.size());
    if (parts < 2) return std::vector<JudgeJob>{base};
    std::vector<JudgeJob> jobs(parts, base);
    for (auto& j : jobs) j.call.cases.clear();
    for (size_t i = 0; i < ids.size(); ++i) jobs[i % parts].call.cases.push_back(ids[i]);
    return jobs;
  }
  // The variants, explicit: a grid is expanded here so that its variants can be shared out.
  std::vector<std::map<std::string, std::string>> variants = call.variants;
  if (variants.empty()) {
    std::vector<judge::KnobAxis> axes;
    for (const auto& g : call.grid) {
      TEMPER_TRY_ASSIGN(auto axis, judge::parse_knob_axis(g));
      axes.push_back(std::move(axis));
    }
    TEMPER_TRY_ASSIGN(auto grid, judge::expand_grid(axes));
    for (const auto& defines : grid) variants.emplace_back(defines.begin(), defines.end());
  }
  if (variants.empty()) return fail("a probe needs at least one variant");
  const size_t parts = std::min<size_t>(std::max(1, m_options.max_jobs), variants.size());
  std::vector<JudgeJob> jobs(parts, base);
  for (auto& j : jobs) {
    j.call.grid.clear();
    j.call.variants.clear();
  }
  for (size_t i = 0; i < variants.size(); ++i) jobs[i % parts].call.variants.push_back(variants[i]);
  return jobs;
}

bool ClusterJudgeService::has_job(const JudgeCall& call, bool probe) const {
  auto jobs = jobs_for(call, probe);
  if (!jobs) return false;
  for (const auto& j : *jobs) {
    if (exec::ClusterExecutor::submitted(spec_for(j))) return true;
  }
  return false;
}

std::vector<Expected<JudgeOutcome>> ClusterJudgeService::run_jobs(const std::vector<JudgeJob>& jobs) {
  std::vector<exec::JobSpec> specs;
  for (const auto& job : jobs) {
    exec::JobSpec spec = spec_for(job);
    std::error_code ec;
    fs::create_directories(spec.dir, ec);
    if (!fs::exists(spec.dir / "job.json", ec)) {
      if (auto st = util::write_file_atomic(spec.dir / "job.json", job.to_json().dump(2) + "\n"); !st) {
        return std::vector<Expected<JudgeOutcome>>(jobs.size(), tl::unexpected(st.error()));
      }
    }
    specs.push_back(std::move(spec));
  }
  std::vector<exec::JobOutcome> outcomes;
  {
    // Ctrl-C or a kill while jobs are out: cancel them first, then end as the signal asks.
    exec::StopSignals signals;
    outcomes = m_executor.run_all(specs);
  }
  if (int sig = m_executor.stopped_by()) exec::StopSignals::reraise(sig);

  std::vector<Expected<JudgeOutcome>> out;
  for (size_t i = 0; i < specs.size(); ++i) out.push_back(read_outcome(specs[i], outcomes[i]));
  return out;
}

Expected<JudgeOutcome> ClusterJudgeService::read_outcome(const exec::JobSpec& spec, const exec::JobOutcome& o) const {
  if (!o.finished) return fail("cluster job {} ({}) gave no result: {}", spec.key, spec.label, o.error);
  TEMPER_TRY_ASSIGN(json result, util::read_json(spec.dir / spec.result_file));
  if (result.value("kind", "") != kJudgeJobResultKind) return fail("{}: not a judge job result", (spec.dir / spec.result_file).string());
  json executor = o.to_json();
  executor["kind"] = "slurm";
  executor["job"] = spec.key;
  executor["dir"] = spec.dir.string();
  executor["node"] = result.value("node", json::object());
  if (!result.value("ok", false)) {
    return fail("the judge could not run on node {}: {}", result["node"].value("hostname", "?"), result.value("error", "no reason given"));
  }
  JudgeOutcome jo;
  jo.report = result.at("report");
  jo.report["executor"] = executor;
  jo.note = result.value("note", "");
  return jo;
}

namespace {

// Speedups are ratios timed within one node each; ranking them, or averaging them, across nodes
// is sound only when the nodes are of one class.
Status one_node_class(const std::vector<JudgeOutcome>& parts, const char* what) {
  std::set<std::string> classes;
  for (const auto& o : parts) classes.insert(o.report["executor"]["node"].value("target_class", ""));
  if (classes.size() <= 1) return {};
  return fail("the {}'s parts ran on nodes of different classes ({}): their speedups are not comparable; "
              "keep the campaign on one class of node with --constraint",
              what, fmt::join(classes, ", "));
}

// The report's "executor" object: the node, every job with its submissions, the seconds spent
// waiting (elapsed beyond the judge's own wall time: queue, resubmissions) and on the nodes.
json executor_block(const std::vector<JudgeOutcome>& parts, double elapsed, double wall) {
  json jobs = json::array();
  double node_seconds = 0;
  for (const auto& p : parts) {
    jobs.push_back(p.report["executor"]);
    node_seconds += p.report.value("summary", json::object()).value("wall_seconds", 0.0);
  }
  return {{"kind", "slurm"},
          {"node", parts.front().report["executor"]["node"]},
          {"parts", parts.size()},
          {"elapsed_seconds", elapsed},
          {"queue_seconds", std::max(0.0, elapsed - wall)},
          {"node_seconds", node_seconds},
          {"jobs", jobs}};
}

} // namespace

Expected<JudgeOutcome> ClusterJudgeService::run_merged(const JudgeCall& call, bool probe) {
  TEMPER_TRY_ASSIGN(auto jobs, jobs_for(call, probe));
  const double t0 = m_clock.now();
  auto results = run_jobs(jobs);
  return merge(call, probe, results, m_clock.now() - t0);
}

std::vector<Expected<JudgeOutcome>> ClusterJudgeService::probe_grids(const std::vector<JudgeCall>& calls) {
  // Every call's jobs out at once (up to max_jobs running), then each call's parts merged.
  std::vector<Expected<JudgeOutcome>> out;
  std::vector<JudgeJob> all;
  std::vector<std::pair<size_t, size_t>> slices; // per call: first job, count (count 0: jobs_for failed)
  std::vector<std::optional<Error>> errors(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    auto jobs = jobs_for(calls[i], true);
    if (!jobs) {
      errors[i] = jobs.error();
      slices.emplace_back(all.size(), 0);
      continue;
    }
    slices.emplace_back(all.size(), jobs->size());
    all.insert(all.end(), jobs->begin(), jobs->end());
  }
  const double t0 = m_clock.now();
  auto results = run_jobs(all);
  const double elapsed = m_clock.now() - t0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (errors[i]) {
      out.push_back(tl::unexpected(*errors[i]));
      continue;
    }
    std::vector<Expected<JudgeOutcome>> mine(results.begin() + static_cast<std::ptrdiff_t>(slices[i].first),
                                             results.begin() + static_cast<std::ptrdiff_t>(slices[i].first + slices[i].second));
    // The rung waited as a whole; each probe's queue share is the elapsed time beyond its own wall.
    out.push_back(merge(calls[i], true, mine, elapsed));
  }
  return out;
}

Expected<JudgeOutcome> ClusterJudgeService::merge(const JudgeCall& call, bool probe, const std::vector<Expected<JudgeOutcome>>& results,
                                                  double elapsed) const {
  std::vector<JudgeOutcome> outcomes;
  for (const auto& r : results) {
    if (!r) return tl::unexpected(r.error());
    outcomes.push_back(*r);
  }
  if (outcomes.empty()) return fail("no jobs for this judgement");
  TEMPER_TRY(one_node_class(outcomes, probe ? "probe" : "judgement"));
  std::vector<json> parts;
  double longest = 0; // the parts ran at once: the run's wall time is its longest part's
  std::string notes;
  for (const auto& o : outcomes) {
    parts.push_back(o.report);
    longest = std::max(longest, o.report.value("summary", json::object()).value("wall_seconds", 0.0));
    if (!o.note.empty() && notes.find(o.note) == std::string::npos) notes += (notes.empty() ? "" : "; ") + o.note;
  }
  JudgeOutcome out;
  if (parts.size() == 1) {
    out.report = parts.front();
  } else if (probe) {
    out.report = merge_probe_reports(parts, longest);
  } else {
    // The case order the call asked for, or the task's.
    std::vector<int64_t> order = call.cases;
    if (order.empty()) {
      if (auto task = core::load_task(call.task_dir)) {
        for (const auto& c : task->cases) order.push_back(c.id);
      }
    }
    out.report = merge_judge_reports(parts, order, longest);
  }
  out.report["executor"] = executor_block(outcomes, elapsed, longest);
  out.note = notes;
  if (!out.note.empty()) out.report["campaign_note"] = out.note;
  return out;
}

} // namespace temper::campaign
