// Splitting a user-written argument string into words and quoting a word for /bin/sh, for
// driver argument overrides (TEMPER_CLAUDE_ARGS, "claude:--model X") and cmd placeholders.
#pragma once

#include "util/error.h"

#include <string>
#include <string_view>
#include <vector>

namespace temper::agent {

// Splits on blanks; single quotes keep everything literal, double quotes and backslash work as
// in sh (without expansions). An unterminated quote is an error.
Expected<std::vector<std::string>> split_shell_words(std::string_view text);

// 'word' with embedded single quotes escaped, safe to paste into a /bin/sh command line.
std::string shell_quote(std::string_view word);

} // namespace temper::agent
