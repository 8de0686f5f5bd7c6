#include "judge/paired.h"
#include "util/clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace paired_test {

using namespace temper;
using namespace temper::judge;
using temper::util::FakeClock;

namespace {

struct CallRecord {
  int arm = 0; // 0 reference, 1 candidate
  int set = 0;
  int content = 0;
};

// A kernel whose time is a function of the input set and the (fake) time of the call; each
// call advances the shared clock by its round trip.
class FakeArm final : public TimedArm {
public:
  using TimeFn = std::function<double(int set, double now)>;
  FakeArm(int id, FakeClock& clock, std::vector<CallRecord>& log, TimeFn kernel)
      : m_id(id), m_clock(clock), m_log(log), m_kernel(std::move(kernel)) {}

  double overhead = 50e-6;  // round trip minus kernel time
  double reported_scale = 1; // reports kernel_seconds * this (a lying worker when > 1 or < 1)
  int fail_at_call = -1;     // this call (0-based, warmup included) fails
  bool fail_as_harness = false;
  double harness = 0;        // time sample() spends outside the round trip (restore, flush)
  double cpu_scale = 0;      // > 0: kernel_seconds is this * the wall time, given separately
  bool renewable_flag = false;
  bool renewable() const override { return renewable_flag; }

  Expected<TimedSample> sample(CallContent c) override {
    const int input_set = c.input_set;
    const int call = m_calls++;
    m_log.push_back({m_id, input_set, c.content});
    const double k = m_kernel(input_set, m_clock.now());
    m_clock.advance(k + overhead + harness);
    if (call == fail_at_call) {
      if (fail_as_harness) return fail("worker pipe closed");
      TimedSample s;
      s.ok = false;
      s.message = "kernel returned 7: boom";
      return s;
    }
    TimedSample s;
    s.kernel_seconds = k * reported_scale;
    if (cpu_scale > 0) {
      s.kernel_wall_seconds = s.kernel_seconds;
      s.kernel_seconds *= cpu_scale;
    }
    s.round_trip_seconds = k + overhead;
    return s;
  }

  int calls() const { return m_calls; }

private:
  int m_id;
  FakeClock& m_clock;
  std::vector<CallRecord>& m_log;
  TimeFn m_kernel;
  int m_calls = 0;
};

// Two arms on one fake clock; times are functions the test chooses.
struct Bench {
  FakeClock clock;
  std::vector<CallRecord> log;
  std::unique_ptr<FakeArm> ref;
  std::unique_ptr<FakeArm> cand;

  Bench(FakeArm::TimeFn ref_time, FakeArm::TimeFn cand_time) {
    ref = std::make_unique<FakeArm>(0, clock, log, std::move(ref_time));
    cand = std::make_unique<FakeArm>(1, clock, log, std::move(cand_time));
  }
  PairedResult run(const StopRule& rule, uint64_t seed, int sets = 1, const CrossCheck& cc = {}) {
    return measure_paired(*ref, *cand, clock, rule, seed, sets, cc);
  }
  // The calls of recorded rounds, after the warmup.
  std::vector<CallRecord> round_calls(const PairedResult& r) const {
    const size_t warm = static_cast<size_t>(r.reference.warmup_calls + r.candidate.warmup_calls);
    return {log.begin() + static_cast<std::ptrdiff_t>(warm), log.end()};
  }
};

FakeArm::TimeFn constant(double seconds) {
  return [seconds](int, double) { return seconds; };
}

// Multiplicative log-normal noise from a private stream.
FakeArm::TimeFn noisy(double seconds, double sigma, uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [=](int, double) {
    std::normal_distribution<double> n(0.0, sigma);
    return seconds * std::exp(n(*rng));
  };
}

StopRule quick_rule() {
  StopRule r;
  r.min_time_s = 0; // these fakes are about the schedule, not the kernel-time minimum
  return r;
}

} // namespace

TEST(Clock, FakeClockMovesOnlyWhenTold) {
  FakeClock c;
  EXPECT_EQ(c.now(), 0);
  c.advance(0.5);
  c.sleep_for(0.25);
  EXPECT_DOUBLE_EQ(c.now(), 0.75);
  c.advance(-1); // monotonic
  EXPECT_DOUBLE_EQ(c.now(), 0.75);
}

TEST(Clock, SteadyClockIsMonotonic) {
  util::SteadyClock c;
  const double a = c.now();
  c.sleep_for(0.001);
  const double b = c.now();
  EXPECT_GE(b - a, 0.001);
}

TEST(Paired, OrderIsBalancedRandomizedAndDeterministic) {
  StopRule rule = quick_rule();
  rule.min_samples = 40;
  auto order_of = [&](uint64_t seed, PairedResult* out) {
    Bench b(constant(1e-3), constant(1e-3));
    PairedResult r = b.run(rule, seed);
    std::vector<int> first;
    auto calls = b.round_calls(r);
    for (size_t i = 0; i < calls.size(); i += 2) first.push_back(calls[i].arm);
    if (out) *out = r;
    return first;
  };
  PairedResult r;
  std::vector<int> first = order_of(11, &r);
  ASSERT_EQ(r.rounds, 40);
  ASSERT_EQ(first.size(), 40u);
  EXPECT_EQ(r.reference_first, 20); // exactly half: mirrored blocks
  int blocks_ref_first = 0;
  for (size_t i = 0; i < first.size(); i += 2) {
    EXPECT_NE(first[i], first[i + 1]) << "block " << i / 2 << " is not mirrored";
    blocks_ref_first += first[i] == 0;
  }
  EXPECT_GT(blocks_ref_first, 2); // randomized: neither arm always opens a block
  EXPECT_LT(blocks_ref_first, 18);
  // Positions recorded in the samples agree with the log.
  for (int i = 0; i < r.rounds; ++i)
    EXPECT_EQ(r.reference.samples[static_cast<size_t>(i)].position, first[static_cast<size_t>(i)] == 0 ? 0 : 1);
  EXPECT_EQ(order_of(11, nullptr), first); // deterministic for a seed
  EXPECT_NE(order_of(12, nullptr), first); // another seed, another order
}

