#include "judge/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace stats_test {

using namespace temper::judge;

namespace {

PairedEstimate interval(double lo, double hi) {
  PairedEstimate e;
  e.n = 20;
  e.ci_determined = true;
  e.log_lo = lo;
  e.log_hi = hi;
  e.median_log_ratio = (lo + hi) / 2;
  e.half_width = (hi - lo) / 2;
  return e;
}

} // namespace

TEST(Stats, SummarizeUsesType7Quantiles) {
  std::vector<double> x = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  ArmStats s = summarize(x);
  EXPECT_EQ(s.n, 10);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.q1, 3.25); // h = 9 * 0.25 = 2.25: x[2] + 0.25 (x[3] - x[2])
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.q3, 7.75);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.rel_spread, 4.5 / 5.5);
  EXPECT_NEAR(s.rel_stdev, std::sqrt(82.5 / 9) / 5.5, 1e-12);
}

TEST(Stats, SummarizeSmallAndEmpty) {
  std::vector<double> odd = {3, 1, 2};
  EXPECT_DOUBLE_EQ(summarize(odd).median, 2);
  std::vector<double> one = {4};
  ArmStats s1 = summarize(one);
  EXPECT_EQ(s1.n, 1);
  EXPECT_DOUBLE_EQ(s1.q1, 4);
  EXPECT_DOUBLE_EQ(s1.q3, 4);
  EXPECT_DOUBLE_EQ(s1.rel_stdev, 0);
  ArmStats s0 = summarize({});
  EXPECT_EQ(s0.n, 0);
  EXPECT_DOUBLE_EQ(s0.median, 0);
  EXPECT_TRUE(std::isnan(median_of({})));
  std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(median_of(even), 2.5);
}

TEST(Stats, ExactRatioGivesExactSpeedup) {
  std::vector<double> ref = {2, 4, 6, 8, 10, 12, 14, 16};
  std::vector<double> cand = {1, 2, 3, 4, 5, 6, 7, 8};
  PairedEstimate e = estimate_paired(ref, cand);
  EXPECT_EQ(e.n, 8);
  EXPECT_NEAR(e.speedup, 2, 1e-12);
  ASSERT_TRUE(e.ci_determined);
  EXPECT_NEAR(e.speedup_lo, 2, 1e-12);
  EXPECT_NEAR(e.speedup_hi, 2, 1e-12);
  EXPECT_NEAR(e.half_width, 0, 1e-12);
  EXPECT_EQ(decide_verdict(e, 0.01), Verdict::Faster);
  EXPECT_EQ(decide_verdict(estimate_paired(cand, ref), 0.01), Verdict::Slower);
}

TEST(Stats, IntervalIsUndeterminedBelowSixRounds) {
  EXPECT_EQ(min_rounds_for_interval(0.95), 6);
  std::vector<double> r5 = {0.1, 0.2, 0.3, 0.4, 0.5};
  for (CiMethod m : {CiMethod::OrderStatistic, CiMethod::Bootstrap}) {
    CiOptions o;
    o.method = m;
    PairedEstimate e = estimate_from_log_ratios(r5, o);
    EXPECT_EQ(e.n, 5);
    EXPECT_FALSE(e.ci_determined);
    EXPECT_TRUE(std::isinf(e.half_width));
    EXPECT_EQ(e.speedup_lo, 0);
    EXPECT_TRUE(std::isinf(e.speedup_hi));
    EXPECT_NEAR(e.median_log_ratio, 0.3, 1e-12);
    EXPECT_EQ(decide_verdict(e, 0.01), Verdict::Ambiguous);
  }
  PairedEstimate none = estimate_from_log_ratios({});
  EXPECT_EQ(none.n, 0);
  EXPECT_TRUE(std::isnan(none.speedup));
  EXPECT_EQ(decide_verdict(none, 0.01), Verdict::Ambiguous);
}

