// measure_shared: several candidates against one reference in one job.
#include "judge/paired.h"
#include "util/clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

namespace temper::judge::paired_shared_test {
namespace {

using util::FakeClock;

struct CallRecord {
  int arm = 0; // 0 reference, k candidate k
  int set = 0;
  int content = 0;
  bool renewal = false;
};

// A kernel whose time is a function the test picks; each call advances the shared clock.
class FakeArm final : public TimedArm {
public:
  using TimeFn = std::function<double()>;
  FakeArm(int id, FakeClock& clock, std::vector<CallRecord>& log, TimeFn kernel)
      : m_id(id), m_clock(clock), m_log(log), m_kernel(std::move(kernel)) {}

  int fail_at_call = -1; // this call (0-based, warm-ups included) fails
  bool renewable_flag = false;
  bool renewable() const override { return renewable_flag; }
  Status renew() override {
    m_log.push_back({m_id, 0, -1, true});
    m_clock.advance(1e-3);
    return {};
  }

  Expected<TimedSample> sample(CallContent c) override {
    const int call = m_calls++;
    m_log.push_back({m_id, c.input_set, c.content, false});
    const double k = m_kernel();
    m_clock.advance(k + 50e-6);
    TimedSample s;
    if (call == fail_at_call) {
      s.ok = false;
      s.message = "kernel returned 7: boom";
      return s;
    }
    s.kernel_seconds = k;
    s.round_trip_seconds = k + 50e-6;
    return s;
  }

private:
  int m_id;
  FakeClock& m_clock;
  std::vector<CallRecord>& m_log;
  TimeFn m_kernel;
  int m_calls = 0;
};

FakeArm::TimeFn constant(double seconds) {
  return [seconds] { return seconds; };
}

FakeArm::TimeFn noisy(double seconds, double sigma, uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [=] {
    std::normal_distribution<double> n(0.0, sigma);
    return seconds * std::exp(n(*rng));
  };
}

// A reference and candidates on one fake clock.
struct Bench {
  FakeClock clock;
  std::vector<CallRecord> log;
  std::vector<std::unique_ptr<FakeArm>> arms; // [0] the reference

  explicit Bench(std::vector<FakeArm::TimeFn> times) {
    for (size_t i = 0; i < times.size(); ++i) arms.push_back(std::make_unique<FakeArm>(static_cast<int>(i), clock, log, times[i]));
  }
  void renewable() {
    for (auto& a : arms) a->renewable_flag = true;
  }
  std::vector<PairedResult> run(const StopRule& rule, uint64_t seed, int sets = 1, SharedSide side = SharedSide::Reference) {
    std::vector<TimedArm*> cands;
    for (size_t i = 1; i < arms.size(); ++i) cands.push_back(arms[i].get());
    return measure_shared(*arms[0], cands, clock, rule, seed, sets, {}, side);
  }
  // The arms of each recorded round (content id = round number), in the order they ran.
  std::map<int, std::vector<int>> rounds() const {
    std::map<int, std::vector<int>> out;
    for (const auto& c : log)
      if (!c.renewal && c.content >= 0 && c.content < kContentWarmupBase) out[c.content].push_back(c.arm);
    return out;
  }
};

StopRule quick_rule() {
  StopRule r;
  r.min_time_s = 0;
  return r;
}

TEST(PairedShared, EachPairIsMeasuredAsIfAloneOnTheSameReferenceCalls) {
  Bench b({constant(10e-3), constant(1e-3), constant(2e-3), constant(0.5e-3)});
  auto r = b.run(quick_rule(), 7);
  ASSERT_EQ(r.size(), 3u);
  const double expected[3] = {10, 5, 20};
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(r[k].status, PairedStatus::Measured);
    EXPECT_EQ(r[k].stop_reason, StopReason::CiTarget);
    EXPECT_EQ(r[k].rounds, 10);
    EXPECT_EQ(r[k].reference.stats.n, 10);
    EXPECT_EQ(r[k].candidate.stats.n, 10);
    EXPECT_NEAR(r[k].estimate.speedup, expected[k], 1e-9);
  }
  // One reference call per round serves every candidate; every arm computes each round's values.
  const auto rounds = b.rounds();
  ASSERT_EQ(rounds.size(), 10u);
  for (const auto& [round, arms] : rounds) {
    EXPECT_EQ(std::multiset<int>(arms.begin(), arms.end()), (std::multiset<int>{0, 1, 2, 3})) << "round " << round;
  }
}

TEST(PairedShared, EveryPairMeetsInBothOrdersAndOrdersVary) {
  Bench b({constant(1e-3), constant(1e-3), constant(1e-3)});
  StopRule rule = quick_rule();
  rule.min_samples = 40;
  auto r = b.run(rule, 11);
  for (const auto& p : r) {
    ASSERT_EQ(p.rounds, 40);
    EXPECT_EQ(p.reference_first, 20); // mirrored blocks: exactly half, per pair
  }
  const auto rounds = b.rounds();
  std::set<std::vector<int>> orders;
  for (const auto& [round, arms] : rounds) {
    orders.insert(arms);
    if (round % 2 == 1) {
      std::vector<int> mirrored = rounds.at(round - 1);
      std::reverse(mirrored.begin(), mirrored.end());
      EXPECT_EQ(arms, mirrored) << "round " << round << " does not mirror its block's first";
    }
  }
  EXPECT_GT(orders.size(), 3u); // randomized
  // Positions recorded per pair agree with the order the calls ran in.
  for (size_t k = 0; k < r.size(); ++k) {
    for (int i = 0; i < 40; ++i) {
      const auto& arms = rounds.at(i);
      const bool ref_first = std::find(arms.begin(), arms.end(), 0) < std::find(arms.begin(), arms.end(), static_cast<int>(k + 1));
      EXPECT_EQ(r[k].reference.samples[static_cast<size_t>(i)].position, ref_first ? 0 : 1);
      EXPECT_EQ(r[k].candidate.samples[static_cast<size_t>(i)].position, ref_first ? 1 : 0);
    }
  }
}

// The point of sharing: a reference 60 times slower than its candidates is paid once.
TEST(PairedShared, ASlowReferenceIsPaidOnceForAllCandidates) {
  StopRule rule;
  rule.cap_s = 1;
  double separate = 0;
  std::vector<PairedResult> alone;
  for (int k = 0; k < 4; ++k) {
    Bench b({noisy(60e-3, 0.02, 1), noisy(1e-3, 0.02, 10 + k)});
    b.renewable();
    alone.push_back(b.run(rule, 3).front());
    separate += b.clock.now();
  }
  Bench b({noisy(60e-3, 0.02, 1), noisy(1e-3, 0.02, 10), noisy(1e-3, 0.02, 11), noisy(1e-3, 0.02, 12), noisy(1e-3, 0.02, 13)});
  b.renewable();
  auto shared = b.run(rule, 3);
  EXPECT_LT(b.clock.now(), 0.4 * separate);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(shared[k].status, PairedStatus::Measured);
    EXPECT_EQ(shared[k].stop_reason, StopReason::Cap); // the reference's cap
    EXPECT_EQ(shared[k].rounds, alone[k].rounds);      // as many rounds as alone
    EXPECT_NEAR(shared[k].estimate.speedup, 60, 3);
    EXPECT_GE(shared[k].lives, 3);
  }
}

