#include "campaign/stagnation.h"

#include "campaign/campaign_state.h"
#include "util/fs.h"

#include <gtest/gtest.h>

namespace temper::campaign::stagnation_test {
namespace {

Milestone m1() {
  Milestone m;
  m.id = "M1";
  m.budget.attempts = 8;
  m.budget.seconds = 1000;
  return m;
}

TEST(StagnationTest, ConsecutiveRejections) {
  CampaignState s;
  Triggers t;
  s.consecutive_rejected = 4;
  EXPECT_FALSE(check_stagnation(s, t, m1()).has_value());
  s.consecutive_rejected = 5;
  auto st = check_stagnation(s, t, m1());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->trigger, "rejections");
}

TEST(StagnationTest, PlateauNeedsKSpeedupsWithinTheBand) {
  CampaignState s;
  Triggers t;
  t.plateau = 3;
  t.plateau_noise = 0.02;
  s.window = {{1, "probe", false, 1.30}, {2, "probe", false, 1.20}, {3, "submit", false, 1.21}};
  EXPECT_FALSE(check_stagnation(s, t, m1()).has_value());
  s.window.push_back({4, "probe", false, 1.19});
  auto st = check_stagnation(s, t, m1());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->trigger, "plateau");
  // A failed attempt (no speedup) breaks the plateau.
  s.window.push_back({5, "submit", false, std::nullopt});
  EXPECT_FALSE(check_stagnation(s, t, m1()).has_value());
}

TEST(StagnationTest, BudgetSpentAndAcceptedMilestones) {
  CampaignState s;
  Triggers t;
  s.milestone_submissions = 8;
  ASSERT_TRUE(check_stagnation(s, t, m1()).has_value());
  EXPECT_EQ(check_stagnation(s, t, m1())->trigger, "budget");
  s.milestone_submissions = 0;
  s.milestone_seconds = 1000;
  EXPECT_EQ(check_stagnation(s, t, m1())->trigger, "budget");
  s.milestone_seconds = 0;
  s.milestone_student_turns = 10; // idle turns
  EXPECT_EQ(check_stagnation(s, t, m1())->trigger, "budget");
  s.accepted["M1"] = 3;
  EXPECT_FALSE(check_stagnation(s, t, m1()).has_value());
}

TEST(CampaignStateTest, RoundTripsThroughCampaignJson) {
  util::TempDir tmp;
  CampaignFile c;
  c.config.task_dir = "/tmp/task";
  c.config.task_name = "task";
  c.config.student = "claude";
  c.config.judge.cases = {1, 5};
  c.config.budgets.wall_s = 3600;
  c.state.round = 2;
  c.state.phase = Phase::Revision;
  c.state.accepted = {{"M0", 2}};
  c.state.accepted_speedup = {{"M0", 0}};
  c.state.window = {{3, "probe", false, 1.2}, {4, "submit", false, std::nullopt}};
  c.state.rounds_done.push_back({1, "R0", true, "R1", 7, 1.8, "all milestones accepted", "promoted"});
  c.state.pending_trigger = "escalation";
  ASSERT_TRUE(save_campaign(tmp.path(), c));
  auto back = load_campaign(tmp.path());
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->state.to_json(), c.state.to_json());
  EXPECT_EQ(back->config.to_json(), c.config.to_json());
  EXPECT_FALSE(load_campaign(tmp.path() / "nope").has_value());
}

} // namespace
} // namespace temper::campaign::stagnation_test
