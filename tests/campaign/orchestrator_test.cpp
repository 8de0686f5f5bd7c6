// The campaign state machine with a scripted judge and scripted agents: plans, milestones,
// stagnation, revisions, promotion, workspaces, the ledger, and resume after kills.
#include "campaign/orchestrator.h"

#include "campaign/final_report.h"

#include "campaign/planfile_teacher.h"
#include "campaign_fakes.h"
#include "util/clock.h"

#include <gtest/gtest.h>

#include <sstream>

namespace temper::campaign::orchestrator_test {
namespace {

using namespace testing;

json read_json(const fs::path& f) {
  auto text = util::read_file(f);
  EXPECT_TRUE(text.has_value()) << f;
  return text ? json::parse(*text) : json();
}

// A campaign under test: the fakes outlive any number of Orchestrator objects.
struct Rig {
  util::TempDir tmp{"temper-campaign-test"};
  fs::path task;
  fs::path dir;
  FakeJudge judge;
  ScriptedStudent student;
  util::FakeClock clock;
  Orchestrator* current = nullptr;
  std::ostringstream log;
  std::string kill_at;  // checkpoint name
  int kill_nth = 0;     // on its nth occurrence
  int seen = 0;
  std::optional<judge::Roofline> roofline; // the machine's, for probes and gates

  explicit Rig(const std::vector<json>& plans) {
    task = make_task(tmp.path(), plans);
    dir = tmp.path() / "campaign";
    student.orchestrator = &current;
  }

  OrchestratorDeps deps() {
    OrchestratorDeps d;
    d.judge = &judge;
    d.make_agent = [this](const std::string& spec, agent::Role role) -> Expected<std::unique_ptr<agent::Agent>> {
      if (role == agent::Role::Student) return std::unique_ptr<agent::Agent>(new AgentRef(student));
      return make_campaign_agent(spec, task);
    };
    d.references = std::make_unique<PlainReferenceStore>(dir / "vault");
    d.clock = &clock;
    d.progress = &log;
    d.roofline = roofline;
    d.checkpoint = [this](std::string_view point) {
      clock.advance(1);
      if (point == kill_at && ++seen == kill_nth) throw Killed{std::string(point)};
    };
    return d;
  }

  std::unique_ptr<Orchestrator> create(CampaignConfig c) {
    auto o = Orchestrator::create(dir, std::move(c), deps());
    EXPECT_TRUE(o.has_value()) << o.error().message;
    current = o->get();
    return std::move(*o);
  }

  std::unique_ptr<Orchestrator> reopen() {
    auto o = Orchestrator::open(dir, deps());
    EXPECT_TRUE(o.has_value()) << o.error().message;
    current = o->get();
    return std::move(*o);
  }

