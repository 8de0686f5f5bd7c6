#include "kb/certify.h"

#include "judge/common.h"
#include "judge/profile/metrics.h"
#include "judge/stats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace temper::kb {

namespace {

nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(v > 0 ? "inf" : "-inf"); }

// Where [lo, hi] lies against the range: inside, outside (disjoint), or straddling.
enum class Placement { Inside, Outside, Straddles };

Placement place(double lo, double hi, const Range& r) {
  if (r.contains(lo) && r.contains(hi)) return Placement::Inside;
  if ((r.max && lo > *r.max) || (r.min && hi < *r.min)) return Placement::Outside;
  return Placement::Straddles;
}

// The outcome of an interval against the claimed range: certified inside, refuted entirely
// outside, not decided when it straddles a bound. `range` names the range in the reason
// ("expected", "accepted").
void decide_by_placement(Decision& d, double lo, double hi, const Range& want, const std::string& span, std::string_view range) {
  switch (place(lo, hi, want)) {
  case Placement::Inside:
    d.outcome = "certified";
    d.reason = fmt::format("{} lies inside the {} {}", span, range, want.to_string());
    break;
  case Placement::Outside:
    d.outcome = "refuted";
    d.reason = fmt::format("{} lies entirely outside the {} {}", span, range, want.to_string());
    break;
  case Placement::Straddles:
    d.outcome = "ambiguous";
    d.reason = fmt::format("{} straddles a bound of the {} {}: not decided", span, range, want.to_string());
    break;
  }
}

Decision decide_paired(const Entry& e, const ProbeOutcome& o) {
  Decision d;
  const Range& want = e.probe.expect;
  double lo = INFINITY, hi = 0, log_sum = 0;
  int n = 0;
  for (const auto& j : o.jobs) {
    lo = std::min(lo, j.speedup_lo);
    hi = std::max(hi, j.speedup_hi);
    if (j.speedup > 0 && std::isfinite(j.speedup)) {
      log_sum += std::log(j.speedup);
      ++n;
    }
  }
  const double speedup = n ? std::exp(log_sum / n) : NAN;
  d.figures = {{"speedup", num(speedup)}, {"lo", num(lo)},    {"hi", num(hi)},
               {"jobs", o.jobs.size()},   {"verdict", o.merged_verdict}, {"confirmed", o.verdict_confirmed}};
  if (o.jobs.empty() || n == 0) {
    d.outcome = "ambiguous";
    d.reason = "no job measured a speedup";
    return d;
  }
  const std::string span = fmt::format("b's speedup over a {:.3f}, 95% interval over {} job(s) [{:.3f}, {:.3f}]", speedup, o.jobs.size(), lo, hi);
  decide_by_placement(d, lo, hi, want, span, "expected");
  if (d.outcome == "certified" && o.verdict_confirmed) {
    d.reason += fmt::format("; verdict {} confirmed", o.merged_verdict);
  } else if (d.outcome == "certified") {
    d.outcome = "ambiguous";
    d.reason = fmt::format("{} lies inside the expected {}, but the jobs' verdicts disagree ({})", span, want.to_string(), o.merged_verdict);
  }
  return d;
}

Decision decide_measure(const Entry& e, const ProbeOutcome& o) {
  Decision d;
  const Figure& f = e.probe.figure;
  const Range& want = e.probe.accept;
  double lo = INFINITY, hi = 0, log_sum = 0;
  int n = 0;
  bool undetermined = false;
  for (const auto& j : o.jobs) {
    auto iv = figure_interval(j.seconds, o.work, f.scale);
    if (!iv) {
      undetermined = true;
      continue;
    }
    lo = std::min(lo, iv->lo);
    hi = std::max(hi, iv->hi);
    log_sum += std::log(iv->value);
    ++n;
  }
  const double value = n ? std::exp(log_sum / n) : NAN;
  d.figures = {{"name", f.name}, {"value", num(value)}, {"lo", num(lo)}, {"hi", num(hi)}, {"unit", f.unit}, {"jobs", o.jobs.size()}};
  if (n == 0 || undetermined) {
    d.outcome = "ambiguous";
    d.reason = "too few samples in some job for a 95% interval of the median time";
    return d;
  }
  const std::string span = fmt::format("{} {:.4g} {}, 95% interval over {} job(s) [{:.4g}, {:.4g}]", f.name, value, f.unit, n, lo, hi);
  decide_by_placement(d, lo, hi, want, span, "accepted");
  return d;
}

std::string number_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

