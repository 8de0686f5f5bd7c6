#include "agent/cli_usage.h"
#include "agent/shell_words.h"

#include <gtest/gtest.h>

namespace cli_usage_test {

using namespace temper::agent;

TEST(CliUsage, ClaudeStreamJsonUsesTheLastResultLine) {
  std::string out =
      R"({"type":"system","subtype":"init","session_id":"s"})" "\n"
      R"({"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}})" "\n"
      R"J({"type":"result","subtype":"error_max_turns","is_error":true,"errors":["Reached maximum number of turns (2)"],"total_cost_usd":0.02,"usage":{"input_tokens":10,"output_tokens":5}})J" "\n";
  CliUsage u = parse_claude_output(out);
  EXPECT_TRUE(u.is_error);
  EXPECT_EQ(u.input_tokens, 10);
  EXPECT_EQ(u.output_tokens, 5);
  EXPECT_EQ(u.cost_usd, 0.02);
  EXPECT_EQ(u.final_text, "Reached maximum number of turns (2)");
}

TEST(CliUsage, OutputWithoutAReportGivesNoFigures) {
  for (auto* parse : {&parse_claude_output, &parse_codex_output, &parse_opencode_output}) {
    CliUsage u = parse("Error: unknown option --bogus\n{not json\n");
    EXPECT_FALSE(u.input_tokens);
    EXPECT_FALSE(u.output_tokens);
    EXPECT_FALSE(u.cost_usd);
  }
}

TEST(CliUsage, CodexAndOpencodeFailures) {
  CliUsage c = parse_codex_output(R"({"type":"turn.failed","error":{"message":"unexpected status 401"}})");
  EXPECT_TRUE(c.is_error);
  EXPECT_EQ(c.final_text, "unexpected status 401");
  CliUsage o = parse_opencode_output(
      R"({"type":"error","error":{"name":"APIError","data":{"message":"Cannot connect to API","isRetryable":true}}})");
  EXPECT_TRUE(o.is_error);
  EXPECT_EQ(o.final_text, "Cannot connect to API");
}

TEST(ShellWords, SplitsLikeShAndQuotesSafely) {
  auto w = split_shell_words(R"(--model "claude x" --append 'a "b"' c\ d  )");
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, (std::vector<std::string>{"--model", "claude x", "--append", "a \"b\"", "c d"}));
  EXPECT_FALSE(split_shell_words("'open"));
  EXPECT_FALSE(split_shell_words("\"open"));
  EXPECT_TRUE(split_shell_words("")->empty());
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

} // namespace cli_usage_test
