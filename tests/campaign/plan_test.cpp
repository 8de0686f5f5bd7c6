#include "campaign/plan.h"

#include "campaign_fakes.h"
#include "core/task_loader.h"

#include <gtest/gtest.h>

#include <set>

namespace temper::campaign::plan_test {
namespace {

namespace fs = std::filesystem;
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

// Every plan shipped with every task validates against its task as a campaign would check it
// (cases, starters, knobs); the swi_glu plans give the planfile Teacher real alternatives.
TEST(PlanTest, ShippedPlansOfEveryTaskAreValid) {
  int tasks_with_plans = 0;
  for (const auto& t : fs::directory_iterator(testing::source_dir() / "tasks")) {
    const fs::path plans = t.path() / "plans";
    if (!fs::is_directory(plans)) continue;
    ++tasks_with_plans;
    auto ctx = task_plan_context(t.path());
    ASSERT_TRUE(ctx.has_value()) << ctx.error().message;
    int n = 0;
    for (const auto& f : fs::directory_iterator(plans)) {
      if (f.path().extension() != ".json") continue;
      ++n;
      auto plan = load_plan(f.path(), *ctx);
      ASSERT_TRUE(plan.has_value()) << plan.error().message;
      EXPECT_FALSE(plan->milestones[0].acceptance.performance.has_value()) << f.path();
      for (size_t i = 1; i < plan->milestones.size(); ++i) EXPECT_TRUE(plan->milestones[i].acceptance.performance.has_value()) << f.path();
    }
    EXPECT_GE(n, 2) << t.path() << ": a revision needs an alternative plan";
  }
  EXPECT_GE(tasks_with_plans, 1);
}

TEST(PlanTest, ShippedSwiGluPlansStartFromTheTaskKernels) {
  auto ctx = task_plan_context(testing::source_dir() / "tasks" / "swi_glu");
  ASSERT_TRUE(ctx.has_value()) << ctx.error().message;
  std::set<std::string> starters;
  for (const char* name : {"01-specialized-rows.json", "02-general-blocks.json"}) {
    auto plan = load_plan(testing::source_dir() / "tasks" / "swi_glu" / "plans" / name, *ctx);
    ASSERT_TRUE(plan.has_value()) << name << ": " << plan.error().message;
    // M0 starts from a task kernel; a later milestone may continue from the accepted one.
    EXPECT_FALSE(plan->milestones[0].starter.empty()) << name;
    for (const auto& m : plan->milestones) {
      EXPECT_FALSE(m.knobs.empty()) << name << " " << m.id;
      if (!m.starter.empty()) starters.insert(m.starter);
    }
    // M0 fixes every knob: the structure as written, judged for correctness only.
    for (const auto& [knob, values] : plan->milestones[0].knobs) EXPECT_EQ(values.size(), 1u) << name << " " << knob;
  }
  EXPECT_EQ(starters, (std::set<std::string>{"kernels/general.cpp", "kernels/rows.cpp"}));
}

// The CUDA campaign's plan (plans/cuda/, read by `temper run --backend cuda`): valid, starting
// from the task's CUDA kernel with every knob fixed at M0 and something to search after it.
TEST(PlanTest, ShippedSwiGluCudaPlanStartsFromTheCudaKernel) {
  auto ctx = task_plan_context(testing::source_dir() / "tasks" / "swi_glu");
  ASSERT_TRUE(ctx.has_value()) << ctx.error().message;
  auto plan = load_plan(testing::source_dir() / "tasks" / "swi_glu" / "plans" / "cuda" / "01-vector-rows.json", *ctx);
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  ASSERT_GE(plan->milestones.size(), 2u);
  EXPECT_EQ(plan->milestones[0].starter, "kernels/rows.cu");
  for (const auto& [knob, values] : plan->milestones[0].knobs) EXPECT_EQ(values.size(), 1u) << knob;
  bool searched = false;
  for (size_t i = 1; i < plan->milestones.size(); ++i)
    for (const auto& [knob, values] : plan->milestones[i].knobs) searched = searched || values.size() > 1;
  EXPECT_TRUE(searched);
}

TEST(PlanTest, ParsesEveryField) {
  auto plan = parse_plan(test_plan("rows"), swi_glu_context());
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_EQ(plan->decisions[1].choice, "rows");
  EXPECT_EQ(plan->decisions[0].evidence.measurements.size(), 1u);
  const Milestone& m1 = plan->milestones[1];
  EXPECT_EQ(m1.depends_on, (std::vector<std::string>{"D1", "D2"}));
  EXPECT_EQ(m1.acceptance.performance->min_speedup, 1.5);
  EXPECT_FALSE(m1.acceptance.performance->min_roofline.has_value());
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

// A gate may ask for a fraction of this machine's roofline instead of (or besides) a speedup;
// it needs one of the two, a fraction in (0, 1], and a machine that has a roofline.
TEST(PlanTest, RooflineGates) {
  json p = test_plan("rows");
  json& gate = p["milestones"][1]["acceptance"]["performance"];
  gate.erase("min_speedup");
  gate["min_roofline"] = 0.6;
  auto plan = parse_plan(p, swi_glu_context());
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  ASSERT_TRUE(plan->milestones[1].acceptance.performance->min_roofline.has_value());
  EXPECT_DOUBLE_EQ(*plan->milestones[1].acceptance.performance->min_roofline, 0.6);
  EXPECT_FALSE(plan->milestones[1].acceptance.performance->min_speedup.has_value());
  EXPECT_FALSE(plan->milestones[2].acceptance.performance->min_roofline.has_value());

  // Without a roofline here, a gate on the roofline alone could never be decided; with a speedup
  // beside it, the speedup decides.
  PlanContext no_roofline = swi_glu_context();
  no_roofline.roofline_missing = "no certified figures";
  EXPECT_TRUE(has_issue(validate_plan(p, no_roofline), "/milestones/1/acceptance/performance/min_roofline", "kb bootstrap"));
  gate["min_speedup"] = 3;
  EXPECT_TRUE(validate_plan(p, no_roofline).empty());

  gate["min_roofline"] = 60; // a percentage, not a fraction
  EXPECT_TRUE(has_issue(validate_plan(p, swi_glu_context()), "/milestones/1/acceptance/performance/min_roofline", "(0, 1]"));
  gate.erase("min_roofline");
  gate.erase("min_speedup");
  EXPECT_TRUE(has_issue(validate_plan(p, swi_glu_context()), "/milestones/1/acceptance/performance", "min_speedup"));
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

// A task copy with a kernel that declares knobs, a Teacher workspace, and a plan whose M1 names
// a starter.
struct StarterRig {
  util::TempDir tmp{"temper-plan-starter"};
  fs::path task;
  fs::path teacher;
  PlanContext ctx;

  StarterRig() {
    task = testing::make_task(tmp.path(), {});
    teacher = tmp.path() / "teacher";
    fs::create_directories(teacher);
    auto c = task_plan_context(task);
    EXPECT_TRUE(c.has_value()) << c.error().message;
    ctx = *c;
    ctx.teacher_workspace = teacher;
  }

  json plan(const json& starter, const json& knobs) const {
    json p = test_plan("rows");
    if (!starter.is_null()) p["milestones"][1]["starter"] = starter;
    if (!knobs.is_null()) p["milestones"][1]["knobs"] = knobs;
    return p;
  }
};

TEST(PlanTest, StarterAndKnobsAreParsed) {
  StarterRig rig;
  auto plan = parse_plan(rig.plan("kernels/rows.cpp", {{"UNROLL", {1, "4"}}, {"NT_STORES", 0}}), rig.ctx);
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  const Milestone& m1 = plan->milestones[1];
  EXPECT_EQ(m1.starter, "kernels/rows.cpp");
  EXPECT_EQ(m1.knobs.at("UNROLL"), (std::vector<std::string>{"1", "4"})); // 1 and "4": compared as text
  EXPECT_EQ(m1.knobs.at("NT_STORES"), (std::vector<std::string>{"0"}));   // one value fixes the knob
  EXPECT_TRUE(plan->milestones[0].starter.empty());
  EXPECT_TRUE(plan->milestones[0].knobs.empty());
  auto file = resolve_starter("kernels/rows.cpp", rig.ctx);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_EQ(*file, fs::weakly_canonical(rig.task / "kernels" / "rows.cpp"));
  // A kernel the Teacher wrote in its workspace is found there first.
  std::ofstream(rig.teacher / "mine.cpp") << "// temper: knob TILE = 64 in {32, 64}\n";
  EXPECT_TRUE(validate_plan(rig.plan("mine.cpp", {{"TILE", {32}}}), rig.ctx).empty());
}

TEST(PlanTest, KnobsAreCheckedAgainstTheStartersDeclarations) {
  StarterRig rig;
  auto issues = validate_plan(rig.plan("kernels/rows.cpp", {{"UNROL", {1, 2}}, {"UNROLL", {1, 3, 1}}, {"NT_MIN_MB", 5}}), rig.ctx);
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/UNROL", "declares no knob UNROL (it declares: UNROLL, NT_STORES, NT_MIN_MB, PF_DIST, BF16_CVT, HALF_EXP_DEGREE, BF16_PAIRS, PAR_MIN_KB)"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/UNROLL/1", "3 is not a declared value of knob UNROLL"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/UNROLL/2", "listed twice"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/NT_MIN_MB", "5 is not a declared value"));
  EXPECT_EQ(issues.size(), 4u);
  // Without a starter only the form is checked: names, non-empty arrays, values.
  issues = validate_plan(rig.plan(nullptr, {{"ANY", {7}}, {"2BAD", 1}, {"EMPTY", json::array()}, {"OBJ", {{"a", 1}}}, {"B", {true}}}), rig.ctx);
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/2BAD", "not a knob name"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/EMPTY", "must not be empty"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/OBJ", "must be a value"));
  EXPECT_TRUE(has_issue(issues, "/milestones/1/knobs/B/0", "number or a non-empty string"));
  EXPECT_EQ(issues.size(), 4u);
  EXPECT_TRUE(has_issue(validate_plan(rig.plan(nullptr, {1, 2}), rig.ctx), "/milestones/1/knobs", "must be an object"));
}

TEST(PlanTest, KnobsOfAMilestoneWithoutStarterAreCheckedAgainstTheKernelItContinuesFrom) {
  auto ctx = task_plan_context(testing::source_dir() / "tasks" / "swi_glu");
  ASSERT_TRUE(ctx.has_value()) << ctx.error().message;
  json plan = json::parse(*util::read_file(testing::source_dir() / "tasks/swi_glu/plans/01-specialized-rows.json"));
  ASSERT_FALSE(plan["milestones"][2].contains("starter"));
  plan["milestones"][2]["knobs"] = {{"BF16_CVT", {0, 1}}, {"NOPE", 1}, {"UNROLL", {3}}};
  const auto issues = validate_plan(plan, *ctx);
  EXPECT_TRUE(has_issue(issues, "/milestones/2/knobs/NOPE",
                        "kernels/rows.cpp (M1's starter, which this milestone continues from) declares no knob NOPE"));
  EXPECT_TRUE(has_issue(issues, "/milestones/2/knobs/UNROLL/0", "3 is not a declared value of knob UNROLL"));
  EXPECT_EQ(issues.size(), 2u);
}

TEST(PlanTest, StarterMustBeARelativeKernelThatIsNotAReferenceOrTheGolden) {
  StarterRig rig;
  auto starter_issue = [&](const json& starter, const std::string& words) {
    return has_issue(validate_plan(rig.plan(starter, nullptr), rig.ctx), "/milestones/1/starter", words);
  };
  EXPECT_TRUE(starter_issue("kernels/nope.cpp", "does not exist"));
  EXPECT_TRUE(starter_issue((rig.task / "kernels" / "rows.cpp").string(), "relative"));
  EXPECT_TRUE(starter_issue("kernels/../kernels/rows.cpp", "'..'"));
  EXPECT_TRUE(starter_issue("", "non-empty string"));
  EXPECT_TRUE(starter_issue(3, "non-empty string"));
  EXPECT_TRUE(starter_issue("kernels", "not a regular file"));
  // The task's reference and golden, by path or by content, and links that lead outside.
  EXPECT_TRUE(starter_issue("reference.cpp", "reference or golden source"));
  EXPECT_TRUE(starter_issue("golden.cpp", "reference or golden source"));
  fs::copy_file(rig.task / "reference.cpp", rig.teacher / "copy.cpp");
  EXPECT_TRUE(starter_issue("copy.cpp", "reference or golden source"));
  fs::create_symlink(rig.task / "kernels" / "rows.cpp", rig.teacher / "link.cpp");
  EXPECT_TRUE(starter_issue("link.cpp", "leads outside"));
  // A kernel whose knob declarations do not parse cannot anchor knobs.
  std::ofstream(rig.teacher / "bad.cpp") << "// temper: knob TILE = 48 in {32, 64}\n";
  EXPECT_TRUE(starter_issue("bad.cpp", "knob declarations are not valid"));
  // No place to look: the plan cannot name a starter.
  EXPECT_TRUE(has_issue(validate_plan(rig.plan("kernels/rows.cpp", nullptr), PlanContext{}), "/milestones/1/starter", "cannot be checked"));
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
} // namespace temper::campaign::plan_test
