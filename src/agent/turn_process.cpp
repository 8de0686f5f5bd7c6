#include "agent/turn_process.h"

#include "util/fs.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace temper::agent {

namespace {

namespace fs = std::filesystem;

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int open_log(const fs::path& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

} // namespace

Expected<TurnProcessResult> run_turn_process(const TurnProcess& process) {
  using Clock = std::chrono::steady_clock;
  if (process.argv.empty()) return fail("empty agent command");
  if (process.transcript.has_parent_path()) TEMPER_TRY(util::make_dirs(process.transcript.parent_path()));
  int log_fd = open_log(process.transcript);
  if (log_fd < 0) return fail("cannot write the transcript {}: {}", process.transcript.string(), std::strerror(errno));
  int out_fd = process.stdout_copy.empty() ? -1 : open_log(process.stdout_copy);
  auto close_logs = [&] {
    ::close(log_fd);
    if (out_fd >= 0) ::close(out_fd);
  };
  if (!process.stdout_copy.empty() && out_fd < 0) {
    int e = errno;
    close_logs();
    return fail("cannot write {}: {}", process.stdout_copy.string(), std::strerror(e));
  }

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
    close_logs();
    return fail("pipe: {}", std::strerror(e));
  }
  std::vector<char*> argv;
  for (const auto& a : process.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!process.cwd.empty() && ::chdir(process.cwd.c_str()) != 0) {
      int e = errno;
      (void)!::write(exec_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    for (const auto& [k, v] : process.env_set) ::setenv(k.c_str(), v.c_str(), 1);
    ::execvp(argv[0], argv.data());
    int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  if (pid < 0) {
    int e = errno;
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(exec_pipe[0]);
    close_logs();
    return fail("fork: {}", std::strerror(e));
  }
  ::setpgid(pid, pid); // also here, so a kill cannot race the child's own call

  int exec_errno = 0;
  ssize_t got = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    close_logs();
    return fail("cannot run {}: {}", process.argv[0], std::strerror(exec_errno));
  }

  TurnProcessResult r;
  bool open[2] = {true, true};
  int fds[2] = {out_pipe[0], err_pipe[0]};
  char buf[65536];
  // Copies what is readable now; `wait_ms` bounds the wait for the first byte.
  auto pump = [&](int wait_ms) {
    pollfd p[2] = {{open[0] ? fds[0] : -1, POLLIN, 0}, {open[1] ? fds[1] : -1, POLLIN, 0}};
    int rc = ::poll(p, 2, wait_ms);
    if (rc <= 0) return false;
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        open[i] = false;
        continue;
      }
      write_all(log_fd, buf, static_cast<size_t>(n));
      if (i == 0 && out_fd >= 0) write_all(out_fd, buf, static_cast<size_t>(n));
    }
    return true;
  };
  int status = 0;
  bool reaped = false;
  for (;;) {
    if (process.time_limit.count() > 0 &&
        Clock::now() - start >= process.time_limit) {
      r.timed_out = true;
      break;
    }
    // The turn ends when the agent's main process does, even if something it started in the
    // background still holds the pipes open.
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      reaped = true;
      while ((open[0] || open[1]) && pump(0)) {
      }
      break;
    }
    if (open[0] || open[1]) {
      pump(100);
    } else {
      ::usleep(20000);
    }
  }
  // The whole group goes: on timeout, and afterwards for anything the agent left running.
  ::kill(-pid, SIGKILL);
  if (!reaped) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (r.timed_out) {
    std::string note = fmt::format("\n[temper: turn killed at its wall-time limit of {:.0f} s]\n",
                                   std::chrono::duration<double>(process.time_limit).count());
    write_all(log_fd, note.data(), note.size());
    r.exit_code = 128 + SIGKILL;
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
  } else {
    r.exit_code = WEXITSTATUS(status);
  }
  close_logs();
  return r;
}

std::string file_tail(const std::filesystem::path& path, size_t max_lines, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  size_t take = std::min(size, max_bytes);
  in.seekg(static_cast<std::streamoff>(size - take));
  std::string text(take, '\0');
  in.read(text.data(), static_cast<std::streamsize>(take));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  size_t pos = text.size();
  for (size_t lines = 0; lines < max_lines && pos != std::string::npos && pos > 0; ++lines) {
    pos = text.rfind('\n', pos - 1);
  }
  if (pos != std::string::npos && pos < text.size() && text[pos] == '\n') ++pos;
  return pos == std::string::npos ? text : text.substr(pos);
}

} // namespace temper::agent
