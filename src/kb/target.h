// The target a knowledge-base entry is about. The fingerprint is everything that can change a
// probe's outcome (CPU identity and flags, caches, cores, memory, compiler); its id names the
// exact machine+toolchain an entry was certified on. The target class is the coarser name
// entries are filed under (x86_64-zen5-avx512): machines of one class share knowledge, and a
// certification on another fingerprint of the class is shown as stale until re-checked.
#pragma once

#include "util/host.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace temper::kb {

struct TargetFingerprint {
  std::string arch;         // x86_64, aarch64
  std::string cpu_vendor;   // AuthenticAMD, GenuineIntel
  std::string cpu_model;
  int family = 0;
  int model = 0;
  int stepping = 0;
  std::vector<std::string> flags;
  uint64_t l1d_bytes = 0;
  uint64_t l2_bytes = 0;
  uint64_t llc_bytes = 0;
  int cores = 0;            // logical CPUs
  uint64_t memory_gib = 0;  // rounded down, so a VM's few MiB of drift do not change the id
  std::string compiler;     // first line of `g++ --version`
  // A GPU (kb/gpu_target.h): the device's class, e.g. nvidia-sm90-h200, is the target class,
  // and `device` (name, compute capability, SMs, L2 size) enters the id. Empty for the host CPU.
  std::string device_class;
  std::string device;

  std::string id() const;           // 16 hex digits over every field above
  std::string target_class() const; // x86_64-zen5-avx512
  std::string microarch() const;    // zen5, sapphirerapids, ...; "unknown-f26m2" when not in the table
  std::string isa_tier() const;     // avx512, avx2, avx, sse4, neon-sve, ...
  bool has_flag(const std::string& f) const;
  nlohmann::json to_json() const;
};

// From util::host_info() and the compiler's identity (empty when it cannot be run).
TargetFingerprint make_fingerprint(const util::HostInfo& host, const std::string& compiler_version);

// A target class's parts: x86_64-zen5-avx512 is {x86_64, zen5, avx512}; the microarch may itself
// hold dashes (unknown-f26m2). Empty parts when the name has fewer than three.
struct TargetClassParts {
  std::string arch;
  std::string microarch;
  std::string isa_tier;
};
TargetClassParts parse_target_class(const std::string& target_class);

// The CPU vendor of a microarch name from the class table (AuthenticAMD, GenuineIntel), empty when
// the name is not in it.
std::string microarch_vendor(const std::string& microarch);

// This machine with the default compiler (g++), computed once.
const TargetFingerprint& current_target();

} // namespace temper::kb