TEST(Stats, OrderStatisticRanks) {
  // n = 6: only [min, max], coverage 1 - 2/64.
  std::vector<double> r6 = {0.6, 0.1, 0.5, 0.2, 0.4, 0.3};
  PairedEstimate e6 = estimate_from_log_ratios(r6);
  ASSERT_TRUE(e6.ci_determined);
  EXPECT_DOUBLE_EQ(e6.log_lo, 0.1);
  EXPECT_DOUBLE_EQ(e6.log_hi, 0.6);
  EXPECT_NEAR(e6.coverage, 1 - 2.0 / 64, 1e-12);
  // n = 10: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2) = 56/1024, so k = 2: [r(2), r(9)].
  std::vector<double> r10 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  PairedEstimate e10 = estimate_from_log_ratios(r10);
  EXPECT_DOUBLE_EQ(e10.log_lo, 2);
  EXPECT_DOUBLE_EQ(e10.log_hi, 9);
  EXPECT_NEAR(e10.coverage, 1 - 2 * 11.0 / 1024, 1e-12);
  EXPECT_DOUBLE_EQ(e10.half_width, 3.5);
  // Large n does not underflow: the interval narrows around the median.
  std::vector<double> big(2000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<double>(i);
  PairedEstimate eb = estimate_from_log_ratios(big);
  ASSERT_TRUE(eb.ci_determined);
  EXPECT_LT(eb.log_lo, 999.5);
  EXPECT_GT(eb.log_hi, 999.5);
  EXPECT_NEAR(eb.log_hi - eb.log_lo, 2 * 1.96 * std::sqrt(2000.0) / 2, 4);
  EXPECT_GE(eb.coverage, 0.95);
}

TEST(Stats, DropsRoundsWithoutARatio) {
  std::vector<double> ref = {1, 1, 0, 1, -1, 1, 1, NAN};
  std::vector<double> cand = {1, 1, 1, 1, 1, 1, 0, 1};
  PairedEstimate e = estimate_paired(ref, cand);
  EXPECT_EQ(e.n, 4);
  EXPECT_EQ(e.dropped, 4);
}

TEST(Stats, IntervalsCoverTheTrueMedian) {
  // Skewed, heavy-ish noise around a known median log-ratio of 0.05: the interval holds it in
  // about 95% of data sets (deterministic: fixed seed).
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> expo(1.0);
  const double truth = 0.05;
  const double ln2 = std::log(2.0); // median of Exp(1)
  for (CiMethod m : {CiMethod::OrderStatistic, CiMethod::Bootstrap}) {
    int covered = 0;
    const int sets = m == CiMethod::Bootstrap ? 300 : 1000;
    for (int s = 0; s < sets; ++s) {
      std::vector<double> r(40);
      for (double& x : r) x = truth + 0.02 * (expo(rng) - ln2);
      CiOptions o;
      o.method = m;
      o.seed = static_cast<uint64_t>(s);
      PairedEstimate e = estimate_from_log_ratios(r, o);
      ASSERT_TRUE(e.ci_determined);
      covered += e.log_lo <= truth && truth <= e.log_hi;
    }
    const double rate = static_cast<double>(covered) / sets;
    EXPECT_GT(rate, 0.92) << static_cast<int>(m);
    if (m == CiMethod::OrderStatistic) {
      EXPECT_LT(rate, 0.995);
    }
  }
}

TEST(Stats, BootstrapIsDeterministicForASeed) {
  std::vector<double> r = {0.01, -0.02, 0.03, 0.0, 0.015, -0.005, 0.02, 0.01, 0.005, -0.01};
  CiOptions o;
  o.method = CiMethod::Bootstrap;
  o.seed = 42;
  PairedEstimate a = estimate_from_log_ratios(r, o);
  PairedEstimate b = estimate_from_log_ratios(r, o);
  ASSERT_TRUE(a.ci_determined);
  EXPECT_EQ(a.log_lo, b.log_lo);
  EXPECT_EQ(a.log_hi, b.log_hi);
  EXPECT_LE(a.log_lo, a.median_log_ratio);
  EXPECT_GE(a.log_hi, a.median_log_ratio);
  EXPECT_EQ(a.method, CiMethod::Bootstrap);
}

TEST(Stats, VerdictAtAndAroundThresholds) {
  const double d = 0.01;
  const double band = std::log1p(d);
  const double eps = 1e-9;
  EXPECT_EQ(decide_verdict(interval(band + eps, band + 0.05), d), Verdict::Faster);
  EXPECT_EQ(decide_verdict(interval(band, band + 0.05), d), Verdict::Ambiguous); // touches
  EXPECT_EQ(decide_verdict(interval(-band - 0.05, -band - eps), d), Verdict::Slower);
  EXPECT_EQ(decide_verdict(interval(-band - 0.05, -band), d), Verdict::Ambiguous);
  EXPECT_EQ(decide_verdict(interval(-band, band), d), Verdict::Same); // ends included
  EXPECT_EQ(decide_verdict(interval(-band + eps, band - eps), d), Verdict::Same);
  EXPECT_EQ(decide_verdict(interval(-band - eps, band), d), Verdict::Ambiguous);
  EXPECT_EQ(decide_verdict(interval(-band, band + eps), d), Verdict::Ambiguous);
  EXPECT_EQ(decide_verdict(interval(-0.2, 0.2), d), Verdict::Ambiguous);
  // A larger delta turns a narrow FASTER into SAME.
  EXPECT_EQ(decide_verdict(interval(0.012, 0.015), 0.01), Verdict::Faster);
  EXPECT_EQ(decide_verdict(interval(0.012, 0.015), 0.02), Verdict::Same);
  PairedEstimate undetermined = interval(0.5, 0.6);
  undetermined.ci_determined = false;
  EXPECT_EQ(decide_verdict(undetermined, d), Verdict::Ambiguous);
}

TEST(Stats, NoiseThreshold) {
  EXPECT_DOUBLE_EQ(noise_threshold(std::nullopt), 0.01);
  EXPECT_DOUBLE_EQ(noise_threshold(0.004), 0.01);
  EXPECT_DOUBLE_EQ(noise_threshold(0.03), 0.03);
  EXPECT_DOUBLE_EQ(noise_threshold(0.03, 0.05), 0.05);
  EXPECT_DOUBLE_EQ(noise_threshold(NAN), 0.01);
  // An A/A interval [1/1.02, 1.01] reaches 2% from 1.
  auto n = aa_noise(interval(-std::log(1.02), std::log(1.01)));
  ASSERT_TRUE(n);
  EXPECT_NEAR(*n, 0.02, 1e-12);
  PairedEstimate undetermined;
  EXPECT_FALSE(aa_noise(undetermined));
  // Calibrated this way, the A/A interval itself is judged SAME.
  PairedEstimate aa = interval(-std::log(1.02), std::log(1.01));
  EXPECT_EQ(decide_verdict(aa, noise_threshold(aa_noise(aa))), Verdict::Same);
}

TEST(Stats, VerdictNames) {
  for (Verdict v : {Verdict::Faster, Verdict::Slower, Verdict::Same, Verdict::Ambiguous})
    EXPECT_EQ(parse_verdict(verdict_name(v)), v);
  EXPECT_EQ(verdict_name(Verdict::Ambiguous), "AMBIGUOUS");
  EXPECT_FALSE(parse_verdict("faster"));
}

TEST(Stats, AggregateGeomeanAndCombinedInterval) {
  std::vector<CaseComparison> cases(3);
  cases[0].estimate = interval(std::log(2.0) - 0.03, std::log(2.0) + 0.03);
  cases[0].estimate.median_log_ratio = std::log(2.0);
  cases[0].verdict = Verdict::Faster;
  cases[1].estimate = interval(std::log(0.5) - 0.04, std::log(0.5) + 0.04);
  cases[1].estimate.median_log_ratio = std::log(0.5);
  cases[1].verdict = Verdict::Slower;
  cases[2].verdict = Verdict::Ambiguous; // n = 0: counted, not in the mean
  Aggregate a = aggregate_cases(cases);
  EXPECT_EQ(a.cases, 3);
  EXPECT_EQ(a.cases_in_mean, 2);
  EXPECT_NEAR(a.geomean_speedup, 1.0, 1e-12);
  ASSERT_TRUE(a.ci_determined);
  EXPECT_NEAR(a.log_hi, 0.05 / 2, 1e-12); // sqrt(0.03^2 + 0.04^2) / 2
  EXPECT_NEAR(a.log_lo, -0.05 / 2, 1e-12);
  EXPECT_EQ(a.verdict, Verdict::Ambiguous);
  EXPECT_EQ(a.faster, 1);
  EXPECT_EQ(a.slower, 1);
  EXPECT_EQ(a.same, 0);
  EXPECT_EQ(a.ambiguous, 1);

  // All cases clearly 1.5x faster: the aggregate is too.
  std::vector<CaseComparison> fast(4);
  for (auto& c : fast) {
    c.estimate = interval(std::log(1.5) - 0.01, std::log(1.5) + 0.01);
    c.estimate.median_log_ratio = std::log(1.5);
    c.verdict = Verdict::Faster;
  }
  Aggregate f = aggregate_cases(fast);
  EXPECT_NEAR(f.geomean_speedup, 1.5, 1e-12);
  EXPECT_NEAR(f.log_hi - f.log_lo, 2 * 0.02 / 4, 1e-12);
  EXPECT_EQ(f.verdict, Verdict::Faster);

  // One undetermined case: the geomean stands, its interval does not.
  fast[0].estimate.ci_determined = false;
  Aggregate u = aggregate_cases(fast);
  EXPECT_NEAR(u.geomean_speedup, 1.5, 1e-12);
  EXPECT_FALSE(u.ci_determined);
  EXPECT_EQ(u.verdict, Verdict::Ambiguous);

  Aggregate empty = aggregate_cases({});
  EXPECT_EQ(empty.cases, 0);
  EXPECT_TRUE(std::isnan(empty.geomean_speedup));
}

TEST(Stats, CannBenchScore) {
  // Times in microseconds: bound 10, baseline 100.
  EXPECT_DOUBLE_EQ(*cann_bench_score(100, 100, 10), 0.5);  // parity
  EXPECT_DOUBLE_EQ(*cann_bench_score(100, 10, 10), 1.0);   // at the bound
  EXPECT_DOUBLE_EQ(*cann_bench_score(100, 190, 10), 1.0 / 3); // twice the headroom: slow
  EXPECT_GT(*cann_bench_score(100, 5, 10), 1.0);           // below the bound: unclipped
  EXPECT_LT(*cann_bench_score(100, 1e6, 10), 1e-3);        // towards 0 when very slow
  EXPECT_FALSE(cann_bench_score(10, 20, 10));              // no headroom
  EXPECT_FALSE(cann_bench_score(100, -1, 10));
  EXPECT_FALSE(cann_bench_score(100, 1, 60)); // denominator <= 0
  EXPECT_DOUBLE_EQ(cann_bench_default_baseline(5e-6), 5e-5);
  EXPECT_DOUBLE_EQ(cann_bench_default_baseline(1e-7), 10e-6);
}

TEST(Stats, ConfirmationMerge) {
  using V = Verdict;
  auto merge = [](std::vector<V> m, std::vector<V> c) { return merge_confirmation(m, c); };
  MergedVerdict agreed = merge({V::Faster, V::Faster, V::Faster}, {V::Faster, V::Faster, V::Faster});
  EXPECT_EQ(agreed.verdict, V::Faster);
  EXPECT_TRUE(agreed.confirmed);
  EXPECT_EQ(agreed.reason, "agreed");

  MergedVerdict same = merge({V::Same}, {V::Same, V::Same});
  EXPECT_EQ(same.verdict, V::Same);
  EXPECT_TRUE(same.confirmed);

  MergedVerdict disagree = merge({V::Faster, V::Faster, V::Faster}, {V::Faster, V::Same, V::Faster});
  EXPECT_EQ(disagree.verdict, V::Ambiguous);
  EXPECT_FALSE(disagree.confirmed);
  EXPECT_EQ(disagree.reason, "disagree");

  MergedVerdict opposite = merge({V::Faster}, {V::Slower});
  EXPECT_EQ(opposite.verdict, V::Ambiguous);
  EXPECT_FALSE(opposite.confirmed);

  MergedVerdict split_gate = merge({V::Faster, V::Ambiguous}, {V::Faster});
  EXPECT_EQ(split_gate.verdict, V::Ambiguous);
  EXPECT_FALSE(split_gate.confirmed);

  MergedVerdict unconfirmed = merge({V::Slower, V::Slower}, {});
  EXPECT_EQ(unconfirmed.verdict, V::Slower);
  EXPECT_FALSE(unconfirmed.confirmed);
  EXPECT_EQ(unconfirmed.reason, "unconfirmed");

  MergedVerdict nothing = merge({}, {V::Faster});
  EXPECT_EQ(nothing.verdict, V::Ambiguous);
  EXPECT_FALSE(nothing.confirmed);
}

TEST(Stats, StudentTQuantilesMatchTables) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3027, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 5), 2.5706, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 11), 2.2010, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0423, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.95, 10), 1.8125, 1e-3);
  EXPECT_NEAR(student_t_quantile(0.025, 5), -2.5706, 1e-3);
  EXPECT_EQ(student_t_quantile(0.5, 7), 0);
  EXPECT_TRUE(std::isnan(student_t_quantile(1.0, 3)));
  EXPECT_TRUE(std::isnan(student_t_quantile(0.9, 0)));
}

