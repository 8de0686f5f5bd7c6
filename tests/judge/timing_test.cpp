#include "judge/timing.h"

#include <gtest/gtest.h>

#include <cmath>

#include <sched.h>

namespace timing_test {

using namespace temper;
using namespace temper::judge;

// The sampled check's size: 90 calls catch a kernel wrong on 5% of them with 99% when there are
// many; a job of fewer calls, or with calls already proved, needs fewer, drawn without
// replacement from the unproven ones (hypergeometric), never more.
TEST(CheckSampleSize, CatchesAFivePercentFractionWithNinetyNinePercentAndNoMoreCalls) {
  EXPECT_EQ(check_sample_size(0.05, 0.99), 90);
  EXPECT_EQ(check_sample_size(0.20, 0.99), 21);
  EXPECT_EQ(check_sample_size(0.05, 0.99, 1000, 1000), 86);
  EXPECT_EQ(check_sample_size(0.05, 0.99, 100, 100), 59);
  EXPECT_EQ(check_sample_size(0.05, 0.99, 48, 48), 37);
  EXPECT_EQ(check_sample_size(0.05, 0.99, 20, 20), 20) << "one wrong call in 20: every call";
  EXPECT_EQ(check_sample_size(0.05, 0.99, 100, 50), 29) << "5 wrong calls among 50 unproven";
  EXPECT_EQ(check_sample_size(0.05, 0.99, 100, 4), 0) << "5 wrong calls cannot hide among 4 unproven";
  EXPECT_EQ(check_sample_size(0.05, 0.99, 100, 0), 0);
  // The guarantee itself, by the hypergeometric probability of missing every wrong call.
  for (int recorded : {8, 33, 60, 250, 1000}) {
    for (int unproven : {recorded, recorded / 2, recorded / 5}) {
      const int n = check_sample_size(0.05, 0.99, recorded, unproven);
      const int wrong = static_cast<int>(std::ceil(0.05 * recorded - 1e-9));
      if (wrong > unproven) {
        EXPECT_EQ(n, 0);
        continue;
      }
      auto miss = [&](int k) {
        double m = 1;
        for (int i = 0; i < k; ++i) m *= static_cast<double>(unproven - wrong - i) / (unproven - i);
        return m;
      };
      EXPECT_LE(miss(n), 0.01) << recorded << " " << unproven;
      EXPECT_GT(miss(n - 1), 0.01) << recorded << " " << unproven;
      EXPECT_LE(n, 90);
    }
  }
}

TEST(TimingDefaults, OneThreadRunsOnOneAllowedCpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus = default_timing_cpus(1);
  ASSERT_EQ(cpus.size(), 1u);
  EXPECT_TRUE(CPU_ISSET(cpus[0], &set));
  // The last allowed CPU.
  for (int c = cpus[0] + 1; c < CPU_SETSIZE; ++c) EXPECT_FALSE(CPU_ISSET(c, &set)) << c;
  EXPECT_TRUE(default_timing_cpus(2).empty()); // several threads: every CPU
}

TEST(TimingDefaults, ClockFollowsTheThreadCount) {
  EXPECT_EQ(default_timing_clock(1), "thread_cpu");
  EXPECT_EQ(default_timing_clock(4), "monotonic");
  EXPECT_TRUE(validate_clock("monotonic", 4));
  EXPECT_TRUE(validate_clock("thread_cpu", 1));
  EXPECT_FALSE(validate_clock("thread_cpu", 2)); // other threads' time would be missed
  EXPECT_FALSE(validate_clock("tsc", 1));
}

TEST(TimingProtocol, RecordsClockCpusAndTheCapCharge) {
  MeasurementProtocol p;
  p.cpus = {1};
  p.clock = "thread_cpu";
  nlohmann::json j = p.to_json();
  EXPECT_EQ(j["clock"], "thread_cpu");
  EXPECT_EQ(j["cpus"], nlohmann::json::array({1}));
  EXPECT_EQ(j["overhead_allowance_s"], p.rule.overhead_allowance_s);
  MeasurementProtocol q = p;
  q.clock = "monotonic";
  auto diff = protocol_difference(j, q.to_json());
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("clock"), std::string::npos);
}

TEST(TimingProtocol, RecordsTheColdStep) {
  MeasurementProtocol p;
  p.cold_step = "evict";
  MeasurementProtocol q = p;
  q.cold_step = "buffer";
  EXPECT_EQ(p.to_json()["cold_step"], "evict");
  auto diff = protocol_difference(p.to_json(), q.to_json());
  ASSERT_TRUE(diff); // times taken after different cold-cache steps do not compare
  EXPECT_NE(diff->find("cold_step"), std::string::npos);
  EXPECT_TRUE(validate_cold_step(""));
  EXPECT_TRUE(validate_cold_step("buffer"));
  EXPECT_FALSE(validate_cold_step("sometimes"));
}

TEST(TimingProtocol, RecordsTheLivesAndTheirWarmup) {
  MeasurementProtocol p;
  p.rule.target_lives = 12;
  p.rule.life_warmup_calls = 1;
  MeasurementProtocol q = p;
  q.rule.life_warmup_calls = 0;
  EXPECT_EQ(p.to_json()["target_lives"], 12);
  auto diff = protocol_difference(p.to_json(), q.to_json());
  ASSERT_TRUE(diff); // measurements with and without a warm-up after renewals do not compare
  EXPECT_NE(diff->find("life_warmup_calls"), std::string::npos);
}

} // namespace timing_test
