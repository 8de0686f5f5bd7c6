// A whole JSON file read and parsed, with the file named in the error.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace temper::util {

Expected<nlohmann::json> read_json(const std::filesystem::path& path);

} // namespace temper::util
