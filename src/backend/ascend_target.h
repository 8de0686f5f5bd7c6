// Ascend NPU targets: the fingerprint of a device and its toolchain, and the target class that
// knowledge entries are filed under (hw_kb/<class>/). The fingerprint comes from temper's PyPTO
// runner (`temper_pypto_runner.py --fingerprint`, which asks torch_npu and the CANN install);
// where there is no NPU the answer is "unsupported: why", never a guess.
#pragma once

#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace temper::backend {

struct AscendFingerprint {
  std::string soc_version;    // Ascend910B2, Ascend910_9382, Ascend950PR_9589, ...
  int cube_cores = 0;         // AIC
  int vector_cores = 0;       // AIV
  uint64_t memory_gib = 0;    // HBM, rounded down
  std::string cann_version;   // from the CANN install's version file
  std::string pypto_version;
  std::string torch_npu_version;

  std::string id() const;            // 16 hex digits over every field above
  std::string target_class() const;  // ascend_target_class(soc_version)
  nlohmann::json to_json() const;
};

// The class of a SoC: A2 (910B*) and A3 (910_93*, 910C*) share the AIC-C-220 core
// ("ascend-a2a3-c220"); 950PR and 950DT share AIC-C-310 ("ascend-950-c310"); anything else is
// "ascend-unknown-<soc in lower case>", so it never borrows another class's knowledge.
std::string ascend_target_class(std::string_view soc_version);

// Reads the runner's --fingerprint JSON; {"unsupported": "why"} becomes an error saying so.
Expected<AscendFingerprint> ascend_fingerprint_from_json(const nlohmann::json& j);

// Runs `python runner --fingerprint` and reads its last output line.
Expected<AscendFingerprint> probe_ascend_target(const std::filesystem::path& python, const std::filesystem::path& runner,
                                                util::ProcessRunner& runner_process);

} // namespace temper::backend
