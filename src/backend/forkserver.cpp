#include "backend/forkserver.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <mutex>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace temper::backend {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kReadyTimeout = 180s; // the server's start: an interpreter importing its libraries
constexpr auto kForkTimeout = 20s;   // one fork
constexpr auto kStopGrace = 2s;

// temper is a child subreaper while any forkserver exists, and returns to what it was after.
std::mutex g_subreaper_mutex;
int g_subreaper_users = 0;
int g_subreaper_before = 0;

bool hold_subreaper() {
  std::lock_guard lock(g_subreaper_mutex);
  if (g_subreaper_users == 0) {
    int before = 0;
    if (::prctl(PR_GET_CHILD_SUBREAPER, &before, 0, 0, 0) != 0) return false;
    if (!before && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return false;
    g_subreaper_before = before;
  }
  ++g_subreaper_users;
  return true;
}

void release_subreaper() {
  std::lock_guard lock(g_subreaper_mutex);
  if (--g_subreaper_users == 0 && !g_subreaper_before) ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

int wait_ms(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1000)));
}

// Reads exactly n bytes from a blocking-by-poll socket by the deadline; false on EOF or timeout.
bool read_exact(int fd, void* buf, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<unsigned char*>(buf);
  size_t got = 0;
  while (got < n) {
    if (Clock::now() >= deadline) return false;
    pollfd pfd{fd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, wait_ms(deadline));
    if (rc < 0 && errno != EINTR) return false;
    if (rc <= 0) continue;
    ssize_t r = ::recv(fd, p + got, n - got, MSG_DONTWAIT);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

} // namespace

struct Forkserver::Impl {
  std::mutex mutex;
  std::vector<std::string> key; // exe, argv..., "", env... of the running (or failed) server
  pid_t pid = -1;
  int ctl = -1; // our end of the control socket
  int out = -1; // the server's stdout and stderr (non-blocking), read when it fails
  bool subreaper = false;
  std::string failure; // why the server for `key` cannot be used; sticky for that key
  int started = 0;
  int forked = 0;

  ~Impl() {
    stop();
    if (subreaper) release_subreaper();
  }

  std::string output_tail() {
    std::string text;
    char buf[4096];
    while (out >= 0) {
      ssize_t n = ::read(out, buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > 8192) text.erase(0, text.size() - 4096);
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  }

  void stop() {
    if (ctl >= 0) ::close(ctl); // the server ends when its control socket closes
    ctl = -1;
    if (pid > 0) {
      auto until = Clock::now() + kStopGrace;
      int status = 0;
      while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (Clock::now() >= until) {
          ::kill(-pid, SIGKILL);
          ::kill(pid, SIGKILL);
          while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
          }
          break;
        }
        ::usleep(2000);
      }
    }
    pid = -1;
    if (out >= 0) ::close(out);
    out = -1;
  }

  Status fail_with(std::string why) {
    std::string tail = output_tail();
    failure = tail.empty() ? why : why + ":\n" + tail;
    stop();
    return fail("{}", failure);
  }

  Status start(const std::string& exe, const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    if (!subreaper) {
      if (!hold_subreaper()) return fail("cannot become a child subreaper: {}", std::strerror(errno));
      subreaper = true;
    }
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return fail("socketpair: {}", std::strerror(errno));
    int op[2];
    if (::pipe2(op, O_CLOEXEC) != 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      return fail("pipe: {}", std::strerror(errno));
    }
    ctl = sv[0];
    out = op[0];
    ::fcntl(out, F_SETFL, ::fcntl(out, F_GETFL) | O_NONBLOCK);
    // Above the targets first, so no dup2 of the spawn overwrites a source it still needs.
    int theirs_ctl = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
    int theirs_out = ::fcntl(op[1], F_DUPFD_CLOEXEC, 10);
    ::close(sv[1]);
    ::close(op[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, theirs_out, 1);
    posix_spawn_file_actions_adddup2(&actions, theirs_out, 2);
    posix_spawn_file_actions_adddup2(&actions, theirs_ctl, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigset_t all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<std::string> args = argv;
    args.push_back("--forkserver");
    std::vector<char*> cargv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::vector<std::string> env_store = env;
    std::vector<char*> envp;
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t child = -1;
    int rc = (theirs_ctl < 0 || theirs_out < 0) ? EMFILE
                                                : ::posix_spawn(&child, exe.c_str(), &actions, &attr, cargv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (theirs_ctl >= 0) ::close(theirs_ctl);
    if (theirs_out >= 0) ::close(theirs_out);
    if (rc != 0) return fail_with(fmt::format("cannot start the forkserver {}: {}", exe, std::strerror(rc)));
    pid = child;
    ++started;
    char ready = 0;
    if (!read_exact(ctl, &ready, 1, Clock::now() + kReadyTimeout) || ready != 'R') {
      return fail_with("the forkserver did not become ready");
    }
    return {};
  }

  Expected<pid_t> fork_one(int out_fd, int cmd_fd, int reply_fd, int arena_fd) {
    const int fds[4] = {out_fd, cmd_fd, reply_fd, arena_fd};
    char tag = 'F';
    iovec iov{&tag, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    std::memcpy(CMSG_DATA(cm), fds, sizeof fds);
    ssize_t sent;
    do {
      sent = ::sendmsg(ctl, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != 1) {
      Status s = fail_with(fmt::format("the forkserver does not take requests: {}", std::strerror(errno)));
      return tl::unexpected(s.error());
    }
    int32_t child = -1;
    if (!read_exact(ctl, &child, sizeof child, Clock::now() + kForkTimeout) || child <= 0) {
      Status s = fail_with("the forkserver could not fork a worker");
      return tl::unexpected(s.error());
    }
    ++forked;
    return static_cast<pid_t>(child);
  }
};

Forkserver::Forkserver() : m_impl(std::make_unique<Impl>()) {}
Forkserver::~Forkserver() = default;

Expected<pid_t> Forkserver::spawn(const std::string& exe, const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, int out_fd, int cmd_fd, int reply_fd, int arena_fd) {
  Impl& s = *m_impl;
  std::lock_guard lock(s.mutex);
  std::vector<std::string> key{exe};
  key.insert(key.end(), argv.begin(), argv.end());
  key.emplace_back();
  key.insert(key.end(), env.begin(), env.end());
  if (key != s.key) {
    s.stop();
    s.key = std::move(key);
    s.failure.clear();
  }
  if (!s.failure.empty()) return fail("{}", s.failure);
  if (s.pid <= 0) TEMPER_TRY(s.start(exe, argv, env));
  return s.fork_one(out_fd, cmd_fd, reply_fd, arena_fd);
}

Expected<util::ProcessResult> run_forked(Forkserver& server, const std::string& exe, const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env, const std::string& input,
                                         std::chrono::milliseconds timeout, size_t max_output_bytes) {
  const auto start = Clock::now();
  int out[2];
  int in[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return fail("pipe: {}", std::strerror(errno));
  if (::pipe2(in, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return fail("pipe: {}", std::strerror(errno));
  }
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  auto pid = server.spawn(exe, argv, env, out[1], in[0], out[1], devnull);
  ::close(out[1]);
  ::close(in[0]);
  if (devnull >= 0) ::close(devnull);
  if (!pid) {
    ::close(out[0]);
    ::close(in[1]);
    return tl::unexpected(pid.error());
  }
  util::ProcessResult r;
  // The input is a few paths: it fits the pipe, and a process that does not read it fails.
  size_t done = 0;
  while (done < input.size()) {
    ssize_t n = ::write(in[1], input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(in[1]);
  const auto deadline = start + timeout;
  bool timed_out = false;
  char buf[65536];
  for (;;) {
    if (Clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int rc = ::poll(&p, 1, wait_ms(deadline));
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t room = max_output_bytes > r.output.size() ? max_output_bytes - r.output.size() : 0;
    r.output.append(buf, std::min(room, static_cast<size_t>(n)));
  }
  ::close(out[0]);
  if (timed_out) {
    ::kill(-*pid, SIGKILL);
    ::kill(*pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!timed_out) ::kill(-*pid, SIGKILL); // leftovers of its group, if any
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (timed_out) r.outcome = util::Outcome::TimedOut;
  else if (WIFSIGNALED(status)) {
    r.outcome = util::Outcome::Signalled;
    r.signal = WTERMSIG(status);
  } else {
    r.outcome = util::Outcome::Exited;
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

int Forkserver::servers_started() const {
  std::lock_guard lock(m_impl->mutex);
  return m_impl->started;
}

int Forkserver::workers_forked() const {
  std::lock_guard lock(m_impl->mutex);
  return m_impl->forked;
}

} // namespace temper::backend