TEST(Paired, InputSetsRotateAndMatchWithinARound) {
  Bench b(constant(1e-3), constant(1e-3));
  PairedResult r = b.run(quick_rule(), 3, 3);
  auto calls = b.round_calls(r);
  ASSERT_EQ(calls.size(), static_cast<size_t>(2 * r.rounds));
  for (int i = 0; i < r.rounds; ++i) {
    const auto& a = calls[static_cast<size_t>(2 * i)];
    const auto& c = calls[static_cast<size_t>(2 * i + 1)];
    EXPECT_NE(a.arm, c.arm);
    EXPECT_EQ(a.set, i % 3);
    EXPECT_EQ(c.set, i % 3);
    EXPECT_EQ(r.reference.samples[static_cast<size_t>(i)].input_set, i % 3);
    EXPECT_EQ(r.candidate.samples[static_cast<size_t>(i)].round, i);
  }
}

// Fresh values per call: both arms compute on the same values in a step, and no arm sees the
// same values twice in a job, warm-ups, second looks and renewals' warm-ups included.
TEST(Paired, EveryStepHasContentOfItsOwnSharedByBothArms) {
  Bench b(constant(1e-3), constant(1e-3));
  b.ref->renewable_flag = b.cand->renewable_flag = true; // lives: renewals' warm-ups too
  StopRule rule = quick_rule();
  rule.warmup_min_calls = 3;
  PairedResult r = b.run(rule, 5, 4);
  ASSERT_GT(r.rounds, 4);
  ASSERT_GT(r.lives, 2);
  std::map<int, std::vector<int>> arms_by_content;
  for (const auto& c : b.log) arms_by_content[c.content].push_back(c.arm);
  for (const auto& [content, arms] : arms_by_content) {
    ASSERT_EQ(arms.size(), 2u) << "content " << content << " was computed " << arms.size() << " times";
    EXPECT_NE(arms[0], arms[1]) << "content " << content << " went to one arm twice";
  }
  // Rounds take their number as content id; warm-ups take ids beyond every round.
  for (int i = 0; i < r.rounds; ++i) EXPECT_EQ(arms_by_content.count(i), 1u) << "round " << i;
  EXPECT_EQ(arms_by_content.size(), static_cast<size_t>(r.rounds + r.reference.warmup_calls));
}

TEST(Paired, TightDataStopsAtMinSamples) {
  Bench b(constant(1e-3), constant(1e-3));
  PairedResult r = b.run(quick_rule(), 1);
  EXPECT_EQ(r.status, PairedStatus::Measured);
  EXPECT_EQ(r.stop_reason, StopReason::CiTarget);
  EXPECT_EQ(r.rounds, 10);
  EXPECT_EQ(r.reference.stats.n, 10);
  EXPECT_EQ(r.candidate.stats.n, 10);
  EXPECT_DOUBLE_EQ(r.estimate.speedup, 1);
  EXPECT_EQ(paired_verdict(r, 0.01), Verdict::Same);
  EXPECT_GE(r.reference.warmup_calls, 1);
  // Warmup: each arm until it has spent 25 ms.
  EXPECT_GE(r.reference.warmup_calls * (1e-3 + 50e-6), 0.025);
  EXPECT_EQ(r.suspicious_samples, 0);
}

TEST(Paired, MinTimeForcesMoreRoundsForFastKernels) {
  StopRule rule; // default min_time_s 0.5
  const double k = 1.0 / 64; // exact in binary: 32 rounds make 0.5 s
  Bench b(constant(k), constant(k / 2));
  PairedResult r = b.run(rule, 1);
  EXPECT_EQ(r.stop_reason, StopReason::CiTarget);
  EXPECT_EQ(r.rounds, 32); // the slower arm reaches 0.5 s first
}

TEST(Paired, NoisyDataContinuesUntilTheTarget) {
  Bench b(noisy(1e-3, 0.02, 1), noisy(1e-3, 0.02, 2));
  PairedResult r = b.run(quick_rule(), 1);
  EXPECT_EQ(r.stop_reason, StopReason::CiTarget);
  EXPECT_GT(r.rounds, 100);
  EXPECT_LE(r.estimate.half_width, std::log(1.005));
  EXPECT_EQ(r.rounds % 2, 0);
  EXPECT_EQ(r.reference_first, r.rounds / 2);
}

TEST(Paired, HitsTheCap) {
  StopRule rule = quick_rule();
  rule.cap_s = 2;
  Bench b(noisy(10e-3, 0.5, 1), noisy(10e-3, 0.5, 2));
  PairedResult r = b.run(rule, 1);
  EXPECT_EQ(r.status, PairedStatus::Measured);
  EXPECT_EQ(r.stop_reason, StopReason::Cap);
  EXPECT_GT(r.rounds, 20);
  // The cap holds within one call's variation.
  EXPECT_LE(r.reference.spent_seconds, rule.cap_s + 0.2);
  EXPECT_LE(r.candidate.spent_seconds, rule.cap_s + 0.2);
  EXPECT_GT(std::max(r.reference.spent_seconds, r.candidate.spent_seconds), rule.cap_s - 0.1);
}

TEST(Paired, StopsAtMaxSamples) {
  StopRule rule = quick_rule();
  rule.max_samples = 30;
  Bench b(noisy(1e-3, 0.5, 1), noisy(1e-3, 0.5, 2));
  PairedResult r = b.run(rule, 1);
  EXPECT_EQ(r.stop_reason, StopReason::MaxSamples);
  EXPECT_EQ(r.rounds, 30);
  EXPECT_EQ(r.status, PairedStatus::Measured);
}

TEST(Paired, TooSlowWhenThreeCallsDoNotFit) {
  StopRule rule = quick_rule();
  rule.cap_s = 10;
  Bench b(constant(1e-3), constant(0.4 * rule.cap_s));
  PairedResult r = b.run(rule, 1);
  EXPECT_EQ(r.status, PairedStatus::TooSlow);
  EXPECT_EQ(r.stop_reason, StopReason::TooSlow);
  EXPECT_LT(r.rounds, 3);
  EXPECT_EQ(b.cand->calls(), 1); // refused after the warmup call, no budget wasted
  EXPECT_EQ(paired_verdict(r, 0.01), Verdict::Ambiguous);

  // A fifth of the cap per call fits 3 rounds: measured until the cap, not TOO_SLOW.
  Bench ok(constant(1e-3), constant(0.2 * rule.cap_s));
  PairedResult r2 = ok.run(rule, 1);
  EXPECT_EQ(r2.status, PairedStatus::Measured);
  EXPECT_EQ(r2.stop_reason, StopReason::Cap);
  EXPECT_GE(r2.rounds, 3);
  EXPECT_LE(r2.candidate.spent_seconds, rule.cap_s + 1e-9);
}

