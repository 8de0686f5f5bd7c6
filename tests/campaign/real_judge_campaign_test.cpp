// A small campaign on tasks/swi_glu with the real judge: correctness failures, a probe, a gate
// with a measurement and a confirmation job, reports in the attempts, the ledger's categories.
// Kept short: one case, short caps, one job of each kind.
#include "campaign/orchestrator.h"
#include "campaign/planfile_teacher.h"
#include "campaign_fakes.h"
#include "util/process.h"

#include <gtest/gtest.h>

namespace temper::campaign::real_judge_campaign_test {
namespace {

using namespace testing;

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(RealJudgeCampaignTest, JudgesAttemptsWithTheRealJudge) {
  util::TempDir tmp("temper-campaign-real");
  json plan = test_plan("rows");
  plan["milestones"][1]["acceptance"]["performance"]["min_speedup"] = 0.01; // any measured speed
  plan["milestones"][1]["acceptance"]["performance"]["cases"] = {13};       // the smallest case
  plan["milestones"].erase(2);
  // One expectation the profiler decides here, one in prose it cannot.
  plan["milestones"][1]["acceptance"]["expectations"] = {"static.instructions > 0", "vector instructions dominate"};
  const fs::path task = make_task(tmp.path(), {plan});
  const std::string good = *util::read_file(source_dir() / "tasks" / "swi_glu" / "reference.cpp");
  const std::string wrong = replace(good, "* x1; }", "* x1 * 1.5f; }");

  CampaignConfig c = test_config(task, 1);
  c.student = "scripted";
  c.judge.cases = {1};
  c.judge.cap_s = 0.5;
  c.judge.cache_mode = "warm";
  c.judge.measure_jobs = 1;
  c.judge.confirm_jobs = 1;
  c.judge.min_samples = 10;
  c.judge.min_time_s = 0.05;
  c.judge.jobs = 2;
  RealJudgeService judge(c.judge, util::default_process_runner());
  judge.set_worker_exe(fs::path(TEMPER_BINARY_DIR) / "temper-worker");

  ScriptedStudent student;
  Orchestrator* current = nullptr;
  student.orchestrator = &current;
  student.script["R1/M0"] = {{{"submit", wrong, ""}, {"submit", good, ""}}};
  student.script["R1/M1"] = {{{"probe", good, ""}, {"submit", good, ""}}};
  ProfilingExpectationEvaluator evaluator(c.judge, util::default_process_runner());
  evaluator.set_worker_exe(fs::path(TEMPER_BINARY_DIR) / "temper-worker");
  OrchestratorDeps d;
  d.judge = &judge;
  d.expectations = &evaluator;
  d.make_agent = [&](const std::string& spec, agent::Role role) -> Expected<std::unique_ptr<agent::Agent>> {
    if (role == agent::Role::Student) return std::unique_ptr<agent::Agent>(new AgentRef(student));
    return make_campaign_agent(spec, task);
  };
  auto o = Orchestrator::create(tmp.path() / "campaign", c, std::move(d));
  ASSERT_TRUE(o.has_value()) << o.error().message;
  current = o->get();
  auto ran = (*o)->run();
  ASSERT_TRUE(ran.has_value()) << ran.error().message;

  const fs::path r1 = tmp.path() / "campaign" / "rounds" / "R1";
  auto result = [&](int n) { return json::parse(*util::read_file(r1 / "attempts" / fmt::format("{:04}", n) / "result.json")); };
  EXPECT_EQ(result(1)["status"], "rejected");
  EXPECT_NE(result(1)["reasons"][0].get<std::string>().find("INCORRECT_NUMERICAL"), std::string::npos) << result(1).dump(2);
  EXPECT_EQ(result(2)["status"], "accepted") << result(2).dump(2);
  EXPECT_EQ(result(3)["op"], "probe");
  EXPECT_TRUE(result(3)["speedup"].is_number()) << result(3).dump(2);
  json gate = result(4);
  EXPECT_EQ(gate["status"], "accepted") << gate.dump(2);
  EXPECT_EQ(gate["tier"], "gate");
  // Correctness on the campaign's case, then the gate on its own case.
  EXPECT_EQ(gate["reports"], json({"report-correctness.json", "report.json"}));
  json report = json::parse(*util::read_file(r1 / "attempts" / "0004" / "report.json"));
  EXPECT_EQ(report["cases"][0]["case_id"], 13);
  EXPECT_EQ(report["kind"], "temper.judge.report");
  EXPECT_EQ(report["timing"]["measurement_jobs"], 1);
  EXPECT_EQ(report["timing"]["confirmation_jobs"], 1);
  // Timed against the campaign's sealed R0 (CAMPAIGN/refs), by name.
  EXPECT_EQ(report["context"]["reference"]["sealed"], "R0") << report["context"].dump(2);
  EXPECT_TRUE(fs::exists(tmp.path() / "campaign" / "refs" / "R0" / "manifest.json"));
  EXPECT_EQ(*util::read_file(tmp.path() / "campaign" / "refs" / "R0" / "vault" / "reference.cpp"), good);
  json probe = json::parse(*util::read_file(r1 / "attempts" / "0003" / "report.json"));
  EXPECT_EQ(probe["context"]["reference"]["sealed"], "R0") << probe["context"].dump(2);
  // Mechanism expectations, evaluated by the profiler on the accepted candidate.
  ASSERT_EQ(gate["expectations"].size(), 2u) << gate.dump(2);
  EXPECT_EQ(gate["expectations"][0]["status"], "passed") << gate.dump(2);
  EXPECT_EQ(gate["expectations"][1]["status"], "unsupported");
  EXPECT_NE(gate["expectations"][1]["detail"].get<std::string>().find("not a metric expectation"), std::string::npos);
  EXPECT_NE(result(1)["expectations"][0]["detail"].get<std::string>().find("did not pass correctness"), std::string::npos)
      << result(1).dump(2);
  // The reference against itself: promotion follows the confirmed verdict, whichever it is.
  json promo = json::parse(*util::read_file(r1 / "promotion.json"));
  EXPECT_EQ(promo["promoted"].get<bool>(), gate["gate_faster"].get<bool>());
  // The Teacher's black box: measured times and a disassembly summary of the reference.
  json times = json::parse(*util::read_file(r1 / "teacher" / "reference" / "times.json"));
  EXPECT_EQ(times["cases"][0]["case_id"], 1);
  EXPECT_GT(times["cases"][0]["kernel_seconds"].get<double>(), 0);
  // A one-thread task is timed on the thread's CPU clock: the cap rule reads that figure.
  EXPECT_GT(times["cases"][0]["kernel_cpu_seconds"].get<double>(), 0);
  EXPECT_EQ(times["cases"][0]["protocol_clock_seconds"], times["cases"][0]["kernel_cpu_seconds"]);
  EXPECT_NE(util::read_file(r1 / "teacher" / "reference" / "disassembly.txt")->find("temper_kernel"), std::string::npos);
  auto t = (*o)->ledger().totals();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->judge_runs, 1 + 5);
  EXPECT_GT(t->confirmation_s, 0);
  EXPECT_GT(t->gate_s, 0);
  EXPECT_GT(t->probe_s, 0);
}

TEST(RealJudgeCampaignTest, FitCapToThePerJobLimit) {
  EXPECT_DOUBLE_EQ(*fit_cap_to_limit(15, 2, 6, 7200), 15);
  auto fitted = fit_cap_to_limit(15, 20, 6, 600);
  ASSERT_TRUE(fitted.has_value());
  EXPECT_LT(*fitted, 15);
  EXPECT_LE(20 * 6 * 2 * *fitted + 10 * 20 + 30, 600 + 1e-9);
  EXPECT_FALSE(fit_cap_to_limit(15, 20, 6, 100).has_value());
}

// The cap of a timed run rises so the sealed reference's slowest timed case fits a verdict,
// from the times the campaign measured, and stays within the per-job limit.
TEST(RealJudgeCampaignTest, CapFitsTheSlowestReferenceCase) {
  const judge::StopRule rule;
  const std::map<int64_t, double> times{{1, 0.01}, {4, 0.4}, {5, 0.42}};
  // Nothing measured, or only fast cases selected: the configured cap, no note.
  auto plain = choose_cap(1.0, {}, {4, 5}, 2, 2, 7200, rule);
  ASSERT_TRUE(plain.has_value());
  EXPECT_DOUBLE_EQ(plain->cap_s, 1.0);
  EXPECT_TRUE(plain->note.empty());
  auto fast = choose_cap(1.0, times, {1, 2}, 2, 2, 7200, rule);
  ASSERT_TRUE(fast.has_value());
  EXPECT_DOUBLE_EQ(fast->cap_s, 1.0);
  EXPECT_TRUE(fast->note.empty()) << fast->note;
  // Case 4 is the slowest selected: 3 rounds plus warm-ups of kReferenceTimeMargin x 0.4 s.
  auto raised = choose_cap(1.0, times, {1, 4}, 2, 2, 7200, rule);
  ASSERT_TRUE(raised.has_value());
  EXPECT_DOUBLE_EQ(raised->cap_s, judge::cap_for_verdict(rule, kReferenceTimeMargin * 0.4));
  EXPECT_GT(raised->cap_s, 1.0);
  EXPECT_NE(raised->note.find("raised from 1.00 s"), std::string::npos) << raised->note;
  EXPECT_NE(raised->note.find("case 4, 0.400 s"), std::string::npos) << raised->note;
  // Every case (none selected): case 5.
  auto all = choose_cap(1.0, times, {}, 3, 2, 7200, rule);
  ASSERT_TRUE(all.has_value());
  EXPECT_DOUBLE_EQ(all->cap_s, judge::cap_for_verdict(rule, kReferenceTimeMargin * 0.42));
  // A reference time inflated by load (wall clock) raises the cap at most kMaxCapRaise times.
  auto inflated = choose_cap(1.0, {{4, 4.5}}, {4}, 1, 2, 7200, rule);
  ASSERT_TRUE(inflated.has_value());
  EXPECT_DOUBLE_EQ(inflated->cap_s, kMaxCapRaise * 1.0);
  EXPECT_NE(inflated->note.find("at most 8x the configured cap"), std::string::npos) << inflated->note;
  // A larger configured cap is kept.
  auto big = choose_cap(15.0, times, {}, 3, 2, 7200, rule);
  ASSERT_TRUE(big.has_value());
  EXPECT_DOUBLE_EQ(big->cap_s, 15.0);
  EXPECT_TRUE(big->note.empty());
  // The per-job limit still bounds it, and the note says both.
  auto bounded = choose_cap(1.0, times, {}, 20, 2, 300, rule);
  ASSERT_TRUE(bounded.has_value());
  EXPECT_LT(bounded->cap_s, all->cap_s);
  EXPECT_DOUBLE_EQ(bounded->cap_s, *fit_cap_to_limit(all->cap_s, 20, 2, 300));
  EXPECT_NE(bounded->note.find("raised"), std::string::npos) << bounded->note;
  EXPECT_NE(bounded->note.find("to fit the per-job limit of 300 s"), std::string::npos) << bounded->note;
}

} // namespace
} // namespace temper::campaign::real_judge_campaign_test
