// Presets for the coding-agent CLIs: `claude` (Claude Code print mode), `codex` (Codex CLI
// exec) and `opencode` (opencode run). Each runs one non-interactive turn in the workspace with
// the brief as its prompt, under the sandbox with network (the model service), and reads tokens
// and cost from the CLI's JSON output. Command lines and what can be changed: docs/agents.md.
//
//   spec "claude:ARGS"          ARGS are appended to the preset's arguments (e.g. --model X)
//   $TEMPER_CLAUDE_ARGS         replaces the preset's default arguments (likewise CODEX, OPENCODE)
//   $TEMPER_CLAUDE_BIN          the program to run instead of `claude` found on PATH
#pragma once

#include "agent/agent.h"

namespace temper::agent {

// `name` is "claude", "codex" or "opencode"; `extra_args` is the text after "name:".
Expected<std::unique_ptr<Agent>> make_cli_agent(const std::string& name, const std::string& extra_args);

} // namespace temper::agent
