#include "campaign/plan.h"

#include "campaign_fakes.h"
#include "core/task_loader.h"

#include <gtest/gtest.h>

namespace temper::campaign {
namespace {

using nlohmann::json;
using testing::test_plan;

PlanContext swi_glu_context() {
  PlanContext ctx;
  auto task = core::load_task(testing::source_dir() / "tasks" / "swi_glu");
  EXPECT_TRUE(task.has_value());
  for (const auto& c : task->cases) ctx.case_ids.insert(c.id);
  return ctx;
}

bool has_issue(const std::vector<PlanIssue>& issues, const std::string& path, const std::string& words) {
  for (const auto& i : issues) {
    if (i.path == path && i.message.find(words) != std::string::npos) return true;
  }
  return false;
}

TEST(PlanTest, ShippedSwiGluPlansAreValid) {
  for (const char* name : {"01-row-stream.json", "02-blocked.json"}) {
    auto plan = load_plan(testing::source_dir() / "tasks" / "swi_glu" / "plans" / name, swi_glu_context());
    ASSERT_TRUE(plan.has_value()) << name << ": " << plan.error().message;
    EXPECT_EQ(plan->milestones.size(), 3u);
    EXPECT_FALSE(plan->milestones[0].acceptance.performance.has_value());
    ASSERT_TRUE(plan->milestones[1].acceptance.performance.has_value());
    EXPECT_EQ(plan->milestones[2].acceptance.performance->against, "previous");
  }
}

TEST(PlanTest, ParsesEveryField) {
  auto plan = parse_plan(test_plan("rows"), swi_glu_context());
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_EQ(plan->decisions[1].choice, "rows");
  EXPECT_EQ(plan->decisions[0].evidence.measurements.size(), 1u);
  const Milestone& m1 = plan->milestones[1];
  EXPECT_EQ(m1.depends_on, (std::vector<std::string>{"D1", "D2"}));
  EXPECT_DOUBLE_EQ(m1.acceptance.performance->min_speedup, 1.5);
  EXPECT_TRUE(m1.acceptance.performance->cases.empty()); // "all"
  EXPECT_EQ(m1.acceptance.expectations.size(), 1u);
  EXPECT_EQ(m1.budget.attempts, 6);
  EXPECT_EQ(plan->milestone_index("M2"), 2);
  EXPECT_EQ(plan->decision_index("D3"), -1);
}

TEST(PlanTest, ListsEveryProblemWithItsPath) {
  json p = test_plan("rows");
  p["milestones"][0]["acceptance"]["performance"] = {{"tier", "gate"}, {"min_speedup", 1.2}};
  p["milestones"][1]["depends_on"] = {"D1", "D7"};
  p["milestones"][1]["acceptance"]["performance"]["cases"] = {1, 999};
  p["milestones"][1]["acceptance"]["performance"]["tier"] = "fast";
  p["milestones"][2]["acceptance"].erase("performance");
  p["milestones"][2]["id"] = "M5";
  p["decisions"][0].erase("rationale");
  p["decisions"][1]["evidence"] = json::object();
  p["milestones"][1]["kb"] = {"x86/nope"};
  p["milestones"][0]["budget"]["attempts"] = 0;
  p["milestones"][0]["requirments"] = {"typo"};
  auto issues = validate_plan(p, swi_glu_context());
  EXPECT_TRUE(has_issue(issues, "/milestones/0/acceptance/performance", "M0 has no performance gate"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/depends_on/1", "unknown decision 'D7'"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/acceptance/performance/cases/1", "case 999 does not exist"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/acceptance/performance/tier", "\"probe\" or \"gate\""));
  EXPECT_TRUE(has_issue(issues, "/milestones/2/acceptance", "from M1 every milestone has a performance gate"));
  EXPECT_TRUE(has_issue(issues, "/milestones/2/id", "expected 'M2', got 'M5'"));
  EXPECT_TRUE(has_issue(issues, "/decisions/0", "missing required field 'rationale'"));
  EXPECT_TRUE(has_issue(issues, "/decisions/1/evidence", "at least one"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/kb/0", "x86/nope"));
  EXPECT_TRUE(has_issue(issues, "/milestones/0/budget/attempts", "from 1 to 1000"));
  EXPECT_TRUE(has_issue(issues, "/milestones/0/requirments", "unknown field"));
  EXPECT_GE(issues.size(), 11u);
  auto parsed = parse_plan(p, swi_glu_context());
  ASSERT_FALSE(parsed.has_value());
  EXPECT_NE(parsed.error().message.find("/milestones/1/depends_on/1: unknown decision 'D7'"), std::string::npos);
}

TEST(PlanTest, StructuralErrors) {
  EXPECT_TRUE(has_issue(validate_plan(json::array(), {}), "/", "JSON object"));
  json p = test_plan("rows");
  p["schema_version"] = 2;
  p["decisions"] = json::array();
  auto issues = validate_plan(p, {});
  EXPECT_TRUE(has_issue(issues, "/schema_version", "must be 1"));
  EXPECT_TRUE(has_issue(issues, "/decisions", "non-empty"));
  json q = test_plan("rows");
  q["milestones"][1]["acceptance"]["performance"]["against"] = "previous";
  EXPECT_TRUE(has_issue(validate_plan(q, {}), "/milestones/1/acceptance/performance/against", "M0 has none"));
  json r = test_plan("rows");
  r["decisions"].push_back(testing::decision("D3", "unused"));
  EXPECT_TRUE(has_issue(validate_plan(r, {}), "/decisions/2", "no milestone depends on D3"));
}

TEST(PlanTest, KnowledgeEntriesMustBeAmongThoseGiven) {
  json p = test_plan("rows");
  p["milestones"][1]["kb"] = {"x86_64-amd/stream-bw"};
  p["decisions"][0]["evidence"]["kb"] = {"x86_64-amd/stream-bw"};
  PlanContext ctx;
  ctx.kb_ids = {"x86_64-amd/stream-bw"};
  EXPECT_TRUE(validate_plan(p, ctx).empty());
  EXPECT_FALSE(validate_plan(p, {}).empty());
}

TEST(PlanTest, LoadPlanReportsJsonSyntaxErrors) {
  util::TempDir tmp;
  std::ofstream(tmp.path() / "plan.json") << "{\"schema_version\": 1,";
  auto plan = load_plan(tmp.path() / "plan.json", {});
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message.find("not valid JSON"), std::string::npos);
}

TEST(RevisionTest, ResumeKeepsDecisionsAndEarlierMilestones) {
  Plan old_plan = *parse_plan(test_plan("rows"), {});
  json edited = test_plan("rows");
  edited["milestones"][1]["acceptance"]["performance"]["min_speedup"] = 1.2;
  Plan new_plan = *parse_plan(edited, {});
  json rev = {{"schema_version", 1}, {"kind", "resume"}, {"from", "M1"}, {"reason", "gate too strict"}};
  auto r = parse_revision(rev, old_plan, new_plan);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(restart_index(*r, new_plan), 1);
  // Resume from M2 while M1 changed: M1 must be redone too.
  rev["from"] = "M2";
  EXPECT_FALSE(validate_revision(rev, old_plan, new_plan).empty());
  // A decision changed: that is a replan.
  Plan other = *parse_plan(test_plan("blocks"), {});
  rev["from"] = "M1";
  auto issues = validate_revision(rev, old_plan, other);
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(issues[0].message.find("replan"), std::string::npos);
}

TEST(RevisionTest, ReplanRestartsAtTheFirstDependentMilestone) {
  Plan old_plan = *parse_plan(test_plan("rows"), {});
  Plan new_plan = *parse_plan(test_plan("blocks"), {});
  json rev = {{"schema_version", 1}, {"kind", "replan"}, {"from", "D2"}, {"reason", "rows too short"}};
  auto r = parse_revision(rev, old_plan, new_plan);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->kind, RevisionKind::Replan);
  EXPECT_EQ(restart_index(*r, new_plan), 1); // M0 depends on D1 only and is kept
  rev["from"] = "D1";
  r = parse_revision(rev, old_plan, new_plan);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(restart_index(*r, new_plan), 0);
  // Replan from D2 but D1 changed as well.
  json changed = test_plan("blocks");
  changed["decisions"][0]["choice"] = "two passes";
  Plan both = *parse_plan(changed, {});
  rev["from"] = "D2";
  auto issues = validate_revision(rev, old_plan, both);
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(issues[0].message.find("replan from D1"), std::string::npos);
  // Unknown ids and kinds.
  EXPECT_FALSE(validate_revision({{"schema_version", 1}, {"kind", "replan"}, {"from", "D9"}, {"reason", "x"}}, old_plan, new_plan).empty());
  EXPECT_FALSE(validate_revision({{"schema_version", 1}, {"kind", "restart"}, {"from", "M0"}, {"reason", "x"}}, old_plan, new_plan).empty());
  EXPECT_FALSE(validate_revision({{"schema_version", 1}, {"kind", "resume"}, {"from", "M0"}}, old_plan, old_plan).empty());
}

} // namespace
} // namespace temper::campaign
