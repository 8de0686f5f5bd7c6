#include "agent_fixture.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <thread>

namespace harness_server_test {

using namespace temper::agent;
using namespace temper::agent::testing;
using nlohmann::json;

namespace {

// Connects, sends raw bytes, optionally half-closes, and returns whatever comes back.
std::string raw_exchange(const fs::path& socket, const std::string& bytes, bool half_close = true) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "<connect failed>";
  }
  (void)!::write(fd, bytes.data(), bytes.size());
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

} // namespace

TEST(HarnessServer, ServesRequestsInOrderOverARealSocket) {
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  for (int i = 0; i < 3; ++i) {
    HarnessRequest r;
    r.op = "probe";
    r.file = dirs.workspace / "kernel.cpp";
    r.case_id = i;
    auto resp = harness_call(harness.socket(), r);
    ASSERT_TRUE(resp) << resp.error().message;
    EXPECT_TRUE(resp->ok);
    EXPECT_EQ(resp->message, "probe: accepted");
    EXPECT_EQ(resp->body["case"], i);
  }
  HarnessRequest bad;
  bad.op = "submit";
  bad.file = "bad.cpp";
  auto resp = harness_call(harness.socket(), bad);
  ASSERT_TRUE(resp);
  EXPECT_FALSE(resp->ok);
  auto seen = harness.requests();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[2].case_id, 2);
  EXPECT_EQ(seen[3].op, "submit");
}

TEST(HarnessServer, AnswersGarbageWithAClearErrorAndKeepsServing) {
  TurnDirs dirs;
  RecordingHarness harness(dirs.root() / "h.sock");
  auto reply = [&](const std::string& bytes) {
    auto j = json::parse(raw_exchange(harness.socket(), bytes), nullptr, false);
    EXPECT_TRUE(j.is_object()) << bytes;
    return j.is_object() ? j : json::object({{"ok", true}, {"message", ""}});
  };
  auto not_json = reply("this is not json\n");
  EXPECT_EQ(not_json["ok"], false);
  EXPECT_NE(not_json["message"].get<std::string>().find("not a JSON line"), std::string::npos);
  auto bad_op = reply(R"({"protocol":1,"op":"format-disk"})" "\n");
  EXPECT_NE(bad_op["message"].get<std::string>().find("unknown op"), std::string::npos);
  // A last line without its newline still counts.
  auto no_newline = reply(R"({"protocol":1,"op":"status"})");
  EXPECT_EQ(no_newline["ok"], true);
  std::string binary("\x00\xff\xfe{\n", 5);
  EXPECT_EQ(reply(binary)["ok"], false);
  // Clients that connect and leave, or hang up right after sending.
  EXPECT_EQ(raw_exchange(harness.socket(), ""), "");
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, harness.socket().c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string req = R"({"protocol":1,"op":"status"})" "\n";
    (void)!::write(fd, req.data(), req.size());
    ::close(fd);
  }
  HarnessRequest status;
  status.op = "status";
  auto resp = harness_call(harness.socket(), status);
  ASSERT_TRUE(resp) << resp.error().message;
  EXPECT_TRUE(resp->ok);
}

TEST(HarnessServer, HandlerExceptionsBecomeErrorResponses) {
  TurnDirs dirs;
  auto server = HarnessServer::start(dirs.root() / "h.sock", [](const HarnessRequest&) -> HarnessResponse {
    throw std::runtime_error("judge exploded");
  });
  ASSERT_TRUE(server) << server.error().message;
  HarnessRequest r;
  r.op = "status";
  auto resp = harness_call((*server)->socket_path(), r);
  ASSERT_TRUE(resp);
  EXPECT_FALSE(resp->ok);
  EXPECT_NE(resp->message.find("judge exploded"), std::string::npos);
}

TEST(HarnessServer, StopRemovesTheSocketEvenWithAnIdleClientConnected) {
  TurnDirs dirs;
  fs::path sock = dirs.root() / "h.sock";
  auto server = HarnessServer::start(sock, [](const HarnessRequest&) { return HarnessResponse{true, "ok", {}}; });
  ASSERT_TRUE(server);
  EXPECT_TRUE(fs::exists(sock));
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the server now waits on this client
  (*server)->stop();
  (*server)->stop(); // idempotent
  ::close(fd);
  EXPECT_FALSE(fs::exists(sock));
  HarnessRequest r;
  r.op = "status";
  auto resp = harness_call(sock, r);
  ASSERT_FALSE(resp);
  EXPECT_NE(resp.error().message.find("cannot connect"), std::string::npos);
}

TEST(HarnessServer, ReplacesAStaleSocketButNotALiveOneOrAFile) {
  TurnDirs dirs;
  fs::path sock = dirs.root() / "h.sock";
  auto handler = [](const HarnessRequest&) { return HarnessResponse{true, "ok", {}}; };
  {
    // A socket file left by a server that died without cleaning up.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  auto first = HarnessServer::start(sock, handler);
  ASSERT_TRUE(first) << first.error().message;
  auto second = HarnessServer::start(sock, handler);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("in use"), std::string::npos);
  fs::path file = dirs.root() / "plain";
  std::ofstream(file) << "x";
  auto third = HarnessServer::start(file, handler);
  ASSERT_FALSE(third);
  EXPECT_NE(third.error().message.find("not a socket"), std::string::npos);
  auto long_path = HarnessServer::start(dirs.root() / std::string(120, 'x'), handler);
  ASSERT_FALSE(long_path);
  EXPECT_NE(long_path.error().message.find("at most"), std::string::npos);
}

} // namespace harness_server_test
