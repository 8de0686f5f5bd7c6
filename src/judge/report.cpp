#include "judge/report.h"
#include "judge/profile/metrics_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>

namespace temper::judge {

std::string_view status_name(CaseStatus s) {
  switch (s) {
  case CaseStatus::Passed: return "PASSED";
  case CaseStatus::IncorrectShape: return "INCORRECT_SHAPE";
  case CaseStatus::IncorrectDtype: return "INCORRECT_DTYPE";
  case CaseStatus::IncorrectNumerical: return "INCORRECT_NUMERICAL";
  case CaseStatus::RuntimeError: return "RUNTIME_ERROR";
  case CaseStatus::Crashed: return "CRASHED";
  case CaseStatus::Timeout: return "TIMEOUT";
  case CaseStatus::CompileError: return "COMPILE_ERROR";
  case CaseStatus::RejectedCheat: return "REJECTED_CHEAT";
  case CaseStatus::TooSlow: return "TOO_SLOW";
  case CaseStatus::Unsupported: return "UNSUPPORTED";
  case CaseStatus::Unchecked: return "UNCHECKED";
  }
  return "?";
}

nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

namespace {

nlohmann::json comparison_json(const core::Comparison& c) {
  nlohmann::json j = {{"standard", c.standard},
                      {"passed", c.passed},
                      {"numel", c.numel},
                      {"max_abs", json_number(c.max_abs)},
                      {"max_rel", json_number(c.max_rel)},
                      {"mean_rel", json_number(c.mean_rel)},
                      {"mismatches", c.mismatches},
                      {"details", c.details}};
  if (!c.passed) j["reason"] = c.reason;
  return j;
}

std::string dtypes_text(const CaseResult& c) {
  std::vector<std::string> names;
  for (auto d : c.dtypes) names.emplace_back(core::dtype_name(d));
  // Most cases use one dtype for every input; say it once.
  bool same = std::all_of(names.begin(), names.end(), [&](const auto& n) { return n == names.front(); });
  return same && !names.empty() ? names.front() : fmt::format("{}", fmt::join(names, ","));
}

std::string shapes_text(const CaseResult& c) {
  std::vector<std::string> s;
  for (const auto& shape : c.shapes) s.push_back(core::shape_string(shape));
  return fmt::format("{}", fmt::join(s, " "));
}

std::string error_text(double v) {
  if (std::isnan(v)) return "nan";
  if (v == 0) return "0";
  return fmt::format("{:.2e}", v);
}

// with_host_wall: the samples are device times (PyPTO's NPU profiler); the same calls' host wall
// times are listed beside them.
nlohmann::json arm_json(const ArmResult& a, bool with_host_wall) {
  std::vector<double> kernel;
  kernel.reserve(a.samples.size());
  for (const auto& s : a.samples) kernel.push_back(s.kernel_seconds);
  nlohmann::json j = {{"n", a.stats.n},
          {"min", a.stats.min},
          {"q1", a.stats.q1},
          {"median", a.stats.median},
          {"mean", a.stats.mean},
          {"q3", a.stats.q3},
          {"max", a.stats.max},
          {"rel_spread", a.stats.rel_spread},
          {"rel_stdev", a.stats.rel_stdev},
          {"warmup_calls", a.warmup_calls},
          {"spent_seconds", a.spent_seconds},
          {"wall_seconds", a.wall_seconds},
          {"renewals", a.renewals},
          {"renew_seconds", a.renew_seconds},
          {"flags", {{"invalid_time", a.invalid_time}, {"exceeds_round_trip", a.exceeds_round_trip}, {"unexplained_gap", a.unexplained_gap}}},
          {"samples", kernel}};
  if (with_host_wall) {
    std::vector<double> wall;
    wall.reserve(a.samples.size());
    for (const auto& s : a.samples) wall.push_back(s.kernel_wall_seconds);
    j["host_wall_samples"] = wall;
  }
  return j;
}

nlohmann::json activity_json(const ArmActivity& a) {
  return {{"outside_call_cpu_seconds", a.outside_call_cpu_seconds}, {"max_threads", a.max_threads}, {"timed_calls", a.timed_calls}};
}

nlohmann::json estimate_json(const PairedEstimate& e) {
  return {{"n", e.n},
          {"speedup", json_number(e.speedup)},
          {"ci", e.ci_determined ? nlohmann::json::array({e.speedup_lo, e.speedup_hi}) : nlohmann::json()},
          {"ci_level", e.confidence},
          {"ci_method", e.method == CiMethod::Lives ? "lives_t" : e.method == CiMethod::Bootstrap ? "bootstrap" : "order_statistic"},
          {"lives", e.lives},
          {"half_width_log", json_number(e.half_width)}};
}

// Beyond this many times the samples, a projected cap is no advice worth following.
constexpr double kPracticalSampleFactor = 25;

// AMBIGUOUS cases: the cap per arm that would likely decide them (null: no finite cap does).
nlohmann::json decide_json(const CaseTimingSummary& t) {
  if (!t.decide_cap_s) return nullptr;
  return {{"towards", verdict_name(t.decide_towards)},
          {"cap_s", std::isfinite(*t.decide_cap_s) ? nlohmann::json(*t.decide_cap_s) : nlohmann::json()},
          {"sample_factor", json_number(t.decide_sample_factor)}};
}

nlohmann::json timing_json(const CaseTimingSummary& t, bool device_time) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& job : t.jobs) {
    const CaseTiming& r = job.result;
    nlohmann::json j = {{"kind", job.confirmation ? "confirmation" : "measurement"},
                        {"seed_id", job.seed_id},
                        {"status", paired_status_name(r.paired.status)},
                        {"stop_reason", stop_reason_name(r.paired.stop_reason)},
                        {"rounds", r.paired.rounds},
                        {"reference_first", r.paired.reference_first},
                        {"input_sets", r.input_sets},
                        {"verdict", verdict_name(r.verdict)},
                        {"estimate", estimate_json(r.paired.estimate)},
                        {"reference", arm_json(r.paired.reference, device_time)},
                        {"candidate", arm_json(r.paired.candidate, device_time)},
                        {"suspicious_samples", r.paired.suspicious_samples},
                        {"content", r.content},
                        {"rechecks", r.rechecks},
                        {"check", {{"target", r.check_target},
                                   {"rechecked", r.rechecks},
                                   {"proved_by_identity", r.proved_by_identity},
                                   {"proved_by_reference", r.proved_by_reference},
                                   {"unprovable", r.unprovable},
                                   {"skipped", r.check_skipped ? nlohmann::json("behind") : nlohmann::json()},
                                   {"seconds", r.check_seconds},
                                   {"golden_seconds", r.golden_seconds}}},
                        {"content_seconds", r.content_seconds},
                        {"activity", {{"reference", activity_json(r.reference_activity)},
                                      {"candidate", activity_json(r.candidate_activity)}}},
                        {"wall_seconds", r.paired.wall_seconds}};
    if (r.outside_allowance_seconds > 0) j["activity"]["candidate"]["outside_call_allowance_seconds"] = r.outside_allowance_seconds;
    if (!r.message.empty()) j["message"] = r.message;
    // The round-trip cross-check never changes the statistics; a candidate whose unexplained
    // gaps stand out from the reference's on the same machine is flagged for a human to look at.
    if (!r.warning.empty()) j["warning"] = r.warning;
    if (gap_excess(r.paired)) {
      j["warning"] = fmt::format("{} of the candidate's timed calls spent unexplained time outside its timer "
                                 "(reference: {}): work done before the timer starts, or a patched timer?",
                                 r.paired.candidate.unexplained_gap, r.paired.reference.unexplained_gap);
    }
    jobs.push_back(j);
  }
  return {{"verdict", verdict_name(t.verdict)},
          {"confirmed", t.confirmed},
          {"reason", t.reason},
          {"speedup", json_number(t.speedup)},
          {"ci", nlohmann::json::array({json_number(t.speedup_lo), json_number(t.speedup_hi)})},
          {"noise_threshold", t.delta},
          {"calibrated", t.calibrated},
          {"cann_bench_score", t.cann_bench_score ? nlohmann::json(*t.cann_bench_score) : nlohmann::json()},
          {"hardware_bound_us", t.hardware_bound_us ? nlohmann::json(*t.hardware_bound_us) : nlohmann::json()},
          {"hardware_bound_source", t.bound_source},
          {"roofline_fraction", t.roofline_fraction ? nlohmann::json(*t.roofline_fraction) : nlohmann::json()},
          {"decide", decide_json(t)},
          {"jobs", jobs}};
}

} // namespace