  // Runs to the end, resuming after every simulated kill.
  std::unique_ptr<Orchestrator> run_with_resume(CampaignConfig c, int* kills = nullptr) {
    auto o = create(std::move(c));
    for (int i = 0; i < 20; ++i) {
      try {
        auto st = o->run();
        EXPECT_TRUE(st.has_value()) << st.error().message;
        return o;
      } catch (const Killed& k) {
        if (kills) ++*kills;
        o.reset();
        o = reopen();
      }
    }
    ADD_FAILURE() << "did not finish";
    return o;
  }
};

// Round 1: M0 fails correctness then passes; M1 stalls (1.2x against a 1.5x gate) and the
// Student escalates; the Teacher replans from D2 (plan 02); M1 passes at 1.8x; M2 fails its
// 1.1x-over-M1 gate at 1.9x, passes at 2.2x; the 2.2x kernel is promoted. Round 2 starts at the
// Teacher against it: M0 passes, M1 is rejected until the rejection trigger fires (a replan,
// then a resume: no alternative plan is left), fires a third time, and the revisions run out;
// nothing is promoted.
void script_two_rounds(ScriptedStudent& s) {
  s.script["R1/M0"] = {{submit("fake: status=INCORRECT_NUMERICAL"), submit("fake: speedup=0.9")}};
  s.script["R1/M1"] = {{probe("fake: speedup=1.2"), submit("fake: speedup=1.2"), escalate("rows are 7 elements: only tiling along dim 0 helps")},
                       {submit("fake: speedup=1.8")}};
  s.script["R1/M2"] = {{submit("fake: speedup=1.9"), submit("fake: speedup=2.2")}};
  s.script["R2/M0"] = {{submit("fake: speedup=1.0")}};
  s.script["R2/M1"] = {{submit("fake: speedup=1.01"), submit("fake: speedup=1.02")},
                       {submit("fake: speedup=1.03"), submit("fake: speedup=1.04")},
                       {submit("fake: speedup=1.05"), submit("fake: speedup=1.06")}};
}

TEST(OrchestratorTest, FullCampaignTwoRounds) {
  Rig rig(std::vector<json>{test_plan("rows"), test_plan("blocks")});
  script_two_rounds(rig.student);
  CampaignConfig c = test_config(rig.task, 2);
  c.triggers.rejections = 2;
  auto o = rig.create(c);
  ASSERT_TRUE(o->run());
  const CampaignState& s = o->state();
  EXPECT_EQ(s.phase, Phase::Done);
  EXPECT_EQ(s.end_reason, "2 round(s) done");
  ASSERT_EQ(s.rounds_done.size(), 2u);

  // Round 1.
  const fs::path r1 = rig.dir / "rounds" / "R1";
  const RoundSummary& first = s.rounds_done[0];
  EXPECT_TRUE(first.promoted);
  EXPECT_EQ(first.reference_before, "R0");
  EXPECT_EQ(first.reference_after, "R1");
  EXPECT_DOUBLE_EQ(first.speedup, 2.2);
  EXPECT_EQ(first.end_reason, "all milestones accepted");
  json rev = read_json(r1 / "revisions" / "001.json");
  EXPECT_EQ(rev["trigger"], "escalation");
  EXPECT_EQ(rev["kind"], "replan");
  EXPECT_EQ(rev["from"], "D2");
  EXPECT_EQ(rev["restart"], "M1");
  EXPECT_NE(rev["detail"].get<std::string>().find("rows are 7 elements"), std::string::npos);
  EXPECT_EQ(read_json(r1 / "plan.json")["decisions"][1]["choice"], "blocks");
  // Attempts 1-2 (M0), 3-6 (M1: probe, submit, escalate, then 1.8x), 7-8 (M2).
  EXPECT_EQ(read_json(r1 / "attempts" / "0001" / "result.json")["status"], "rejected");
  EXPECT_NE(read_json(r1 / "attempts" / "0001" / "result.json")["reasons"][0].get<std::string>().find("INCORRECT_NUMERICAL"), std::string::npos);
  EXPECT_EQ(read_json(r1 / "attempts" / "0002" / "result.json")["status"], "accepted");
  EXPECT_EQ(read_json(r1 / "attempts" / "0003" / "result.json")["op"], "probe");
  EXPECT_EQ(read_json(r1 / "attempts" / "0004" / "result.json")["status"], "rejected");
  EXPECT_EQ(read_json(r1 / "attempts" / "0005" / "result.json")["status"], "escalation");
  json a6 = read_json(r1 / "attempts" / "0006" / "result.json");
  EXPECT_EQ(a6["status"], "accepted");
  EXPECT_TRUE(a6["gate_faster"].get<bool>());
  EXPECT_EQ(a6["expectations"][0]["status"], "unsupported");
  json a7 = read_json(r1 / "attempts" / "0007" / "result.json");
  EXPECT_EQ(a7["status"], "rejected"); // 1.9 / 1.8 < 1.1
  EXPECT_NE(a7["reasons"][0].get<std::string>().find("previous milestone"), std::string::npos);
  EXPECT_EQ(read_json(r1 / "attempts" / "0008" / "result.json")["status"], "accepted");
  json promo = read_json(r1 / "promotion.json");
  EXPECT_TRUE(promo["promoted"].get<bool>());
  EXPECT_EQ(promo["attempt"], 8);
  // The promoted kernel is the vault's R1, byte for byte.
  EXPECT_EQ(*util::read_file(rig.dir / "vault" / "R1" / "reference.cpp"), *util::read_file(r1 / "attempts" / "0008" / "candidate.cpp"));

  // Round 2: against R1, two rejection triggers, revisions exhausted, nothing promoted.
  const fs::path r2 = rig.dir / "rounds" / "R2";
  const RoundSummary& second = s.rounds_done[1];
  EXPECT_FALSE(second.promoted);
  EXPECT_EQ(second.reference_before, "R1");
  EXPECT_EQ(second.reference_after, "R1");
  EXPECT_NE(second.end_reason.find("revisions exhausted"), std::string::npos);
  EXPECT_NE(second.note.find("nothing promoted"), std::string::npos);
  EXPECT_EQ(read_json(r2 / "revisions" / "001.json")["trigger"], "rejections");
  EXPECT_EQ(read_json(r2 / "revisions" / "001.json")["kind"], "replan");
  EXPECT_EQ(read_json(r2 / "revisions" / "002.json")["kind"], "resume"); // no alternative plan left
  EXPECT_EQ(read_json(r2 / "attempts" / "0002" / "intent.json")["reference_id"], "R1");
  EXPECT_EQ(s.reference_id, "R1");

  // The Student saw each milestone in order, M1 of round 1 twice (before and after the replan).
  EXPECT_EQ(rig.student.seen, (std::vector<std::string>{"R1/M0", "R1/M1", "R1/M1", "R1/M2", "R2/M0", "R2/M1", "R2/M1", "R2/M1"}));

  // Ledger: every judge run, turn, revision and promotion; costs by category.
  auto t = o->ledger().totals();
  ASSERT_TRUE(t.has_value());
  // Judge runs: per round one reference measurement; round 1: 7 judged attempts (the escalation
  // is not judged); round 2: 7 submissions.
  EXPECT_EQ(t->judge_runs, 2 + 7 + 7);
  EXPECT_EQ(t->revisions, 3);
  EXPECT_EQ(t->promotions, 1);
  // Turns: per round a plan turn; round 1: 1 revision + 4 Student turns; round 2: 2 + 4.
  EXPECT_EQ(t->agent_turns, 2 + 5 + 6);
  EXPECT_DOUBLE_EQ(t->agent_cost_usd, 0.01 * 8); // the Student's; planfile is free
  EXPECT_EQ(t->tokens, 150 * 8);
  // Gate runs: round 1 M1 (2) and M2 (2), round 2 M1 (6); the fake spends 0.25 s of
  // confirmation per case, 2 cases.
  EXPECT_EQ(rig.judge.count("gate"), 10);
  EXPECT_DOUBLE_EQ(t->confirmation_s, 10 * 2 * 0.25);
  EXPECT_DOUBLE_EQ(t->gate_s, 10 * (2.0 - 0.5 - 0.5) + 3 * (2.0 - 0.5)); // gates, then the M0 submissions
  EXPECT_EQ(t->compiles, 14);
  // Timed runs carry their reference's measured times (reference/times.json), so the judge
  // service fits the cap to its slowest case: R0's in round 1, R1's (2.2x faster) in round 2,
  // on the protocol's clock (thread CPU time for this one-thread task, not the wall time).
  int timed_calls = 0;
  for (const auto& call : rig.judge.calls) {
    if (call.tier == "correctness") {
      EXPECT_TRUE(call.reference_seconds.empty());
      continue;
    }
    ++timed_calls;
    ASSERT_EQ(call.reference_seconds.size(), 2u) << call.candidate;
    const bool round2 = call.candidate.string().find("/R2/") != std::string::npos;
    EXPECT_NEAR(call.reference_seconds.at(1), round2 ? 0.0008 / 2.2 : 0.0008, 1e-12) << call.candidate;
  }
  EXPECT_GT(timed_calls, 10); // the gates and the probes
  // Progress lines name rounds, milestones, attempts and the promotion.
  EXPECT_NE(rig.log.str().find("round 1: M1 attempt 6: accepted (1.800x)"), std::string::npos) << rig.log.str();
  EXPECT_NE(rig.log.str().find("sealed as R1"), std::string::npos);

  // Status.
  auto st = campaign_status(rig.dir);
  ASSERT_TRUE(st.has_value()) << st.error().message;
  EXPECT_DOUBLE_EQ((*st)["best_verified_speedup"].get<double>(), 2.2);
  EXPECT_EQ((*st)["counts"]["revisions"], 3);
  EXPECT_NE(format_status(*st).find("best verified speedup: 2.200x"), std::string::npos);
}

TEST(OrchestratorTest, WorkspacesHoldWhatEachRoleMaySeeAndNoReferenceSource) {
  // M1 of both plans starts from a kernel of the task with narrowed knobs; M0 and M2 name none.
  std::vector<json> plans{test_plan("rows"), test_plan("blocks")};
  for (json& p : plans) {
    p["milestones"][1]["starter"] = "kernels/rows.cpp";
    p["milestones"][1]["knobs"] = {{"UNROLL", {2, 4}}, {"NT_STORES", 0}};
  }
  Rig rig(plans);
  script_two_rounds(rig.student);
  CampaignConfig c = test_config(rig.task, 2);
  c.triggers.rejections = 2;
  auto o = rig.create(c);
  ASSERT_TRUE(o->run());
  const std::string r0 = *util::read_file(rig.dir / "vault" / "R0" / "reference.cpp");
  const std::string r1 = *util::read_file(rig.dir / "vault" / "R1" / "reference.cpp");
  for (const char* round : {"R1", "R2"}) {
    const fs::path rd = rig.dir / "rounds" / round;
    const fs::path teacher = rd / "teacher";
    const fs::path student = rd / "student";
    for (const auto& f : {"BRIEF.md", "task/proto.yaml", "task/desc.md", "task/cases.yaml", "target.json", "kb/INDEX.md",
                          "reference/times.json", "reference/disassembly.txt", "reference/profile.txt", "trajectory/INDEX.md"}) {
      EXPECT_TRUE(fs::exists(teacher / f)) << round << " teacher: " << f;
    }
    for (const auto& f : {"BRIEF.md", "milestone.md", "kb/INDEX.md", "feedback/0001.md", "feedback/0001.json", "src/accepted/M0.cpp"}) {
      EXPECT_TRUE(fs::exists(student / f)) << round << " student: " << f;
    }
    EXPECT_FALSE(fs::exists(teacher / "task" / "reference.cpp"));
    EXPECT_FALSE(fs::exists(teacher / "task" / "golden.cpp"));
    // No file of either workspace holds the source of a reference sealed at or before the
    // round's reference, nor names the vault.
    std::vector<std::string> sealed = {r0};
    if (std::string(round) == "R2") sealed.push_back(r1);
    for (const fs::path& ws : {teacher, student}) {
      for (const auto& f : files_under(ws)) {
        const std::string text = *util::read_file(f);
        for (const auto& ref : sealed) EXPECT_EQ(text.find(ref), std::string::npos) << f << " holds a reference source";
        EXPECT_EQ(text.find(rig.dir.string() + "/vault"), std::string::npos) << f << " names the vault";
        EXPECT_EQ(text.find("bool is_supported(int32_t dtype)"), std::string::npos) << f; // a line of reference.cpp
      }
    }
    EXPECT_FALSE(fs::exists(teacher / "vault"));
    EXPECT_FALSE(fs::exists(student / "vault"));
  }
  // The Student's milestone.md is the current milestone's only: requirements, contract, gate.
  const std::string md = *util::read_file(rig.dir / "rounds" / "R1" / "student" / "milestone.md");
  EXPECT_NE(md.find("M2"), std::string::npos);
  EXPECT_NE(md.find("over the previous milestone's accepted kernel"), std::string::npos);
  EXPECT_EQ(md.find("D1"), std::string::npos); // decisions are the Teacher's
  // milestone.json is the milestone as the plan has it; the starter is there exactly while the
  // milestone names one.
  const std::string rows = *util::read_file(rig.task / "kernels" / "rows.cpp");
  for (const char* key : {"R1/M0", "R1/M1", "R1/M2", "R2/M0", "R2/M1"}) {
    const auto& files = rig.student.workspace_files[key];
    EXPECT_TRUE(files.count("milestone.json")) << key;
    EXPECT_EQ(files.count("src/starter/rows.cpp"), std::string(key).ends_with("M1") ? 1u : 0u) << key;
    EXPECT_FALSE(files.count("src/starter/reference.cpp")) << key;
    for (const auto& f : files) EXPECT_EQ(f.find("reference"), std::string::npos) << key << ": " << f;
  }
  const fs::path r2_student = rig.dir / "rounds" / "R2" / "student";
  EXPECT_EQ(*util::read_file(r2_student / "src" / "starter" / "rows.cpp"), rows); // R2 ended in M1
  const json mj = read_json(r2_student / "milestone.json");
  EXPECT_EQ(mj["schema_version"], 1);
  EXPECT_EQ(mj["kind"], "temper.milestone");
  EXPECT_EQ(mj["task"], "swi_glu");
  json expected = plans[1]["milestones"][1];
  expected["task"] = "swi_glu";
  EXPECT_EQ(mj["milestone"], expected);
  const std::string md1 = *util::read_file(r2_student / "milestone.md");
  EXPECT_NE(md1.find("Start from src/starter/rows.cpp"), std::string::npos) << md1;
  EXPECT_NE(md1.find("UNROLL in {2, 4}"), std::string::npos) << md1;
  EXPECT_NE(md1.find("NT_STORES fixed at 0"), std::string::npos) << md1;
  EXPECT_FALSE(fs::exists(rig.dir / "rounds" / "R1" / "student" / "src" / "starter")); // R1 ended in M2
  // The Teacher's trajectory holds the escalation text.
  const std::string traj = *util::read_file(rig.dir / "rounds" / "R1" / "teacher" / "trajectory" / "INDEX.md");
  EXPECT_NE(traj.find("escalation: rows are 7 elements"), std::string::npos);
}

TEST(OrchestratorTest, InvalidPlansGoBackToTheTeacherWithEveryError) {
  json bad = test_plan("rows");
  bad["milestones"][0]["acceptance"]["performance"] = {{"tier", "gate"}, {"min_speedup", 1.2}};
  bad["milestones"][1]["depends_on"] = {"D9"};
  Rig rig(std::vector<json>{bad});
  auto o = rig.create(test_config(rig.task, 1));
  ASSERT_TRUE(o->run());
  EXPECT_EQ(o->state().phase, Phase::Done);
  ASSERT_EQ(o->state().rounds_done.size(), 1u);
  EXPECT_NE(o->state().rounds_done[0].end_reason.find("no valid plan in 3 turns"), std::string::npos);
  const fs::path ws = rig.dir / "rounds" / "R1" / "teacher";
  json errors = read_json(ws / "plan_errors.json");
  ASSERT_EQ(errors["issues"].size(), 2u);
  EXPECT_EQ(errors["issues"][0]["path"], "/milestones/0/acceptance/performance");
  EXPECT_EQ(errors["issues"][1]["path"], "/milestones/1/depends_on/0");
  // The brief of the retried turn quotes the errors.
  EXPECT_NE(util::read_file(ws / "BRIEF.md")->find("unknown decision 'D9'"), std::string::npos);
  EXPECT_FALSE(fs::exists(rig.dir / "rounds" / "R1" / "plan.json"));
  EXPECT_EQ(rig.student.turns, 0);
}

// A gate on the fraction of the roofline accepts what reaches it, whatever the speedup, and
// rejects a larger speedup that does not; with a speedup beside it, reaching either passes.
// Probes and gates carry the machine's roofline.
TEST(OrchestratorTest, RooflineGatesDecideOnTheFractionOfTheRoofline) {
  json plan = test_plan("rows");
  json& m1 = plan["milestones"][1]["acceptance"]["performance"];
  m1.erase("min_speedup");
  m1["min_roofline"] = 0.6;
  json& m2 = plan["milestones"][2]["acceptance"]["performance"];
  m2["against"] = "reference";
  m2["min_speedup"] = 2.0;
  m2["min_roofline"] = 0.9;
  Rig rig(std::vector<json>{plan});
  rig.roofline = judge::Roofline{10e9, 100e9, "test peaks"};
  rig.student.script["R1/M0"] = {{submit("fake: speedup=1.0")}};
  rig.student.script["R1/M1"] = {{probe("fake: speedup=3.0 roofline=0.4"), submit("fake: speedup=3.0 roofline=0.4"),
                                  submit("fake: speedup=1.2 roofline=0.7")}};
  rig.student.script["R1/M2"] = {{submit("fake: speedup=1.5 roofline=0.8"), submit("fake: speedup=1.6 roofline=0.95")}};
  auto o = rig.create(test_config(rig.task, 1));
  ASSERT_TRUE(o->run());
  ASSERT_EQ(o->state().rounds_done.size(), 1u);
  EXPECT_TRUE(o->state().rounds_done[0].promoted) << o->state().rounds_done[0].end_reason;
  const fs::path attempts = rig.dir / "rounds" / "R1" / "attempts";
  json probed = read_json(attempts / "0002" / "result.json");
  EXPECT_DOUBLE_EQ(probed["roofline_fraction"].get<double>(), 0.4);
  json fast_but_far = read_json(attempts / "0003" / "result.json");
  EXPECT_EQ(fast_but_far["status"], "rejected");
  ASSERT_EQ(fast_but_far["reasons"].size(), 1u);
  EXPECT_NE(fast_but_far["reasons"][0].get<std::string>().find("40.0% of the roofline"), std::string::npos) << fast_but_far.dump();
  json near = read_json(attempts / "0004" / "result.json");
  EXPECT_EQ(near["status"], "accepted") << near.dump();
  EXPECT_DOUBLE_EQ(near["roofline_fraction"].get<double>(), 0.7);
  // M2: neither 2x nor 90% of the roofline, then 90% of the roofline below 2x.
  json neither = read_json(attempts / "0005" / "result.json");
  EXPECT_EQ(neither["status"], "rejected");
  EXPECT_NE(neither["reasons"][0].get<std::string>().find("1.500x over the reference, below the gate's 2x; and 80.0% of the roofline"), std::string::npos) << neither.dump();
  EXPECT_EQ(read_json(attempts / "0006" / "result.json")["status"], "accepted");
  for (const auto& call : rig.judge.calls) EXPECT_EQ(call.roofline, call.tier != "correctness") << call.tier;
  // The intent keeps the gate as the plan wrote it.
  json intent = read_json(attempts / "0004" / "intent.json");
  EXPECT_EQ(intent["acceptance"]["performance"]["min_roofline"], 0.6);
  EXPECT_FALSE(intent["acceptance"]["performance"].contains("min_speedup"));
}

// A Teacher that answers revisions with what the test says.
class RevisingTeacher final : public agent::Agent {
public:
  std::vector<json> answers; // revision.json documents, one per revision turn
  size_t next = 0;
  std::string name() const override { return "revising"; }
  Expected<agent::TurnResult> run_turn(const agent::TurnRequest& req) override {
    if (!fs::exists(req.workspace / "REVISION.json")) {
      std::ofstream(req.workspace / "plan.json") << test_plan("rows").dump();
    } else if (next < answers.size()) {
      std::ofstream(req.workspace / "revision.json") << answers[next++].dump();
    }
    return agent::TurnResult{};
  }
};

TEST(OrchestratorTest, InvalidRevisionsGetClearErrorsAndResumeKeepsEarlierMilestones) {
  Rig rig(std::vector<json>{test_plan("rows")});
  RevisingTeacher teacher;
  teacher.answers = {{{"schema_version", 1}, {"kind", "replan"}, {"from", "D7"}, {"reason", "x"}},
                     {{"schema_version", 1}, {"kind", "resume"}, {"from", "M1"}, {"reason", "another budget for M1"}}};
  rig.student.script["R1/M0"] = {{submit("fake: speedup=1.0")}};
  rig.student.script["R1/M1"] = {{escalate("stuck")}, {submit("fake: speedup=1.6")}};
  rig.student.script["R1/M2"] = {{submit("fake: speedup=1.9")}};
  OrchestratorDeps d = rig.deps();
  d.make_agent = [&](const std::string&, agent::Role role) -> Expected<std::unique_ptr<agent::Agent>> {
    if (role == agent::Role::Student) return std::unique_ptr<agent::Agent>(new AgentRef(rig.student));
    return std::unique_ptr<agent::Agent>(new AgentRef(teacher));
  };
  auto o = Orchestrator::create(rig.dir, test_config(rig.task, 1), std::move(d));
  ASSERT_TRUE(o.has_value()) << o.error().message;
  rig.current = o->get();
  ASSERT_TRUE((*o)->run());
  const fs::path r1 = rig.dir / "rounds" / "R1";
  // The invalid answer was returned with its path, then the valid one applied.
  EXPECT_NE(util::read_file(r1 / "teacher" / "BRIEF.md")->find("revision.json:/from: replan needs a decision id"), std::string::npos);
  json rev = read_json(r1 / "revisions" / "001.json");
  EXPECT_EQ(rev["kind"], "resume");
  EXPECT_EQ(rev["restart"], "M1");
  EXPECT_FALSE(fs::exists(r1 / "revisions" / "002.json"));
  // M0 stayed accepted by its first attempt; M1 and M2 by the later ones; promoted 1.9x.
  EXPECT_EQ((*o)->state().rounds_done[0].attempt, 4);
  EXPECT_EQ(read_json(r1 / "promotion.json")["speedup"], 1.9);
  EXPECT_EQ(rig.student.seen, (std::vector<std::string>{"R1/M0", "R1/M1", "R1/M1", "R1/M2"}));
}

TEST(OrchestratorTest, PlateauAndBudgetTriggers) {
  Rig rig(std::vector<json>{test_plan("rows")});
  rig.student.script["R1/M0"] = {{submit("fake: speedup=1.0")}};
  rig.student.script["R1/M1"] = {{probe("fake: speedup=1.20"), probe("fake: speedup=1.205"), submit("fake: speedup=1.2")}};
  CampaignConfig c = test_config(rig.task, 1);
  c.triggers.plateau = 3;
  c.triggers.plateau_noise = 0.01;
  c.triggers.revisions = 0;
  auto o = rig.create(c);
  ASSERT_TRUE(o->run());
  EXPECT_NE(o->state().rounds_done[0].end_reason.find("revisions exhausted (0 of 0); last trigger: plateau"), std::string::npos)
      << o->state().rounds_done[0].end_reason;
  EXPECT_NE(rig.student.responses.back().find("The Teacher will revise the plan (plateau)"), std::string::npos);
  // Not accepted (1.2x is below M1's 1.5x gate), yet a confirmed FASTER gate verdict: promoted.
  EXPECT_TRUE(o->state().rounds_done[0].promoted);
  EXPECT_DOUBLE_EQ(o->state().rounds_done[0].speedup, 1.2);
}

TEST(OrchestratorTest, CampaignWallBudgetEndsTheCampaign) {
  Rig rig(std::vector<json>{test_plan("rows")});
  rig.student.script["R1/M0"] = {{submit("fake: speedup=1.0")}};
  CampaignConfig c = test_config(rig.task, 3);
  c.budgets.wall_s = 5; // every checkpoint advances the fake clock by 1 s
  auto o = rig.create(c);
  ASSERT_TRUE(o->run());
  EXPECT_EQ(o->state().phase, Phase::Done);
  EXPECT_EQ(o->state().rounds_done.size(), 1u);
  EXPECT_NE(o->state().end_reason.find("budget spent: campaign wall time"), std::string::npos) << o->state().end_reason;
}

TEST(OrchestratorTest, HarnessRejectsWhatIsOutsideTheWorkspaceAndUnknownOps) {
  Rig rig(std::vector<json>{test_plan("rows")});
  auto o = rig.create(test_config(rig.task, 1));
  // Before the plan there is no milestone.
  agent::HarnessRequest r;
  r.op = "submit";
  r.file = "kernel.cpp";
  EXPECT_FALSE(o->handle_student(r).ok);
  // Teacher ops work as soon as the campaign exists.
  r.op = "ref-time";
  r.case_id = 2;
  auto t = o->handle_teacher(r);
  EXPECT_TRUE(t.ok) << t.message;
  EXPECT_EQ(t.body["cases"][0]["case_id"], 2);
  r.op = "ref-disasm";
  EXPECT_NE(o->handle_teacher(r).message.find("fake disassembly"), std::string::npos);
  r.op = "ref-profile";
  EXPECT_NE(o->handle_teacher(r).message.find("unsupported"), std::string::npos);
  r.op = "submit";
  EXPECT_FALSE(o->handle_teacher(r).ok);
  // A student request for a file outside its workspace during a turn.
  rig.student.script["R1/M0"] = {{}};
  struct Outside final : agent::Agent {
    Orchestrator* orch = nullptr;
    std::vector<agent::HarnessResponse> got;
    std::string name() const override { return "outside"; }
    Expected<agent::TurnResult> run_turn(const agent::TurnRequest&) override {
      agent::HarnessRequest q;
      q.op = "submit";
      q.file = "../../../campaign.json";
      got.push_back(orch->handle_student(q));
      q.file = "/etc/passwd";
      got.push_back(orch->handle_student(q));
      q.op = "launch";
      got.push_back(orch->handle_student(q));
      q.op = "status";
      got.push_back(orch->handle_student(q));
      throw Killed{"done"};
    }
  };
  Outside outside;
  outside.orch = o.get();
  rig.student.script.clear();
  OrchestratorDeps d = rig.deps();
  d.make_agent = [&](const std::string& spec, agent::Role role) -> Expected<std::unique_ptr<agent::Agent>> {
    if (role == agent::Role::Student) return std::unique_ptr<agent::Agent>(new AgentRef(outside));
    return make_campaign_agent(spec, rig.task);
  };
  o.reset();
  auto o2 = Orchestrator::open(rig.dir, std::move(d));
  ASSERT_TRUE(o2.has_value());
  outside.orch = o2->get();
  EXPECT_THROW((void)(*o2)->run(), Killed);
  ASSERT_EQ(outside.got.size(), 4u);
  EXPECT_NE(outside.got[0].message.find("outside your workspace"), std::string::npos);
  EXPECT_NE(outside.got[1].message.find("outside your workspace"), std::string::npos);
  EXPECT_NE(outside.got[2].message.find("unknown request 'launch'"), std::string::npos);
  EXPECT_TRUE(outside.got[3].ok);
  EXPECT_NE(outside.got[3].message.find("M0: 0 of 6 submissions used"), std::string::npos);
}

// ---- Crash safety ---------------------------------------------------------------------------

void script_one_round(ScriptedStudent& s) {
  s.script["R1/M0"] = {{submit("fake: status=INCORRECT_NUMERICAL"), submit("fake: speedup=0.9")}};
  s.script["R1/M1"] = {{submit("fake: speedup=1.2"), escalate("need blocks")}, {probe("fake: speedup=1.7"), submit("fake: speedup=1.8")}};
  s.script["R1/M2"] = {{submit("fake: speedup=2.2")}};
}

struct Outcome {
  std::map<std::string, int> accepted_by_speedup_marker; // milestone -> count of accepted attempts
  json promotion;
  int revisions = 0;
  int gate_runs_of_final = 0;
};

void expect_same_outcome(Rig& rig, Orchestrator& o, const std::string& label) {
  const fs::path r1 = rig.dir / "rounds" / "R1";
  EXPECT_EQ(o.state().phase, Phase::Done) << label;
  ASSERT_EQ(o.state().rounds_done.size(), 1u) << label;
  json promo = read_json(r1 / "promotion.json");
  EXPECT_TRUE(promo["promoted"].get<bool>()) << label;
  EXPECT_DOUBLE_EQ(promo["speedup"].get<double>(), 2.2) << label;
  EXPECT_EQ(read_json(r1 / "revisions" / "001.json")["kind"], "replan") << label;
  EXPECT_FALSE(fs::exists(r1 / "revisions" / "002.json")) << label;
  // The final gate ran exactly once unless the kill came before its report existed.
  EXPECT_EQ(*util::read_file(rig.dir / "vault" / "R1" / "reference.cpp"), submit("fake: speedup=2.2").content) << label;
  auto t = o.ledger().totals();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->revisions, 1) << label;
  EXPECT_EQ(t->promotions, 1) << label;
  // Every judged attempt has exactly one judge-run row (keys make replays idempotent), plus
  // the reference measurement.
  int judged = 0;
  for (const auto& e : fs::directory_iterator(r1 / "attempts")) {
    json r = read_json(e.path() / "result.json");
    judged += static_cast<int>(r["reports"].size());
  }
  EXPECT_EQ(t->judge_runs, judged + 1) << label;
}

TEST(OrchestratorResumeTest, KillsAtEveryKindOfPointLoseNothingAndRepeatNoFinishedGate) {
  // An uninterrupted run, for the number of gate runs.
  int baseline_gates = 0;
  {
    Rig rig(std::vector<json>{test_plan("rows"), test_plan("blocks")});
    script_one_round(rig.student);
    auto o = rig.run_with_resume(test_config(rig.task, 1));
    expect_same_outcome(rig, *o, "no kill");
    baseline_gates = rig.judge.count("gate");
  }
  struct Point {
    const char* name;
    int nth;
    int extra_gates; // gate runs repeated because the kill came before their report existed
  };
  // Attempts of the uninterrupted run: 1-2 M0, 3 M1 1.2x, 4 escalation, 5 probe, 6 M1 1.8x,
  // 7 M2 2.2x. Turns: 1 plan, 2 M0, 3 M1, 4 revision, 5 M1, 6 M2.
  const std::vector<Point> points = {
      {"after_plan", 1, 0},    {"after_intent", 3, 0},  {"after_intent", 2, 0},  {"after_report", 4, 0},
      {"after_report", 6, 0},  {"after_result", 5, 0},  {"after_ledger", 6, 0},  {"after_apply", 2, 0},
      {"after_turn", 3, 0},    {"after_turn", 4, 0},    {"after_revision_record", 1, 0},
      {"after_promotion_record", 1, 0},
  };
  for (const auto& p : points) {
    const std::string label = fmt::format("{} #{}", p.name, p.nth);
    Rig rig(std::vector<json>{test_plan("rows"), test_plan("blocks")});
    script_one_round(rig.student);
    rig.kill_at = p.name;
    rig.kill_nth = p.nth;
    int kills = 0;
    std::map<std::string, int> accepted_before;
    auto o = rig.run_with_resume(test_config(rig.task, 1), &kills);
    EXPECT_EQ(kills, 1) << label;
    expect_same_outcome(rig, *o, label);
    // No finished gate was judged twice: each gate candidate's content at most once more than
    // in the uninterrupted run, and only when the kill came before the report.
    EXPECT_LE(rig.judge.count("gate"), baseline_gates + 1) << label;
    if (std::string(p.name) != "after_intent") {
      EXPECT_EQ(rig.judge.count("gate", "speedup=2.2"), 1) << label;
    }
  }
}

TEST(OrchestratorResumeTest, AcceptedResultSurvivesAKillInsideTheJudgeOfTheNextAttempt) {
  Rig rig(std::vector<json>{test_plan("rows"), test_plan("blocks")});
  script_one_round(rig.student);
  // Calls: 1 reference times, 2-3 M0, 4 M1's first submission: dies inside the judge.
  rig.judge.throw_on_call = 4;
  auto o = rig.create(test_config(rig.task, 1));
  EXPECT_THROW((void)o->run(), Killed);
  EXPECT_EQ(o->state().accepted.at("M0"), 2);
  o.reset();
  rig.judge.throw_on_call = 0;
  o = rig.reopen();
  // The interrupted attempt is recorded as such, not judged, and M0 stays accepted.
  EXPECT_EQ(o->state().accepted.at("M0"), 2);
  json a3 = read_json(rig.dir / "rounds" / "R1" / "attempts" / "0003" / "result.json");
  EXPECT_EQ(a3["status"], "interrupted");
  ASSERT_TRUE(o->run());
  expect_same_outcome(rig, *o, "judge kill");
}

TEST(OrchestratorResumeTest, ResumeOfAFinishedCampaignDoesNothing) {
  Rig rig(std::vector<json>{test_plan("rows")});
  rig.student.script["R1/M0"] = {{submit("fake: speedup=1.0")}};
  CampaignConfig c = test_config(rig.task, 1);
  c.triggers.revisions = 0;
  c.triggers.rejections = 1;
  auto o = rig.create(c);
  ASSERT_TRUE(o->run());
  const size_t calls = rig.judge.calls.size();
  o.reset();
  o = rig.reopen();
  ASSERT_TRUE(o->run());
  EXPECT_EQ(rig.judge.calls.size(), calls);
  EXPECT_EQ(o->state().rounds_done.size(), 1u);
  // A campaign directory cannot be created twice.
  EXPECT_FALSE(Orchestrator::create(rig.dir, c, rig.deps()).has_value());
}


// Costs: a Student turn of 30 s whose probe and submission each ran the judge for 2 s. The
// agent's own time leaves those 4 s out, and agent (own), probe, gate, confirmation, compile
// and other add up to the campaign's wall time, each second counted once.
TEST(OrchestratorTest, CostCategoriesAddUpToTheWallTime) {
  json plan = test_plan("rows");
  plan["decisions"] = json::array({plan["decisions"][0]});
  plan["milestones"] = json::array({plan["milestones"][0]});
  Rig rig(std::vector<json>{plan});
  rig.student.script["R1/M0"] = {{probe("fake: speedup=1.0"), submit("fake: speedup=1.0")}};
  rig.student.turn_seconds = 30;
  rig.student.clock = &rig.clock;
  rig.judge.clock = &rig.clock;
  auto o = rig.create(test_config(rig.task, 1));
  ASSERT_TRUE(o->run());
  ASSERT_EQ(o->state().phase, Phase::Done);
  EXPECT_EQ(rig.student.turns, 1);
  auto t = o->ledger().totals();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->judge_runs, 3); // the reference measurement, then the Student's probe and submission
  EXPECT_NEAR(t->agent_judge_s, 2 * 2.0, 1e-9);
  // The planfile Teacher's turn takes real milliseconds; the Student's own 26 s.
  EXPECT_NEAR(t->agent_own_s, 30 - 4.0, 0.5);

