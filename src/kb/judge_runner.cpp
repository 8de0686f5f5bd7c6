#include "kb/judge_runner.h"

#include "core/expr.h"
#include "core/task_loader.h"
#include "judge/judge.h"
#include "judge/report.h"
#include "util/fs.h"
#include "util/hash.h"

#include <fmt/format.h>

#include <sstream>

namespace temper::kb {

namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The backend a probe runs on: the CPU's worker, or nvcc (its own -O3 unless the probe gives
// flags) and the CUDA worker the judge picks.
void on_backend(judge::JudgeOptions& o, const JudgeRunnerOptions& options, const Probe& probe) {
  o.backend = options.backend;
  if (options.backend == "cuda") {
    o.compiler.program = "nvcc";
    if (probe.flags.empty()) o.compiler.flags.clear();
    o.worker_exe = options.worker_exe;
    return;
  }
  o.worker_exe = options.worker_exe.empty() ? judge::default_worker_exe() : options.worker_exe;
}

} // namespace

Expected<ProbeOutcome> JudgeProbeRunner::run_metric(const Entry& entry) {
  const Probe& p = entry.probe;
  const std::string& name = p.metric.name;
  ProbeOutcome out;
  nlohmann::json reports = nlohmann::json::array();
  const int jobs = 2 * p.jobs; // measurement jobs, then as many confirmation jobs
  for (int k = 0; k < jobs; ++k) {
    // Each job is one judge run: the correctness check, then the profile phase's cold calls in a
    // fresh worker (compile and golden come from the caches after the first).
    judge::JudgeOptions o;
    o.task_dir = entry.dir / p.task;
    o.candidate = entry.dir / p.kernel;
    o.case_ids = {p.case_id};
    if (!p.flags.empty()) o.compiler.flags = split_words(p.flags);
    on_backend(o, m_options, p);
    o.progress = m_options.progress;
    o.temper_version = m_options.temper_version;
    judge::profile::ProfilePhaseOptions po;
    po.case_ids = {p.case_id};
    po.calls = p.calls;
    po.cachegrind = name.rfind("cg.", 0) == 0; // opt-in collector: only when the metric needs it
    o.profile = po;
    TEMPER_TRY_ASSIGN(judge::JudgeReport report, judge::run_judge(o, m_runner));
    reports.push_back(judge::report_to_json(report));
    if (report.cases.size() != 1) return fail("entry {}: the judge returned {} cases for the probe's one", entry.id, report.cases.size());
    const judge::CaseResult& r = report.cases.front();
    if (r.status != judge::CaseStatus::Passed || !r.profile) {
      return fail("entry {}: the probe's kernel fails the judge on case {}: {}{}", entry.id, r.case_id, judge::status_name(r.status),
                  r.message.empty() ? "" : ": " + r.message);
    }
    const judge::profile::MetricSet& m = r.profile->candidate;
    ProbeJob pj;
    pj.confirmation = k >= p.jobs;
    const judge::profile::MetricValue* v = m.find(name);
    if (v && v->supported()) {
      pj.metric_value = *v->number;
      const nlohmann::json& att = m.attachments();
      if (att.contains("per_call") && att["per_call"].contains(name)) pj.metric_samples = att["per_call"][name].get<std::vector<double>>();
    } else {
      pj.metric_unsupported = v ? v->reason : "the profiler did not report it";
    }
    const bool unsupported = !pj.metric_value;
    out.jobs.push_back(std::move(pj));
    if (unsupported) break; // no other job will measure it either
  }
  // One document for all the jobs' judge reports, so the evidence names them with one hash.
  const nlohmann::json doc = {{"schema_version", 1}, {"kind", "temper.kb.metric_probe"}, {"entry", entry.id}, {"metric", name}, {"reports", reports}};
  const std::string json = doc.dump(2) + "\n";
  out.report_hash = util::hash_hex(json);
  if (!m_options.reports_dir.empty()) {
    TEMPER_TRY(util::write_file_atomic(m_options.reports_dir / fmt::format("{}-{}.json", entry.id, out.report_hash.substr(0, 12)), json));
  }
  out.note = fmt::format("judge correctness check + profile phase, {} cold call(s) per job in a fresh worker, {} measurement + {} confirmation job(s)",
                         p.calls, p.jobs, p.jobs);
  if (static_cast<int>(out.jobs.size()) < jobs) out.note += fmt::format("; stopped after {} job(s): the metric is not measurable here", out.jobs.size());
  return out;
}