nlohmann::json case_to_json(const CaseResult& c) {
  nlohmann::json attrs = nlohmann::json::object();
  for (const auto& [name, value] : c.attrs) attrs[name] = value.to_json();
  std::vector<std::string> dtypes;
  for (auto d : c.dtypes) dtypes.emplace_back(core::dtype_name(d));
  nlohmann::json j = {
      {"case_id", c.case_id},
      {"status", status_name(c.status)},
      {"dtypes", dtypes},
      {"shapes", c.shapes},
      {"attrs", attrs},
      {"max_abs_error", json_number(c.max_abs)},
      {"max_rel_error", json_number(c.max_rel)},
      {"mean_rel_error", json_number(c.mean_rel)},
      {"mismatches", c.mismatches},
      {"trials", c.trials_run},
      {"nondeterministic", c.nondeterministic},
      {"comparisons_reused", c.comparisons_reused},
      {"kernel_seconds", c.kernel_seconds},
      {"kernel_cpu_seconds", c.kernel_cpu_seconds},
      {"time_kind", c.time_kind},
      {"wall_seconds", c.wall_seconds},
      {"compile", {{"seconds", c.compile_seconds}, {"cache_hit", c.compile_cache_hit}, {"jit_seconds", c.jit_compile_seconds}}},
      {"golden", {{"seconds", c.golden_seconds}, {"cache_hits", c.golden_cache_hits}}},
  };
  if (c.time_kind == "device") j["host_wall_seconds"] = c.host_wall_seconds;
  if (!c.message.empty()) j["message"] = c.message;
  if (!c.reason_code.empty()) j["reason_code"] = c.reason_code;
  if (c.status == CaseStatus::CompileError) j["compile"]["diagnostics"] = c.compile_diagnostics;
  if (!c.resources.is_null()) j["compile"]["resources"] = c.resources;
  nlohmann::json outputs = nlohmann::json::object();
  for (const auto& [name, cmp] : c.comparisons) outputs[name] = comparison_json(cmp);
  j["outputs"] = outputs;
  nlohmann::json trials = nlohmann::json::array();
  for (const auto& t : c.trials) {
    trials.push_back({{"trial", t.trial}, {"passed", t.passed}, {"kernel_seconds", t.kernel_seconds},
                      {"max_abs", json_number(t.max_abs)}, {"max_rel", json_number(t.max_rel)}});
  }
  j["trial_results"] = trials;
  if (c.timing) j["timing"] = timing_json(*c.timing, c.time_kind == "device");
  if (c.profile) j["metrics"] = c.profile->to_json();
  if (!c.first_mismatches.empty()) {
    nlohmann::json m = nlohmann::json::array();
    for (const auto& fm : c.first_mismatches) {
      m.push_back({{"output", fm.output}, {"index", fm.at.index}, {"flat", fm.at.flat},
                   {"got", json_number(fm.at.got)}, {"expected", json_number(fm.at.expected)}});
    }
    j["first_mismatches"] = m;
  }
  if (c.status == CaseStatus::Crashed || c.status == CaseStatus::RuntimeError || c.status == CaseStatus::Timeout) {
    j["output_tail"] = c.output_tail;
  }
  return j;
}

