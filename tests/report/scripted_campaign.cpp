#include "scripted_campaign.h"

#include "../campaign/campaign_fakes.h"
#include "campaign/final_report.h"
#include "campaign/planfile_teacher.h"

#include <gtest/gtest.h>

namespace temper::report::testing {

namespace fs = std::filesystem;
using namespace temper::campaign;
using namespace temper::campaign::testing;

fs::path run_scripted_campaign(const fs::path& root) {
  const fs::path task = make_task(root, {test_plan("rows"), test_plan("blocks")});
  const fs::path dir = root / "campaign";
  FakeJudge judge;
  ScriptedStudent student;
  util::FakeClock clock;
  Orchestrator* current = nullptr;
  student.orchestrator = &current;
  student.clock = &clock;
  judge.clock = &clock;
  student.script["R1/M0"] = {{submit("fake: status=INCORRECT_NUMERICAL"), submit("fake: speedup=0.9")}};
  student.script["R1/M1"] = {{probe("fake: speedup=1.2"), submit("fake: speedup=1.2"), escalate("rows are 7 elements")},
                             {submit("fake: speedup=1.8")}};
  student.script["R1/M2"] = {{submit("fake: speedup=1.9"), submit("fake: speedup=2.2")}};
  student.script["R2/M0"] = {{submit("fake: speedup=1.0")}};
  student.script["R2/M1"] = {{submit("fake: speedup=1.01"), submit("fake: speedup=1.02")},
                             {submit("fake: speedup=1.03"), submit("fake: speedup=1.04")}};
  OrchestratorDeps d;
  d.judge = &judge;
  d.make_agent = [&](const std::string& spec, agent::Role role) -> Expected<std::unique_ptr<agent::Agent>> {
    if (role == agent::Role::Student) return std::unique_ptr<agent::Agent>(new AgentRef(student));
    return make_campaign_agent(spec, task);
  };
  d.references = std::make_unique<PlainReferenceStore>(dir / "vault");
  d.clock = &clock;
  CampaignConfig c = test_config(task, 2);
  c.triggers.rejections = 2;
  auto o = Orchestrator::create(dir, std::move(c), std::move(d));
  EXPECT_TRUE(o.has_value()) << o.error().message;
  if (!o) return dir;
  current = o->get();
  auto ran = (*o)->run();
  EXPECT_TRUE(ran.has_value()) << ran.error().message;
  FinalReportOptions opts;
  opts.vs_torch = true; // the task "has" a PyTorch function: FakeJudge times one
  opts.torch_default_threads = true; // and at PyTorch's default thread count
  auto summary = ensure_final_report(dir, (*o)->references(), judge, opts);
  EXPECT_TRUE(summary.has_value()) << summary.error().message;
  return dir;
}

} // namespace temper::report::testing
