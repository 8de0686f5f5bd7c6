#include "campaign/tuner_cache.h"

#include "util/fs.h"
#include "util/hash.h"

#include <algorithm>
#include <vector>

namespace temper::campaign::tuner {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kCacheSchemaVersion = 1;

std::optional<double> opt_number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

} // namespace

json CacheKey::to_json() const {
  return {{"task", task}, {"task_hash", task_hash}, {"case", case_id}, {"target", target},
          {"reference", reference}, {"candidate", candidate}, {"knobs", knobs}};
}

std::string CacheKey::digest() const {
  util::Hasher h;
  h.add(task).add(task_hash).add(case_id).add(target).add(reference).add(candidate).add(knobs);
  return h.hex();
}

json Measurement::to_json() const {
  json j = {{"status", status}, {"speedup", speedup ? json(*speedup) : json()}, {"verdict", verdict}};
  j["ci"] = ci_lo && ci_hi ? json::array({*ci_lo, *ci_hi}) : json();
  if (!message.empty()) j["message"] = message;
  return j;
}

Measurement Measurement::from_json(const json& j) {
  Measurement m;
  m.status = j.value("status", "");
  m.speedup = opt_number(j, "speedup");
  if (j.contains("ci") && j["ci"].is_array() && j["ci"].size() == 2 && j["ci"][0].is_number() && j["ci"][1].is_number()) {
    m.ci_lo = j["ci"][0].get<double>();
    m.ci_hi = j["ci"][1].get<double>();
  }
  if (j.contains("verdict") && j["verdict"].is_string()) m.verdict = j["verdict"].get<std::string>();
  if (j.contains("message") && j["message"].is_string()) m.message = j["message"].get<std::string>();
  return m;
}

Expected<std::string> task_definition_hash(const fs::path& task_dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(task_dir, ec)) {
    if (e.is_regular_file() && e.path().extension() != ".md") files.push_back(e.path());
  }
  if (ec) return fail("{}: {}", task_dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  util::Hasher h;
  for (const auto& f : files) {
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(f));
    h.add(f.filename().string()).add(text);
  }
  return h.hex();
}

fs::path TunerCache::file_of(const CacheKey& key) const {
  const std::string d = key.digest();
  return m_dir / d.substr(0, 2) / (d + ".json");
}

std::optional<Measurement> TunerCache::get(const CacheKey& key) const {
  auto text = util::read_file(file_of(key));
  if (!text) return std::nullopt;
  try {
    const json j = json::parse(*text);
    if (j.value("schema_version", 0) != kCacheSchemaVersion || j.value("key", json()) != key.to_json()) return std::nullopt;
    Measurement m = Measurement::from_json(j.at("result"));
    if (!m.cacheable()) return std::nullopt;
    m.cached = true;
    return m;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

Status TunerCache::put(const CacheKey& key, const Measurement& m) const {
  if (!m.cacheable()) return {};
  const fs::path file = file_of(key);
  TEMPER_TRY(util::make_dirs(file.parent_path()));
  const json j = {{"schema_version", kCacheSchemaVersion}, {"kind", "temper.tuner.measurement"}, {"key", key.to_json()}, {"result", m.to_json()}};
  return util::write_file_atomic(file, j.dump(2) + "\n");
}

} // namespace temper::campaign::tuner