TEST(Paired, ArmFailureStopsWithItsMessage) {
  Bench b(constant(1e-3), constant(1e-3));
  b.cand->fail_at_call = 30; // after the warmup (24 calls of 1.05 ms)
  PairedResult r = b.run(quick_rule(), 1);
  EXPECT_EQ(r.status, PairedStatus::ArmFailed);
  EXPECT_EQ(r.stop_reason, StopReason::ArmFailed);
  ASSERT_TRUE(r.failed_arm);
  EXPECT_EQ(*r.failed_arm, Arm::Candidate);
  EXPECT_NE(r.failure_message.find("boom"), std::string::npos);
  EXPECT_EQ(r.reference.samples.size(), r.candidate.samples.size()); // incomplete round dropped
  EXPECT_EQ(paired_verdict(r, 0.01), Verdict::Ambiguous);

  Bench h(constant(1e-3), constant(1e-3));
  h.ref->fail_at_call = 0; // during the warmup, as a harness error
  h.ref->fail_as_harness = true;
  PairedResult rh = h.run(quick_rule(), 1);
  EXPECT_EQ(rh.status, PairedStatus::ArmFailed);
  EXPECT_EQ(*rh.failed_arm, Arm::Reference);
  EXPECT_NE(rh.failure_message.find("harness: worker pipe closed"), std::string::npos);
  EXPECT_EQ(rh.rounds, 0);
}

TEST(Paired, KernelTimeBeyondRoundTripIsFlagged) {
  Bench b(constant(1e-3), constant(1e-3));
  b.cand->reported_scale = 1.2; // 1.2 ms reported in a 1.05 ms round trip
  PairedResult r = b.run(quick_rule(), 1);
  EXPECT_EQ(r.candidate.exceeds_round_trip, r.rounds);
  EXPECT_EQ(r.reference.exceeds_round_trip, 0);
  EXPECT_EQ(r.suspicious_samples, r.rounds);
  for (const auto& s : r.candidate.samples) EXPECT_EQ(s.flag, SampleFlag::ExceedsRoundTrip);
}

TEST(Paired, KernelTimeFarBelowRoundTripIsFlagged) {
  // The candidate claims a tenth of its real 20 ms: an 18 ms gap where the reference's is 50 us.
  Bench b(constant(20e-3), constant(20e-3));
  b.cand->reported_scale = 0.1;
  PairedResult r = b.run(quick_rule(), 1);
  EXPECT_NEAR(r.gap_overhead_s, 50e-6, 1e-9);
  EXPECT_EQ(r.candidate.unexplained_gap, r.rounds);
  EXPECT_EQ(r.reference.unexplained_gap, 0);
  EXPECT_EQ(r.suspicious_samples, r.rounds);
  EXPECT_EQ(sample_flag_name(r.candidate.samples[0].flag), "unexplained_gap");
}

TEST(Paired, HarnessWorkOutsideTheCallIsNotChargedToTheCap) {
  // 5 ms kernels, 15 ms of restore/flush around each: the cap buys samples, not harness work.
  StopRule rule = quick_rule();
  rule.cap_s = 1;
  rule.target_half_width = 1e-9; // never reached: stop at the cap
  Bench b(noisy(5e-3, 0.2, 1), noisy(5e-3, 0.2, 2));
  b.ref->harness = b.cand->harness = 15e-3;
  PairedResult r = b.run(rule, 1);
  EXPECT_EQ(r.stop_reason, StopReason::Cap);
  // Charged per call: 5 ms + at most the 1 ms allowance of the 15.05 ms around the kernel:
  // about 1 s / 6 ms rounds, not 1 s / 20 ms.
  EXPECT_GT(r.rounds, 150);
  EXPECT_LE(r.reference.spent_seconds, rule.cap_s + 0.05); // within one call's variation
  for (const auto& s : r.reference.samples)
    EXPECT_NEAR(s.charged_seconds, s.kernel_seconds + rule.overhead_allowance_s, 1e-12);
  EXPECT_GT(r.reference.wall_seconds, 3 * r.reference.spent_seconds); // ~20 ms per ~6 ms charged

  // Without an allowance the charge is the kernel's time alone.
  rule.overhead_allowance_s = 0;
  Bench b0(noisy(5e-3, 0.2, 1), noisy(5e-3, 0.2, 2));
  PairedResult r0 = b0.run(rule, 1);
  EXPECT_NEAR(r0.reference.samples[0].charged_seconds, r0.reference.samples[0].kernel_seconds, 1e-12);
}

TEST(Paired, TheWallLimitBoundsTheHarnessPart) {
  // 1 ms kernels with 100 ms of harness work each: the cap alone would allow 500 rounds and
  // 50 s of wall time; the wall limit (4 x the cap) stops it after about 2 s.
  StopRule rule = quick_rule();
  rule.cap_s = 1;
  rule.target_half_width = 1e-9;
  Bench b(noisy(1e-3, 0.2, 1), noisy(1e-3, 0.2, 2));
  b.ref->harness = b.cand->harness = 0.1;
  PairedResult r = b.run(rule, 1);
  EXPECT_EQ(r.status, PairedStatus::Measured);
  EXPECT_EQ(r.stop_reason, StopReason::WallLimit);
  EXPECT_EQ(stop_reason_name(r.stop_reason), "wall_limit");
  EXPECT_LE(r.reference.wall_seconds, rule.wall_limit_factor * rule.cap_s + 1e-9);
  EXPECT_GT(r.reference.wall_seconds, rule.wall_limit_factor * rule.cap_s - 0.2);
  EXPECT_LT(r.reference.spent_seconds, 0.1);
}

