// What the workspaces are built from: knowledge entries read through the kb layer (certified
// only, stale where another machine certified them) and briefs rendered from briefs/ with every
// placeholder filled, listing what the workspace really holds.
#include "campaign/workspace.h"
#include "campaign_fakes.h"
#include "kb/store.h"

#include <gtest/gtest.h>

namespace temper::campaign::workspace_test {
namespace {

using namespace testing;

TEST(CampaignWorkspaceTest, KnowledgeEntriesComeFromTheKnowledgeBase) {
  const fs::path root = source_dir() / "hw_kb";
  const std::string klass = "x86_64-zen5-avx512";
  const kb::KnowledgeBase base = kb::load_kb(root);
  const kb::Entry* fma = base.find("fma-peak-1t");
  ASSERT_NE(fma, nullptr);
  ASSERT_NE(fma->last_decisive(), nullptr);
  const std::string certified_on = fma->last_decisive()->fingerprint;

  auto here = certified_kb_entries({root}, klass, certified_on);
  std::set<std::string> ids;
  for (const auto& e : here) ids.insert(e.id);
  EXPECT_TRUE(ids.count("fma-peak-1t"));
  EXPECT_TRUE(ids.count("bw-read-1t"));
  EXPECT_FALSE(ids.count("fma-accumulators-8-saturate")) << "proposed entries are not knowledge";
  EXPECT_FALSE(ids.count("sw-prefetch-strided-walk")) << "refuted entries are not knowledge";
  for (const auto& e : here) {
    if (e.id == "fma-peak-1t") {
      EXPECT_FALSE(e.stale);
      EXPECT_EQ(e.title, fma->title);
    }
  }
  // On another machine of the class the same entries are listed, marked stale.
  auto elsewhere = certified_kb_entries({root}, klass, "0000000000000000");
  ASSERT_EQ(elsewhere.size(), here.size());
  for (const auto& e : elsewhere) EXPECT_TRUE(e.stale) << e.id;
  EXPECT_TRUE(certified_kb_entries({root}, "riscv64-unknown", certified_on).empty());
  EXPECT_TRUE(certified_kb_entries({}, klass, certified_on).empty());

  util::TempDir tmp("temper-campaign-ws");
  ASSERT_TRUE(copy_kb_entries(elsewhere, tmp.path() / "kb"));
  const std::string index = *util::read_file(tmp.path() / "kb" / "INDEX.md");
  EXPECT_NE(index.find("`fma-peak-1t`"), std::string::npos) << index;
  EXPECT_NE(index.find("not yet re-checked here"), std::string::npos) << index;
  EXPECT_TRUE(fs::exists(tmp.path() / "kb" / "fma-peak-1t" / "entry.yaml"));
}

TEST(CampaignWorkspaceTest, BriefsComeFromTheTemplatesAndListTheWorkspace) {
  util::TempDir tmp("temper-campaign-briefs");
  const fs::path teacher = tmp.path() / "teacher";
  fs::create_directories(teacher / "task");
  fs::create_directories(teacher / "reference");
  std::ofstream(teacher / "target.json") << "{}";
  BriefContext ctx{"swi_glu", "x86_64-zen5-avx512", teacher, 900, JudgeSettings{}};

  auto plan = teacher_plan_brief(ctx, "");
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_NE(plan->find("# Teacher: plan the architecture of a faster `swi_glu` kernel"), std::string::npos);
  EXPECT_NE(plan->find("`task/`: the task"), std::string::npos) << *plan;
  EXPECT_NE(plan->find("`reference/`: the sealed reference as a black box"), std::string::npos);
  EXPECT_NE(plan->find("`target.json`"), std::string::npos);
  EXPECT_NE(plan->find("./harness ref-time"), std::string::npos);
  EXPECT_NE(plan->find("\"milestones\""), std::string::npos) << "the plan format is in the brief";
  EXPECT_NE(plan->find("`static.vec512_ops`"), std::string::npos) << "and the metrics expectations may name";
  EXPECT_NE(plan->find("900 s of wall time"), std::string::npos);
  EXPECT_EQ(plan->find("not valid"), std::string::npos);
  EXPECT_EQ(plan->find("{{"), std::string::npos);
  auto again = teacher_plan_brief(ctx, "/milestones/0/id: expected M0\n");
  ASSERT_TRUE(again.has_value());
  EXPECT_NE(again->find("## Your last plan.json was not valid"), std::string::npos);
  EXPECT_NE(again->find("/milestones/0/id: expected M0"), std::string::npos);

  std::ofstream(teacher / "REVISION.md") << "# Revision 1";
  auto rev = teacher_revision_brief(ctx, "escalation", "rows are 7 elements", "");
  ASSERT_TRUE(rev.has_value()) << rev.error().message;
  EXPECT_NE(rev->find("Trigger: **escalation**: rows are 7 elements"), std::string::npos) << *rev;
  EXPECT_NE(rev->find("`REVISION.md`: the revision request"), std::string::npos);
  EXPECT_NE(rev->find("revision.json"), std::string::npos);

  const fs::path student = tmp.path() / "student";
  fs::create_directories(student / "feedback");
  std::ofstream(student / "milestone.md") << "# M1";
  auto plan_doc = test_plan("rows");
  PlanContext pc;
  auto parsed = parse_plan(plan_doc, pc);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  ctx.workspace = student;
  auto st = student_brief(ctx, parsed->milestones[1]);
  ASSERT_TRUE(st.has_value()) << st.error().message;
  EXPECT_NE(st->find("# Student: implement milestone M1 of the `swi_glu` plan"), std::string::npos) << *st;
  EXPECT_NE(st->find("`milestone.md`: your milestone"), std::string::npos);
  EXPECT_NE(st->find("`feedback/`"), std::string::npos);
  EXPECT_NE(st->find("minimum speedup"), std::string::npos);
  EXPECT_NE(st->find("./harness submit FILE"), std::string::npos);
  EXPECT_NE(st->find("-shared -I"), std::string::npos) << "the compile command";
  EXPECT_NE(st->find("6 submissions"), std::string::npos);
  EXPECT_NE(st->find("escalate"), std::string::npos);
  EXPECT_EQ(st->find("{{"), std::string::npos);
}

} // namespace
} // namespace temper::campaign::workspace_test
