// Parsing case selections such as "1,5,12" or "1-4,7".
#pragma once

#include "util/error.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace temper::cli {

Expected<std::vector<int64_t>> parse_case_list(std::string_view text);

} // namespace temper::cli