TEST(Paired, CpuClockStatisticsWithWallTimeChecks) {
  // The statistic and the charge use kernel_seconds (a CPU time at 90% of the wall time
  // here); the cross-check uses the wall time, so nothing is flagged.
  Bench b(constant(10e-3), constant(10e-3));
  b.ref->cpu_scale = b.cand->cpu_scale = 0.9;
  PairedResult r = b.run(quick_rule(), 1);
  EXPECT_EQ(r.suspicious_samples, 0);
  EXPECT_NEAR(r.reference.stats.median, 9e-3, 1e-12);
  EXPECT_NEAR(r.reference.samples[0].kernel_wall_seconds, 10e-3, 1e-12);
  EXPECT_NEAR(r.reference.samples[0].charged_seconds, 9e-3 + 1e-3, 1e-12); // 1.05 ms around it, 1 ms charged
}

TEST(Paired, UnexplainedGapsWarnButKeepTheStatistics) {
  // The candidate does 5 ms of work before its timer starts on every call: every sample is
  // flagged, none is dropped, and gap_excess says so; the reference alone never warns.
  Bench b(constant(10e-3), constant(10e-3));
  b.cand->overhead = 5e-3;
  PairedResult r = b.run(quick_rule(), 1);
  EXPECT_EQ(r.candidate.unexplained_gap, r.rounds);
  EXPECT_EQ(static_cast<int>(r.candidate.samples.size()), r.rounds);
  EXPECT_EQ(r.estimate.n, r.rounds);
  EXPECT_TRUE(gap_excess(r));

  // A few flags on each arm (a loaded machine) do not warn.
  PairedResult q;
  q.reference.unexplained_gap = 10;
  q.candidate.unexplained_gap = 22;
  EXPECT_FALSE(gap_excess(q));
  q.candidate.unexplained_gap = 23;
  EXPECT_TRUE(gap_excess(q));
}

TEST(Paired, CheckSampleRules) {
  CrossCheck cc;
  EXPECT_EQ(check_sample(-1e-6, 1e-3, cc, 0), SampleFlag::InvalidTime);
  EXPECT_EQ(check_sample(NAN, 1e-3, cc, 0), SampleFlag::InvalidTime);
  EXPECT_EQ(check_sample(1e-3, 0, cc, 0), SampleFlag::InvalidTime);
  EXPECT_EQ(check_sample(1e-3, 1e-3, cc, 0), SampleFlag::None); // equal is possible
  EXPECT_EQ(check_sample(1e-3 + 0.5e-6, 1e-3, cc, 0), SampleFlag::None); // within tolerance
  EXPECT_EQ(check_sample(1e-3 + 2e-6, 1e-3, cc, 0), SampleFlag::ExceedsRoundTrip);
  // Gap limit: 4 * 100 us + 1 ms = 1.4 ms.
  EXPECT_EQ(check_sample(1e-3, 1e-3 + 1.3e-3, cc, 100e-6), SampleFlag::None);
  EXPECT_EQ(check_sample(1e-3, 1e-3 + 1.5e-3, cc, 100e-6), SampleFlag::UnexplainedGap);
  EXPECT_EQ(check_sample(1e-3, 1.0, cc, NAN), SampleFlag::None); // no calibration, no gap rule
  // A calibrated overhead takes precedence over the reference's gap.
  Bench b(constant(1e-3), constant(1e-3));
  CrossCheck calibrated;
  calibrated.overhead_s = 1e-6;
  calibrated.gap_slack_s = 0;
  PairedResult r = b.run(quick_rule(), 1, 1, calibrated);
  EXPECT_DOUBLE_EQ(r.gap_overhead_s, 1e-6);
  EXPECT_EQ(r.suspicious_samples, 2 * r.rounds); // 50 us > 4 us everywhere
}

TEST(Paired, CandidateTwiceAsSlowIsSlower) {
  Bench b(noisy(1e-3, 0.03, 1), [n = noisy(1e-3, 0.03, 2)](int s, double t) { return 2 * n(s, t); });
  PairedResult r = b.run(StopRule{}, 5);
  EXPECT_EQ(r.status, PairedStatus::Measured);
  EXPECT_NEAR(r.estimate.speedup, 0.5, 0.01);
  EXPECT_EQ(paired_verdict(r, 0.01), Verdict::Slower);

  Bench exact(constant(1e-3), constant(2e-3));
  PairedResult e = exact.run(quick_rule(), 5);
  EXPECT_DOUBLE_EQ(e.estimate.speedup, 0.5);
  EXPECT_EQ(paired_verdict(e, 0.01), Verdict::Slower);
  EXPECT_NEAR(e.candidate.stats.median / e.reference.stats.median, 2.0, 1e-12);
}

TEST(Paired, IdenticalNoisyArmsNeverGiveADirection) {
  // Same kernel in both arms: 4% per-sample noise, plus episodes in which the whole machine
  // runs 25% slower for 50 ms (a shared host). Default rule, 200 seeds.
  int faster = 0, slower = 0, same = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    auto episodes = [](double t) { return std::fmod(t, 0.35) < 0.05 ? 1.25 : 1.0; };
    auto ra = noisy(1e-3, 0.04, 1000 + seed);
    auto ca = noisy(1e-3, 0.04, 5000 + seed);
    Bench b([=](int s, double t) { return ra(s, t) * episodes(t); },
            [=](int s, double t) { return ca(s, t) * episodes(t); });
    PairedResult r = b.run(StopRule{}, seed);
    ASSERT_EQ(r.status, PairedStatus::Measured);
    switch (paired_verdict(r, 0.01)) {
    case Verdict::Faster: ++faster; break;
    case Verdict::Slower: ++slower; break;
    case Verdict::Same: ++same; break;
    case Verdict::Ambiguous: break;
    }
  }
  EXPECT_LE(faster + slower, 2); // false verdict rate <= 1%
  EXPECT_GT(same, 150);          // and the protocol does resolve SAME
}