TEST(Stats, LivesIntervalIsOverLifeMedians) {
  // Three lives whose medians are 0.01, 0.02, 0.03: mean 0.02, sd 0.01, t(2) = 4.3027.
  std::vector<double> r = {0.01, 0.01, 0.011, 0.02, 0.019, 0.02, 0.03, 0.03, 0.031};
  std::vector<int> life = {0, 0, 0, 1, 1, 1, 2, 2, 2};
  PairedEstimate e = estimate_from_lives(r, life);
  EXPECT_EQ(e.method, CiMethod::Lives);
  EXPECT_EQ(e.lives, 3);
  EXPECT_EQ(e.n, 9);
  EXPECT_NEAR(e.median_log_ratio, 0.02, 1e-12);
  ASSERT_TRUE(e.ci_determined);
  EXPECT_NEAR(e.half_width, 4.3027 * 0.01 / std::sqrt(3.0), 1e-4);
  EXPECT_NEAR(e.log_lo + e.log_hi, 0.04, 1e-12);
}

TEST(Stats, LivesNeedThreeLivesWithTwoRounds) {
  // A life with one round does not count; two usable lives leave the interval undetermined.
  std::vector<double> r = {0.01, 0.012, 0.02, 0.021, 0.5};
  std::vector<int> life = {0, 0, 1, 1, 2};
  EXPECT_EQ(usable_lives(r, life), 2);
  PairedEstimate e = estimate_from_lives(r, life);
  EXPECT_FALSE(e.ci_determined);
  EXPECT_EQ(e.lives, 2);
  // One life in all: the per-round order-statistic interval.
  std::vector<int> one(8, 0);
  std::vector<double> r8 = {0.01, 0.02, 0.015, 0.012, 0.018, 0.011, 0.017, 0.016};
  EXPECT_EQ(estimate_from_lives(r8, one).method, CiMethod::OrderStatistic);
}

