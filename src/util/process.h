// Running child processes: one command to completion with captured output and a wall-clock
// limit. Behind an interface so tests can substitute a fake runner.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace temper::util {

struct Command {
  std::vector<std::string> argv;
  std::filesystem::path cwd;                         // empty: inherit
  std::vector<std::pair<std::string, std::string>> env_set; // added to the parent's environment
  std::optional<std::chrono::milliseconds> timeout;  // wall clock; the process group is killed
  size_t max_output_bytes = 4 << 20;                 // stdout+stderr kept, the rest dropped
};

enum class Outcome { Exited, Signalled, TimedOut, FailedToStart };

struct ProcessResult {
  Outcome outcome = Outcome::FailedToStart;
  int exit_code = -1; // when Exited
  int signal = 0;     // when Signalled
  std::string output; // stdout and stderr interleaved
  double seconds = 0;

  bool ok() const { return outcome == Outcome::Exited && exit_code == 0; }
  std::string describe() const; // "exit 1", "killed by SIGSEGV", "timed out after 3.0 s", ...
};

class ProcessRunner {
public:
  virtual ~ProcessRunner() = default;
  virtual ProcessResult run(const Command& cmd) = 0;
};

// Spawns real processes: stdin from /dev/null, stdout and stderr merged into one pipe, the child
// in its own process group so a timeout kills everything it started.
class RealProcessRunner final : public ProcessRunner {
public:
  ProcessResult run(const Command& cmd) override;
};

ProcessRunner& default_process_runner();

// The absolute path of a program found on PATH, or empty.
std::string find_program(const std::string& name);

} // namespace temper::util
