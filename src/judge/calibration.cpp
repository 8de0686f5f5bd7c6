#include "judge/calibration.h"

#include "util/fs.h"
#include "util/host.h"

#include <cmath>

namespace temper::judge {

std::filesystem::path calibration_path(const std::string& task_name, const std::string& reference_key) {
  return util::cache_root() / "calibration" / util::host_info().cpu_signature() / task_name / (reference_key + ".json");
}

Expected<Calibration> load_calibration(const std::filesystem::path& file) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || j.value("schema_version", 0) != 1) return fail("{}: not a calibration file", file.string());
  Calibration c;
  c.protocol = j.value("protocol", nlohmann::json::object());
  c.date = j.value("date", "");
  const nlohmann::json noises = j.value("noise", nlohmann::json::object()); // a named value: items() must not outlive it
  for (const auto& [id, noise] : noises.items()) {
    if (noise.is_number()) c.noise[std::stoll(id)] = noise.get<double>();
  }
  return c;
}

Status save_calibration(const std::filesystem::path& file, const Calibration& c) {
  nlohmann::json noise = nlohmann::json::object();
  for (const auto& [id, n] : c.noise)
    if (std::isfinite(n)) noise[std::to_string(id)] = n;
  nlohmann::json j = {{"schema_version", 1}, {"kind", "temper.calibration"}, {"date", c.date},
                      {"protocol", c.protocol}, {"noise", noise}};
  return util::write_file_atomic(file, j.dump(2) + "\n");
}

} // namespace temper::judge
