// A/A calibration: the noise of timing a reference against itself, per case, on this machine.
// Stored under the cache root by CPU signature, task and reference build, with the protocol it
// was measured under; a judgement uses it only under the same protocol.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace temper::judge {

struct Calibration {
  nlohmann::json protocol;
  std::map<int64_t, double> noise; // case id -> A/A noise (relative, e.g. 0.004)
  std::string date;
};

std::filesystem::path calibration_path(const std::string& task_name, const std::string& reference_key);
Expected<Calibration> load_calibration(const std::filesystem::path& file);
Status save_calibration(const std::filesystem::path& file, const Calibration& c);

} // namespace temper::judge