nlohmann::json report_to_json(const JudgeReport& r) {
  std::map<std::string, int> counts;
  int passed = 0;
  for (const auto& c : r.cases) {
    counts[std::string(status_name(c.status))]++;
    passed += c.status == CaseStatus::Passed;
  }
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : r.cases) cases.push_back(case_to_json(c));
  nlohmann::json j = {
      {"schema_version", kReportSchemaVersion},
      {"kind", "temper.judge.report"},
      {"context", r.context},
      {"summary",
       {{"cases", r.cases.size()},
        {"passed", passed},
        {"all_passed", r.all_passed()},
        {"status_counts", counts},
        {"wall_seconds", r.wall_seconds},
        {"compile_seconds", r.compile_seconds},
        {"golden_compile_seconds", r.golden_compile_seconds}}},
      {"cases", cases},
      {"timing", r.timing_overall},
  };
  if (!r.also.empty()) {
    // The same judgement against further references: a report each, or why there is none.
    nlohmann::json also = nlohmann::json::array();
    for (const auto& a : r.also) {
      nlohmann::json entry = {{"torch_threads", a.torch_threads == 0 ? nlohmann::json("default") : nlohmann::json(a.torch_threads)}};
      if (a.report) entry["report"] = report_to_json(*a.report);
      else entry["error"] = a.error;
      also.push_back(std::move(entry));
    }
    j["also"] = std::move(also);
  }
  return j;
}

