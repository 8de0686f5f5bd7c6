// The `cmd:COMMAND LINE` driver: runs any command line with /bin/sh -c in the workspace, under
// the sandbox without network. Placeholders, replaced by shell-quoted values (do not quote
// them again): {brief} the path of BRIEF.md, {workspace} the workspace, {role} teacher|student.
#pragma once

#include "agent/agent.h"

namespace temper::agent {

std::string expand_cmd_placeholders(const std::string& command_line, const TurnRequest& request);

Expected<std::unique_ptr<Agent>> make_cmd_agent(const std::string& command_line);

} // namespace temper::agent