TEST(PairedShared, AFailingCandidateLeavesTheOthersMeasuring) {
  Bench b({constant(1e-3), constant(1e-3), constant(1e-3), constant(2e-3)});
  b.arms[2]->fail_at_call = 8;
  auto r = b.run(quick_rule(), 5);
  EXPECT_EQ(r[1].status, PairedStatus::ArmFailed);
  EXPECT_EQ(r[1].failed_arm, Arm::Candidate);
  EXPECT_NE(r[1].failure_message.find("boom"), std::string::npos);
  for (size_t k : {0u, 2u}) {
    EXPECT_EQ(r[k].status, PairedStatus::Measured);
    EXPECT_EQ(r[k].rounds, 10);
  }
  // The failed candidate is not called again.
  int after = 0;
  for (const auto& [round, arms] : b.rounds())
    if (round > r[1].rounds) after += static_cast<int>(std::count(arms.begin(), arms.end(), 2));
  EXPECT_EQ(after, 0);
}

TEST(PairedShared, AFailingReferenceEndsEveryPair) {
  Bench b({constant(1e-3), constant(1e-3), constant(1e-3)});
  b.arms[0]->fail_at_call = 30;
  auto r = b.run(quick_rule(), 5);
  for (const auto& p : r) {
    EXPECT_EQ(p.status, PairedStatus::ArmFailed);
    EXPECT_EQ(p.failed_arm, Arm::Reference);
  }
}