  auto st = campaign_status(rig.dir);
  ASSERT_TRUE(st.has_value()) << st.error().message;
  const json& c = (*st)["costs"];
  const double wall = c["wall_s"].get<double>();
  EXPECT_DOUBLE_EQ(wall, o->state().elapsed_s);
  EXPECT_GT(wall, 30 + 2.0);
  EXPECT_DOUBLE_EQ(c["judge_s"].get<double>(), 3 * 2.0);
  double sum = 0;
  for (const char* k : {"agent_own_s", "probe_s", "gate_s", "confirmation_s", "compile_s", "other_s"}) sum += c[k].get<double>();
  EXPECT_NEAR(sum, wall, 0.5) << c.dump();
  EXPECT_GE(c["other_s"].get<double>(), 0.0);
  // Whole turns would have counted the Student's judge runs twice.
  EXPECT_GT(sum - c["agent_own_s"].get<double>() + c["agent_s"].get<double>(), wall + 3.5);
  const std::string text = format_status(*st);
  EXPECT_NE(text.find("agent (own) 26."), std::string::npos) << text;
  EXPECT_NE(text.find("of which 4.0 s judge runs through the harness"), std::string::npos) << text;
}

// The final report judges the last promoted kernel (R1, 2.2x) against R0 once, on the campaign's
// cases at the gate tier, and a second call reads it back without judging.
TEST(FinalReportTest, JudgesFinalReferenceAgainstStartOnce) {
  Rig rig(std::vector<json>{test_plan("rows"), test_plan("blocks")});
  script_two_rounds(rig.student);
  CampaignConfig c = test_config(rig.task, 1);
  c.triggers.rejections = 2;
  auto o = rig.create(c);
  // Not finished yet: no report.
  EXPECT_FALSE(ensure_final_report(rig.dir, o->references(), rig.judge, {}).has_value());
  ASSERT_TRUE(o->run());
  ASSERT_EQ(o->state().reference_id, "R1");
  const size_t before = rig.judge.calls.size();
  auto summary = ensure_final_report(rig.dir, o->references(), rig.judge, {});
  ASSERT_TRUE(summary.has_value()) << summary.error().message;
  ASSERT_EQ(rig.judge.calls.size(), before + 1);
  EXPECT_EQ(rig.judge.calls.back().tier, "gate");
  EXPECT_NE(rig.judge.calls.back().content.find("fake: speedup=2.2"), std::string::npos);
  // Against R0, with R0's times as round 1 measured them (the cap fits its slowest case).
  EXPECT_EQ(rig.judge.calls.back().reference_seconds, (std::map<int64_t, double>{{1, 0.0008}, {2, 0.0008}}));
  EXPECT_EQ((*summary)["final_reference"], "R1");
  EXPECT_TRUE((*summary)["improved"].get<bool>());
  EXPECT_DOUBLE_EQ((*summary)["geomean_speedup"].get<double>(), 2.2);
  ASSERT_EQ((*summary)["cases"].size(), 2u);
  EXPECT_EQ((*summary)["cases"][0]["verdict"], "FASTER");
  EXPECT_TRUE(fs::exists(rig.dir / "final" / "report.json"));
  // The final judgement is a gate-category cost in the ledger, recorded once.
  auto t = o->ledger().totals();
  ASSERT_TRUE(t.has_value());
  const std::string text = format_final_summary(*summary);
  EXPECT_NE(text.find("geomean speedup over R0: 2.200x"), std::string::npos) << text;
  EXPECT_NE(text.find("campaign directory:"), std::string::npos) << text;
  auto again = ensure_final_report(rig.dir, o->references(), rig.judge, {});
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(rig.judge.calls.size(), before + 1);
  auto t2 = o->ledger().totals();
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(t2->judge_runs, t->judge_runs);
}

