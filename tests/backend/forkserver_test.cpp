// The forkserver (backend/forkserver.h): workers forked from one server that did its slow start
// once, each temper's own child with its fds in place; a server that cannot start is reported
// with what it printed and not tried again. The server is the golden runner's own loop
// (tests/fixtures/forkserver/echo_server.py) around a worker that needs no torch.
#include "backend/forkserver.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace temper::backend {
namespace {

namespace fs = std::filesystem;

std::string python() {
  for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

std::string read_some(int fd) {
  std::string text;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

struct Channels {
  int out[2] = {-1, -1};
  int reply[2] = {-1, -1};
  int cmd[2] = {-1, -1};
  int arena = -1;

  Channels() {
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(reply, O_CLOEXEC), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cmd), 0);
    arena = ::memfd_create("forkserver-test", MFD_CLOEXEC);
    EXPECT_EQ(::write(arena, "hello", 5), 5);
  }
  ~Channels() {
    for (int fd : {out[0], out[1], reply[0], reply[1], cmd[0], cmd[1], arena})
      if (fd >= 0) ::close(fd);
  }
  // After the spawn: only the worker holds the write ends, so reads end when it does.
  void close_theirs() {
    ::close(out[1]);
    ::close(reply[1]);
    ::close(cmd[1]);
    out[1] = reply[1] = cmd[1] = -1;
  }
};

class ForkserverTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_python = python();
    if (m_python.empty()) GTEST_SKIP() << "no python3 on this machine";
  }
  std::vector<std::string> echo_command(const std::string& mode = "worker") const {
    return {m_python, std::string(TEMPER_SOURCE_DIR) + "/tests/fixtures/forkserver/echo_server.py",
            std::string(TEMPER_SOURCE_DIR) + "/runners/golden", mode};
  }
  std::string m_python;
};

TEST_F(ForkserverTest, ForkedWorkersAreTemperChildrenWithTheirFdsInPlace) {
  Forkserver server;
  for (int k = 0; k < 2; ++k) {
    Channels ch;
    auto pid = server.spawn(m_python, echo_command(), {"PATH=/usr/bin:/bin"}, ch.out[1], ch.cmd[1], ch.reply[1], ch.arena);
    ASSERT_TRUE(pid) << pid.error().message;
    ch.close_theirs();
    // The worker waits for a byte on its command socket: meanwhile it is alive, in its own group.
    EXPECT_EQ(::getpgid(*pid), *pid);
    char reply[5] = {};
    ASSERT_EQ(::read(ch.reply[0], reply, 5), 5);
    EXPECT_EQ(std::string(reply, 5), "hello");
    ASSERT_EQ(::write(ch.cmd[0], "x", 1), 1);
    // temper's child, not the server's: waitpid finds it and its status.
    int status = 0;
    ASSERT_EQ(::waitpid(*pid, &status, 0), *pid) << std::strerror(errno);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 7);
    EXPECT_EQ(read_some(ch.out[0]), "worker " + std::to_string(*pid) + "\n");
  }
  EXPECT_EQ(server.servers_started(), 1); // one slow start for both workers
  EXPECT_EQ(server.workers_forked(), 2);
}

TEST_F(ForkserverTest, AServerThatCannotStartIsReportedWithItsOutputAndNotRetried) {
  Forkserver server;
  const std::vector<std::string> broken{m_python, "-c", "import sys; print('no torch on this machine'); sys.exit(3)"};
  for (int k = 0; k < 2; ++k) {
    Channels ch;
    auto pid = server.spawn(m_python, broken, {}, ch.out[1], ch.cmd[1], ch.reply[1], ch.arena);
    ASSERT_FALSE(pid);
    EXPECT_NE(pid.error().message.find("did not become ready"), std::string::npos) << pid.error().message;
    EXPECT_NE(pid.error().message.find("no torch on this machine"), std::string::npos) << pid.error().message;
  }
  EXPECT_EQ(server.servers_started(), 1);
  // Another command is another server.
  Channels ch;
  auto pid = server.spawn(m_python, echo_command(), {}, ch.out[1], ch.cmd[1], ch.reply[1], ch.arena);
  ASSERT_TRUE(pid) << pid.error().message;
  ch.close_theirs();
  ASSERT_EQ(::write(ch.cmd[0], "x", 1), 1);
  int status = 0;
  EXPECT_EQ(::waitpid(*pid, &status, 0), *pid);
  EXPECT_EQ(server.servers_started(), 2);
}

// What a Python golden's run is: its bundle paths in on fd 3, its output and status back.
TEST_F(ForkserverTest, RunForkedPassesInputAndReturnsOutputAndStatus) {
  Forkserver server;
  const std::string input("in.bundle\0out.fp64\0out.lowp\0", 30);
  auto r = run_forked(server, m_python, echo_command("cat"), {}, input, std::chrono::seconds(60));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->outcome, util::Outcome::Exited);
  EXPECT_EQ(r->exit_code, 30);
  EXPECT_EQ(r->output, input);
  auto again = run_forked(server, m_python, echo_command("cat"), {}, "x", std::chrono::seconds(60));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->exit_code, 1);
  EXPECT_EQ(server.servers_started(), 1);
}

TEST_F(ForkserverTest, RunForkedKillsARunPastItsLimit) {
  Forkserver server;
  auto r = run_forked(server, m_python, echo_command("sleep"), {}, "", std::chrono::milliseconds(300));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->outcome, util::Outcome::TimedOut);
  EXPECT_LT(r->seconds, 30.0);
}

TEST_F(ForkserverTest, TemperIsASubreaperOnlyWhileAServerExists) {
  int before = -1;
  ASSERT_EQ(::prctl(PR_GET_CHILD_SUBREAPER, &before, 0, 0, 0), 0);
  ASSERT_EQ(before, 0);
  {
    Forkserver server;
    Channels ch;
    auto pid = server.spawn(m_python, echo_command(), {}, ch.out[1], ch.cmd[1], ch.reply[1], ch.arena);
    ASSERT_TRUE(pid) << pid.error().message;
    int during = 0;
    ASSERT_EQ(::prctl(PR_GET_CHILD_SUBREAPER, &during, 0, 0, 0), 0);
    EXPECT_EQ(during, 1);
    ch.close_theirs();
    ASSERT_EQ(::write(ch.cmd[0], "x", 1), 1);
    int status = 0;
    EXPECT_EQ(::waitpid(*pid, &status, 0), *pid);
  }
  int after = -1;
  ASSERT_EQ(::prctl(PR_GET_CHILD_SUBREAPER, &after, 0, 0, 0), 0);
  EXPECT_EQ(after, 0);
}

} // namespace
} // namespace temper::backend
