// The `script:DIR` driver replays a directory of scripted turns, for tests and demonstrations
// (format in docs/agents.md). Turn n (1-based, counted per agent in request.state_dir, or in
// memory when that is empty) uses DIR/turn-NNN/:
//   files/   copied into the workspace before the turn (overwriting),
//   run.sh   run with /bin/sh in the workspace under the sandbox like any agent, with `harness`
//            on PATH; its exit status is the turn's. Without it the turn only copies files.
// A turn without its directory does nothing and ends with exit status 1 ("script exhausted").
#pragma once

#include "agent/agent.h"

namespace temper::agent {

Expected<std::unique_ptr<Agent>> make_script_agent(const std::filesystem::path& dir);

} // namespace temper::agent