Decision decide_metric(const Entry& e, const ProbeOutcome& o) {
  Decision d;
  const Metric& m = e.probe.metric;
  const judge::profile::MetricDef* def = judge::profile::find_metric(m.name);
  const std::string unit = def ? std::string(def->unit) : "";
  const Range& want = m.expect;
  d.figures = {{"name", m.name}, {"unit", unit}, {"jobs", o.jobs.size()}};
  if (o.jobs.empty()) {
    d.outcome = "ambiguous";
    d.reason = "no job profiled the kernel";
    return d;
  }
  // A metric this machine cannot measure decides nothing: the claim is neither confirmed nor refuted here.
  for (const auto& j : o.jobs) {
    if (!j.metric_value) {
      d.figures["unsupported"] = j.metric_unsupported;
      d.outcome = "ambiguous";
      d.reason = fmt::format("unsupported here: {} cannot be measured on this machine: {}", m.name, j.metric_unsupported);
      return d;
    }
  }
  double lo = INFINITY, hi = -INFINITY;
  std::vector<double> centers;
  std::string basis;
  const bool deterministic = deterministic_metric(m.name);
  const bool per_call = !deterministic && std::all_of(o.jobs.begin(), o.jobs.end(), [](const ProbeJob& j) { return !j.metric_samples.empty(); });
  size_t calls = 0;
  for (const auto& j : o.jobs) {
    if (per_call) {
      auto iv = median_interval(j.metric_samples);
      calls += j.metric_samples.size();
      if (!iv) {
        d.outcome = "ambiguous";
        d.reason = fmt::format("too few calls in some job ({}) for a 95% interval of the median of {}", j.metric_samples.size(), m.name);
        return d;
      }
      lo = std::min(lo, iv->lo);
      hi = std::max(hi, iv->hi);
      centers.push_back(iv->value);
    } else {
      lo = std::min(lo, *j.metric_value);
      hi = std::max(hi, *j.metric_value);
      centers.push_back(*j.metric_value);
    }
  }
  const double value = judge::median_of(centers);
  d.figures["value"] = num(value);
  d.figures["lo"] = num(lo);
  d.figures["hi"] = num(hi);
  if (per_call) {
    d.figures["calls"] = calls;
    basis = fmt::format("median over the calls {} {}, 95% interval over {} job(s) of {} calls [{}, {}]", number_text(value), unit,
                        o.jobs.size(), calls / o.jobs.size(), number_text(lo), number_text(hi));
  } else if (deterministic) {
    basis = lo == hi ? fmt::format("= {} {} in each of {} job(s) (deterministic)", number_text(value), unit, o.jobs.size())
                     : fmt::format("= {} {}, the {} job(s) giving [{}, {}]", number_text(value), unit, o.jobs.size(), number_text(lo), number_text(hi));
  } else {
    basis = fmt::format("{} {}, range over {} job(s) [{}, {}]", number_text(value), unit, o.jobs.size(), number_text(lo), number_text(hi));
  }
  const std::string span = fmt::format("{} {}", m.name, basis);
  decide_by_placement(d, lo, hi, want, span, "expected");
  return d;
}

} // namespace

bool deterministic_metric(std::string_view name) {
  for (std::string_view prefix : {"static.", "cg.", "cuda.", "compile.vectorized_loops"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::optional<FigureInterval> median_interval(const std::vector<double>& values) {
  std::vector<double> finite;
  for (double v : values) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  // estimate_from_log_ratios computes the median and its distribution-free interval of whatever
  // numbers it is given; here they are the raw values, not logs.
  judge::PairedEstimate est = judge::estimate_from_log_ratios(finite);
  if (est.n == 0 || !est.ci_determined) return std::nullopt;
  return FigureInterval{est.median_log_ratio, est.log_lo, est.log_hi};
}

std::optional<FigureInterval> figure_interval(const std::vector<double>& seconds, double work, double scale) {
  std::vector<double> logs;
  for (double s : seconds) {
    if (s > 0 && std::isfinite(s)) logs.push_back(std::log(s));
  }
  // The judge's distribution-free interval of a median, applied to log times.
  judge::PairedEstimate est = judge::estimate_from_log_ratios(logs);
  if (est.n == 0 || !est.ci_determined || work <= 0) return std::nullopt;
  FigureInterval out;
  out.value = work / std::exp(est.median_log_ratio) / scale;
  out.lo = work / std::exp(est.log_hi) / scale; // the slowest time gives the lowest figure
  out.hi = work / std::exp(est.log_lo) / scale;
  return out;
}

Decision decide(const Entry& entry, const ProbeOutcome& outcome) {
  switch (entry.probe.kind) {
  case ProbeKind::Paired: return decide_paired(entry, outcome);
  case ProbeKind::Measure: return decide_measure(entry, outcome);
  case ProbeKind::Metric: return decide_metric(entry, outcome);
  }
  return {"ambiguous", nlohmann::json::object(), "unknown probe kind"};
}

Expected<CertifyResult> certify(Entry& entry, ProbeRunner& runner, const TargetFingerprint& target, bool write) {
  CertifyResult out;
  std::vector<std::string> missing;
  for (const auto& f : entry.probe.requires_flags) {
    if (!target.has_flag(f)) missing.push_back(f);
  }
  if (entry.target != target.target_class()) {
    return fail("entry {} is for target {}, and this machine is {}: certify it on a {} machine", entry.id, entry.target,
                target.target_class(), entry.target);
  }
  if (!missing.empty()) {
    out.decision.outcome = "refuted";
    out.decision.reason = fmt::format("not applicable: this CPU lacks {}", fmt::join(missing, ", "));
  } else {
    TEMPER_TRY_ASSIGN(ProbeOutcome o, runner.run(entry));
    out.decision = decide(entry, o);
    out.evidence.report_hash = o.report_hash;
    if (!o.note.empty()) out.decision.figures["protocol"] = o.note;
  }
  out.evidence.date = judge::utc_now();
  out.evidence.fingerprint = target.id();
  out.evidence.target = target.target_class();
  out.evidence.outcome = out.decision.outcome;
  out.evidence.figures = out.decision.figures;
  out.evidence.reason = out.decision.reason;
  // Ambiguity leaves an entry proposed, even one certified before: the claim is not confirmed here.
  out.new_status = out.decision.outcome == "certified" ? EntryStatus::Certified
                   : out.decision.outcome == "refuted" ? EntryStatus::Refuted
                                                       : EntryStatus::Proposed;
  entry.evidence.push_back(out.evidence);
  entry.status = out.new_status;
  if (write) TEMPER_TRY(write_status_and_evidence(entry));
  return out;
}

} // namespace temper::kb
