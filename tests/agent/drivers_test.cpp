// The agent drivers: cmd, script, and the CLI presets against fake CLIs on PATH
// (tests/fixtures/agents/bin). Each runs sandboxed where bwrap works, else unsandboxed.
#include "agent_fixture.h"

#include "agent/cmd_agent.h"
#include "agent/sandbox.h"

#include <cstdlib>

namespace drivers_test {

using namespace temper::agent;
using namespace temper::agent::testing;

namespace {

const fs::path kFixtures = fs::path(TEMPER_SOURCE_DIR) / "tests" / "fixtures" / "agents";

bool sandbox_works() { return static_cast<bool>(sandbox_available()); }

// Puts the fake CLIs first on PATH for the test's lifetime.
class FakeCliPath {
public:
  FakeCliPath() : m_old(std::getenv("PATH") ? std::getenv("PATH") : "") {
    ::setenv("PATH", ((kFixtures / "bin").string() + ":" + m_old).c_str(), 1);
  }
  ~FakeCliPath() { ::setenv("PATH", m_old.c_str(), 1); }

private:
  std::string m_old;
};

nlohmann::json turn_record(const TurnDirs& dirs) {
  return nlohmann::json::parse(temper::util::read_file(dirs.logs / "turn.json").value_or("{}"));
}

} // namespace

TEST(CmdDriver, ReplacesPlaceholdersWithQuotedValues) {
  TurnRequest r;
  r.workspace = "/w s/it's";
  r.role = Role::Teacher;
  EXPECT_EQ(expand_cmd_placeholders("agent --brief {brief} -C {workspace} --as {role}", r),
            "agent --brief '/w s/it'\\''s/BRIEF.md' -C '/w s/it'\\''s' --as 'teacher'");
}

TEST(CmdDriver, RunsUnsandboxedWhenTheRequestSaysSo) {
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  auto request = dirs.request(/*sandbox=*/false);
  request.harness_socket = harness.socket();
  auto agent = make_agent("cmd:cat {brief} > brief-seen.txt; pwd > pwd.txt; harness status; echo to-stderr >&2; exit 3");
  ASSERT_TRUE(agent) << agent.error().message;
  EXPECT_EQ((*agent)->name(), "cmd");
  auto result = (*agent)->run_turn(request);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(dirs.read("brief-seen.txt"), request.brief);
  EXPECT_EQ(dirs.read("pwd.txt"), dirs.workspace.string() + "\n");
  EXPECT_EQ(result->transcript, dirs.logs / "transcript.log");
  auto transcript = temper::util::read_file(result->transcript).value_or("");
  EXPECT_NE(transcript.find("status: accepted"), std::string::npos);
  EXPECT_NE(transcript.find("to-stderr"), std::string::npos);
  EXPECT_NE(result->summary.find("to-stderr"), std::string::npos);
  EXPECT_EQ(temper::util::read_file(dirs.logs / "stdout.log").value_or("").find("to-stderr"), std::string::npos);
  auto record = turn_record(dirs);
  EXPECT_EQ(record["driver"], "cmd");
  EXPECT_EQ(record["exit_code"], 3);
  EXPECT_EQ(record["sandbox"], false);
}

TEST(CmdDriver, BadRequestsAreErrors) {
  TurnDirs dirs;
  auto agent = make_agent("cmd:true");
  ASSERT_TRUE(agent);
  auto request = dirs.request(false);
  request.workspace = dirs.root() / "missing";
  EXPECT_FALSE((*agent)->run_turn(request));
  request = dirs.request(false);
  request.log_dir.clear();
  EXPECT_FALSE((*agent)->run_turn(request));
  request = dirs.request(false);
  request.harness_socket = dirs.root() / "no-server.sock";
  auto r = (*agent)->run_turn(request);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not exist"), std::string::npos);
}

TEST(AgentFactory, RejectsUnknownAndIncompleteSpecs) {
  EXPECT_FALSE(make_agent("gpt-everything"));
  EXPECT_FALSE(make_agent("cmd:"));
  EXPECT_FALSE(make_agent("script:/nonexistent/dir"));
  ::setenv("TEMPER_CODEX_BIN", "/nonexistent/codex", 1);
  auto codex = make_agent("codex");
  ::unsetenv("TEMPER_CODEX_BIN");
  ASSERT_FALSE(codex);
  EXPECT_NE(codex.error().message.find("TEMPER_CODEX_BIN"), std::string::npos);
  EXPECT_EQ(std::string(role_name(Role::Teacher)), "teacher");
}

TEST(ScriptDriver, ReplaysTurnsInOrderAndKeepsCountInTheStateDir) {
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  auto request = dirs.request(sandbox_works());
  request.harness_socket = harness.socket();
  request.state_dir = dirs.root() / "state";
  std::string spec = "script:" + (kFixtures / "script-demo").string();
  {
    auto agent = make_agent(spec);
    ASSERT_TRUE(agent) << agent.error().message;
    auto t1 = (*agent)->run_turn(request);
    ASSERT_TRUE(t1) << t1.error().message;
    EXPECT_EQ(t1->exit_code, 0) << t1->summary;
    EXPECT_NE(dirs.read("kernel.cpp").find("scripted_candidate"), std::string::npos);
    EXPECT_EQ(dirs.read("turn1-note.txt"), "submitted (exit 0)\n");
    auto seen = harness.requests();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].op, "submit");
    EXPECT_EQ(seen[0].file, dirs.workspace / "kernel.cpp");
  }
  // A new agent object (as after `temper resume`) continues with turn 2.
  auto agent = make_agent(spec);
  ASSERT_TRUE(agent);
  auto t2 = (*agent)->run_turn(request);
  ASSERT_TRUE(t2) << t2.error().message;
  EXPECT_EQ(t2->exit_code, 0);
  EXPECT_NE(dirs.read("plan.json").find("scripted turn 2"), std::string::npos);
  auto t3 = (*agent)->run_turn(request);
  ASSERT_TRUE(t3);
  EXPECT_EQ(t3->exit_code, 1);
  EXPECT_NE(t3->summary.find("script exhausted"), std::string::npos);
  EXPECT_EQ(harness.requests().size(), 1u);
}