Expected<ProbeOutcome> JudgeProbeRunner::run(const Entry& entry) {
  const Probe& p = entry.probe;
  if (p.kind == ProbeKind::Metric) return run_metric(entry);
  const std::filesystem::path task_dir = entry.dir / p.task;
  TEMPER_TRY_ASSIGN(core::Task task, core::load_task(task_dir));
  const core::Case* c = task.find_case(p.case_id);
  if (!c) return fail("entry {}: the probe task {} has no case {}", entry.id, task_dir.string(), p.case_id);

  ProbeOutcome out;
  if (p.kind == ProbeKind::Measure) {
    TEMPER_TRY_ASSIGN(core::Expr work, core::parse_expr(p.figure.work));
    auto v = work.eval(core::make_case_scope(task.op, *c));
    if (!v) return fail("entry {}: probe.figure.work '{}' cannot be evaluated on case {}: {}", entry.id, p.figure.work, c->id, v.error().message);
    out.work = *v;
  }

  judge::JudgeOptions o;
  o.task_dir = task_dir;
  o.candidate = entry.dir / (p.kind == ProbeKind::Paired ? p.b : p.kernel);
  o.case_ids = {p.case_id};
  if (!p.flags.empty()) o.compiler.flags = split_words(p.flags);
  on_backend(o, m_options, p);
  o.progress = m_options.progress;
  o.temper_version = m_options.temper_version;
  judge::TimingOptions t;
  t.reference = entry.dir / (p.kind == ProbeKind::Paired ? p.a : p.kernel);
  t.tier = "gate";
  t.measure_jobs = p.jobs;
  t.confirm_jobs = p.jobs;
  t.protocol.cache_mode = p.cache;
  t.protocol.rule.cap_s = p.cap_s;
  // A calibration of another task's reference means nothing here; the probe's own range is the threshold.
  t.use_calibration = false;
  o.timing = t;

  TEMPER_TRY_ASSIGN(judge::JudgeReport report, judge::run_judge(o, m_runner));
  const std::string json = judge::report_to_json(report).dump(2) + "\n";
  out.report_hash = util::hash_hex(json);
  if (!m_options.reports_dir.empty()) {
    TEMPER_TRY(util::write_file_atomic(m_options.reports_dir / fmt::format("{}-{}.json", entry.id, out.report_hash.substr(0, 12)), json));
  }
  if (report.cases.size() != 1) return fail("entry {}: the judge returned {} cases for the probe's one", entry.id, report.cases.size());
  const judge::CaseResult& r = report.cases.front();
  if (r.status != judge::CaseStatus::Passed || !r.timing) {
    return fail("entry {}: the probe's kernel fails the judge on case {}: {}{}", entry.id, r.case_id, judge::status_name(r.status),
                r.message.empty() ? "" : ": " + r.message);
  }
  out.merged_verdict = std::string(judge::verdict_name(r.timing->verdict));
  out.verdict_confirmed = r.timing->confirmed;
  for (const auto& job : r.timing->jobs) {
    ProbeJob pj;
    pj.confirmation = job.confirmation;
    const auto& e = job.result.paired.estimate;
    pj.speedup = e.speedup;
    pj.speedup_lo = e.ci_determined ? e.speedup_lo : 0;
    pj.speedup_hi = e.ci_determined ? e.speedup_hi : INFINITY;
    pj.verdict = std::string(judge::verdict_name(job.result.verdict));
    for (const auto* arm : {&job.result.paired.reference, &job.result.paired.candidate}) {
      for (const auto& s : arm->samples) pj.seconds.push_back(s.kernel_seconds);
    }
    out.jobs.push_back(std::move(pj));
  }
  // The cold-cache step changes what a bandwidth probe measures (the buffer step's write-backs
  // land in the probe's calls), so the evidence names it.
  std::string step;
  if (p.cache == "cold" && report.timing_overall.is_object() && report.timing_overall.contains("protocol"))
    step = report.timing_overall["protocol"].value("cold_step", "");
  out.note = fmt::format("judge paired protocol, {} cache{}, {} measurement + {} confirmation job(s), cap {} s per arm", p.cache,
                         step.empty() ? "" : " (" + step + " step)", p.jobs, p.jobs, p.cap_s);
  return out;
}

} // namespace temper::kb
