// Small text helpers shared by the parsers of every layer (knobs, plans, expressions, protocols).
#pragma once

#include <string_view>

namespace temper::util {

// `s` without leading and trailing whitespace (std::isspace, C locale).
std::string_view trim(std::string_view s);

// A C identifier: a letter or '_', then letters, digits and '_'.
bool is_identifier(std::string_view s);

} // namespace temper::util
