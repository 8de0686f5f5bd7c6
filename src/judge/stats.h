// The statistics behind timing verdicts: per-arm summaries, the paired speedup estimate with
// its confidence interval, the noise threshold, the verdict, the aggregate over cases, the
// CANN-Bench score and the merge of a gate with its confirmation. Pure functions on numbers;
// paired.h produces the samples.
#pragma once

#include "util/error.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace temper::judge {

// ---- One arm -------------------------------------------------------------------------------

// Order statistics and moments of one arm's times. Quantiles are Hyndman & Fan type 7 (R's
// default, numpy's "linear"): for sorted x[0..n-1], Q(p) = x[j] + g (x[j+1] - x[j]) with
// h = (n-1) p, j = floor(h), g = h - j. Empty input gives n = 0 and all fields 0.
struct ArmStats {
  int n = 0;
  double min = 0;
  double q1 = 0;
  double median = 0;
  double mean = 0;
  double q3 = 0;
  double max = 0;
  double rel_spread = 0; // (q3 - q1) / median; 0 when the median is 0
  double rel_stdev = 0;  // sample standard deviation (n - 1) / mean; 0 when n < 2 or mean is 0
};

ArmStats summarize(std::span<const double> samples);

// Type-7 quantile of already sorted values, p in [0, 1]. Precondition: sorted is not empty.
double quantile_sorted(std::span<const double> sorted, double p);

// Median of values in any order (type 7, i.e. the mean of the two middle values for even n).
// NaN for an empty span.
double median_of(std::span<const double> values);

// ---- Paired estimate -----------------------------------------------------------------------

// How the interval of the median log-ratio is computed.
//  OrderStatistic (default): the distribution-free interval [r_(k), r_(n-k+1)] with k the
//    largest rank such that P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2. It needs only that
//    the rounds' log-ratios are independent draws with median m: no symmetry, no normality, and
//    its coverage is exact (at least the nominal level), where the percentile bootstrap of a
//    median undercovers at small n. It is deterministic without a seed, and it says by itself
//    when n is too small: at 95% no k exists for n < 6 (even [min, max] covers only 93.75%
//    at n = 5), so the interval is reported undetermined instead of pretending.
//  Bootstrap: percentile interval of the median over `resamples` resamples drawn with a seeded
//    std::mt19937_64 (fully specified by the standard, so identical across compilers). Kept for
//    comparison with the measurements in the reference notes; it is declared undetermined for
//    the same small n as OrderStatistic.
//  Lives: rounds come from several worker lives (paired.h): every life is a fresh pair of
//    processes and arenas, so each has its own code and data placement, and a placement effect
//    (1-5% on this machine's VMs, lasting a whole process) is shared by the rounds of a life.
//    The rounds of a life are then not independent draws, and an interval over rounds is too
//    narrow. Each life with at least 2 rounds (1 when every life has one: slow kernels) gives
//    its median log-ratio m_l; the estimate is their mean and the interval Student's t over the
//    L lives, mean +- t(L-1) sd(m) / sqrt(L), so placement noise is in the width. Undetermined
//    below 3 lives.
enum class CiMethod { OrderStatistic, Bootstrap, Lives };

struct CiOptions {
  CiMethod method = CiMethod::OrderStatistic;
  double confidence = 0.95;
  int resamples = 2000; // Bootstrap only
  uint64_t seed = 0;    // Bootstrap only
};

// The candidate's speedup over the reference from rounds paired in time:
// r_i = ln(t_ref,i / t_cand,i), speedup = exp(median r_i); > 1 means the candidate is faster.
// When the interval is undetermined its ends are -inf/+inf (speedup 0/+inf) and half_width is
// +inf. With n == 0 the median and speedup are NaN.
struct PairedEstimate {
  int n = 0;       // rounds used
  int dropped = 0; // rounds left out because a time was not positive and finite
  double median_log_ratio = 0;
  double speedup = 1;
  bool ci_determined = false;
  double confidence = 0.95; // nominal level asked for
  double coverage = 0;      // OrderStatistic: exact coverage achieved; Bootstrap: nominal
  double log_lo = 0;
  double log_hi = 0;
  double speedup_lo = 0; // exp(log_lo)
  double speedup_hi = 0; // exp(log_hi)
  double half_width = 0; // (log_hi - log_lo) / 2, in log units
  CiMethod method = CiMethod::OrderStatistic;
  int lives = 1;         // CiMethod::Lives: lives averaged over
};

// From per-round log-ratios (non-finite values are dropped and counted).
PairedEstimate estimate_from_log_ratios(std::span<const double> log_ratios,
                                        const CiOptions& options = {});

// From per-round times of both arms, same length, round i in both spans.
PairedEstimate estimate_paired(std::span<const double> ref_seconds,
                               std::span<const double> cand_seconds,
                               const CiOptions& options = {});

// From per-round log-ratios and each round's life (same length; see CiMethod::Lives). One life
// in all gives estimate_from_log_ratios with `options` (no placement to average over).
PairedEstimate estimate_from_lives(std::span<const double> log_ratios, std::span<const int> lives,
                                   const CiOptions& options = {});

// Number of lives with at least 2 finite rounds (1 when no life has 2): what CiMethod::Lives
// averages over.
int usable_lives(std::span<const double> log_ratios, std::span<const int> lives);

// Student's t distribution: the quantile at p in (0, 1) for df >= 1 degrees of freedom.
double student_t_quantile(double p, int df);