TEST(ScriptDriver, CountsInMemoryWithoutAStateDir) {
  TurnDirs dirs;
  auto agent = make_agent("script:" + (kFixtures / "script-demo").string());
  ASSERT_TRUE(agent);
  // Turn 1 calls the harness; without a socket it fails cleanly and the script goes on.
  auto t1 = (*agent)->run_turn(dirs.request(false));
  ASSERT_TRUE(t1);
  EXPECT_EQ(dirs.read("turn1-note.txt"), "submitted (exit 2)\n"); // no TEMPER_HARNESS_SOCKET
  auto t2 = (*agent)->run_turn(dirs.request(false));
  ASSERT_TRUE(t2);
  EXPECT_TRUE(fs::exists(dirs.workspace / "plan.json"));
}

TEST(ClaudeDriver, RunsTheCliAndReadsTokensAndCost) {
  FakeCliPath path;
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  auto agent = make_agent("claude:--model claude-test-model --max-turns 40");
  ASSERT_TRUE(agent) << agent.error().message;
  EXPECT_EQ((*agent)->name(), "claude");
  auto request = dirs.request(sandbox_works());
  request.harness_socket = harness.socket();
  auto result = (*agent)->run_turn(request);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->exit_code, 0) << result->summary;
  EXPECT_EQ(result->input_tokens, 1200 + 3000 + 45000);
  EXPECT_EQ(result->output_tokens, 2500);
  ASSERT_TRUE(result->cost_usd);
  EXPECT_DOUBLE_EQ(*result->cost_usd, 0.4213);
  EXPECT_EQ(result->summary, "Wrote kernel.cpp and submitted it; the harness accepted it.");
  // Print mode, JSON output, the extra args, and the brief as the prompt, in that order.
  EXPECT_EQ(dirs.read("claude-args.txt"),
            "-p\n--output-format\njson\n--permission-mode\nbypassPermissions\n--no-session-persistence\n"
            "--model\nclaude-test-model\n--max-turns\n40\n# Test brief\nDo the test thing.\n\n");
  EXPECT_EQ(dirs.read("harness-out.txt"), "submit: accepted\nharness exit 0\n");
  auto record = turn_record(dirs);
  EXPECT_EQ(record["driver"], "claude");
  EXPECT_EQ(record["network"], true);
  EXPECT_EQ(record["output_tokens"], 2500);
  auto transcript = temper::util::read_file(result->transcript).value_or("");
  EXPECT_NE(transcript.find("fake claude: working in"), std::string::npos);
}

TEST(ClaudeDriver, AnErrorResultIsAFailedTurnNotAHarnessError) {
  FakeCliPath path;
  TurnDirs dirs;
  auto agent = make_agent("claude");
  ASSERT_TRUE(agent);
  auto request = dirs.request(sandbox_works());
  request.env["FAKE_CLAUDE_MODE"] = "error";
  auto result = (*agent)->run_turn(request);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->exit_code, 1);
  EXPECT_EQ(result->summary, "API Error: 401 invalid x-api-key");
  EXPECT_EQ(result->cost_usd, 0.0);
}

TEST(ClaudeDriver, ArgsCanBeReplacedFromTheEnvironment) {
  FakeCliPath path;
  TurnDirs dirs;
  ::setenv("TEMPER_CLAUDE_ARGS", "-p --output-format json --permission-mode 'accept Edits'", 1);
  auto agent = make_agent("claude");
  ::unsetenv("TEMPER_CLAUDE_ARGS");
  ASSERT_TRUE(agent);
  auto result = (*agent)->run_turn(dirs.request(false));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(dirs.read("claude-args.txt"),
            "-p\n--output-format\njson\n--permission-mode\naccept Edits\n# Test brief\nDo the test thing.\n\n");
}

TEST(CodexDriver, SumsTurnUsageAndHasNoCost) {
  FakeCliPath path;
  TurnDirs dirs;
  auto agent = make_agent("codex:-m gpt-test");
  ASSERT_TRUE(agent) << agent.error().message;
  auto result = (*agent)->run_turn(dirs.request(sandbox_works()));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->input_tokens, 24763 + 1000);
  EXPECT_EQ(result->output_tokens, 122 + 64 + 78);
  EXPECT_FALSE(result->cost_usd);
  EXPECT_EQ(result->summary, "Submitted kernel.cpp; M0 accepted.");
  auto args = dirs.read("codex-args.txt");
  EXPECT_EQ(args.rfind("exec\n--json\n", 0), 0u) << args;
  EXPECT_NE(args.find("-C\n" + dirs.workspace.string() + "\n"), std::string::npos);
}

TEST(OpencodeDriver, SumsStepTokensAndCost) {
  FakeCliPath path;
  TurnDirs dirs;
  auto agent = make_agent("opencode:-m anthropic/claude-test");
  ASSERT_TRUE(agent) << agent.error().message;
  auto result = (*agent)->run_turn(dirs.request(sandbox_works()));
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->input_tokens, 5000 + 200 + 6000);
  EXPECT_EQ(result->output_tokens, 100 + 50 + 50);
  ASSERT_TRUE(result->cost_usd);
  EXPECT_NEAR(*result->cost_usd, 0.0196, 1e-12);
  EXPECT_EQ(result->summary, "Done: kernel.cpp submitted.");
}

} // namespace drivers_test
