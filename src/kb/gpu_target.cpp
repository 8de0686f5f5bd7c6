#include "kb/gpu_target.h"

#include <fmt/format.h>

#include <cctype>

namespace temper::kb {

std::string cuda_target_class(const std::string& device_name, const std::string& arch) {
  std::string lower;
  for (char c : device_name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.rfind("nvidia", 0) == 0) lower = lower.substr(6);
  std::string slug;
  for (char c : lower) {
    if (std::isalnum(static_cast<unsigned char>(c))) slug += c;
    else if (!slug.empty() && slug.back() != '-') slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  std::string sm;
  for (char c : arch)
    if (c != '_') sm += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return fmt::format("nvidia-{}-{}", sm.empty() ? "unknown" : sm, slug.empty() ? "gpu" : slug);
}

TargetFingerprint cuda_target(const backend::CudaDevice& device) {
  TargetFingerprint t;
  t.arch = "cuda";
  t.device_class = cuda_target_class(device.name, device.arch);
  const nlohmann::json& p = device.probe;
  t.device = fmt::format("{}; compute capability {}; {} SMs; L2 {} bytes", device.name, p.value("compute_capability", "?"),
                         p.value("sm_count", 0), device.l2_bytes);
  t.cpu_model = device.name;
  return t;
}

} // namespace temper::kb