// Smallest n for which the order-statistic interval exists at this confidence (6 at 95%).
int min_rounds_for_interval(double confidence);

// ---- Noise threshold and verdict -----------------------------------------------------------

inline constexpr double kDefaultNoiseFloor = 0.01; // builds that differ only in layout move 1.5-4%

// The relative noise an A/A run (the same artifact in both arms) showed for a case: how far its
// speedup interval reaches from 1, max(speedup_hi - 1, 1 / speedup_lo - 1), so the SAME band of
// later comparisons contains that whole interval. nullopt when its interval is undetermined.
std::optional<double> aa_noise(const PairedEstimate& aa);

// delta = max(floor, calibrated A/A noise of the case when known).
double noise_threshold(std::optional<double> calibrated_aa, double floor = kDefaultNoiseFloor);

enum class Verdict { Faster, Slower, Same, Ambiguous };

std::string_view verdict_name(Verdict v); // FASTER, SLOWER, SAME, AMBIGUOUS
std::optional<Verdict> parse_verdict(std::string_view name);

// For the candidate, with L = ln(1 + delta) on the log-ratio interval [lo, hi]:
//   FASTER  iff lo > L           (the whole speedup interval above 1 + delta)
//   SLOWER  iff hi < -L          (wholly below 1 / (1 + delta))
//   SAME    iff -L <= lo and hi <= L (wholly inside the band, ends included)
//   AMBIGUOUS otherwise, and whenever the interval is undetermined.
Verdict decide_verdict(const PairedEstimate& e, double delta);

// What would likely decide an AMBIGUOUS estimate: the verdict its centre points to and how many
// times the samples it took. Interval widths shrink as 1/sqrt(samples), so the interval
// [lo, hi] around the centre m shrinks by k with k^2 times the samples; the projection is the
// smallest k that moves the shrunk interval wholly past the band (FASTER, SLOWER) or inside it
// (SAME). An extrapolation that holds only if the estimate and the noise stay as measured.
// nullopt when the estimate is already decided or undetermined; `sample_factor` is infinite
// when the centre sits on the band's edge (no amount of measurement decides it).
struct DecisionProjection {
  Verdict towards = Verdict::Ambiguous;
  double sample_factor = 1;
};
std::optional<DecisionProjection> project_decision(const PairedEstimate& e, double delta);

// ---- Aggregate over cases ------------------------------------------------------------------

struct CaseComparison {
  PairedEstimate estimate;
  Verdict verdict = Verdict::Ambiguous; // decided per case, each with its own delta
};

// Geometric-mean speedup = exp(mean of the cases' median log-ratios) over cases with n > 0.
// Interval: the cases are fixed (the task's case list), not drawn from a population, so the
// question is how much measurement noise moves this mean, not how the mean would vary over
// other cases. A bootstrap over cases answers the latter and mostly measures how different the
// cases are. So the per-case intervals are combined: treating each half-width h_i as z times the
// standard error of an independent per-case estimate, the mean of N estimates has half-width
// sqrt(sum h_i^2) / N at the same confidence (z cancels). Undetermined if any included case's
// interval is.
struct Aggregate {
  int cases = 0;         // all cases given
  int cases_in_mean = 0; // with n > 0
  double geomean_speedup = 0; // NaN when no case has data
  bool ci_determined = false;
  double log_lo = 0;
  double log_hi = 0;
  double speedup_lo = 0;
  double speedup_hi = 0;
  Verdict verdict = Verdict::Ambiguous; // of the geomean interval against delta
  int faster = 0;
  int slower = 0;
  int same = 0;
  int ambiguous = 0;
};

Aggregate aggregate_cases(std::span<const CaseComparison> cases,
                          double delta = kDefaultNoiseFloor);

// ---- CANN-Bench ----------------------------------------------------------------------------

// score = (T_base - T_HW) / ((T_cand - T_HW) + (T_base - T_HW)): 0.5 at parity, 1 at the
// hardware bound, above 1 below it (unclipped), towards 0 when slow. Any consistent time unit.
// An error when the times are not positive and finite, when T_base <= T_HW (no headroom) or
// when the denominator is not positive (the candidate is so far below the bound that the
// formula breaks: a measurement to distrust, not a score).
Expected<double> cann_bench_score(double t_base, double t_cand, double t_hw);

// CANN-Bench's baseline when none is recorded: max(10 T_HW, 10 us), in seconds.
double cann_bench_default_baseline(double t_hw_seconds);

// ---- Confirmation --------------------------------------------------------------------------

// One case judged by N measurement jobs (the gate) and M confirmation jobs (fresh processes,
// new secret seed, reversed arm order).
//  1. Each group's verdict is unanimous-or-AMBIGUOUS: V if every job in it says V, else
//     AMBIGUOUS (any disagreement inside a group is evidence the effect is not resolved).
//  2. N = 0: AMBIGUOUS, not confirmed.
//     M = 0: the gate's verdict, not confirmed (a provisional result; it does not count).
//     Both groups agree on V: V, confirmed.
//     They disagree: AMBIGUOUS, confirmed = false.
// Only a confirmed result counts for a gate.
struct MergedVerdict {
  Verdict verdict = Verdict::Ambiguous;
  bool confirmed = false;
  std::string_view reason; // static text: "agreed", "unconfirmed", "disagree", ...
};

MergedVerdict merge_confirmation(std::span<const Verdict> measurement,
                                 std::span<const Verdict> confirmation);

} // namespace temper::judge
