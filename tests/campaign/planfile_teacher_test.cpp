// The planfile Teacher on the plans shipped with tasks/swi_glu: a planning turn writes the first
// plan (the specialized rows the task's contiguous cases favour), a revision switches to the
// alternative architecture (the general blocked path) with a revision the orchestrator accepts,
// and with no alternative left it resumes the stalled milestone.
#include "campaign/planfile_teacher.h"

#include "campaign/plan.h"
#include "campaign_fakes.h"

#include <gtest/gtest.h>

namespace temper::campaign::planfile_teacher_test {
namespace {

using namespace testing;

json read_json(const fs::path& f) {
  auto text = util::read_file(f);
  EXPECT_TRUE(text.has_value()) << f;
  return text ? json::parse(*text) : json();
}

TEST(PlanfileTeacherTest, ShippedSwiGluPlansReplanToTheAlternativeArchitecture) {
  util::TempDir tmp("temper-planfile");
  const fs::path task = source_dir() / "tasks" / "swi_glu";
  auto ctx = task_plan_context(task);
  ASSERT_TRUE(ctx.has_value()) << ctx.error().message;
  ctx->teacher_workspace = tmp.path();
  auto teacher = make_campaign_agent("planfile", task);
  ASSERT_TRUE(teacher.has_value()) << teacher.error().message;
  agent::TurnRequest req;
  req.role = agent::Role::Teacher;
  req.workspace = tmp.path();

  ASSERT_TRUE((*teacher)->run_turn(req).has_value());
  const json first = read_json(tmp.path() / "plan.json");
  EXPECT_EQ(first, read_json(task / "plans" / "01-specialized-rows.json"));
  auto old_plan = parse_plan(first, *ctx);
  ASSERT_TRUE(old_plan.has_value()) << old_plan.error().message;

  std::ofstream(tmp.path() / "REVISION.json") << json{{"schema_version", 1}, {"trigger", "rejections"}, {"detail", "3 rejections"}, {"milestone", "M1"}}.dump();
  ASSERT_TRUE((*teacher)->run_turn(req).has_value());
  const json second = read_json(tmp.path() / "plan.json");
  EXPECT_EQ(second, read_json(task / "plans" / "02-general-blocks.json"));
  auto new_plan = parse_plan(second, *ctx);
  ASSERT_TRUE(new_plan.has_value()) << new_plan.error().message;
  const json rev_doc = read_json(tmp.path() / "revision.json");
  auto rev = parse_revision(rev_doc, *old_plan, *new_plan);
  ASSERT_TRUE(rev.has_value()) << rev.error().message;
  EXPECT_EQ(rev->kind, RevisionKind::Replan);
  EXPECT_EQ(rev->from, "D2"); // the loop structure is what changes
  EXPECT_EQ(restart_index(*rev, *new_plan), 0);
  EXPECT_EQ(new_plan->milestones[0].starter, "kernels/general.cpp");

  // No alternative left: the same plan, resumed at the stalled milestone.
  ASSERT_TRUE((*teacher)->run_turn(req).has_value());
  EXPECT_EQ(read_json(tmp.path() / "plan.json"), second);
  auto again = parse_revision(read_json(tmp.path() / "revision.json"), *new_plan, *new_plan);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->kind, RevisionKind::Resume);
  EXPECT_EQ(again->from, "M1");
}

} // namespace
} // namespace temper::campaign::planfile_teacher_test
