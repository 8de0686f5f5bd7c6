// The bubblewrap sandbox around an agent turn, tested with the cmd driver.
#include "agent_fixture.h"

#include "agent/sandbox.h"

namespace sandbox_test {

using namespace temper::agent;
using namespace temper::agent::testing;

namespace {

#define SKIP_WITHOUT_SANDBOX()                                                                     \
  do {                                                                                             \
    if (auto ok = sandbox_available(); !ok) GTEST_SKIP() << ok.error().message;                   \
  } while (false)

TurnResult run_cmd(const TurnRequest& request, const std::string& command_line) {
  auto agent = make_agent("cmd:" + command_line);
  EXPECT_TRUE(agent) << agent.error().message;
  auto result = (*agent)->run_turn(request);
  EXPECT_TRUE(result) << result.error().message;
  return result ? *result : TurnResult{};
}

} // namespace

TEST(AgentSandbox, HidesEverythingOutsideTheWorkspace) {
  SKIP_WITHOUT_SANDBOX();
  TurnDirs dirs;
  std::string secret = dirs.secret.string();
  std::string vault = dirs.secret.parent_path().string();
  auto r = run_cmd(dirs.request(),
                   "if [ -e " + secret + " ]; then echo visible; else echo absent; fi > see.txt;"
                   " ls -A " + dirs.root().string() + " > siblings.txt;"
                   " if [ -e " + vault + " ]; then echo visible; else echo absent; fi > vault.txt;"
                   " cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' > net.txt;"
                   " echo $HOME > home.txt; cat BRIEF.md > brief-copy.txt");
  EXPECT_EQ(r.exit_code, 0) << r.summary;
  EXPECT_EQ(dirs.read("see.txt"), "absent\n");
  EXPECT_EQ(dirs.read("vault.txt"), "absent\n");
  EXPECT_EQ(dirs.read("siblings.txt"), "ws\n"); // not logs, not vault
  EXPECT_EQ(dirs.read("net.txt"), "lo\n");      // cmd: no network
  EXPECT_EQ(dirs.read("home.txt"), std::string(kSandboxHome) + "\n");
  EXPECT_EQ(dirs.read("brief-copy.txt"), "# Test brief\nDo the test thing.\n");
}

TEST(AgentSandbox, CannotWriteOutsideTheWorkspace) {
  SKIP_WITHOUT_SANDBOX();
  // Not under /tmp: there the sandbox's private /tmp would take any write (harmlessly, checked
  // below), and the test would not see the read-only root refuse it.
  TurnDirs dirs(/*outside_tmp=*/true);
  fs::path escape = dirs.root() / "escape.txt";
  auto r = run_cmd(dirs.request(),
                   "for p in " + escape.string() + " /usr/escape /etc/escape /escape " + dirs.secret.string() +
                       "; do (echo x > $p) 2>/dev/null && echo \"wrote $p\"; done > writes.txt;"
                       " echo ok > inside.txt; echo tmp > /tmp/t && cat /tmp/t > tmp.txt");
  EXPECT_EQ(r.exit_code, 0) << r.summary;
  // A write may only "succeed" where the sandbox's private /tmp took it (a checkout under /tmp);
  // the host file must still not exist (checked below for every path).
  std::istringstream writes(dirs.read("writes.txt"));
  for (std::string line; std::getline(writes, line);) {
    const std::string path = line.substr(line.find(' ') + 1);
    EXPECT_EQ(path.rfind("/tmp/", 0), 0u) << line;
    EXPECT_FALSE(fs::exists(path)) << line;
  }
  EXPECT_EQ(dirs.read("inside.txt"), "ok\n");
  EXPECT_EQ(dirs.read("tmp.txt"), "tmp\n");
  EXPECT_FALSE(fs::exists(escape));
  EXPECT_FALSE(fs::exists("/usr/escape"));
  EXPECT_EQ(temper::util::read_file(dirs.secret).value_or(""), "// sealed reference source\n");
}

TEST(AgentSandbox, WritesToTmpStayPrivate) {
  SKIP_WITHOUT_SANDBOX();
  TurnDirs dirs; // under /tmp
  fs::path beside = dirs.root() / "beside.txt";
  auto r = run_cmd(dirs.request(), "echo x > " + beside.string() + " && echo x > /tmp/private.txt");
  EXPECT_EQ(r.exit_code, 0) << r.summary;
  EXPECT_FALSE(fs::exists(beside));
}

TEST(AgentSandbox, ReachesTheHarnessSocketWithTheHarnessOnPath) {
  SKIP_WITHOUT_SANDBOX();
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  auto request = dirs.request();
  request.harness_socket = harness.socket();
  auto r = run_cmd(request, "echo $TEMPER_HARNESS_SOCKET > sock.txt; echo 'int k;' > kernel.cpp;"
                            " harness submit kernel.cpp > out1.txt; echo $? >> out1.txt;"
                            " ./harness submit bad.cpp > out2.txt; echo $? >> out2.txt");
  EXPECT_EQ(r.exit_code, 0) << r.summary;
  EXPECT_EQ(dirs.read("sock.txt"), std::string(kSandboxSocketPath) + "\n");
  EXPECT_EQ(dirs.read("out1.txt"), "submit: accepted\n0\n");
  EXPECT_EQ(dirs.read("out2.txt"), "submit: rejected\n1\n");
  auto seen = harness.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].file, dirs.workspace / "kernel.cpp"); // same path inside and outside
  EXPECT_TRUE(fs::exists(dirs.workspace / "harness"));
}

TEST(AgentSandbox, ReadOnlyPathsAreVisibleButNotWritable) {
  SKIP_WITHOUT_SANDBOX();
  TurnDirs dirs;
  auto request = dirs.request();
  request.readonly_paths = {dirs.secret.parent_path()};
  auto r = run_cmd(request, "cat " + dirs.secret.string() + " > seen.txt; (echo x >> " + dirs.secret.string() +
                                ") 2>/dev/null && echo wrote > w.txt || echo denied > w.txt");
  EXPECT_EQ(r.exit_code, 0) << r.summary;
  EXPECT_EQ(dirs.read("seen.txt"), "// sealed reference source\n");
  EXPECT_EQ(dirs.read("w.txt"), "denied\n");
}

TEST(AgentSandbox, KilledAtTheTimeLimit) {
  SKIP_WITHOUT_SANDBOX();
  TurnDirs dirs;
  auto request = dirs.request();
  request.time_limit = std::chrono::seconds(1);
  auto r = run_cmd(request, "echo started; sleep 30 & sleep 30");
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10);
  auto transcript = temper::util::read_file(r.transcript).value_or("");
  EXPECT_NE(transcript.find("started"), std::string::npos);
  EXPECT_NE(transcript.find("wall-time limit"), std::string::npos);
}

TEST(AgentSandbox, TheEnvironmentIsRebuiltNotInherited) {
  SKIP_WITHOUT_SANDBOX();
  TurnDirs dirs;
  ::setenv("TEMPER_TEST_SECRET_TOKEN", "leaked", 1);
  auto request = dirs.request();
  request.env["AGENT_VISIBLE"] = "yes";
  auto r = run_cmd(request, "echo \"[$TEMPER_TEST_SECRET_TOKEN][$AGENT_VISIBLE][$TEMPER_ROLE]\" > env.txt");
  ::unsetenv("TEMPER_TEST_SECRET_TOKEN");
  EXPECT_EQ(r.exit_code, 0) << r.summary;
  EXPECT_EQ(dirs.read("env.txt"), "[][yes][student]\n");
}

} // namespace sandbox_test