TEST(Paired, DriftDoesNotCreateAVerdict) {
  // Both arms slow down linearly by 50% per second of measurement, far beyond the 1% band over
  // a run; a sequential protocol would see a large difference.
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto drift = [](double t) { return 1 + 0.5 * t; };
    auto ra = noisy(2e-3, 0.02, 100 + seed);
    auto ca = noisy(2e-3, 0.02, 900 + seed);
    Bench b([=](int s, double t) { return ra(s, t) * drift(t); },
            [=](int s, double t) { return ca(s, t) * drift(t); });
    PairedResult r = b.run(StopRule{}, seed);
    ASSERT_EQ(r.status, PairedStatus::Measured);
    ASSERT_GT(r.wall_seconds, 0.5);
    Verdict v = paired_verdict(r, 0.01);
    EXPECT_TRUE(v == Verdict::Same || v == Verdict::Ambiguous) << "seed " << seed << ": "
                                                              << verdict_name(v);
  }
  // Without noise the trend alone: the rounds' ratios alternate around 1 and cancel.
  Bench det([](int, double t) { return 2e-3 * (1 + 0.5 * t); },
            [](int, double t) { return 2e-3 * (1 + 0.5 * t); });
  PairedResult r = det.run(StopRule{}, 3);
  EXPECT_EQ(paired_verdict(r, 0.01), Verdict::Same);
  EXPECT_NEAR(r.estimate.speedup, 1.0, 1e-3);
}

TEST(Paired, SameSeedSameResult) {
  auto run = [](uint64_t seed) {
    Bench b(noisy(1e-3, 0.05, 1), noisy(1.1e-3, 0.05, 2));
    return b.run(quick_rule(), seed, 4);
  };
  PairedResult a = run(9), b = run(9);
  ASSERT_EQ(a.rounds, b.rounds);
  for (size_t i = 0; i < a.reference.samples.size(); ++i) {
    EXPECT_EQ(a.reference.samples[i].kernel_seconds, b.reference.samples[i].kernel_seconds);
    EXPECT_EQ(a.candidate.samples[i].position, b.candidate.samples[i].position);
  }
  EXPECT_EQ(a.estimate.log_lo, b.estimate.log_lo);
  EXPECT_EQ(stop_reason_name(a.stop_reason), "ci_target");
}

TEST(Paired, ValidateStopRule) {
  EXPECT_TRUE(validate_stop_rule(StopRule{}));
  StopRule bad;
  bad.cap_s = 0;
  EXPECT_FALSE(validate_stop_rule(bad));
  bad = StopRule{};
  bad.max_samples = 5;
  EXPECT_FALSE(validate_stop_rule(bad));
  bad = StopRule{};
  bad.ci.confidence = 1;
  EXPECT_FALSE(validate_stop_rule(bad));
}
} // namespace paired_test


namespace temper::judge::paired_test {
namespace {

using temper::util::FakeClock;

// An arm whose process placement costs it a fixed factor for its whole life, drawn anew at
// every renewal: what the VMs here do to a worker (1-5% per process).
class PlacementArm final : public TimedArm {
public:
  PlacementArm(FakeClock& clock, double seconds, double noise, double placement, uint64_t seed)
      : m_clock(clock), m_seconds(seconds), m_noise(noise), m_placement(placement), m_rng(seed) {
    draw();
  }
  bool renewable_flag = true;
  int fail_renewal_at = -1;
  int renewals = 0;

