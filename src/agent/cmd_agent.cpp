#include "agent/cmd_agent.h"

#include "agent/shell_words.h"
#include "agent/turn_runner.h"

namespace temper::agent {

namespace {

class CmdAgent final : public Agent {
public:
  explicit CmdAgent(std::string command_line) : m_command_line(std::move(command_line)) {}
  std::string name() const override { return "cmd"; }
  Expected<TurnResult> run_turn(const TurnRequest& request) override {
    AgentCommand command;
    command.driver = "cmd";
    command.argv = {"/bin/sh", "-c", expand_cmd_placeholders(m_command_line, request)};
    return run_agent_command(request, command);
  }

private:
  std::string m_command_line;
};

void replace_all(std::string& s, std::string_view from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

} // namespace

std::string expand_cmd_placeholders(const std::string& command_line, const TurnRequest& request) {
  std::string s = command_line;
  replace_all(s, "{brief}", shell_quote((request.workspace / "BRIEF.md").string()));
  replace_all(s, "{workspace}", shell_quote(request.workspace.string()));
  replace_all(s, "{role}", shell_quote(role_name(request.role)));
  return s;
}

Expected<std::unique_ptr<Agent>> make_cmd_agent(const std::string& command_line) {
  if (command_line.find_first_not_of(" \t") == std::string::npos) {
    return fail("driver \"cmd:\" needs a command line, e.g. cmd:\"my-agent --brief {{brief}}\"");
  }
  return std::unique_ptr<Agent>(new CmdAgent(command_line));
}

} // namespace temper::agent