TEST(Stats, LivesOfOneRoundEachCountWhenNoLifeHasMore) {
  // A slow kernel measured one round per life: each round is its life's median.
  std::vector<double> r = {0.01, 0.02, 0.03};
  std::vector<int> life = {0, 1, 2};
  EXPECT_EQ(usable_lives(r, life), 3);
  PairedEstimate e = estimate_from_lives(r, life);
  EXPECT_EQ(e.method, CiMethod::Lives);
  EXPECT_EQ(e.lives, 3);
  ASSERT_TRUE(e.ci_determined);
  EXPECT_NEAR(e.median_log_ratio, 0.02, 1e-12);
  EXPECT_NEAR(e.half_width, 4.3027 * 0.01 / std::sqrt(3.0), 1e-4);
}

TEST(Stats, ProjectDecisionPointsWhereTheCentreIs) {
  const double d = 0.01;
  // Centre -2.5%, reach 2%: SLOWER needs the upper reach down to 1.5% (-1% band edge from
  // -2.5%): k = 2 / 1.5, samples x (4/3)^2.
  auto p = project_decision(interval(-0.045, -0.005), d);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->towards, Verdict::Slower);
  EXPECT_NEAR(p->sample_factor, std::pow(0.02 / (0.025 - std::log1p(d)), 2), 1e-9);
  // The mirror image points to FASTER with the same factor.
  auto f = project_decision(interval(0.005, 0.045), d);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->towards, Verdict::Faster);
  EXPECT_NEAR(f->sample_factor, p->sample_factor, 1e-12);
  // Centred at 0 with reach 2%: SAME once the reach is inside the band: (0.02 / L)^2.
  auto s = project_decision(interval(-0.02, 0.02), d);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->towards, Verdict::Same);
  EXPECT_NEAR(s->sample_factor, std::pow(0.02 / std::log1p(d), 2), 1e-9);
  // A centre on the band's edge: nothing decides it.
  auto edge = project_decision(interval(std::log1p(d) - 0.01, std::log1p(d) + 0.01), d);
  ASSERT_TRUE(edge);
  EXPECT_FALSE(std::isfinite(edge->sample_factor));
  // Decided or undetermined estimates have nothing to project.
  EXPECT_FALSE(project_decision(interval(-0.05, -0.02), d));
  EXPECT_FALSE(project_decision(interval(-0.005, 0.005), d));
  PairedEstimate undetermined = interval(-0.04, 0.01);
  undetermined.ci_determined = false;
  EXPECT_FALSE(project_decision(undetermined, d));
}

} // namespace stats_test