  Expected<TimedSample> sample(CallContent) override {
    std::normal_distribution<double> n(0.0, m_noise);
    const double k = m_seconds * m_factor * std::exp(n(m_rng));
    m_clock.advance(k + 50e-6);
    TimedSample s;
    s.kernel_seconds = k;
    s.round_trip_seconds = k + 50e-6;
    return s;
  }
  bool renewable() const override { return renewable_flag; }
  Status renew() override {
    if (renewals++ == fail_renewal_at) return fail("cannot start the worker");
    m_clock.advance(0.02);
    draw();
    return {};
  }

private:
  void draw() {
    std::normal_distribution<double> n(0.0, m_placement);
    m_factor = std::exp(n(m_rng));
  }
  FakeClock& m_clock;
  double m_seconds, m_noise, m_placement;
  std::mt19937_64 m_rng;
  double m_factor = 1;
};

struct PlacementOutcome {
  int false_or_wrong = 0;
  int slower = 0;
  int runs = 0;
};

// `runs` paired measurements of a reference at 5 ms against a candidate `ratio` times as slow,
// both with 2% noise per call and `placement` per life.
PlacementOutcome run_placement(double ratio, double placement, bool renewable, int runs) {
  PlacementOutcome out;
  for (int i = 0; i < runs; ++i) {
    FakeClock clock;
    PlacementArm ref(clock, 5e-3, 0.02, placement, 1000 + 2 * i);
    PlacementArm cand(clock, 5e-3 * ratio, 0.02, placement, 1001 + 2 * i);
    ref.renewable_flag = cand.renewable_flag = renewable;
    StopRule rule;
    rule.cap_s = 2;
    PairedResult r = measure_paired(ref, cand, clock, rule, 77 + i, 4);
    const Verdict v = paired_verdict(r, 0.01);
    ++out.runs;
    if (ratio == 1 && (v == Verdict::Faster || v == Verdict::Slower)) ++out.false_or_wrong;
    if (ratio > 1 && v == Verdict::Faster) ++out.false_or_wrong;
    out.slower += v == Verdict::Slower;
  }
  return out;
}

TEST(PairedLives, PlacementPerProcessMisleadsOneLifeButNotManyLives) {
  // One life: the placement draw is a bias no number of rounds removes.
  PlacementOutcome one = run_placement(1.0, 0.02, false, 60);
  EXPECT_GT(one.false_or_wrong, 10) << "without renewal a 2% placement effect should produce false verdicts";
  // Lives: the interval is over lives, so placement is noise it covers.
  PlacementOutcome many = run_placement(1.0, 0.02, true, 60);
  EXPECT_LE(many.false_or_wrong, 2);
}

TEST(PairedLives, ThreePercentSlowerIsFoundThroughPlacementNoise) {
  PlacementOutcome r = run_placement(1.03, 0.01, true, 40);
  EXPECT_EQ(r.false_or_wrong, 0);
  EXPECT_GE(r.slower, 34);
}

TEST(PairedLives, RenewsBothArmsAtBlockBoundariesAndRecordsLives) {
  FakeClock clock;
  PlacementArm ref(clock, 5e-3, 0.02, 0.02, 1), cand(clock, 5e-3, 0.02, 0.02, 2);
  StopRule rule;
  rule.cap_s = 1;
  PairedResult r = measure_paired(ref, cand, clock, rule, 5, 4);
  ASSERT_EQ(r.status, PairedStatus::Measured);
  EXPECT_GT(r.life_rounds, 0);
  EXPECT_EQ(r.life_rounds % 2, 0);
  EXPECT_GE(r.lives, rule.min_lives);
  EXPECT_EQ(r.reference.renewals, r.lives - 1);
  EXPECT_EQ(r.candidate.renewals, r.lives - 1);
  EXPECT_EQ(r.estimate.method, CiMethod::Lives);
  for (size_t i = 0; i < r.reference.samples.size(); ++i) {
    EXPECT_EQ(r.reference.samples[i].life, static_cast<int>(i) / r.life_rounds);
    EXPECT_EQ(r.candidate.samples[i].life, r.reference.samples[i].life);
  }
  EXPECT_GT(r.reference.renew_seconds, 0);
}

TEST(PairedLives, ArmsThatCannotRenewKeepOneLife) {
  FakeClock clock;
  PlacementArm ref(clock, 5e-3, 0.02, 0.0, 1), cand(clock, 5e-3, 0.02, 0.0, 2);
  ref.renewable_flag = false;
  PairedResult r = measure_paired(ref, cand, clock, StopRule{}, 5, 4);
  EXPECT_EQ(r.lives, 1);
  EXPECT_EQ(r.life_rounds, 0);
  EXPECT_EQ(cand.renewals, 0);
  EXPECT_EQ(r.estimate.method, CiMethod::OrderStatistic);
}

TEST(PairedLives, AFailedRenewalFailsTheArm) {
  FakeClock clock;
  PlacementArm ref(clock, 5e-3, 0.02, 0.0, 1), cand(clock, 5e-3, 0.02, 0.0, 2);
  cand.fail_renewal_at = 1;
  PairedResult r = measure_paired(ref, cand, clock, StopRule{}, 5, 4);
  EXPECT_EQ(r.status, PairedStatus::ArmFailed);
  ASSERT_TRUE(r.failed_arm.has_value());
  EXPECT_EQ(*r.failed_arm, Arm::Candidate);
  EXPECT_NE(r.failure_message.find("cannot start the worker"), std::string::npos);
}

// A renewable arm whose every call takes exactly `seconds` of kernel time and the default
// overhead allowance around it: what cap_for_verdict predicts for.
class SteadyArm final : public TimedArm {
public:
  SteadyArm(FakeClock& clock, double seconds) : m_clock(clock), m_seconds(seconds) {}
  Expected<TimedSample> sample(CallContent) override {
    const double around = StopRule{}.overhead_allowance_s;
    const double seconds = m_seconds + (calls++ < slow_calls ? first_call_extra : 0);
    m_clock.advance(seconds + around);
    TimedSample s;
    s.kernel_seconds = seconds;
    s.round_trip_seconds = seconds + around;
    return s;
  }
  bool renewable() const override { return renewable_flag; }
  Status renew() override { return {}; }
  bool renewable_flag = true;
  double first_call_extra = 0; // what the process's first calls cost on top
  int slow_calls = 1;            // how many of them
  int calls = 0;

private:
  FakeClock& m_clock;
  double m_seconds;
};

PairedResult steady_run(double ref_seconds, double cand_seconds, double cap_s, bool renewable) {
  FakeClock clock;
  SteadyArm ref(clock, ref_seconds), cand(clock, cand_seconds);
  ref.renewable_flag = cand.renewable_flag = renewable;
  StopRule rule;
  rule.cap_s = cap_s;
  return measure_paired(ref, cand, clock, rule, 3, 4);
}

// The cap cap_for_verdict gives is the smallest at which the slow arm records 3 rounds in 3
// lives, so that the interval exists: a bit less is TOO_SLOW, with lives (a renewal and its
// warm-up before the second and third rounds) or without.
TEST(PairedCapForVerdict, IsTheSmallestCapThatFitsThreeRounds) {
  StopRule rule;
  for (double seconds : {0.4, 0.05, 0.0043}) {
    const double cap = cap_for_verdict(rule, seconds);
    PairedResult fits = steady_run(seconds, seconds / 10, cap * 1.001, true);
    EXPECT_EQ(fits.status, PairedStatus::Measured) << seconds;
    EXPECT_GE(fits.rounds, 3) << seconds;
    EXPECT_GE(fits.lives, 3) << seconds;
    EXPECT_TRUE(fits.estimate.ci_determined) << seconds;
    PairedResult short_of_it = steady_run(seconds, seconds / 10, cap * 0.98, true);
    EXPECT_EQ(short_of_it.status, PairedStatus::TooSlow) << seconds;
    // Without lives there is no renewal warm-up: the same cap fits with room to spare.
    EXPECT_EQ(steady_run(seconds, seconds / 10, cap * 1.001, false).status, PairedStatus::Measured) << seconds;
  }
  // 0.4 s a call, 1 ms allowance: one warm-up call, 3 rounds, one call after each of 2 renewals.
  EXPECT_NEAR(cap_for_verdict(rule, 0.4), 6 * 0.401, 1e-9);
  // A free call: the 25 ms warm-up takes 25 calls of the 1 ms allowance.
  EXPECT_NEAR(cap_for_verdict(rule, 0), (25 + 3 + 2) * 1e-3, 1e-12);
}

// A worker's first calls may cost more than the rest (0.70 s instead of 0.49 s for SwiGLU case
// 5's reference): a marginal refusal at round 0 takes up to two more calls first, a hopeless one
// none.
TEST(PairedCapForVerdict, ASlowFirstCallGetsASecondLookBeforeTooSlow) {
  FakeClock clock;
  SteadyArm ref(clock, 0.4), cand(clock, 0.04);
  ref.first_call_extra = 0.2;
  StopRule rule;
  rule.cap_s = 3.1; // 0.6 + 5 x 0.6 does not fit; 0.6 + 0.4 + 5 x 0.4 does
  PairedResult r = measure_paired(ref, cand, clock, rule, 3, 4);
  EXPECT_EQ(r.status, PairedStatus::Measured);
  EXPECT_EQ(r.rounds, 3);
  EXPECT_EQ(r.reference.warmup_calls, 2 + 2); // the initial two, one after each renewal
  // Its first two calls slow (a PyTorch arm allocating afresh on a VM): a third call, then it
  // fits. 0.8 + 5 x 0.8 does not fit a 4.2 s cap, 1.6 + 5 x 0.8 neither, 2.0 + 5 x 0.4 does.
  StopRule roomy = rule;
  roomy.cap_s = 4.2;
  // A 0.4 s reference whose first `slow_calls` calls cost 0.8 s: the result and its calls.
  auto slow_start = [&roomy](int slow_calls) {
    FakeClock c;
    SteadyArm late(c, 0.4), quick(c, 0.04);
    late.first_call_extra = 0.4;
    late.slow_calls = slow_calls;
    PairedResult res = measure_paired(late, quick, c, roomy, 3, 4);
    return std::make_pair(res, late.calls);
  };
  const auto [twice, twice_calls] = slow_start(2);
  EXPECT_EQ(twice.status, PairedStatus::Measured);
  EXPECT_EQ(twice.reference.warmup_calls, 3 + 2);
  // Never more than two looks: slow three times is refused after its third call.
  const auto [thrice, thrice_calls] = slow_start(3);
  EXPECT_EQ(thrice.status, PairedStatus::TooSlow);
  EXPECT_EQ(thrice_calls, 3);
  EXPECT_GT(twice_calls, thrice_calls);
  // Ten times the cost on the first call: fitting would need it to be an outlier of more
  // than 2x, so no second look.
  FakeClock clock2;
  SteadyArm slow(clock2, 1.0), fast(clock2, 0.04);
  PairedResult hopeless = measure_paired(slow, fast, clock2, rule, 3, 4);
  EXPECT_EQ(hopeless.status, PairedStatus::TooSlow);
  EXPECT_EQ(slow.calls, 1);
}

// A slow kernel (0.45 s a call) under a cap of a few calls: every life holds one round, so the
// rounds the cap buys are lives and the interval exists. Before, lives held at least 2 rounds
// and a 4 s cap gave 2 lives: AMBIGUOUS for a 10x faster candidate.
TEST(PairedLives, SlowCallsGetOneRoundPerLifeAndAnInterval) {
  PairedResult r = steady_run(0.45, 0.045, 4.0, true);
  EXPECT_EQ(r.status, PairedStatus::Measured);
  EXPECT_EQ(r.life_rounds, 1);
  EXPECT_GE(r.lives, 3);
  EXPECT_EQ(r.estimate.lives, r.rounds); // every round is a life of its own, none dropped
  ASSERT_TRUE(r.estimate.ci_determined);
  EXPECT_NEAR(r.estimate.speedup, 10.0, 1e-6);
  // Fast calls keep whole mirrored blocks per life, about 12 lives: 2 s / 21 ms = 95 calls.
  PairedResult fast = steady_run(0.02, 0.02, 2.0, true);
  EXPECT_EQ(fast.life_rounds, 6);
  // A cap of about 11 calls still holds 3 lives of 2 rounds and a warm-up each.
  EXPECT_EQ(steady_run(0.09, 0.009, 1.0, true).life_rounds, 2);
}

// Stopping once decided (StopRule::decided_band): a reference 25x slower than the candidate,
// 5% noise per call and 2% per life, a 6 s cap.
PairedResult decided_run(double ratio, bool decided, uint64_t seed) {
  FakeClock clock;
  PlacementArm ref(clock, 20e-3, 0.05, 0.02, 3000 + 2 * seed);
  PlacementArm cand(clock, 20e-3 / ratio, 0.05, 0.02, 3001 + 2 * seed);
  StopRule rule;
  rule.cap_s = 6;
  if (decided) rule.decided_band = std::log1p(0.01);
  return measure_paired(ref, cand, clock, rule, 500 + seed, 4);
}

TEST(PairedDecided, ALargeSpeedupStopsOnceSettledWithTheIntervalItHas) {
  const PairedResult full = decided_run(25, false, 1);
  const PairedResult early = decided_run(25, true, 1);
  EXPECT_EQ(stop_reason_name(full.stop_reason), "cap");
  EXPECT_EQ(stop_reason_name(early.stop_reason), "decided");
  EXPECT_EQ(paired_verdict(full, 0.01), Verdict::Faster);
  EXPECT_EQ(paired_verdict(early, 0.01), Verdict::Faster);
  // After a few lives instead of the cap's twelve-odd: well under half the reference's time.
  EXPECT_LT(early.reference.spent_seconds, 0.5 * full.reference.spent_seconds);
  EXPECT_GE(early.estimate.lives, 3);
  // The reported interval is the usual 95% one, wider than the full run's but around 25x.
  ASSERT_TRUE(early.estimate.ci_determined);
  EXPECT_DOUBLE_EQ(early.estimate.confidence, 0.95);
  EXPECT_LT(early.estimate.speedup_lo, 25 * 1.01);
  EXPECT_GT(early.estimate.speedup_hi, 25 / 1.01);
  EXPECT_GT(early.estimate.half_width, full.estimate.half_width);
}

TEST(PairedDecided, NoDecidedStopWithoutADifferenceAndNoneAgainstTheTruth) {
  int decided_aa = 0, false_aa = 0, faster_slow = 0, slower_found = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const PairedResult aa = decided_run(1.0, true, seed);
    decided_aa += aa.stop_reason == StopReason::Decided;
    const Verdict v = paired_verdict(aa, 0.01);
    false_aa += v == Verdict::Faster || v == Verdict::Slower;
    const PairedResult slow = decided_run(1 / 1.05, true, 100 + seed);
    faster_slow += paired_verdict(slow, 0.01) == Verdict::Faster;
    slower_found += paired_verdict(slow, 0.01) == Verdict::Slower;
  }
  EXPECT_EQ(decided_aa, 0);
  EXPECT_LE(false_aa, 1);
  EXPECT_EQ(faster_slow, 0);
  EXPECT_GE(slower_found, 50);
}

// A decided-rule run on reference calls of `ref_s` seconds, the candidate `ratio` times faster,
// 5% noise a call and 2% a life, a 7.6 s cap; `tweak` sets the rule's option under test.
PairedResult decided_run_on(double ref_s, double ratio, uint64_t seed, const std::function<void(StopRule&)>& tweak) {
  FakeClock clock;
  PlacementArm ref(clock, ref_s, 0.05, 0.02, 7000 + 2 * seed);
  PlacementArm cand(clock, ref_s / ratio, 0.05, 0.02, 7001 + 2 * seed);
  StopRule rule;
  rule.cap_s = 7.6;
  rule.decided_band = std::log1p(0.01);
  tweak(rule);
  return measure_paired(ref, cand, clock, rule, 900 + seed, 4);
}

// A fast kernel (0.3 ms against 0.1 ms): the minimum time (0.5 s of kernel time) alone would
// take 1000 rounds (max_samples); a settled verdict needs far fewer, and the old rule is kept
// for the timing benchmark to compare.
PairedResult fast_decided_run(double ratio, bool waits_for_min_time, uint64_t seed) {
  return decided_run_on(0.3e-3, ratio, seed, [&](StopRule& r) { r.decided_waits_for_min_time = waits_for_min_time; });
}

TEST(PairedDecided, ASettledVerdictDoesNotWaitForTheMinimumTime) {
  const PairedResult now = fast_decided_run(3, false, 1);
  const PairedResult before = fast_decided_run(3, true, 1);
  EXPECT_EQ(stop_reason_name(now.stop_reason), "decided");
  EXPECT_EQ(paired_verdict(now, 0.01), Verdict::Faster);
  EXPECT_EQ(paired_verdict(before, 0.01), Verdict::Faster);
  EXPECT_LT(now.reference.kernel_seconds_total, 0.5) << "stopped before the minimum time";
  EXPECT_GE(before.rounds, 1000) << "the old rule waits for the minimum time, here max_samples";
  EXPECT_LT(now.rounds * 5, before.rounds);
  EXPECT_GE(now.estimate.lives, 3);
  // Without a difference nothing is decided early, and the width rule still waits for the time.
  int decided_aa = 0, false_aa = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const PairedResult aa = fast_decided_run(1.0, false, seed);
    decided_aa += aa.stop_reason == StopReason::Decided;
    const Verdict v = paired_verdict(aa, 0.01);
    false_aa += v == Verdict::Faster || v == Verdict::Slower;
    if (aa.stop_reason == StopReason::CiTarget) {
      EXPECT_GE(aa.rounds, 1000) << "seed " << seed;
    }
  }
  EXPECT_EQ(decided_aa, 0);
  EXPECT_LE(false_aa, 1);
}

