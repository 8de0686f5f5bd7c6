#include "util/process.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace temper::util {

std::string ProcessResult::describe() const {
  switch (outcome) {
  case Outcome::Exited:
    return fmt::format("exit {}", exit_code);
  case Outcome::Signalled:
    return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
  case Outcome::TimedOut:
    return fmt::format("timed out after {:.1f} s", seconds);
  case Outcome::FailedToStart:
    return "failed to start";
  }
  return "?";
}

ProcessResult RealProcessRunner::run(const Command& cmd) {
  using Clock = std::chrono::steady_clock;
  ProcessResult r;
  auto start = Clock::now();
  if (cmd.argv.empty()) {
    r.output = "empty command";
    return r;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.output = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  // The exec error, if any, travels through this close-on-exec pipe.
  int errpipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    r.output = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  std::vector<char*> argv;
  for (const auto& a : cmd.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    if (!cmd.cwd.empty() && ::chdir(cmd.cwd.c_str()) != 0) {
      int e = errno;
      (void)!::write(errpipe[1], &e, sizeof e);
      ::_exit(127);
    }
    for (const auto& [k, v] : cmd.env_set) ::setenv(k.c_str(), v.c_str(), 1);
    ::execvp(argv[0], argv.data());
    int e = errno;
    (void)!::write(errpipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(errpipe[1]);
  if (pid < 0) {
    ::close(fds[0]);
    ::close(errpipe[0]);
    r.output = fmt::format("fork: {}", std::strerror(errno));
    return r;
  }
  ::setpgid(pid, pid); // also from the parent, so a kill cannot race the child's own call

  int exec_errno = 0;
  ssize_t got = ::read(errpipe[0], &exec_errno, sizeof exec_errno);
  ::close(errpipe[0]);

  bool timed_out = false;
  char buf[65536];
  for (;;) {
    int wait_ms = -1;
    if (cmd.timeout) {
      auto left = *cmd.timeout - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      if (left.count() <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{fds[0], POLLIN, 0};
    int rc = ::poll(&p, 1, wait_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t room = cmd.max_output_bytes > r.output.size() ? cmd.max_output_bytes - r.output.size() : 0;
    r.output.append(buf, std::min(room, static_cast<size_t>(n)));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!timed_out) ::kill(-pid, SIGKILL); // leftovers of the group, if any
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    r.outcome = Outcome::FailedToStart;
    r.output = fmt::format("cannot run {}: {}", cmd.argv[0], std::strerror(exec_errno));
  } else if (timed_out) {
    r.outcome = Outcome::TimedOut;
  } else if (WIFSIGNALED(status)) {
    r.outcome = Outcome::Signalled;
    r.signal = WTERMSIG(status);
  } else {
    r.outcome = Outcome::Exited;
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

ProcessRunner& default_process_runner() {
  static RealProcessRunner runner;
  return runner;
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty()) {
      std::string full = dir + "/" + name;
      if (::access(full.c_str(), X_OK) == 0) return full;
    }
    start = end + 1;
  }
  return "";
}

} // namespace temper::util
