// Merging a case's timing jobs, and how an AMBIGUOUS case is told what would decide it.
#include "judge/report.h"
#include "judge/timing_phase.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace timing_summary_test {

using namespace temper::judge;

namespace {

// A measured job whose estimate is the interval [lo, hi] (log units) around its centre, after
// `spent` seconds per arm.
TimingJob job(double lo, double hi, double spent, bool confirmation = false) {
  TimingJob j;
  j.confirmation = confirmation;
  PairedEstimate& e = j.result.paired.estimate;
  e.n = 40;
  e.ci_determined = true;
  e.log_lo = lo;
  e.log_hi = hi;
  e.median_log_ratio = (lo + hi) / 2;
  e.half_width = (hi - lo) / 2;
  e.speedup = std::exp(e.median_log_ratio);
  e.speedup_lo = std::exp(lo);
  e.speedup_hi = std::exp(hi);
  j.result.paired.reference.spent_seconds = spent;
  j.result.paired.candidate.spent_seconds = spent - 0.1;
  j.result.delta = 0.01;
  j.result.verdict = decide_verdict(e, j.result.delta);
  return j;
}

// The text table of a one-case timed report.
std::string table_of(const CaseResult& c) {
  JudgeReport r;
  r.cases = {c};
  r.timing_overall = {{"tier", "gate"}, {"measurement_jobs", 1}, {"confirmation_jobs", 1}, {"geomean_speedup", 1.0},
                      {"geomean_ci", nullptr}, {"verdicts", {{"FASTER", 0}, {"SLOWER", 0}, {"SAME", 0}, {"AMBIGUOUS", 1}}}};
  std::ostringstream out;
  print_table(r, out, false);
  return out.str();
}

} // namespace

TEST(TimingSummary, AnAmbiguousCaseSaysWhichCapWouldDecideIt) {
  CaseTimingSummary s;
  s.jobs = {job(-0.045, -0.005, 2.0), job(-0.05, -0.02, 2.0, true)}; // AMBIGUOUS, then SLOWER
  summarize_timing_jobs(s);
  EXPECT_EQ(s.verdict, Verdict::Ambiguous);
  ASSERT_TRUE(s.decide_cap_s);
  EXPECT_EQ(s.decide_towards, Verdict::Slower);
  // The ambiguous job's factor (2% reach, 1.5% needed) times its larger arm's 2 s.
  EXPECT_NEAR(*s.decide_cap_s, 2.0 * std::pow(0.02 / (0.025 - std::log1p(0.01)), 2), 1e-9);

  CaseResult c;
  c.case_id = 7;
  c.timing = s;
  EXPECT_EQ(case_to_json(c)["timing"]["decide"]["towards"], "SLOWER");
  const std::string table = table_of(c);
  EXPECT_NE(table.find("case 7: AMBIGUOUS; at this noise about 3.5 s per arm (--cap 4) would likely clear the 1.0% threshold (the estimate points to SLOWER)"), std::string::npos)
      << table;
}

TEST(TimingSummary, NoProjectionWhenJobsPointDifferentWaysOrTheCaseIsDecided) {
  CaseTimingSummary split;
  split.jobs = {job(-0.045, -0.005, 2.0), job(0.005, 0.045, 2.0, true)};
  summarize_timing_jobs(split);
  EXPECT_EQ(split.verdict, Verdict::Ambiguous);
  EXPECT_FALSE(split.decide_cap_s);

  CaseTimingSummary decided;
  decided.jobs = {job(-0.05, -0.02, 2.0), job(-0.06, -0.03, 2.0, true)};
  summarize_timing_jobs(decided);
  EXPECT_EQ(decided.verdict, Verdict::Slower);
  EXPECT_FALSE(decided.decide_cap_s);
  CaseResult c;
  c.timing = decided;
  EXPECT_TRUE(case_to_json(c)["timing"]["decide"].is_null());
}

TEST(TimingSummary, AnImpracticalCapIsCalledNoise) {
  CaseTimingSummary s;
  s.jobs = {job(-0.30, 0.26, 0.5)}; // an A/A job on a loaded machine: +-28%
  summarize_timing_jobs(s);
  ASSERT_TRUE(s.decide_cap_s);
  EXPECT_GT(s.decide_sample_factor, 25);
  CaseResult c;
  c.case_id = 2;
  c.timing = s;
  const std::string table = table_of(c);
  EXPECT_NE(table.find("the machine is too noisy, or the difference too close to the 1.0% threshold"), std::string::npos) << table;
  EXPECT_EQ(table.find("would likely clear"), std::string::npos);
}

TEST(TimingSummary, AnEstimateOnTheThresholdIsNotDecidedByMoreMeasurement) {
  const double edge = std::log1p(0.01);
  CaseTimingSummary s;
  s.jobs = {job(edge - 0.01, edge + 0.01, 2.0)};
  summarize_timing_jobs(s);
  ASSERT_TRUE(s.decide_cap_s);
  EXPECT_FALSE(std::isfinite(*s.decide_cap_s));
  CaseResult c;
  c.case_id = 3;
  c.timing = s;
  EXPECT_TRUE(case_to_json(c)["timing"]["decide"]["cap_s"].is_null());
  const std::string table = table_of(c);
  EXPECT_NE(table.find("case 3: AMBIGUOUS; the estimate sits on the 1.0% noise threshold"), std::string::npos) << table;
}

// Work outside calls is judged over the case's jobs: a stray burst in one job that the others'
// margin absorbs is not a leftover thread; work in every job is.
TEST(WorkOutsideCalls, IsJudgedOverTheCasesJobsTogether) {
  auto with_work = [](double outside_ms, double allowed_ms) {
    TimingJob j = job(0.1, 0.2, 1.0);
    j.result.candidate_activity.outside_call_cpu_seconds = outside_ms * 1e-3;
    j.result.outside_allowance_seconds = allowed_ms * 1e-3;
    return j;
  };
  CaseResult stray;
  stray.timing.emplace();
  stray.timing->jobs = {with_work(4.1, 9.0), with_work(11.4, 10.9)};
  EXPECT_FALSE(reject_work_outside_calls(stray));
  EXPECT_EQ(stray.status, CaseStatus::Passed);

  CaseResult busy;
  busy.timing.emplace();
  busy.timing->jobs = {with_work(12.0, 9.0), with_work(11.4, 10.9)};
  EXPECT_TRUE(reject_work_outside_calls(busy));
  EXPECT_EQ(busy.status, CaseStatus::RejectedCheat);
  EXPECT_EQ(busy.reason_code, "work_outside_call");
  EXPECT_NE(busy.message.find("23.4 ms of CPU time outside its calls over 2 jobs (allowed 19.9 ms)"), std::string::npos) << busy.message;

  // Jobs where it was not judged (a runner with busy threads of its own) count for nothing.
  CaseResult unjudged;
  unjudged.timing.emplace();
  unjudged.timing->jobs = {with_work(50.0, 0.0)};
  EXPECT_FALSE(reject_work_outside_calls(unjudged));
}

} // namespace timing_summary_test