// A reference of 0.6 s a call against a kernel 50x faster, a 7.6 s cap: the cap holds 8 rounds,
// under min_samples (10), so the old rule ran every such job to the cap; a settled verdict now
// stops it after decided_min_samples (6) rounds. Without a difference it does not.
PairedResult slow_decided_run(double ratio, int decided_min_samples, uint64_t seed) {
  return decided_run_on(0.6, ratio, seed, [&](StopRule& r) { r.decided_min_samples = decided_min_samples; });
}

TEST(PairedDecided, ASettledVerdictOnSlowCallsDoesNotWaitForTenSamples) {
  const PairedResult now = slow_decided_run(50, 6, 1);
  const PairedResult before = slow_decided_run(50, 0, 1);
  EXPECT_EQ(stop_reason_name(now.stop_reason), "decided");
  EXPECT_EQ(stop_reason_name(before.stop_reason), "cap");
  EXPECT_EQ(paired_verdict(now, 0.01), Verdict::Faster);
  EXPECT_EQ(paired_verdict(before, 0.01), Verdict::Faster);
  EXPECT_GE(now.rounds, 6);
  EXPECT_LT(now.rounds, before.rounds);
  EXPECT_LT(now.reference.spent_seconds, before.reference.spent_seconds);
  int decided_aa = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) decided_aa += slow_decided_run(1.0, 6, seed).stop_reason == StopReason::Decided;
  EXPECT_EQ(decided_aa, 0);
}

