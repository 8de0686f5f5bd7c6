// Shared pieces of the agent-layer tests: a harness server that records what it is asked, and
// turn requests laid out in a temporary directory (workspace, logs, a secret beside them).
#pragma once

#include "agent/agent.h"
#include "agent/harness_protocol.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
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
  // Under /tmp by default; `outside_tmp` puts the tree in the build directory instead, for
  // tests where the sandbox's private /tmp would hide what they look for.
  explicit TurnDirs(bool outside_tmp = false) : m_root(make_root(outside_tmp)) {
    fs::create_directories(workspace);
    fs::create_directories(secret.parent_path());
    std::ofstream(secret) << "// sealed reference source\n";
  }
  ~TurnDirs() {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }
  TurnDirs(const TurnDirs&) = delete;
  TurnDirs& operator=(const TurnDirs&) = delete;

private:
  static fs::path make_root(bool outside_tmp) {
    fs::path base = outside_tmp ? fs::path(TEMPER_BINARY_DIR) / "agent-test-tmp" : fs::temp_directory_path();
    fs::create_directories(base);
    std::string tmpl = (base / "temper-agent-test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    return tmpl;
  }
  fs::path m_root;

public:
  const fs::path& root() const { return m_root; }
  fs::path workspace = m_root / "ws";
  fs::path logs = m_root / "logs";
  fs::path secret = m_root / "vault" / "reference.cpp";

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
