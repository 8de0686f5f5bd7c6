// Reading what the agent CLIs report about a turn from their machine-readable stdout
// (docs/agents.md, /work/shared/reference/agent-clis.md). Tokens count everything the model
// read (cached input included) and everything it wrote (reasoning included).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace temper::agent {

struct CliUsage {
  std::optional<int64_t> input_tokens;
  std::optional<int64_t> output_tokens;
  std::optional<double> cost_usd;
  std::string final_text;  // the agent's last message, or the error it ended with
  bool is_error = false;   // the CLI said the turn failed
};

// `claude -p --output-format json` (one result object) or stream-json (its last "result" line).
CliUsage parse_claude_output(std::string_view stdout_text);
// `codex exec --json`: sums turn.completed usage; no cost is reported.
CliUsage parse_codex_output(std::string_view stdout_text);
// `opencode run --format json`: sums step_finish tokens and cost.
CliUsage parse_opencode_output(std::string_view stdout_text);

} // namespace temper::agent
