// Shared pieces of the agent-layer tests: a harness server that records what it is asked, and
// turn requests laid out in a temporary directory (workspace, logs, a secret beside them).
#pragma once

#include "agent/agent.h"
#include "agent/harness_protocol.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <mutex>

namespace temper::agent::testing {

namespace fs = std::filesystem;

class RecordingHarness {
public:
  explicit RecordingHarness(const fs::path& socket) {
    auto server = HarnessServer::start(socket, [this](const HarnessRequest& r) { return handle(r); });
    if (!server) throw std::runtime_error(server.error().message);
    m_server = std::move(*server);
  }
  std::vector<HarnessRequest> requests() {
    std::lock_guard lock(m_mutex);
    return m_requests;
  }
  const fs::path& socket() const { return m_server->socket_path(); }
  HarnessServer& server() { return *m_server; }

private:
  // "submit" of a file named bad.cpp is not ok; everything else is ok and echoes the request.
  HarnessResponse handle(const HarnessRequest& r) {
    {
      std::lock_guard lock(m_mutex);
      m_requests.push_back(r);
    }
    HarnessResponse resp;
    resp.ok = r.file.filename() != "bad.cpp";
    resp.message = fmt::format("{}: {}", r.op, resp.ok ? "accepted" : "rejected");
    resp.body = r.to_json();
    return resp;
  }

  std::mutex m_mutex;
  std::vector<HarnessRequest> m_requests;
  std::unique_ptr<HarnessServer> m_server;
};

struct TurnDirs {
  util::TempDir root{"temper-agent-test"};
  fs::path workspace = root.path() / "ws";
  fs::path logs = root.path() / "logs";
  fs::path secret = root.path() / "vault" / "reference.cpp";
  TurnDirs() {
    fs::create_directories(workspace);
    fs::create_directories(secret.parent_path());
    std::ofstream(secret) << "// sealed reference source\n";
  }
  TurnRequest request(bool sandbox = true) const {
    TurnRequest r;
    r.workspace = workspace;
    r.log_dir = logs;
    r.brief = "# Test brief\nDo the test thing.\n";
    r.time_limit = std::chrono::seconds(60);
    r.sandbox = sandbox;
    r.harness_executable = fs::path(TEMPER_BINARY_DIR) / "harness";
    return r;
  }
  std::string read(const fs::path& relative) const {
    auto text = util::read_file(workspace / relative);
    return text ? *text : "<missing " + relative.string() + ">";
  }
};

} // namespace temper::agent::testing
