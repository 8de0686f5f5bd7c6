#include "judge/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

namespace temper::judge {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// log P(Binomial(n, 1/2) = i), in log space so that large n does not underflow 2^-n.
double log_binomial_half(int n, int i) {
  return std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
         n * std::log(2.0);
}

// The largest k >= 1 with P(B < k) <= alpha_half for B ~ Binomial(n, 1/2), or 0 when none;
// `tail` receives P(B < k).
int order_statistic_rank(int n, double alpha_half, double& tail) {
  tail = 0;
  int k = 0;
  for (int i = 0; i <= n / 2; ++i) {
    double next = tail + std::exp(log_binomial_half(n, i));
    if (next > alpha_half) break;
    tail = next;
    k = i + 1;
  }
  return k;
}

void set_undetermined(PairedEstimate& e) {
  e.ci_determined = false;
  e.coverage = 0;
  e.log_lo = -kInf;
  e.log_hi = kInf;
  e.speedup_lo = 0;
  e.speedup_hi = kInf;
  e.half_width = kInf;
}

void set_interval(PairedEstimate& e, double lo, double hi, double coverage) {
  e.ci_determined = true;
  e.coverage = coverage;
  e.log_lo = lo;
  e.log_hi = hi;
  e.speedup_lo = std::exp(lo);
  e.speedup_hi = std::exp(hi);
  e.half_width = (hi - lo) / 2;
}

// Percentile bootstrap of the median. Index draws take the engine's raw output modulo n: the
// engine is specified exactly by the standard (distributions are not), and the modulo bias is
// below n / 2^64.
std::pair<double, double> bootstrap_median_interval(std::span<const double> sorted,
                                                    const CiOptions& options) {
  const size_t n = sorted.size();
  const int resamples = std::max(options.resamples, 1);
  std::mt19937_64 rng(options.seed);
  std::vector<double> medians(static_cast<size_t>(resamples));
  std::vector<double> draw(n);
  for (double& m : medians) {
    for (double& x : draw) x = sorted[static_cast<size_t>(rng() % n)];
    std::sort(draw.begin(), draw.end());
    m = quantile_sorted(draw, 0.5);
  }
  std::sort(medians.begin(), medians.end());
  const double alpha_half = (1 - options.confidence) / 2;
  return {quantile_sorted(medians, alpha_half), quantile_sorted(medians, 1 - alpha_half)};
}

} // namespace

double quantile_sorted(std::span<const double> sorted, double p) {
  const double h = (static_cast<double>(sorted.size()) - 1) * std::clamp(p, 0.0, 1.0);
  const size_t j = static_cast<size_t>(std::floor(h));
  if (j + 1 >= sorted.size()) return sorted[sorted.size() - 1];
  const double g = h - static_cast<double>(j);
  return sorted[j] + g * (sorted[j + 1] - sorted[j]);
}

double median_of(std::span<const double> values) {
  if (values.empty()) return kNaN;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

ArmStats summarize(std::span<const double> samples) {
  ArmStats s;
  if (samples.empty()) return s;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  s.n = static_cast<int>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.q1 = quantile_sorted(v, 0.25);
  s.median = quantile_sorted(v, 0.5);
  s.q3 = quantile_sorted(v, 0.75);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / s.n;
  if (s.median != 0) s.rel_spread = (s.q3 - s.q1) / s.median;
  if (s.n >= 2 && s.mean != 0) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.rel_stdev = std::sqrt(ss / (s.n - 1)) / std::abs(s.mean);
  }
  return s;
}

int min_rounds_for_interval(double confidence) {
  // [min, max] covers 1 - 2^(1-n): the first n where that reaches the level.
  const double alpha_half = (1 - confidence) / 2;
  int n = 1;
  while (n < 64 && std::ldexp(1.0, -n) > alpha_half) ++n;
  return n;
}

