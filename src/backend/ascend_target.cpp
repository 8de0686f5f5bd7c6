#include "backend/ascend_target.h"

#include "util/hash.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace temper::backend {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

} // namespace

std::string ascend_target_class(std::string_view soc) {
  if (starts_with(soc, "Ascend910B") || starts_with(soc, "Ascend910_93") || starts_with(soc, "Ascend910C")) {
    return "ascend-a2a3-c220";
  }
  if (starts_with(soc, "Ascend950PR") || starts_with(soc, "Ascend950DT")) return "ascend-950-c310";
  std::string lower;
  for (char c : soc) lower += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '-';
  return "ascend-unknown-" + (lower.empty() ? std::string("soc") : lower);
}

std::string AscendFingerprint::target_class() const { return ascend_target_class(soc_version); }

nlohmann::json AscendFingerprint::to_json() const {
  return {{"soc_version", soc_version},   {"cube_cores", cube_cores},       {"vector_cores", vector_cores},
          {"memory_gib", memory_gib},     {"cann_version", cann_version},   {"pypto_version", pypto_version},
          {"torch_npu_version", torch_npu_version}};
}

std::string AscendFingerprint::id() const {
  std::string text = to_json().dump();
  return fmt::format("{:016x}", util::hash64(text.data(), text.size(), 0));
}

Expected<AscendFingerprint> ascend_fingerprint_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return fail("the Ascend fingerprint is not a JSON object");
  if (j.contains("unsupported")) return fail("unsupported: {}", j["unsupported"].get<std::string>());
  AscendFingerprint f;
  try {
    f.soc_version = j.at("soc_version").get<std::string>();
    f.cube_cores = j.value("cube_cores", 0);
    f.vector_cores = j.value("vector_cores", 0);
    f.memory_gib = j.value("memory_gib", uint64_t{0});
    f.cann_version = j.value("cann_version", "");
    f.pypto_version = j.value("pypto_version", "");
    f.torch_npu_version = j.value("torch_npu_version", "");
  } catch (const nlohmann::json::exception& e) {
    return fail("the Ascend fingerprint is malformed: {}", e.what());
  }
  if (f.soc_version.empty()) return fail("the Ascend fingerprint has no soc_version");
  return f;
}

Expected<AscendFingerprint> probe_ascend_target(const std::filesystem::path& python, const std::filesystem::path& runner,
                                                util::ProcessRunner& processes) {
  util::Command cmd;
  cmd.argv = {python.string(), runner.string(), "--fingerprint"};
  cmd.timeout = std::chrono::seconds(120);
  util::ProcessResult r = processes.run(cmd);
  if (r.outcome != util::Outcome::Exited) return fail("the PyPTO runner did not finish its fingerprint: {}", r.output);
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  auto nl = out.rfind('\n');
  std::string last = nl == std::string::npos ? out : out.substr(nl + 1);
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  if (j.is_discarded()) return fail("the PyPTO runner's fingerprint is not JSON: {}", last);
  return ascend_fingerprint_from_json(j);
}

} // namespace temper::backend