void print_table(const JudgeReport& r, std::ostream& out, bool color) {
  auto paint = [&](CaseStatus s, const std::string& text) {
    if (!color) return text;
    const char* code = s == CaseStatus::Passed ? "\033[32m" : "\033[31m";
    return fmt::format("{}{}\033[0m", code, text);
  };
  size_t shape_w = 5;
  for (const auto& c : r.cases) shape_w = std::max(shape_w, shapes_text(c).size());
  shape_w = std::min<size_t>(shape_w, 44);
  const bool timed = !r.timing_overall.is_null();
  out << fmt::format("{:>5}  {:<9} {:<{}} {:<20} {:>9} {:>9} {:>10}", "case", "dtype", "shape", shape_w, "status",
                     "max_abs", "max_rel", "kernel_s");
  if (timed) out << fmt::format("  {:>8} {:>17}  {:<10}", "speedup", "95% interval", "verdict");
  out << "\n";
  int passed = 0;
  for (const auto& c : r.cases) {
    passed += c.status == CaseStatus::Passed;
    std::string status(status_name(c.status));
    if (c.nondeterministic && c.status == CaseStatus::Passed) status += "*";
    std::string shape = shapes_text(c);
    if (shape.size() > shape_w) shape = shape.substr(0, shape_w - 3) + "...";
    out << fmt::format("{:>5}  {:<9} {:<{}} {} {:>9} {:>9} {:>10.6f}", c.case_id, dtypes_text(c), shape, shape_w,
                       paint(c.status, fmt::format("{:<20}", status)), error_text(c.max_abs), error_text(c.max_rel),
                       c.kernel_seconds);
    if (c.time_kind != "host") out << " (" << c.time_kind << ")";
    if (timed && c.timing && !c.timing->jobs.empty()) {
      const auto& t = *c.timing;
      std::string verdict = std::string(verdict_name(t.verdict)) + (t.confirmed ? "" : t.jobs.size() > 1 ? "?" : "");
      out << fmt::format("  {:>8.3f} [{:>6.3f}, {:>6.3f}]  {:<10}", t.speedup, t.speedup_lo, t.speedup_hi, verdict);
    }
    out << "\n";
  }
  bool any_note = false;
  for (const auto& c : r.cases) {
    if (c.message.empty()) continue;
    if (!any_note) out << "\n";
    any_note = true;
    std::string reason = c.reason_code.empty() ? "" : fmt::format(" [{}]", c.reason_code);
    out << fmt::format("case {}: {}{}: {}\n", c.case_id, status_name(c.status), reason, c.message);
    if (!c.first_mismatches.empty()) {
      size_t shown = 0;
      for (const auto& m : c.first_mismatches) {
        if (shown++ == 3) break;
        out << fmt::format("    {}[{}]: got {}, expected {}\n", m.output, fmt::join(m.at.index, ", "), m.at.got, m.at.expected);
      }
    }
  }
  for (const auto& c : r.cases) {
    if (c.profile) profile::print_expectations(*c.profile, c.case_id, out);
  }
  out << fmt::format("\n{} of {} cases passed ({:.1f} s)\n", passed, r.cases.size(), r.wall_seconds);
  double jit = 0;
  bool simulated = false, device = false;
  for (const auto& c : r.cases) {
    jit += c.jit_compile_seconds;
    simulated = simulated || c.time_kind == "simulated";
    device = device || c.time_kind == "device";
  }
  if (jit > 0) out << fmt::format("JIT compile: {:.2f} s in all, kept out of kernel_s\n", jit);
  if (simulated) out << "kernel_s marked (simulated) is the PyPTO cost model's estimate, not a measurement\n";
  if (device) {
    out << "kernel_s marked (device) is the NPU profiler's kernel time (Duration(us) of the call's kernels, summed); "
           "host wall times are in the JSON report\n";
  }
  if (timed) {
    const auto& t = r.timing_overall;
    std::string geo = t["geomean_speedup"].is_null() ? "n/a" : fmt::format("{:.3f}", t["geomean_speedup"].get<double>());
    std::string ci = t["geomean_ci"].is_null() ? "" : fmt::format(" [{:.3f}, {:.3f}]", t["geomean_ci"][0].get<double>(), t["geomean_ci"][1].get<double>());
    const auto& v = t["verdicts"];
    out << fmt::format("timing ({} tier, {}+{} jobs): geomean speedup {}{}; FASTER {}, SLOWER {}, SAME {}, AMBIGUOUS {}\n",
                       t["tier"].get<std::string>(), t["measurement_jobs"].get<int>(), t["confirmation_jobs"].get<int>(), geo, ci,
                       v["FASTER"].get<int>(), v["SLOWER"].get<int>(), v["SAME"].get<int>(), v["AMBIGUOUS"].get<int>());
    // A report built by hand (tests, tools) may have no context at all.
    const nlohmann::json ref = r.context.is_object() ? r.context.value("reference", nlohmann::json()) : nlohmann::json();
    if (ref.is_object() && ref.contains("torch"))
      out << fmt::format("reference: PyTorch ({}), {}\n", ref["torch"].get<std::string>(), ref["function"].get<std::string>());
    // AMBIGUOUS is not a dead end: say how much measurement would likely settle it.
    for (const auto& c : r.cases) {
      if (!c.timing || !c.timing->decide_cap_s) continue;
      const CaseTimingSummary& ct = *c.timing;
      if (std::isfinite(*ct.decide_cap_s) && ct.decide_sample_factor <= kPracticalSampleFactor) {
        out << fmt::format("case {}: AMBIGUOUS; at this noise about {:.1f} s per arm (--cap {:.0f}) would likely clear the {:.1f}% "
                           "threshold (the estimate points to {})\n",
                           c.case_id, *ct.decide_cap_s, std::ceil(*ct.decide_cap_s), 100 * ct.delta, verdict_name(ct.decide_towards));
      } else if (std::isfinite(*ct.decide_cap_s)) {
        out << fmt::format("case {}: AMBIGUOUS; at this noise a verdict needs {:.0f} times this measurement (about {:.0f} s per arm): "
                           "the machine is too noisy, or the difference too close to the {:.1f}% threshold\n",
                           c.case_id, ct.decide_sample_factor, *ct.decide_cap_s, 100 * ct.delta);
      } else {
        out << fmt::format("case {}: AMBIGUOUS; the estimate sits on the {:.1f}% noise threshold: more measurement does not decide it\n",
                           c.case_id, 100 * ct.delta);
      }
    }
    // Where a hardware bound is known: how close the candidate's median time comes to it.
    for (const auto& c : r.cases) {
      if (!c.timing || !c.timing->roofline_fraction || !c.timing->hardware_bound_us) continue;
      out << fmt::format("case {}: {:.1f}% of roofline (bound {:.2f} us, {}){}\n", c.case_id, 100 * *c.timing->roofline_fraction,
                         *c.timing->hardware_bound_us, c.timing->bound_source,
                         c.timing->cann_bench_score ? fmt::format("; CANN-Bench score {:.3f}", *c.timing->cann_bench_score) : "");
    }
  }
}

} // namespace temper::judge
