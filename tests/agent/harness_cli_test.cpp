// The `harness` executable end to end against a test server.
#include "agent_fixture.h"

#include "util/process.h"

namespace harness_cli_test {

using namespace temper::agent;
using namespace temper::agent::testing;

namespace {

temper::util::ProcessResult run_harness(const fs::path& cwd, const std::string& socket,
                                        std::vector<std::string> args) {
  temper::util::Command c;
  c.argv = {(fs::path(TEMPER_BINARY_DIR) / "harness").string()};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  c.cwd = cwd;
  c.env_set = {{"TEMPER_HARNESS_SOCKET", socket}};
  c.timeout = std::chrono::seconds(30);
  return temper::util::default_process_runner().run(c);
}

} // namespace

TEST(HarnessCli, SendsEachOpAndPrintsTheMessage) {
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  fs::create_directories(dirs.workspace / "sub");
  auto probe = run_harness(dirs.workspace / "sub", harness.socket(),
                           {"probe", "../kernel.cpp", "--case", "4", "--grid", "TILE=16,32", "--grid", "U=2"});
  EXPECT_EQ(probe.exit_code, 0) << probe.output;
  EXPECT_NE(probe.output.find("probe: accepted"), std::string::npos);
  auto submit = run_harness(dirs.workspace, harness.socket(), {"submit", "bad.cpp"});
  EXPECT_EQ(submit.exit_code, 1) << submit.output;
  EXPECT_NE(submit.output.find("submit: rejected"), std::string::npos);
  auto esc = run_harness(dirs.workspace, harness.socket(), {"escalate", "D2 tiling", "caps it"});
  EXPECT_EQ(esc.exit_code, 0) << esc.output;
  auto ref = run_harness(dirs.workspace, harness.socket(), {"--json", "ref-time", "--case", "1"});
  EXPECT_EQ(ref.exit_code, 0) << ref.output;
  auto body = nlohmann::json::parse(ref.output, nullptr, false);
  ASSERT_TRUE(body.is_object()) << ref.output;
  EXPECT_EQ(body["op"], "ref-time");
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"status"}).exit_code, 0);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"ref-profile"}).exit_code, 0);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"ref-disasm", "--case", "0"}).exit_code, 0);

  auto seen = harness.requests();
  ASSERT_EQ(seen.size(), 7u);
  // Relative files are sent as absolute paths, resolved against the caller's directory.
  EXPECT_EQ(seen[0].file, dirs.workspace / "kernel.cpp");
  EXPECT_EQ(seen[0].case_id, 4);
  EXPECT_EQ(seen[0].grid, (std::vector<std::string>{"TILE=16,32", "U=2"}));
  EXPECT_EQ(seen[2].text, "D2 tiling caps it");
  EXPECT_EQ(seen[3].case_id, 1);
  EXPECT_FALSE(seen[5].case_id);
}

TEST(HarnessCli, ProbeSendsExplicitVariants) {
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  auto probe = run_harness(dirs.workspace, harness.socket(),
                           {"probe", "k.cpp", "--variant", "UNROLL=2,NT_STORES=1", "--variant", "UNROLL=4,NT_STORES=0"});
  EXPECT_EQ(probe.exit_code, 0) << probe.output;
  auto seen = harness.requests();
  ASSERT_EQ(seen.size(), 1u);
  ASSERT_EQ(seen[0].variants.size(), 2u);
  EXPECT_EQ(seen[0].variants[0], (std::map<std::string, std::string>{{"NT_STORES", "1"}, {"UNROLL", "2"}}));
  EXPECT_EQ(seen[0].variants[1].at("UNROLL"), "4");
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"probe", "k.cpp", "--variant", "UNROLL"}).exit_code, 2);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"probe", "k.cpp", "--variant", "U=1", "--grid", "U=1,2"}).exit_code, 2);
  EXPECT_EQ(harness.requests().size(), 1u);
}

TEST(HarnessCli, UsageErrorsAndMissingOrchestratorExitWith2) {
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {}).exit_code, 2);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"probe"}).exit_code, 2);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"submit", "a.cpp", "--case", "1"}).exit_code, 2);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"probe", "a.cpp", "--grid", "bad"}).exit_code, 2);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"frobnicate"}).exit_code, 2);
  EXPECT_EQ(harness.requests().size(), 0u);

  auto unset = run_harness(dirs.workspace, "", {"status"});
  EXPECT_EQ(unset.exit_code, 2);
  EXPECT_NE(unset.output.find("TEMPER_HARNESS_SOCKET is unset"), std::string::npos);
  auto gone = run_harness(dirs.workspace, (dirs.root() / "nobody.sock").string(), {"status"});
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_NE(gone.output.find("unreachable"), std::string::npos);
  EXPECT_EQ(run_harness(dirs.workspace, harness.socket(), {"--help"}).exit_code, 0);
}

} // namespace harness_cli_test