TEST(PairedDecided, TheRuleIsValidated) {
  StopRule r;
  r.decided_band = -0.1;
  EXPECT_FALSE(validate_stop_rule(r));
  r.decided_band = std::log1p(0.01);
  EXPECT_TRUE(validate_stop_rule(r));
  r.decided_confidence = 0.9; // looser than the verdict's own interval
  EXPECT_FALSE(validate_stop_rule(r));
  r.decided_confidence = 1.0;
  EXPECT_FALSE(validate_stop_rule(r));
}

// A probe's race (StopRule::behind_below): a variant at 10x against a best of 20x stops early;
// one level with the best, or above it, runs to the cap as before.
PairedResult race_run(double ratio, std::optional<double> behind_below, uint64_t seed) {
  FakeClock clock;
  PlacementArm ref(clock, 20e-3, 0.05, 0.02, 4000 + 2 * seed);
  PlacementArm cand(clock, 20e-3 / ratio, 0.05, 0.02, 4001 + 2 * seed);
  StopRule rule;
  rule.cap_s = 6;
  rule.behind_below = behind_below;
  return measure_paired(ref, cand, clock, rule, 700 + seed, 4);
}

TEST(PairedRace, AVariantClearlyBehindStopsEarlyTheBestDoesNot) {
  const double best_lo = std::log(20.0 / 1.02);
  const PairedResult full = race_run(10, std::nullopt, 1);
  const PairedResult behind = race_run(10, best_lo, 1);
  EXPECT_EQ(stop_reason_name(full.stop_reason), "cap");
  EXPECT_EQ(stop_reason_name(behind.stop_reason), "behind");
  EXPECT_LT(behind.reference.spent_seconds, 0.5 * full.reference.spent_seconds);
  ASSERT_TRUE(behind.estimate.ci_determined);
  EXPECT_LT(behind.estimate.speedup_hi, 20 / 1.02);
  EXPECT_GT(behind.estimate.speedup_hi, 10.0); // the interval it has, around the truth
  for (uint64_t seed = 0; seed < 30; ++seed) {
    EXPECT_NE(race_run(20, best_lo, 10 + seed).stop_reason, StopReason::Behind) << "seed " << seed;
    EXPECT_NE(race_run(40, best_lo, 50 + seed).stop_reason, StopReason::Behind) << "seed " << seed;
  }
}

TEST(PairedRace, TheThresholdIsValidated) {
  StopRule r;
  r.behind_below = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(validate_stop_rule(r));
  r.behind_below = std::log(2.0);
  EXPECT_TRUE(validate_stop_rule(r));
  r.decided_confidence = 0.5;
  EXPECT_FALSE(validate_stop_rule(r));
}

} // namespace
} // namespace temper::judge::paired_test