// A campaign of two rounds that promoted a kernel, run to its end: what a final report judges.
std::unique_ptr<Orchestrator> finished_two_round_campaign(Rig& rig) {
  script_two_rounds(rig.student);
  CampaignConfig c = test_config(rig.task, 1);
  c.triggers.rejections = 2;
  auto o = rig.create(c);
  if (!o || !o->run()) return nullptr;
  return o;
}

// Where the task has a PyTorch function, the final kernel is timed against it too, in the same
// judgement (JudgeCall::also_torch_threads): the same cases and tier, a "vs PyTorch" column per
// case and a geomean line. Each report is stored with the reference it judged, so a report that
// died after the judgement (summary.json not yet written) reads it back, and judges again on its
// own only an arm that was not timed.
TEST(FinalReportTest, AddsAVsPyTorchColumnAndJudgesEachArmOnce) {
  Rig rig(std::vector<json>{test_plan("rows"), test_plan("blocks")});
  auto o = finished_two_round_campaign(rig);
  ASSERT_TRUE(o);
  const size_t before = rig.judge.calls.size();
  FinalReportOptions opts;
  opts.vs_torch = true;
  // PyTorch cannot run here: the first report keeps R0's column and says why PyTorch's is missing.
  rig.judge.torch_error = "no golden environment";
  auto first = ensure_final_report(rig.dir, o->references(), rig.judge, opts);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  ASSERT_EQ(rig.judge.calls.size(), before + 1) << "one judgement for R0 and PyTorch";
  EXPECT_FALSE(rig.judge.calls.back().torch);
  EXPECT_EQ(rig.judge.calls.back().also_torch, std::vector<int>{1});
  EXPECT_NE((*first)["torch"]["note"].get<std::string>().find("no golden environment"), std::string::npos);
  EXPECT_NE(format_final_summary(*first).find("PyTorch: not timed against PyTorch: no golden environment"), std::string::npos);

  // As if the report had died after its judgement: R0's is read back, PyTorch's is made alone.
  fs::remove(rig.dir / "final" / "summary.json");
  rig.judge.torch_error.clear();
  auto summary = ensure_final_report(rig.dir, o->references(), rig.judge, opts);
  ASSERT_TRUE(summary.has_value()) << summary.error().message;
  ASSERT_EQ(rig.judge.calls.size(), before + 2);
  EXPECT_TRUE(rig.judge.calls.back().torch);
  EXPECT_EQ(rig.judge.calls.back().reference_seconds, rig.judge.calls[before].reference_seconds)
      << "R0's times raise the cap against PyTorch as against R0";
  EXPECT_EQ(rig.judge.calls.back().tier, "gate");
  EXPECT_DOUBLE_EQ((*summary)["geomean_speedup"].get<double>(), 2.2);
  EXPECT_DOUBLE_EQ((*summary)["torch"]["geomean_speedup"].get<double>(), 2.2 / 4.0);
  EXPECT_EQ((*summary)["torch"]["reference"], "torch 9.9.9, 1 thread");
  EXPECT_EQ(rig.judge.calls.back().torch_threads, 1);
  EXPECT_FALSE(summary->contains("torch_default")) << "asked for one thread only";
  ASSERT_EQ((*summary)["cases"].size(), 2u);
  EXPECT_DOUBLE_EQ((*summary)["cases"][1]["torch_speedup"].get<double>(), 0.55);
  EXPECT_EQ((*summary)["cases"][1]["torch_verdict"], "SLOWER");
  EXPECT_TRUE(fs::exists(rig.dir / "final" / "torch_report.json"));
  const std::string text = format_final_summary(*summary);
  EXPECT_NE(text.find("vs PyTorch"), std::string::npos) << text;
  EXPECT_NE(text.find("0.550x"), std::string::npos) << text;
  EXPECT_NE(text.find("geomean speedup over torch 9.9.9, 1 thread: 0.550x; FASTER 0, SLOWER 2"), std::string::npos) << text;

  // Both judgements are on record; a third call judges nothing.
  fs::remove(rig.dir / "final" / "summary.json");
  ASSERT_TRUE(ensure_final_report(rig.dir, o->references(), rig.judge, opts).has_value());
  EXPECT_EQ(rig.judge.calls.size(), before + 2);
}

