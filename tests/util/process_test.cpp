#include "util/process.h"

#include <gtest/gtest.h>

#include <csignal>

namespace process_test {

using namespace temper::util;
using namespace std::chrono_literals;

TEST(Process, CapturesOutputAndExitCode) {
  Command c;
  c.argv = {"sh", "-c", "echo hello; echo err >&2; exit 3"};
  ProcessResult r = default_process_runner().run(c);
  EXPECT_EQ(r.outcome, Outcome::Exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("hello"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  EXPECT_FALSE(r.ok());
}

TEST(Process, ReportsSignal) {
  Command c;
  c.argv = {"sh", "-c", "kill -SEGV $$"};
  ProcessResult r = default_process_runner().run(c);
  EXPECT_EQ(r.outcome, Outcome::Signalled);
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST(Process, TimeoutKillsTheWholeGroup) {
  Command c;
  c.argv = {"sh", "-c", "sleep 30 & sleep 30"};
  c.timeout = 200ms;
  ProcessResult r = default_process_runner().run(c);
  EXPECT_EQ(r.outcome, Outcome::TimedOut);
  EXPECT_LT(r.seconds, 5.0);
}

TEST(Process, MissingProgramFailsToStart) {
  Command c;
  c.argv = {"/nonexistent/program"};
  ProcessResult r = default_process_runner().run(c);
  EXPECT_EQ(r.outcome, Outcome::FailedToStart);
  EXPECT_NE(r.output.find("No such file"), std::string::npos);
}

TEST(Process, EnvAndCwd) {
  Command c;
  c.argv = {"sh", "-c", "echo $TEMPER_X; pwd"};
  c.env_set = {{"TEMPER_X", "42"}};
  c.cwd = "/tmp";
  ProcessResult r = default_process_runner().run(c);
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_NE(r.output.find("42"), std::string::npos);
  EXPECT_NE(r.output.find("/tmp"), std::string::npos);
}

TEST(Process, FindProgram) {
  EXPECT_FALSE(find_program("sh").empty());
  EXPECT_TRUE(find_program("definitely-not-a-program-xyz").empty());
}

} // namespace process_test
