// What every external-process driver does around its command: checks the request, writes
// BRIEF.md, puts the `harness` client in the workspace, builds the sandbox (or, when the request
// says so, runs without one), runs the command under the wall-time limit with a transcript in
// log_dir, and records the turn in log_dir/turn.json.
//
// log_dir receives: transcript.log (stdout and stderr interleaved), stdout.log (stdout alone,
// what drivers parse), turn.json (command, outcome, tokens, cost). One log_dir per turn.
#pragma once

#include "agent/agent.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace temper::agent {

struct AgentCommand {
  std::string driver;                       // for turn.json and messages
  std::vector<std::string> argv;            // run in the workspace; argv[0] found on the sandbox PATH
  std::map<std::string, std::string> env;   // set for the agent (request.env overrides)
  std::vector<std::string> pass_env;        // names, or prefixes ending in '*', copied from temper's environment
  bool network = false;                     // the driver talks to a model service
  std::vector<std::filesystem::path> readonly;                                      // extra read-only paths
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> readonly_at; // host -> inside
  std::vector<std::filesystem::path> path_dirs;                                     // prepended to PATH
  // Copied into the private HOME before the turn: (host file or directory, path relative to HOME).
  // Missing sources are skipped.
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> home_files;
  // Reads the driver's own report (stdout) into the result: tokens, cost, summary.
  std::function<void(const std::string& stdout_text, TurnResult& result)> parse_output;
};

Expected<TurnResult> run_agent_command(const TurnRequest& request, const AgentCommand& command);

// Checks the parts of a request every driver relies on and writes BRIEF.md. Used by
// run_agent_command and by drivers that do some work before it.
Status prepare_workspace(const TurnRequest& request);

// The harness client to install: request.harness_executable, $TEMPER_HARNESS_BIN, a `harness`
// next to the running program, or one on PATH. Empty when none exists.
std::filesystem::path find_harness_executable(const TurnRequest& request);

} // namespace temper::agent
