#include "agent/agent.h"

#include "agent/cli_agents.h"
#include "agent/cmd_agent.h"
#include "agent/script_agent.h"

namespace temper::agent {

const char* role_name(Role role) { return role == Role::Teacher ? "teacher" : "student"; }

Expected<std::unique_ptr<Agent>> make_agent(const std::string& spec) {
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "cmd") return make_cmd_agent(rest);
  if (kind == "script") return make_script_agent(rest);
  if (kind == "claude" || kind == "codex" || kind == "opencode") return make_cli_agent(kind, rest);
  return fail("unknown agent driver \"{}\" (known: cmd:COMMAND, script:DIR, claude[:ARGS], codex[:ARGS], "
              "opencode[:ARGS])",
              spec);
}

} // namespace temper::agent
