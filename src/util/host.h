// What this machine is: CPU, caches, memory, kernel. Used for compile cache keys (-march=native
// depends on the CPU), report context blocks and, later, target fingerprints.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace temper::util {

struct HostInfo {
  std::string hostname;
  std::string kernel;        // uname release
  std::string cpu_vendor;
  std::string cpu_model;     // "AMD EPYC ..."
  std::string cpu_family;    // family/model/stepping as "25/17/1"
  std::vector<std::string> cpu_flags;
  int logical_cpus = 0;
  uint64_t memory_bytes = 0;
  uint64_t l1d_bytes = 0;    // per core; 0 when unknown
  uint64_t l2_bytes = 0;     // per core; 0 when unknown
  uint64_t llc_bytes = 0;    // last-level cache, shared; 0 when unknown

  bool has_flag(const std::string& f) const;
  std::string cpu_signature() const; // hash of vendor, model, family and flags
  nlohmann::json to_json() const;
};

// Read once per process from /proc and sysfs.
const HostInfo& host_info();

// Memory the kernel says could be given to new work now without swapping (MemAvailable in
// /proc/meminfo: free pages plus reclaimable caches); 0 when it cannot say. Read on every call.
uint64_t available_memory_bytes();

} // namespace temper::util
