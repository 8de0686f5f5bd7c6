// The harness server (one thread, one request per connection, served in order) and its client.
// The server must survive whatever a client does: connect and vanish, send garbage, send
// nothing, hang up before the answer. Each of those ends the connection, never the server.
#include "agent/harness_protocol.h"

#include "util/fs.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace temper::agent {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxRequestBytes = 1 << 20;
constexpr size_t kMaxResponseBytes = 64 << 20;
// A client sends its one line right after connecting; one that does not is dropped.
constexpr std::chrono::seconds kRequestDeadline{30};

class Fd {
public:
  explicit Fd(int fd = -1) : m_fd(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : m_fd(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }
  int release() {
    int fd = m_fd;
    m_fd = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = fd;
  }

private:
  int m_fd;
};

Expected<sockaddr_un> socket_address(const fs::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string& s = path.native();
  if (s.empty()) return fail("the harness socket path is empty");
  if (s.size() >= sizeof addr.sun_path) {
    return fail("harness socket path {} is {} bytes; unix sockets allow at most {}", s, s.size(),
                sizeof addr.sun_path - 1);
  }
  std::memcpy(addr.sun_path, s.c_str(), s.size() + 1);
  return addr;
}

Expected<Fd> connect_to(const fs::path& path) {
  TEMPER_TRY_ASSIGN(sockaddr_un addr, socket_address(path));
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return fail("socket: {}", std::strerror(errno));
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return fail("cannot connect to the harness at {}: {}", path.string(), std::strerror(errno));
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

HarnessResponse error_response(std::string message) {
  HarnessResponse r;
  r.ok = false;
  r.message = std::move(message);
  return r;
}

class UnixHarnessServer final : public HarnessServer {
public:
  UnixHarnessServer(fs::path path, HarnessHandler handler, Fd listen_fd, Fd wake_read, Fd wake_write)
      : m_path(std::move(path)), m_handler(std::move(handler)), m_listen(std::move(listen_fd)),
        m_wake_read(std::move(wake_read)), m_wake_write(std::move(wake_write)) {
    m_thread = std::thread([this] { serve(); });
  }
  ~UnixHarnessServer() override { stop(); }

  void stop() override {
    if (m_stopped.exchange(true)) return;
    char c = 1;
    (void)!::write(m_wake_write.get(), &c, 1);
    if (m_thread.joinable()) m_thread.join();
    m_listen.reset();
    std::error_code ec;
    fs::remove(m_path, ec);
  }

  const fs::path& socket_path() const override { return m_path; }

private:
  void serve() {
    for (;;) {
      pollfd p[2] = {{m_listen.get(), POLLIN, 0}, {m_wake_read.get(), POLLIN, 0}};
      int rc = ::poll(p, 2, -1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || (p[1].revents & POLLIN)) return;
      if (!(p[0].revents & POLLIN)) continue;
      Fd conn(::accept4(m_listen.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn.get() < 0) continue; // EINTR, ECONNABORTED, EMFILE: keep serving
      serve_one(conn.get());
    }
  }

  // Reads one line; false when the client left, the server stops, or the deadline passes.
  enum class Read { Line, Gone, Stopping };
  Read read_request(int fd, std::string& line, std::string& problem) {
    auto deadline = std::chrono::steady_clock::now() + kRequestDeadline;
    char buf[4096];
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        problem = fmt::format("no complete request line within {} s", kRequestDeadline.count());
        return Read::Line;
      }
      pollfd p[2] = {{fd, POLLIN, 0}, {m_wake_read.get(), POLLIN, 0}};
      int rc = ::poll(p, 2, static_cast<int>(left.count()));
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || (p[1].revents & POLLIN)) return Read::Stopping;
      if (rc == 0) continue;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return line.empty() ? Read::Gone : Read::Line; // a last line without '\n' counts
      line.append(buf, static_cast<size_t>(n));
      if (auto nl = line.find('\n'); nl != std::string::npos) {
        line.resize(nl);
        return Read::Line;
      }
      if (line.size() > kMaxRequestBytes) {
        problem = fmt::format("request longer than {} bytes", kMaxRequestBytes);
        return Read::Line;
      }
    }
  }

