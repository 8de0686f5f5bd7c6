// Runs one agent process for a turn: stdin from /dev/null (the agent CLIs block on an open
// stdin), stdout and stderr streamed into the transcript as they come (so a killed turn still
// leaves its log), stdout also kept alone for drivers that parse it, the child in its own
// process group, which is killed at the wall-time limit.
#pragma once

#include "util/error.h"

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace temper::agent {

struct TurnProcess {
  std::vector<std::string> argv;
  std::filesystem::path cwd;
  std::vector<std::pair<std::string, std::string>> env_set; // added to temper's environment
  std::chrono::milliseconds time_limit{0};                  // 0: none
  std::filesystem::path transcript;                         // stdout+stderr, interleaved
  std::filesystem::path stdout_copy;                        // stdout only; empty: not kept
};

struct TurnProcessResult {
  int exit_code = -1;   // exit status, or 128+signal when killed by a signal
  bool timed_out = false;
  double seconds = 0;
};

// Errors: the process could not be started or the logs not written. What the process itself
// does (exit codes, signals, hanging) is in the result.
Expected<TurnProcessResult> run_turn_process(const TurnProcess& process);

// The last `max_lines` lines of a file (at most `max_bytes` bytes), for summaries.
std::string file_tail(const std::filesystem::path& path, size_t max_lines = 20, size_t max_bytes = 4000);

} // namespace temper::agent