PairedEstimate estimate_from_log_ratios(std::span<const double> log_ratios,
                                        const CiOptions& options) {
  PairedEstimate e;
  e.method = options.method;
  e.confidence = options.confidence;
  std::vector<double> r;
  r.reserve(log_ratios.size());
  for (double x : log_ratios) {
    if (std::isfinite(x))
      r.push_back(x);
    else
      ++e.dropped;
  }
  e.n = static_cast<int>(r.size());
  set_undetermined(e);
  if (r.empty()) {
    e.median_log_ratio = kNaN;
    e.speedup = kNaN;
    return e;
  }
  std::sort(r.begin(), r.end());
  e.median_log_ratio = quantile_sorted(r, 0.5);
  e.speedup = std::exp(e.median_log_ratio);

  const double alpha_half = (1 - options.confidence) / 2;
  double tail = 0;
  const int k = order_statistic_rank(e.n, alpha_half, tail);
  if (k == 0) return e; // too few rounds for any honest interval at this level
  if (options.method == CiMethod::Bootstrap) {
    auto [lo, hi] = bootstrap_median_interval(r, options);
    set_interval(e, lo, hi, options.confidence);
  } else {
    set_interval(e, r[static_cast<size_t>(k - 1)], r[static_cast<size_t>(e.n - k)], 1 - 2 * tail);
  }
  return e;
}

PairedEstimate estimate_paired(std::span<const double> ref_seconds,
                               std::span<const double> cand_seconds, const CiOptions& options) {
  const size_t n = std::min(ref_seconds.size(), cand_seconds.size());
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) {
    const double a = ref_seconds[i];
    const double b = cand_seconds[i];
    // A zero, negative or non-finite time has no ratio; NaN marks the round as dropped.
    r[i] = (a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b)) ? std::log(a / b) : kNaN;
  }
  PairedEstimate e = estimate_from_log_ratios(r, options);
  e.dropped += static_cast<int>(std::max(ref_seconds.size(), cand_seconds.size()) - n);
  return e;
}

namespace {

// Regularized incomplete beta I_x(a, b) by its continued fraction (modified Lentz), used where
// it converges fast (x < (a + 1) / (a + b + 2)) and by symmetry elsewhere.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return h;
}

double regularized_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, int df) {
  const double v = df;
  const double tail = 0.5 * regularized_beta(v / 2, 0.5, v / (v + t * t));
  return t >= 0 ? 1 - tail : tail;
}

} // namespace

double student_t_quantile(double p, int df) {
  if (!(p > 0 && p < 1) || df < 1) return kNaN;
  if (p == 0.5) return 0;
  // Bisection on the CDF: monotone, and 200 halvings of [-1e6, 1e6] are far below double
  // precision of any quantile a confidence level asks for.
  double lo = -1e6, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

namespace {

// Finite log-ratios grouped by life, lives in first-seen order.
std::vector<std::vector<double>> group_by_life(std::span<const double> log_ratios, std::span<const int> lives, int& dropped) {
  std::vector<std::vector<double>> groups;
  std::vector<int> ids;
  dropped = 0;
  const size_t n = std::min(log_ratios.size(), lives.size());
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(log_ratios[i])) {
      ++dropped;
      continue;
    }
    auto it = std::find(ids.begin(), ids.end(), lives[i]);
    if (it == ids.end()) {
      ids.push_back(lives[i]);
      groups.emplace_back();
      it = ids.end() - 1;
    }
    groups[static_cast<size_t>(it - ids.begin())].push_back(log_ratios[i]);
  }
  return groups;
}

// The rounds a life needs to count: 2, so a life the cap cut short after one round does not
// weigh as much as a whole one; but 1 when no life has more (a slow kernel measured one round
// per life, where the single round is the life's whole measurement).
size_t min_life_rounds(const std::vector<std::vector<double>>& groups) {
  for (const auto& g : groups)
    if (g.size() >= 2) return 2;
  return 1;
}

} // namespace