// A candidate whose cap ends it inside a block: the others keep their mirrored order, and a
// candidate that stopped is neither called nor renewed again.
TEST(PairedShared, ACandidateThatStopsLeavesTheRoundsAndTheRenewals) {
  StopRule rule = quick_rule();
  rule.cap_s = 1;
  rule.min_samples = 60;
  rule.target_lives = 0;
  Bench b({constant(1e-3), constant(0.08), noisy(1e-3, 0.01, 4)});
  auto r = b.run(rule, 9);
  EXPECT_EQ(r[0].stop_reason, StopReason::Cap);
  EXPECT_EQ(r[0].rounds % 2, 1) << "the test wants a stop inside a block";
  EXPECT_GE(r[1].rounds, 60);
  EXPECT_EQ(r[1].reference_first * 2, r[1].rounds); // still exactly balanced
  for (const auto& [round, arms] : b.rounds()) {
    if (round >= r[0].rounds) {
      EXPECT_EQ(std::count(arms.begin(), arms.end(), 1), 0) << "round " << round;
    }
  }

  Bench lives({constant(1e-3), constant(1e-3), noisy(1e-3, 0.05, 4)});
  lives.renewable();
  StopRule lr = quick_rule();
  lr.cap_s = 2;
  lr.min_samples = 100;
  lr.target_half_width = std::log(1.0001); // the noisy one runs to its cap
  auto l = lives.run(lr, 9);
  EXPECT_LT(l[0].rounds, l[1].rounds);
  int renewals_after_stop = 0, renewals_of_ref = 0;
  for (const auto& c : lives.log) {
    renewals_of_ref += c.renewal && c.arm == 0;
    renewals_after_stop += c.renewal && c.arm == 1;
  }
  EXPECT_LT(renewals_after_stop, renewals_of_ref);
  EXPECT_EQ(l[0].candidate.renewals, renewals_after_stop);
  EXPECT_EQ(l[1].reference.renewals, renewals_of_ref); // the reference's whole job, in every pair
}

// One candidate against several references (the final report's columns): [0] is the candidate.
TEST(PairedSharedCandidate, EachPairIsTheCandidateAgainstThatReference) {
  Bench b({constant(1e-3), constant(10e-3), constant(5e-3), constant(1e-3)});
  auto r = b.run(quick_rule(), 7, 1, SharedSide::Candidate);
  ASSERT_EQ(r.size(), 3u);
  const double expected[3] = {10, 5, 1};
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(r[k].status, PairedStatus::Measured);
    EXPECT_EQ(r[k].rounds, 10);
    EXPECT_NEAR(r[k].estimate.speedup, expected[k], 1e-9) << k;
    EXPECT_NEAR(r[k].candidate.stats.median, 1e-3, 1e-12);
    EXPECT_NEAR(r[k].reference.stats.median, 1e-3 * expected[k], 1e-12);
    // Every sample keeps the place its arm had in its round.
    int ref_first = 0;
    for (int i = 0; i < r[k].rounds; ++i) {
      EXPECT_NE(r[k].reference.samples[i].position, r[k].candidate.samples[i].position);
      ref_first += r[k].reference.samples[i].position == 0;
    }
    EXPECT_EQ(r[k].reference_first, ref_first);
  }
  // One candidate call per round serves every reference.
  for (const auto& [round, arms] : b.rounds())
    EXPECT_EQ(std::multiset<int>(arms.begin(), arms.end()), (std::multiset<int>{0, 1, 2, 3})) << "round " << round;
}

TEST(PairedSharedCandidate, AFailingReferenceEndsOnlyItsPair) {
  Bench b({constant(1e-3), constant(2e-3), constant(3e-3)});
  b.arms[1]->fail_at_call = 8;
  auto r = b.run(quick_rule(), 5, 1, SharedSide::Candidate);
  EXPECT_EQ(r[0].status, PairedStatus::ArmFailed);
  EXPECT_EQ(r[0].failed_arm, Arm::Reference);
  EXPECT_EQ(r[1].status, PairedStatus::Measured);
  EXPECT_NEAR(r[1].estimate.speedup, 3, 1e-9);
}

TEST(PairedSharedCandidate, AFailingCandidateEndsEveryPairAsTheCandidatesFailure) {
  Bench b({constant(1e-3), constant(2e-3), constant(3e-3)});
  b.arms[0]->fail_at_call = 30;
  auto r = b.run(quick_rule(), 5, 1, SharedSide::Candidate);
  for (const auto& p : r) {
    EXPECT_EQ(p.status, PairedStatus::ArmFailed);
    EXPECT_EQ(p.failed_arm, Arm::Candidate);
    EXPECT_NE(p.failure_message.find("boom"), std::string::npos);
  }
}

// The same pair measured with the candidate shared is the pair measured alone, the arms' roles
// as measure_paired gives them.
TEST(PairedSharedCandidate, OneReferenceGivesWhatMeasurePairedGives) {
  StopRule rule = quick_rule();
  rule.min_samples = 20;
  Bench shared({noisy(1e-3, 0.05, 3), noisy(4e-3, 0.05, 4)});
  auto r = shared.run(rule, 21, 1, SharedSide::Candidate);
  Bench alone({noisy(4e-3, 0.05, 4), noisy(1e-3, 0.05, 3)});
  auto a = alone.run(rule, 21);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].rounds, a[0].rounds);
  EXPECT_NEAR(r[0].estimate.speedup, a[0].estimate.speedup, 1e-9);
  EXPECT_NEAR(r[0].reference.stats.median, a[0].reference.stats.median, 1e-12);
  EXPECT_NEAR(r[0].candidate.stats.median, a[0].candidate.stats.median, 1e-12);
}

} // namespace
} // namespace temper::judge::paired_shared_test
