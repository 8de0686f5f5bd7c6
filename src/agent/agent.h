// An agent is an external process (or a built-in driver) that works in a workspace directory
// for one turn and leaves files there. The orchestrator never trusts what it says; it only
// reads files it asked for and acts on harness requests.
#pragma once

#include "util/error.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace temper::agent {

enum class Role { Teacher, Student };
const char* role_name(Role role);  // "teacher", "student"

struct TurnRequest {
  Role role = Role::Student;
  std::filesystem::path workspace;       // the agent's working directory (read-write for it)
  std::string brief;                     // rendered brief; the driver also finds it as workspace/BRIEF.md
  std::filesystem::path harness_socket;  // unix socket of the orchestrator's harness server
  std::chrono::seconds time_limit{1800}; // wall-time limit for the turn
  std::filesystem::path log_dir;         // where the driver writes the turn's transcript (outside the workspace)
  std::vector<std::filesystem::path> readonly_paths;  // extra paths visible read-only in the sandbox
  std::map<std::string, std::string> env;             // extra environment for the agent
  bool sandbox = true;                   // run under the filesystem sandbox (bubblewrap)
  // Added by the agent branch (optional; the defaults work):
  std::filesystem::path harness_executable;  // the `harness` client put in the workspace; empty:
                                             // $TEMPER_HARNESS_BIN, else next to the running program, else PATH
  std::filesystem::path state_dir;           // persists across this agent's turns, outside the workspace;
                                             // the script driver keeps its turn counter there (empty: in memory)
};

struct TurnResult {
  int exit_code = 0;
  bool timed_out = false;
  double seconds = 0;
  std::optional<int64_t> input_tokens;   // when the driver reports them
  std::optional<int64_t> output_tokens;
  std::optional<double> cost_usd;
  std::filesystem::path transcript;      // the turn's log file (stdout+stderr of the agent)
  std::string summary;                   // last lines of output, for status and ledger
};

class Agent {
 public:
  virtual ~Agent() = default;
  virtual std::string name() const = 0;      // "claude", "cmd", "script", "planfile", ...
  // Errors are harness problems (cannot start the process, bad workspace); whatever the agent
  // itself does (non-zero exit, timeout) is a TurnResult.
  virtual Expected<TurnResult> run_turn(const TurnRequest& request) = 0;
};

// Built-in drivers known to the agent layer: "cmd:COMMAND LINE" ({brief} and {workspace}
// placeholders), "claude", "codex", "opencode", "script:DIR". The campaign layer adds its own
// built-in drivers ("planfile", and later "tuner") before falling back to this factory.
Expected<std::unique_ptr<Agent>> make_agent(const std::string& spec);

} // namespace temper::agent