int usable_lives(std::span<const double> log_ratios, std::span<const int> lives) {
  int dropped = 0;
  int count = 0;
  const auto groups = group_by_life(log_ratios, lives, dropped);
  const size_t need = min_life_rounds(groups);
  for (const auto& g : groups) count += g.size() >= need;
  return count;
}

PairedEstimate estimate_from_lives(std::span<const double> log_ratios, std::span<const int> lives, const CiOptions& options) {
  int dropped = 0;
  const auto groups = group_by_life(log_ratios, lives, dropped);
  if (groups.size() <= 1) return estimate_from_log_ratios(log_ratios, options);
  PairedEstimate e;
  e.method = CiMethod::Lives;
  e.confidence = options.confidence;
  e.dropped = dropped + static_cast<int>(log_ratios.size() - std::min(log_ratios.size(), lives.size()));
  std::vector<double> medians;
  const size_t need = min_life_rounds(groups);
  for (const auto& g : groups) {
    e.n += static_cast<int>(g.size());
    if (g.size() >= need) medians.push_back(median_of(g));
  }
  set_undetermined(e);
  e.lives = static_cast<int>(medians.size());
  if (medians.empty()) {
    e.median_log_ratio = kNaN;
    e.speedup = kNaN;
    return e;
  }
  double mean = 0;
  for (double m : medians) mean += m;
  mean /= static_cast<double>(medians.size());
  e.median_log_ratio = mean;
  e.speedup = std::exp(mean);
  const int L = static_cast<int>(medians.size());
  if (L < 3) return e;
  double ss = 0;
  for (double m : medians) ss += (m - mean) * (m - mean);
  const double se = std::sqrt(ss / (L - 1)) / std::sqrt(static_cast<double>(L));
  const double t = student_t_quantile(1 - (1 - options.confidence) / 2, L - 1);
  set_interval(e, mean - t * se, mean + t * se, options.confidence);
  return e;
}

std::optional<double> aa_noise(const PairedEstimate& aa) {
  if (!aa.ci_determined) return std::nullopt;
  return std::max({std::expm1(aa.log_hi), std::expm1(-aa.log_lo), 0.0});
}

double noise_threshold(std::optional<double> calibrated_aa, double floor) {
  double d = std::isfinite(floor) ? std::max(floor, 0.0) : 0.0;
  if (calibrated_aa && std::isfinite(*calibrated_aa)) d = std::max(d, *calibrated_aa);
  return d;
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
  case Verdict::Faster: return "FASTER";
  case Verdict::Slower: return "SLOWER";
  case Verdict::Same: return "SAME";
  case Verdict::Ambiguous: return "AMBIGUOUS";
  }
  return "AMBIGUOUS";
}

std::optional<Verdict> parse_verdict(std::string_view name) {
  for (Verdict v : {Verdict::Faster, Verdict::Slower, Verdict::Same, Verdict::Ambiguous})
    if (verdict_name(v) == name) return v;
  return std::nullopt;
}

Verdict decide_verdict(const PairedEstimate& e, double delta) {
  if (e.n == 0 || !e.ci_determined) return Verdict::Ambiguous;
  const double band = std::log1p(std::max(delta, 0.0));
  if (e.log_lo > band) return Verdict::Faster;
  if (e.log_hi < -band) return Verdict::Slower;
  if (e.log_lo >= -band && e.log_hi <= band) return Verdict::Same;
  return Verdict::Ambiguous;
}

std::optional<DecisionProjection> project_decision(const PairedEstimate& e, double delta) {
  if (decide_verdict(e, delta) != Verdict::Ambiguous || e.n == 0 || !e.ci_determined) return std::nullopt;
  const double band = std::log1p(std::max(delta, 0.0));
  const double m = e.median_log_ratio;
  const double below = std::max(m - e.log_lo, 0.0); // the interval's reach on each side of m
  const double above = std::max(e.log_hi - m, 0.0);
  DecisionProjection p;
  double k = kInf; // shrink factor of the interval's reach
  if (m > band) {
    p.towards = Verdict::Faster;
    k = below / (m - band);
  } else if (m < -band) {
    p.towards = Verdict::Slower;
    k = above / (-band - m);
  } else if (m > -band && m < band) {
    p.towards = Verdict::Same;
    k = std::max(below / (m + band), above / (band - m));
  }
  p.sample_factor = std::isfinite(k) ? std::max(k * k, 1.0) : kInf;
  return p;
}