// Where more than one CPU is there, the final kernel is also timed against PyTorch at PyTorch's
// own default thread count: a second column, a second geomean line, its own report file.
TEST(FinalReportTest, TimesPyTorchAtOneThreadAndAtItsDefaultThreadCount) {
  Rig rig(std::vector<json>{test_plan("rows"), test_plan("blocks")});
  auto o = finished_two_round_campaign(rig);
  ASSERT_TRUE(o);
  const size_t before = rig.judge.calls.size();
  FinalReportOptions opts;
  opts.vs_torch = true;
  opts.torch_default_threads = true;
  auto summary = ensure_final_report(rig.dir, o->references(), rig.judge, opts);
  ASSERT_TRUE(summary.has_value()) << summary.error().message;
  ASSERT_EQ(rig.judge.calls.size(), before + 1) << "one judgement: R0 and both PyTorch arms in the same jobs";
  EXPECT_EQ(rig.judge.calls[before].also_torch, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ((*summary)["torch"]["geomean_speedup"].get<double>(), 2.2 / 4.0);
  EXPECT_DOUBLE_EQ((*summary)["torch_default"]["geomean_speedup"].get<double>(), 2.2 / 4.0 / 1.6);
  EXPECT_EQ((*summary)["torch_default"]["threads"], "default");
  EXPECT_EQ((*summary)["torch"]["threads"], 1);
  ASSERT_EQ((*summary)["cases"].size(), 2u);
  EXPECT_DOUBLE_EQ((*summary)["cases"][1]["torch_default_speedup"].get<double>(), 2.2 / 4.0 / 1.6);
  EXPECT_EQ((*summary)["cases"][1]["torch_default_verdict"], "SLOWER");
  EXPECT_TRUE(fs::exists(rig.dir / "final" / "torch_default_report.json"));
  const std::string text = format_final_summary(*summary);
  EXPECT_NE(text.find("vs PyTorch*"), std::string::npos) << text;
  EXPECT_NE(text.find("0.344x"), std::string::npos) << text;
  EXPECT_NE(text.find("geomean speedup over torch 9.9.9, 2 threads (its default) (* PyTorch's default threads): 0.344x"), std::string::npos)
      << text;
  // Read back, not judged again.
  fs::remove(rig.dir / "final" / "summary.json");
  ASSERT_TRUE(ensure_final_report(rig.dir, o->references(), rig.judge, opts).has_value());
  EXPECT_EQ(rig.judge.calls.size(), before + 1);
}

// Nothing promoted: the summary says so and judges nothing.
TEST(FinalReportTest, NothingPromotedJudgesNothing) {
  Rig rig(std::vector<json>{test_plan("rows")});
  rig.student.script["R1/M0"] = {{submit("fake: speedup=1.0")}};
  CampaignConfig c = test_config(rig.task, 1);
  c.triggers.revisions = 0;
  c.triggers.rejections = 1;
  auto o = rig.create(c);
  ASSERT_TRUE(o->run());
  const size_t before = rig.judge.calls.size();
  auto summary = ensure_final_report(rig.dir, o->references(), rig.judge, {});
  ASSERT_TRUE(summary.has_value()) << summary.error().message;
  EXPECT_EQ(rig.judge.calls.size(), before);
  EXPECT_FALSE((*summary)["improved"].get<bool>());
  EXPECT_NE(format_final_summary(*summary).find("starting reference is still the best"), std::string::npos);
}


// The judge runs a turn waits for are inside the turn's wall time: a milestone's budget counts
// them once. Three 2 s probes in a 10 s turn spend 10 s of a 12 s budget, not 16.
TEST(OrchestratorTest, AMilestoneBudgetCountsJudgeRunsInsideATurnOnce) {
  json plan = test_plan("rows");
  plan["milestones"][1]["budget"]["seconds"] = 12;
  Rig rig(std::vector<json>{plan});
  rig.student.turn_seconds = 10;
  rig.student.script["R1/M0"] = {{submit("fake: speedup=1.0")}};
  rig.student.script["R1/M1"] = {{probe("fake: speedup=1.1"), probe("fake: speedup=1.1"), probe("fake: speedup=1.1")},
                                 {submit("fake: speedup=1.6")}};
  rig.student.script["R1/M2"] = {{submit("fake: speedup=1.9")}};
  auto o = rig.create(test_config(rig.task, 1));
  ASSERT_TRUE(o->run());
  EXPECT_EQ(o->state().rounds_done[0].end_reason, "all milestones accepted");
  EXPECT_EQ(rig.student.seen, (std::vector<std::string>{"R1/M0", "R1/M1", "R1/M1", "R1/M2"}));
}

} // namespace
} // namespace temper::campaign::orchestrator_test