  void serve_one(int fd) {
    std::string line, problem;
    Read got = read_request(fd, line, problem);
    if (got != Read::Line) return;
    HarnessResponse response;
    if (!problem.empty()) {
      response = error_response("bad request: " + problem);
    } else {
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        response = error_response("bad request: not a JSON line");
      } else if (auto request = HarnessRequest::from_json(j); !request) {
        response = error_response("bad request: " + request.error().message);
      } else {
        try {
          response = m_handler(*request);
        } catch (const std::exception& e) {
          response = error_response(std::string("harness error: ") + e.what());
        } catch (...) {
          response = error_response("harness error: unknown exception");
        }
      }
    }
    // A client that hung up simply misses its answer.
    std::string out = response.to_json().dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    send_all(fd, out);
  }

  fs::path m_path;
  HarnessHandler m_handler;
  Fd m_listen, m_wake_read, m_wake_write;
  std::atomic<bool> m_stopped{false};
  std::thread m_thread;
};

} // namespace

Expected<std::unique_ptr<HarnessServer>> HarnessServer::start(const fs::path& socket_path, HarnessHandler handler) {
  if (!handler) return fail("harness server needs a handler");
  TEMPER_TRY_ASSIGN(sockaddr_un addr, socket_address(socket_path));
  std::error_code ec;
  auto st = fs::symlink_status(socket_path, ec);
  if (!ec && fs::exists(st)) {
    if (!fs::is_socket(st)) return fail("{} exists and is not a socket; refusing to replace it", socket_path.string());
    if (connect_to(socket_path)) return fail("{} is in use by a running harness server", socket_path.string());
    fs::remove(socket_path, ec); // stale socket of a server that died
  }
  if (socket_path.has_parent_path()) TEMPER_TRY(util::make_dirs(socket_path.parent_path()));

  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return fail("socket: {}", std::strerror(errno));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return fail("cannot bind the harness socket {}: {}", socket_path.string(), std::strerror(errno));
  }
  ::chmod(socket_path.c_str(), 0600);
  if (::listen(fd.get(), 16) != 0) {
    int e = errno;
    fs::remove(socket_path, ec);
    return fail("listen on {}: {}", socket_path.string(), std::strerror(e));
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    int e = errno;
    fs::remove(socket_path, ec);
    return fail("pipe: {}", std::strerror(e));
  }
  return std::unique_ptr<HarnessServer>(
      new UnixHarnessServer(socket_path, std::move(handler), std::move(fd), Fd(wake[0]), Fd(wake[1])));
}

Expected<HarnessResponse> harness_call(const fs::path& socket_path, const HarnessRequest& request) {
  TEMPER_TRY_ASSIGN(Fd fd, connect_to(socket_path));
  std::string line = request.to_json().dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  if (!send_all(fd.get(), line)) return fail("cannot send to the harness at {}: {}", socket_path.string(), std::strerror(errno));
  ::shutdown(fd.get(), SHUT_WR);
  std::string reply;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("reading the harness response: {}", std::strerror(errno));
    if (n == 0) break;
    reply.append(buf, static_cast<size_t>(n));
    if (reply.find('\n') != std::string::npos) break;
    if (reply.size() > kMaxResponseBytes) return fail("harness response longer than {} bytes", kMaxResponseBytes);
  }
  if (auto nl = reply.find('\n'); nl != std::string::npos) reply.resize(nl);
  if (reply.empty()) return fail("the harness at {} closed the connection without a response", socket_path.string());
  json j = json::parse(reply, nullptr, false);
  if (j.is_discarded()) return fail("the harness sent a response that is not JSON");
  return HarnessResponse::from_json(j);
}

} // namespace temper::agent
