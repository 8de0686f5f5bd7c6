#include "util/json_file.h"

#include "util/fs.h"

namespace temper::util {

Expected<nlohmann::json> read_json(const std::filesystem::path& path) {
  TEMPER_TRY_ASSIGN(std::string text, read_file(path));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return fail("{}: {}", path.string(), e.what());
  }
}

} // namespace temper::util
