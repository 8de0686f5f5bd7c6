#include "judge/common.h"
#include "judge/timing_phase.h"

#include "core/inputs.h"
#include "judge/boundary.h"
#include "judge/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

namespace temper::judge {

namespace {

// Job seeds: the first measurement job reuses the correctness job's seed (its goldens are
// cached); every other job draws its own, so confirmation sees inputs no earlier job saw.
uint64_t job_seed_for(uint64_t base, int job) {
  if (job == 0) return base;
  uint64_t x = base + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(job);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}


} // namespace

bool reject_work_outside_calls(CaseResult& r) {
  double outside = 0, allowed = 0;
  int jobs = 0;
  for (const auto& j : r.timing->jobs) {
    const CaseTiming& t = j.result;
    if (!(t.outside_allowance_seconds > 0)) continue;
    outside += t.candidate_activity.outside_call_cpu_seconds;
    allowed += t.outside_allowance_seconds;
    ++jobs;
  }
  if (jobs == 0 || outside <= allowed) return false;
  r.status = CaseStatus::RejectedCheat;
  r.reason_code = std::string(kWorkOutsideCall);
  r.message = fmt::format("while timed: the candidate's threads used {:.1f} ms of CPU time outside its calls over {} job{} (allowed {:.1f} ms)",
                          outside * 1e3, jobs, jobs == 1 ? "" : "s", allowed * 1e3);
  return true;
}

namespace {

// Folds what timing found about the candidate into the case's status; `last_job`: the case's
// last job is in.
void apply_to_status(CaseResult& r, double cap_s, bool last_job) {
  if (last_job && reject_work_outside_calls(r)) return;
  for (const auto& j : r.timing->jobs) {
    const CaseTiming& t = j.result;
    if (t.behaviour_differs && !t.cheat_reason_code.empty()) {
      r.status = CaseStatus::RejectedCheat;
      r.reason_code = t.cheat_reason_code;
      r.message = "while timed: " + t.message;
      return;
    }
    if (t.behaviour_differs) {
      r.status = CaseStatus::IncorrectNumerical;
      r.reason_code = std::string(kTimedBehaviourDiffers);
      r.message = t.message;
      return;
    }
    if (t.paired.candidate.exceeds_round_trip > 0) {
      r.status = CaseStatus::RejectedCheat;
      r.reason_code = std::string(kTimerTampering);
      r.message = fmt::format("{} timed call(s) reported more kernel time than the judge saw round trip",
                              t.paired.candidate.exceeds_round_trip);
      return;
    }
    if (t.paired.status == PairedStatus::ArmFailed) {
      r.status = t.failure_status;
      r.reason_code = t.failure_reason_code;
      r.message = "while timed: " + t.message;
      return;
    }
    if (t.paired.status == PairedStatus::TooSlow) {
      r.status = CaseStatus::TooSlow;
      r.message = fmt::format("fewer than 3 samples per arm fit in the cap of {} s per arm", cap_s);
      return;
    }
  }
}

// The case's hardware bound in microseconds: temper.yaml's hardware_bound_us, else the roofline
// bound of the task's cost model under the certified peaks the caller passed.
std::optional<double> case_bound_us(const core::Task& task, const core::Case& c, const TimingOptions& options,
                                    std::string& source) {
  if (auto it = task.config.hardware_bound_us.find(c.id); it != task.config.hardware_bound_us.end()) {
    source = "temper.yaml";
    return it->second;
  }
  if (!options.roofline) return std::nullopt;
  auto b = roofline_bound(task, c, *options.roofline);
  if (!b) return std::nullopt;
  source = fmt::format("roofline (limiter: {}; {})", b->limiter, options.roofline->source);
  return b->seconds * 1e6;
}

// A stored A/A calibration, which counts only under the very same protocol, and the note the
// report gives about it.
std::pair<std::optional<Calibration>, std::string> stored_calibration(const core::Task& task, const std::string& reference_key,
                                                                      const TimingOptions& options, const nlohmann::json& protocol,
                                                                      util::Progress& progress) {
  std::optional<Calibration> calibration;
  std::string calibration_note = "none";
  std::filesystem::path cal_file = calibration_path(task.op.name, reference_key);
  if (options.use_calibration && !options.calibrate) {
    if (auto c = load_calibration(cal_file)) {
      if (auto diff = protocol_difference(c->protocol, protocol)) {
        calibration_note = "ignored: measured under another protocol (" + *diff + ")";
        progress.line("note: the stored calibration was measured under another protocol (" + *diff + "); using the noise floor");
      } else {
        calibration = *c;
        calibration_note = "used, from " + c->date;
      }
    }
  }
  return {calibration, calibration_note};
}

std::optional<double> calibrated_noise(const std::optional<Calibration>& calibration, int64_t case_id) {
  if (!calibration) return std::nullopt;
  if (auto it = calibration->noise.find(case_id); it != calibration->noise.end()) return it->second;
  return std::nullopt;
}

// A job's result into its case: the status it folds in, the merged summary, a progress line.
void record_job(CaseResult& r, const core::Case& c, bool confirmation, int job, bool last_job, uint64_t seed, bool calibrated, CaseTiming t,
                double cap_s, util::Progress& progress, const std::string& label = {}) {
  r.timing->calibrated = calibrated;
  r.timing->delta = t.delta;
  r.timing->jobs.push_back({confirmation, core::seed_id(seed), std::move(t)});
  apply_to_status(r, cap_s, last_job);
  if (r.status != CaseStatus::Passed) return;
  summarize_timing_jobs(*r.timing);
  const auto& last = r.timing->jobs.back().result;
  progress.line(fmt::format("case {}{}: {} job {}: speedup {:.3f} [{:.3f}, {:.3f}] {} ({} rounds, {})", c.id,
                            label.empty() ? "" : ", " + label, confirmation ? "confirmation" : "measurement", job + 1, last.paired.estimate.speedup,
                            last.paired.estimate.speedup_lo, last.paired.estimate.speedup_hi, verdict_name(last.verdict),
                            last.paired.rounds, stop_reason_name(last.paired.stop_reason)));
}

// The tier's measurement and confirmation jobs: a probe is one job; a calibration confirms nothing.
std::pair<int, int> job_counts(const TimingOptions& options) {
  const bool probe = options.tier == "probe";
  return {probe ? 1 : std::max(1, options.measure_jobs), probe || options.calibrate ? 0 : std::max(0, options.confirm_jobs)};
}

// Where a case's job stands in the tier's schedule.
struct JobSlot {
  int job = 0;            // 0-based over measurement then confirmation jobs
  int total = 0;
  bool confirmation = false;
  uint64_t seed = 0;
  size_t position = 0;    // 1-based place of the case in this job's order
  size_t cases = 0;       // cases in this job's order
  bool last() const { return job + 1 == total; }
  std::string label() const { return fmt::format("{} job {}/{}", confirmation ? "confirmation" : "measurement", job + 1, total); }
};

// The tier's jobs over `order`: measurement jobs, then confirmation jobs on new seeds in the
// reverse case order; `each(case index, slot)` per case and job.
template <class Each>
Status for_each_job(int measure, int confirm, uint64_t base_seed, const std::vector<size_t>& order, Each&& each) {
  const int total = measure + confirm;
  for (int job = 0; job < total; ++job) {
    JobSlot slot{job, total, job >= measure, job_seed_for(base_seed, job), 0, order.size()};
    std::vector<size_t> this_order = order;
    if (slot.confirmation) std::reverse(this_order.begin(), this_order.end());
    for (size_t i : this_order) {
      ++slot.position;
      TEMPER_TRY(each(i, slot));
    }
  }
  return {};
}

} // namespace

void summarize_timing_jobs(CaseTimingSummary& s) {
  std::vector<Verdict> measure, confirm;
  double log_sum = 0;
  int n = 0;
  s.speedup_lo = INFINITY;
  s.speedup_hi = 0;
  for (const auto& j : s.jobs) {
    (j.confirmation ? confirm : measure).push_back(j.result.verdict);
    const auto& e = j.result.paired.estimate;
    if (j.result.paired.status != PairedStatus::Measured || e.n == 0) continue;
    log_sum += e.median_log_ratio;
    ++n;
    s.speedup_lo = std::min(s.speedup_lo, e.ci_determined ? e.speedup_lo : 0.0);
    s.speedup_hi = std::max(s.speedup_hi, e.ci_determined ? e.speedup_hi : INFINITY);
  }
  s.speedup = n ? std::exp(log_sum / n) : NAN;
  if (!n) s.speedup_lo = s.speedup_hi = NAN;
  MergedVerdict m = merge_confirmation(measure, confirm);
  s.verdict = m.verdict;
  s.confirmed = m.confirmed;
  s.reason = std::string(m.reason);
  s.decide_cap_s.reset();
  s.decide_towards = Verdict::Ambiguous;
  s.decide_sample_factor = 0;
  if (s.verdict != Verdict::Ambiguous) return;
  // Every job must end up on the same side: a decided job counts as pointing its own way.
  double cap = 0;
  for (const auto& j : s.jobs) {
    const PairedResult& p = j.result.paired;
    if (p.status != PairedStatus::Measured || p.estimate.n == 0) return;
    Verdict towards = j.result.verdict;
    if (towards == Verdict::Ambiguous) {
      const auto proj = project_decision(p.estimate, j.result.delta);
      if (!proj) return;
      if (proj->towards == Verdict::Ambiguous) { // the centre sits on the threshold
        s.decide_cap_s = INFINITY;
        s.decide_towards = Verdict::Ambiguous;
        s.decide_sample_factor = INFINITY;
        return;
      }
      towards = proj->towards;
      cap = std::max(cap, std::max(p.reference.spent_seconds, p.candidate.spent_seconds) * proj->sample_factor);
      s.decide_sample_factor = std::max(s.decide_sample_factor, proj->sample_factor);
    }
    if (s.decide_towards != Verdict::Ambiguous && towards != s.decide_towards) return;
    s.decide_towards = towards;
  }
  if (cap > 0) s.decide_cap_s = cap;
  else s.decide_towards = Verdict::Ambiguous;
}

TimingConfig make_timing_config(const TimingOptions& options, const core::Task& task,
                                const build::CompilerSpec& compiler, const build::CompilerIdentity& compiler_id,
                                const std::filesystem::path& worker_exe, std::chrono::milliseconds call_timeout,
                                size_t memory_limit_bytes) {
  TimingConfig tc;
  tc.protocol = options.protocol;
  tc.protocol.threads = task.config.threads;
  // A probe's speedup ranks variants: it wants the interval the cap buys, not just the verdict.
  if (options.tier == "probe") tc.protocol.stop_when_decided = false;
  if (tc.protocol.flush_bytes == 0) tc.protocol.flush_bytes = default_flush_bytes();
  if (tc.protocol.cold_step.empty()) tc.protocol.cold_step = "evict";
  if (tc.protocol.cpus.empty()) tc.protocol.cpus = default_timing_cpus(tc.protocol.threads);
  if (tc.protocol.clock.empty()) tc.protocol.clock = default_timing_clock(tc.protocol.threads);
  tc.protocol.compiler = compiler_id.version;
  tc.protocol.flags = compiler.flags;
  tc.worker_exe = worker_exe;
  tc.call_timeout = call_timeout;
  tc.memory_limit_bytes = memory_limit_bytes;
  tc.noise_floor = options.noise_floor;
  return tc;
}

namespace {
Status finish_timing_phase(const TimingPhaseInput& in, const std::vector<size_t>& order, const TimingOptions& options,
                           const nlohmann::json& protocol, const std::string& calibration_note, int measure, int confirm,
                           JudgeReport& report, util::Progress& progress);
} // namespace

Status run_timing_phase(const TimingPhaseInput& in, const TimingOptions& options, const TimingConfig& config,
                        GoldenRunner& golden, JudgeReport& report, util::Progress& progress) {
  const core::Task& task = *in.task;
  nlohmann::json protocol = config.protocol.to_json();

  // Not a structured binding: the job loop's lambda captures it (clang 14 cannot capture those).
  const auto stored = stored_calibration(task, in.reference_key, options, protocol, progress);
  const std::optional<Calibration>& calibration = stored.first;
  const std::string& calibration_note = stored.second;

  const bool probe = options.tier == "probe";
  const auto [measure, confirm] = job_counts(options);
  std::vector<size_t> order;
  for (size_t i = 0; i < in.cases.size(); ++i) {
    if (report.cases[i].status == CaseStatus::Passed) order.push_back(i);
  }
  if (probe && order.size() > 1) order.erase(order.begin() + 1, order.end()); // not resize: g++ 12 -O3 -Warray-bounds false positive
  for (size_t i : order) report.cases[i].timing.emplace();

  TEMPER_TRY(for_each_job(measure, confirm, in.job_seed, order, [&](size_t i, const JobSlot& slot) -> Status {
    CaseResult& r = report.cases[i];
    if (r.status != CaseStatus::Passed) return {}; // failed while timed in an earlier job
    const core::Case& c = *in.cases[i];
    progress.status(fmt::format("timing: {}, case {} ({}/{})", slot.label(), c.id, slot.position, slot.cases));
    const std::optional<double> noise = calibrated_noise(calibration, c.id);
    TEMPER_TRY_ASSIGN(CaseTiming t, time_case(task, c, in.reference_artifacts[i], in.candidate_artifacts[i], golden, config, slot.seed,
                                              noise, !slot.confirmation));
    record_job(r, c, slot.confirmation, slot.job, slot.last(), slot.seed, noise.has_value(), std::move(t), config.protocol.rule.cap_s,
               progress);
    return {};
  }));
  return finish_timing_phase(in, order, options, protocol, calibration_note, measure, confirm, report, progress);
}

Status run_shared_timing_phase(const TimingPhaseInput& in, const TimingOptions& options, const TimingConfig& config,
                               GoldenRunner& golden, std::span<JudgeReport* const> reports, util::Progress& progress,
                               std::span<const std::string> labels) {
  if (options.tier != "probe" || in.cases.size() != 1 || in.reference_artifacts.size() != 1 ||
      in.candidate_artifacts.size() != reports.size())
    return fail("harness: a shared timing job is one probe case with an artifact per variant");
  const core::Task& task = *in.task;
  const core::Case& c = *in.cases.front();
  const nlohmann::json protocol = config.protocol.to_json();
  auto [calibration, calibration_note] = stored_calibration(task, in.reference_key, options, protocol, progress);
  const std::optional<double> noise = calibrated_noise(calibration, c.id);
  std::vector<std::filesystem::path> artifacts;
  std::vector<JudgeReport*> timed;
  std::vector<std::string> timed_labels;
  for (size_t k = 0; k < reports.size(); ++k) {
    if (reports[k]->cases.front().status != CaseStatus::Passed) continue;
    reports[k]->cases.front().timing.emplace();
    artifacts.push_back(in.candidate_artifacts[k]);
    timed.push_back(reports[k]);
    timed_labels.push_back(k < labels.size() ? labels[k] : std::string());
  }
  const std::vector<size_t> order = {0};
  if (!timed.empty()) {
    progress.status(fmt::format("timing: one job, {} variant(s) against the reference, case {}", timed.size(), c.id));
    TEMPER_TRY_ASSIGN(std::vector<CaseTiming> results,
                      time_case_shared(task, c, in.reference_artifacts.front(), artifacts, golden, config, in.job_seed, noise));
    for (size_t k = 0; k < timed.size(); ++k)
      record_job(timed[k]->cases.front(), c, false, 0, true, in.job_seed, noise.has_value(), std::move(results[k]), config.protocol.rule.cap_s,
                 progress, timed_labels[k]);
  }
  for (JudgeReport* r : reports) {
    if (r->cases.front().timing) TEMPER_TRY(finish_timing_phase(in, order, options, protocol, calibration_note, 1, 0, *r, progress));
  }
  return {};
}

Status run_timing_phase_against(const TimingPhaseInput& in, const TimingOptions& options, const TimingConfig& config,
                                GoldenRunner& golden, std::span<AgainstReference> refs, util::Progress& progress) {
  if (refs.empty()) return fail("harness: a timing phase against references needs at least one");
  const core::Task& task = *in.task;
  const nlohmann::json protocol = config.protocol.to_json();
  const bool probe = options.tier == "probe";
  const auto [measure, confirm] = job_counts(options);
  struct PerReference {
    std::optional<Calibration> calibration;
    std::string calibration_note;
    std::vector<size_t> order; // the cases it times
  };
  std::vector<PerReference> per(refs.size());
  std::vector<size_t> order; // the cases any reference times, in the task's order
  for (size_t k = 0; k < refs.size(); ++k) {
    std::tie(per[k].calibration, per[k].calibration_note) = stored_calibration(task, refs[k].key, options, protocol, progress);
    for (size_t i = 0; i < in.cases.size(); ++i) {
      if (refs[k].report->cases[i].status != CaseStatus::Passed) continue;
      per[k].order.push_back(i);
      refs[k].report->cases[i].timing.emplace();
    }
    if (probe && per[k].order.size() > 1) per[k].order.erase(per[k].order.begin() + 1, per[k].order.end());
    for (size_t i : per[k].order)
      if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  }
  std::sort(order.begin(), order.end());

  TEMPER_TRY(for_each_job(measure, confirm, in.job_seed, order, [&](size_t i, const JobSlot& slot) -> Status {
    const core::Case& c = *in.cases[i];
    // The references still timing this case: passed so far, and not failed.
    std::vector<size_t> timing;
    std::vector<ReferenceArm> arms;
    std::vector<std::optional<double>> noise;
    for (size_t k = 0; k < refs.size(); ++k) {
      if (refs[k].error || std::find(per[k].order.begin(), per[k].order.end(), i) == per[k].order.end()) continue;
      if (refs[k].report->cases[i].status != CaseStatus::Passed) continue;
      timing.push_back(k);
      ReferenceArm arm = refs[k].arm;
      arm.artifact = refs[k].artifacts[i];
      arms.push_back(std::move(arm));
      noise.push_back(calibrated_noise(per[k].calibration, c.id));
    }
    if (timing.empty()) return {};
    progress.status(fmt::format("timing: {}, case {} ({}/{}), against {} reference(s)", slot.label(), c.id, slot.position, slot.cases,
                                timing.size()));
    TEMPER_TRY_ASSIGN(std::vector<Expected<CaseTiming>> results,
                      time_case_against(task, c, in.candidate_artifacts[i], arms, golden, config, slot.seed, noise, !slot.confirmation));
    for (size_t j = 0; j < timing.size(); ++j) {
      AgainstReference& ref = refs[timing[j]];
      if (!results[j]) {
        if (ref.required) return tl::unexpected(results[j].error());
        ref.error = results[j].error();
        progress.line(fmt::format("{}: {}; it is not timed further", ref.label, ref.error->message));
        continue;
      }
      record_job(ref.report->cases[i], c, slot.confirmation, slot.job, slot.last(), slot.seed, noise[j].has_value(), std::move(*results[j]),
                 config.protocol.rule.cap_s, progress, ref.label);
    }
    return {};
  }));
  for (size_t k = 0; k < refs.size(); ++k) {
    if (refs[k].error) continue;
    TimingPhaseInput own = in;
    own.reference_key = refs[k].key;
    TEMPER_TRY(finish_timing_phase(own, per[k].order, options, protocol, per[k].calibration_note, measure, confirm, *refs[k].report, progress));
  }
  return {};
}

namespace {

// The case summaries, scores and the phase's aggregate of a report whose jobs are done; stores
// the calibration when the phase measured one.
Status finish_timing_phase(const TimingPhaseInput& in, const std::vector<size_t>& order, const TimingOptions& options,
                           const nlohmann::json& protocol, const std::string& calibration_note, int measure, int confirm,
                           JudgeReport& report, util::Progress& progress) {
  const core::Task& task = *in.task;
  const std::filesystem::path cal_file = calibration_path(task.op.name, in.reference_key);

  std::vector<CaseComparison> comparisons;
  double score_sum = 0;
  int scored = 0;
  for (size_t i : order) {
    CaseResult& r = report.cases[i];
    summarize_timing_jobs(*r.timing);
    if (r.status != CaseStatus::Passed || r.timing->jobs.empty()) continue;
    // CANN-Bench's per-case score with the reference as the baseline: 0.5 at parity, 1 at the
    // hardware bound (temper.yaml's, else the roofline's).
    if (auto bound = case_bound_us(task, *in.cases[i], options, r.timing->bound_source)) {
      const auto& job = r.timing->jobs.front().result.paired;
      r.timing->hardware_bound_us = *bound;
      if (job.candidate.stats.median > 0) r.timing->roofline_fraction = *bound * 1e-6 / job.candidate.stats.median;
      if (auto score = cann_bench_score(job.reference.stats.median, job.candidate.stats.median, *bound * 1e-6)) {
        r.timing->cann_bench_score = *score;
        score_sum += *score;
        ++scored;
      }
    }
    CaseComparison cc;
    // The aggregate uses the first measurement job's estimate per case; the merged verdict
    // decides the counts.
    cc.estimate = r.timing->jobs.front().result.paired.estimate;
    cc.verdict = r.timing->verdict;
    comparisons.push_back(cc);
  }
  Aggregate agg = aggregate_cases(comparisons, options.noise_floor);

  if (options.calibrate) {
    Calibration cal;
    cal.protocol = protocol;
    cal.date = utc_now();
    for (size_t i : order) {
      const CaseResult& r = report.cases[i];
      if (!r.timing || r.timing->jobs.empty()) continue;
      if (auto n = aa_noise(r.timing->jobs.front().result.paired.estimate); n && std::isfinite(*n)) cal.noise[r.case_id] = *n;
    }
    TEMPER_TRY(save_calibration(cal_file, cal));
    progress.line(fmt::format("calibration stored: {} ({} cases)", cal_file.string(), cal.noise.size()));
  }

  report.timing_overall = {
      {"tier", options.tier},
      {"measurement_jobs", measure},
      {"confirmation_jobs", confirm},
      {"protocol", protocol},
      {"noise_floor", options.noise_floor},
      {"calibration", calibration_note},
      {"cases_timed", agg.cases},
      {"geomean_speedup", std::isfinite(agg.geomean_speedup) ? nlohmann::json(agg.geomean_speedup) : nlohmann::json()},
      {"geomean_ci", agg.ci_determined ? nlohmann::json::array({agg.speedup_lo, agg.speedup_hi}) : nlohmann::json()},
      {"verdicts", {{"FASTER", agg.faster}, {"SLOWER", agg.slower}, {"SAME", agg.same}, {"AMBIGUOUS", agg.ambiguous}}},
      {"cann_bench_score", scored ? nlohmann::json(score_sum / scored) : nlohmann::json()},
      {"cann_bench_scored_cases", scored},
      {"cann_bench_score_note", scored ? "mean of per-case scores (reference = baseline) over cases with a hardware bound"
                                       : "no hardware lower bound for these cases: give hardware_bound_us in temper.yaml, "
                                         "or a cost model and certified peaks in the knowledge base"},
      {"roofline", options.roofline ? options.roofline->to_json() : nlohmann::json()},
  };
  if (options.calibrate) report.timing_overall["calibration"] = "stored: " + cal_file.string();
  return {};
}

} // namespace

} // namespace temper::judge
