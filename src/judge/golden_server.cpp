#include "judge/golden_server.h"

#include "util/clock.h"
#include "util/unique_fd.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;

namespace temper::judge {

Expected<std::unique_ptr<GoldenServer>> GoldenServer::start(const fs::path& exe,
                                                            const std::vector<std::pair<std::string, std::string>>& env_set) {
  std::unique_ptr<GoldenServer> s(new GoldenServer());
  s->m_input = s->m_dir.path() / "in.bundle";
  s->m_log = s->m_dir.path() / "golden.log";
  util::UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  util::UniqueFd log(::open(s->m_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  int pair[2];
  if (!devnull.valid() || !log.valid() || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return fail("cannot set up a golden server: {}", std::strerror(errno));
  util::UniqueFd ours(pair[0]), theirs(pair[1]);

  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  for (const auto& [name, value] : env_set) {
    const std::string prefix = name + "=";
    std::erase_if(env, [&](const std::string& have) { return have.rfind(prefix, 0) == 0; });
    env.push_back(prefix + value);
  }
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string program = exe.string(), serve = "--serve";
  char* argv[] = {program.data(), serve.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&actions, devnull.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, log.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, log.get(), 2);
  posix_spawn_file_actions_adddup2(&actions, theirs.get(), 3);
  // Its own process group, so that ending it ends what it started; signals as a fresh process has them.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail("cannot start the golden server {}: {}", program, std::strerror(rc));
  s->m_pid = pid;
  s->m_fd = ours.release();
  return s;
}

GoldenServer::~GoldenServer() { end(false); }

void GoldenServer::end(bool kill) {
  if (m_fd >= 0) ::close(m_fd); // end of file: the server exits
  m_fd = -1;
  if (m_pid <= 0) return;
  if (kill) ::kill(-m_pid, SIGKILL);
  // A server that does not exit within a second of its end of file is killed.
  for (int waited = 0;; ++waited) {
    int status = 0;
    const pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid || (r < 0 && errno != EINTR)) break;
    if (waited == 100) ::kill(-m_pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  m_pid = -1;
}

fs::path GoldenServer::output_file() {
  for (auto& [path, owner] : m_outputs)
    if (owner.expired()) return path;
  fs::path path = m_dir.path() / fmt::format("out{}.bundle", m_outputs.size());
  m_outputs.emplace_back(path, std::weak_ptr<const void>());
  return path;
}

void GoldenServer::hold(const fs::path& output, std::weak_ptr<const void> owner) {
  for (auto& [path, held] : m_outputs)
    if (path == output) held = std::move(owner);
}

std::string GoldenServer::log_tail() const {
  std::ifstream in(m_log, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  constexpr size_t kTail = 4000;
  return text.size() > kTail ? text.substr(text.size() - kTail) : text;
}

Expected<double> GoldenServer::run(const fs::path& output, std::chrono::milliseconds timeout) {
  if (m_fd < 0) return fail("the golden server has ended");
  const util::SteadyClock clock;
  const double t0 = clock.now();
  auto broken = [&](std::string_view what) -> Expected<double> {
    end(true);
    std::string tail = log_tail();
    return fail("the golden server {}{}{}", what, tail.empty() ? "" : ":\n", tail);
  };
  const std::string request = m_input.string() + '\t' + output.string() + '\n';
  if (request.find('\n') != request.size() - 1 || std::count(request.begin(), request.end(), '\t') != 1)
    return fail("a golden server cannot take the path {}", output.string());
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t put = ::send(m_fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return broken("is gone");
    sent += static_cast<size_t>(put);
  }
  std::string reply;
  char chunk[512];
  while (reply.find('\n') == std::string::npos) {
    const double left_ms = static_cast<double>(timeout.count()) - (clock.now() - t0) * 1e3;
    if (left_ms <= 0) return broken(fmt::format("took longer than {} s", static_cast<double>(timeout.count()) / 1e3));
    pollfd p{m_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left_ms + 1, 60000.0)));
    if (ready < 0 && errno != EINTR) return broken("cannot be waited for");
    if (ready <= 0) continue;
    const ssize_t got = ::recv(m_fd, chunk, sizeof chunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return broken("ended without an answer");
    reply.append(chunk, static_cast<size_t>(got));
  }
  reply.resize(reply.find('\n'));
  if (reply == "ok") return clock.now() - t0;
  if (reply.rfind("error ", 0) == 0) return fail("{}", reply.substr(6));
  return broken(fmt::format("answered '{}'", reply));
}

GoldenServerPool& GoldenServerPool::instance() {
  static GoldenServerPool pool;
  return pool;
}

Expected<std::unique_ptr<GoldenServer>> GoldenServerPool::take(const fs::path& exe,
                                                              const std::vector<std::pair<std::string, std::string>>& env_set) {
  {
    std::lock_guard lock(m_mu);
    auto& idle = m_idle[exe.string()];
    if (!idle.empty()) {
      std::unique_ptr<GoldenServer> s = std::move(idle.back());
      idle.pop_back();
      return s;
    }
  }
  return GoldenServer::start(exe, env_set);
}

void GoldenServerPool::give(const fs::path& exe, std::unique_ptr<GoldenServer> server) {
  if (!server || !server->usable()) return;
  const size_t keep = std::max(1u, std::thread::hardware_concurrency());
  std::lock_guard lock(m_mu);
  auto& idle = m_idle[exe.string()];
  if (idle.size() < keep) idle.push_back(std::move(server));
}

} // namespace temper::judge