Aggregate aggregate_cases(std::span<const CaseComparison> cases, double delta) {
  Aggregate a;
  a.cases = static_cast<int>(cases.size());
  double sum = 0;
  double sum_h2 = 0;
  bool all_determined = true;
  for (const CaseComparison& c : cases) {
    switch (c.verdict) {
    case Verdict::Faster: ++a.faster; break;
    case Verdict::Slower: ++a.slower; break;
    case Verdict::Same: ++a.same; break;
    case Verdict::Ambiguous: ++a.ambiguous; break;
    }
    if (c.estimate.n == 0 || !std::isfinite(c.estimate.median_log_ratio)) continue;
    ++a.cases_in_mean;
    sum += c.estimate.median_log_ratio;
    if (c.estimate.ci_determined)
      sum_h2 += c.estimate.half_width * c.estimate.half_width;
    else
      all_determined = false;
  }
  a.log_lo = -kInf;
  a.log_hi = kInf;
  a.speedup_hi = kInf;
  if (a.cases_in_mean == 0) {
    a.geomean_speedup = kNaN;
    return a;
  }
  const double mean = sum / a.cases_in_mean;
  a.geomean_speedup = std::exp(mean);
  if (!all_determined) return a;
  const double half = std::sqrt(sum_h2) / a.cases_in_mean;
  a.ci_determined = true;
  a.log_lo = mean - half;
  a.log_hi = mean + half;
  a.speedup_lo = std::exp(a.log_lo);
  a.speedup_hi = std::exp(a.log_hi);
  PairedEstimate as_one; // reuse the per-case rule on the aggregate interval
  as_one.n = a.cases_in_mean;
  as_one.ci_determined = true;
  as_one.log_lo = a.log_lo;
  as_one.log_hi = a.log_hi;
  a.verdict = decide_verdict(as_one, delta);
  return a;
}

Expected<double> cann_bench_score(double t_base, double t_cand, double t_hw) {
  for (double t : {t_base, t_cand, t_hw})
    if (!(t > 0) || !std::isfinite(t))
      return fail("CANN-Bench score needs positive finite times (base {}, candidate {}, bound {})",
                  t_base, t_cand, t_hw);
  if (t_base <= t_hw)
    return fail("CANN-Bench score: baseline {} is not above the hardware bound {}", t_base, t_hw);
  const double den = (t_cand - t_hw) + (t_base - t_hw);
  if (den <= 0)
    return fail("CANN-Bench score: candidate time {} is too far below the hardware bound {}",
                t_cand, t_hw);
  return (t_base - t_hw) / den;
}

double cann_bench_default_baseline(double t_hw_seconds) {
  return std::max(10 * t_hw_seconds, 10e-6);
}

namespace {

std::optional<Verdict> unanimous(std::span<const Verdict> vs) {
  if (vs.empty()) return std::nullopt;
  for (Verdict v : vs)
    if (v != vs.front()) return Verdict::Ambiguous;
  return vs.front();
}

} // namespace

MergedVerdict merge_confirmation(std::span<const Verdict> measurement,
                                 std::span<const Verdict> confirmation) {
  const auto gate = unanimous(measurement);
  if (!gate) return {Verdict::Ambiguous, false, "no_measurement"};
  const auto confirm = unanimous(confirmation);
  if (!confirm) return {*gate, false, "unconfirmed"};
  if (*gate == *confirm) return {*gate, true, "agreed"};
  return {Verdict::Ambiguous, false, "disagree"};
}

} // namespace temper::judge
