// A C++ golden kept running between the goldens of a sampled check (include/temper/golden.h,
// `--serve`). A timing job checks a golden per checked call, and on a large case a new golden
// process spends most of its time on pages: a VM makes the first touch of a fresh page cost more
// than the values written into it (case 4 of SwiGLU: 1.5 GB of doubles per golden). A server
// allocates once and reuses its memory, and writes each output over an earlier output file whose
// results the judge has released, so neither side touches fresh pages after the first golden.
#pragma once

#include "util/error.h"
#include "util/fs.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace temper::judge {

class GoldenServer {
public:
  // Starts `exe --serve`, `env_set` added to temper's environment, its output kept in a log in a
  // directory of its own (where its input and output files lie too).
  static Expected<std::unique_ptr<GoldenServer>> start(const std::filesystem::path& exe,
                                                       const std::vector<std::pair<std::string, std::string>>& env_set);
  ~GoldenServer(); // ends the server and removes its directory
  GoldenServer(const GoldenServer&) = delete;
  GoldenServer& operator=(const GoldenServer&) = delete;

  // Where the caller writes the next inputs (in place, over the last ones).
  const std::filesystem::path& input_file() const { return m_input; }
  // An output file that no result read from it still maps: one written before and released, or
  // a new one.
  std::filesystem::path output_file();
  // Results read from `output` are alive while `owner` is.
  void hold(const std::filesystem::path& output, std::weak_ptr<const void> owner);

  // Runs the golden on input_file() into `output`: its seconds. An error when the golden reports
  // one (the server goes on), or when the server died, hung past `timeout` or broke the protocol
  // (it is then ended, and usable() is false: the caller runs the golden as a process of its own,
  // which reports the failure as usual).
  Expected<double> run(const std::filesystem::path& output, std::chrono::milliseconds timeout);
  bool usable() const { return m_fd >= 0; }

private:
  GoldenServer() = default;
  void end(bool kill);
  std::string log_tail() const;

  util::TempDir m_dir{"temper-golden-server"};
  std::filesystem::path m_input;
  std::filesystem::path m_log;
  pid_t m_pid = -1;
  int m_fd = -1; // the request/reply socket
  std::vector<std::pair<std::filesystem::path, std::weak_ptr<const void>>> m_outputs;
};

// Idle servers by golden build for the life of temper's process, so that a campaign's
// judgements (each with a GoldenRunner of its own) find a server that has already made its
// pages. At most one idle server per CPU per build is kept; a server holds the memory of the
// largest case it computed until temper exits.
class GoldenServerPool {
public:
  static GoldenServerPool& instance();
  // An idle server of `exe`, or a new one; an error when none can be started.
  Expected<std::unique_ptr<GoldenServer>> take(const std::filesystem::path& exe,
                                               const std::vector<std::pair<std::string, std::string>>& env_set);
  // Back to the pool (a server that is no longer usable is ended).
  void give(const std::filesystem::path& exe, std::unique_ptr<GoldenServer> server);

private:
  std::mutex m_mu;
  std::map<std::string, std::vector<std::unique_ptr<GoldenServer>>> m_idle;
};

} // namespace temper::judge
