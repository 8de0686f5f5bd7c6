// A whole campaign through the real binary with command-line agents: the Teacher and the Student
// are small shell scripts run by the `cmd:` driver (under bubblewrap when it works here) that
// use the `harness` client over the real unix socket. The Teacher measures the sealed reference
// (ref-time, ref-disasm, ref-profile) and writes plan.json; the Student writes a kernel and
// probes and submits it. The real judge decides on one small swi_glu case with short caps: the
// final report's two PyTorch judgements cost about 25 s per case here (a torch import per
// worker life), which a second case doubled for nothing this test asserts.
#include "core/thread_count.h"
#include "agent/sandbox.h"
#include "rows_plan.h"
#include "campaign/ledger.h"
#include "util/fs.h"
#include "util/process.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

namespace campaign_socket_e2e_test {

using namespace temper;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

// M0 with a mechanism expectation the profiler decides.
json socket_plan() { return temper_e2e::rows_plan({"static.instructions > 0"}); }

} // namespace

TEST(CampaignSocketE2E, CmdAgentsReachTheJudgeOverTheHarnessSocket) {
  util::TempDir tmp("temper-campaign-socket");
  // The task, without its shipped plans (the Teacher script writes its own).
  const fs::path task = tmp.path() / "tasks" / "swi_glu";
  fs::create_directories(task);
  for (const auto& e : fs::directory_iterator(kSource / "tasks" / "swi_glu")) {
    if (e.is_regular_file()) fs::copy_file(e.path(), task / e.path().filename());
  }
  // What the agents bring with them, visible read-only inside the sandbox.
  const fs::path kit = tmp.path() / "kit";
  fs::create_directories(kit);
  std::ofstream(kit / "plan.json") << socket_plan().dump(2);
  fs::copy_file(kSource / "tasks" / "swi_glu" / "kernels" / "rows.cpp", kit / "rows.cpp");
  std::ofstream(kit / "teacher.sh") << "set -u\n"
                                       "test -x ./harness || { echo 'no harness in the Teacher workspace'; exit 3; }\n"
                                       "./harness ref-time --case 13 > ref-time.txt\n"
                                       "./harness ref-disasm --case 13 > ref-disasm.txt\n"
                                       "./harness ref-profile --case 13 > ref-profile.txt\n"
                                       "cp " + (kit / "plan.json").string() + " plan.json\n";
  std::ofstream(kit / "student.sh") << "set -u\n"
                                       "if [ -e \"$TEMPER_WORKSPACE/../../../refs\" ]; then echo visible; else echo absent; fi > refs-seen.txt\n"
                                       "cp " + (kit / "rows.cpp").string() + " kernel.cpp\n"
                                       "./harness status\n"
                                       "./harness probe kernel.cpp --case 13\n"
                                       "./harness submit kernel.cpp\n";
  const bool sandbox = agent::sandbox_available().has_value();
  const fs::path dir = tmp.path() / "campaign";
  util::Command cmd;
  cmd.argv = {kBinary.string(), "run", task.string(), "--teacher", "cmd:sh " + (kit / "teacher.sh").string(), "--student",
              "cmd:sh " + (kit / "student.sh").string(), "--dir", dir.string(), "--cases", "13", "--cap", "0.3", "--cache", "warm",
              "--measure-jobs", "1", "--confirm-jobs", "1", "--min-samples", "5", "--min-time", "0.02", "--jobs", "2", "--budget",
              "turn=300s", "--quiet"};
  if (!sandbox) cmd.argv.push_back("--no-sandbox");
  cmd.env_set = {{"TEMPER_SANDBOX_RO", kit.string()}, {"TEMPER_HARNESS_BIN", (fs::path(TEMPER_BINARY_DIR) / "harness").string()}};
  cmd.timeout = std::chrono::seconds(300);
  auto r = util::default_process_runner().run(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const fs::path r1 = dir / "rounds" / "R1";
  const fs::path teacher = r1 / "teacher";
  const fs::path student = r1 / "student";
  // The Teacher measured the black box through its harness.
  EXPECT_TRUE(fs::exists(teacher / "harness"));
  EXPECT_NE(util::read_file(teacher / "ref-time.txt")->find("case 13:"), std::string::npos) << *util::read_file(teacher / "ref-time.txt");
  EXPECT_NE(util::read_file(teacher / "ref-disasm.txt")->find("temper_kernel"), std::string::npos);
  EXPECT_NE(util::read_file(teacher / "ref-profile.txt")->find("sealed reference R0 on case 13"), std::string::npos)
      << *util::read_file(teacher / "ref-profile.txt");
  EXPECT_NE(util::read_file(teacher / "BRIEF.md")->find("`reference/`: the sealed reference as a black box"), std::string::npos);

  // Both milestones accepted through the socket: M0 by a correctness submission (with its
  // expectation measured), M1 by a gate against the sealed R0.
  auto result = [&](int n) { return json::parse(*util::read_file(r1 / "attempts" / fmt::format("{:04}", n) / "result.json")); };
  // Attempts: M0 probe, M0 submit, M1 probe, M1 submit.
  EXPECT_EQ(result(1)["op"], "probe");
  json m0 = result(2);
  EXPECT_EQ(m0["milestone"], "M0");
  EXPECT_EQ(m0["status"], "accepted") << m0.dump(2);
  EXPECT_EQ(m0["expectations"][0]["status"], "passed") << m0.dump(2);
  json m1 = result(4);
  EXPECT_EQ(m1["milestone"], "M1");
  EXPECT_EQ(m1["status"], "accepted") << m1.dump(2);
  EXPECT_EQ(m1["tier"], "gate");
  json report = json::parse(*util::read_file(r1 / "attempts" / "0004" / "report.json"));
  EXPECT_EQ(report["context"]["reference"]["sealed"], "R0");
  const json campaign = json::parse(*util::read_file(dir / "campaign.json"));
  EXPECT_EQ(campaign["state"]["phase"], "done") << campaign.dump(2);
  // The Student's harness answers are in its transcripts.
  std::string transcripts;
  for (const auto& e : fs::directory_iterator(dir / "logs")) {
    if (e.path().filename().string().find("student") != std::string::npos) transcripts += *util::read_file(e.path() / "transcript.log");
    // Every turn ran in the sandbox wherever bubblewrap works here.
    EXPECT_EQ(json::parse(*util::read_file(e.path() / "turn.json"))["sandbox"], sandbox) << e.path();
  }
  EXPECT_NE(transcripts.find("M0 attempt 2: ACCEPTED"), std::string::npos) << transcripts;
  EXPECT_NE(transcripts.find("M1 attempt 4: ACCEPTED"), std::string::npos) << transcripts;

  // The ledger has the rows: the Teacher's turn and the Student's two, every judge run, the
  // round's promotion decision.
  auto ledger = campaign::Ledger::open(dir / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  auto t = ledger->totals();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->agent_turns, 1 + 2);
  // The reference measured for the Teacher's workspace and by its ref-time; M0 probe and submit;
  // M1 probe, then its submission's gate (on the campaign's one case, which is all of its
  // correctness too: no separate correctness run); when the round promoted a kernel,
  // the final report judges it against R0 once more and, in the same judgement, against the
  // task's PyTorch function where a golden environment can run it.
  const json promo = json::parse(*util::read_file(r1 / "promotion.json"));
  ASSERT_EQ(fs::exists(dir / "final" / "summary.json"), true);
  const json summary = json::parse(*util::read_file(dir / "final" / "summary.json"));
  const bool promoted = promo["promoted"].get<bool>();
  const bool vs_torch = promoted && summary.contains("torch") && summary["torch"].contains("verdicts");
  if (promoted && !vs_torch) {
    std::cerr << "not timed against PyTorch here: " << summary.value("torch", json::object()).value("note", "no torch entry") << "\n";
  }
  if (vs_torch) {
    EXPECT_EQ(summary["cases"][0].value("torch_verdict", "") == "", false) << summary.dump(2);
    EXPECT_TRUE(fs::exists(dir / "final" / "torch_report.json"));
  }
  // With more than one CPU, PyTorch is timed at its default thread count too.
  const bool vs_torch_default = promoted && summary.contains("torch_default") && summary["torch_default"].contains("verdicts");
  if (vs_torch && core::usable_cpus() > 1) {
    EXPECT_TRUE(vs_torch_default) << summary.dump(2);
  }
  if (vs_torch_default) {
    EXPECT_TRUE(fs::exists(dir / "final" / "torch_default_report.json"));
  }
  EXPECT_EQ(t->judge_runs, 2 + 2 + 2 + (promoted ? 1 : 0));
  // The same for people: the campaign's HTML report beside it (tests/report checks its content).
  EXPECT_NE(util::read_file(dir / "final" / "report.html").value_or("").find("<section id=\"timeline\""), std::string::npos);
  EXPECT_EQ(t->promotions, promo["promoted"].get<bool>() ? 1 : 0);
  EXPECT_GT(t->gate_s, 0);
  EXPECT_GT(t->probe_s, 0);
  // Judge runs the agents asked for over the socket are recorded inside their turns, so the
  // agents' own time leaves them out; the Teacher's workspace measurement and the final report
  // ran outside any turn.
  EXPECT_GT(t->agent_judge_s, 0);
  EXPECT_LT(t->agent_judge_s, t->judge_s);
  EXPECT_DOUBLE_EQ(t->agent_own_s + t->agent_judge_s, t->agent_s);

  // No workspace ever holds the reference source, and the sealed store is not visible in the sandbox.
  const std::string reference = *util::read_file(kSource / "tasks" / "swi_glu" / "reference.cpp");
  EXPECT_EQ(*util::read_file(dir / "refs" / "R0" / "vault" / "reference.cpp"), reference);
  for (const fs::path& ws : {teacher, student}) {
    for (const auto& e : fs::recursive_directory_iterator(ws)) {
      if (!e.is_regular_file()) continue;
      EXPECT_EQ(util::read_file(e.path())->find(reference), std::string::npos) << e.path() << " holds the reference source";
    }
  }
  if (sandbox) {
    EXPECT_EQ(*util::read_file(student / "refs-seen.txt"), "absent\n");
  }
}

} // namespace campaign_socket_e2e_test
