// Static resources of CUDA kernels, read from ptxas's verbose report (nvcc -Xptxas -v): per
// kernel and architecture the registers, shared memory, local-memory spills and stack frame.
// They need no GPU, so mechanism expectations ("no spills", "at most 128 registers") can be
// checked on any machine with nvcc.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace temper::build {

// One function ptxas compiled for one architecture: an entry (a __global__ kernel) or a
// device function it did not inline (those have a stack frame and spills, no register line).
struct KernelResources {
  std::string name;   // the mangled name, as ptxas prints it
  std::string arch;   // "sm_90"; empty when the report did not say
  bool entry = true;  // false: a non-inlined device function
  int registers = 0;
  int barriers = 0;
  int64_t smem_bytes = 0;        // static shared memory
  int64_t cmem0_bytes = 0;       // constant bank 0 (parameters)
  int64_t stack_bytes = 0;       // the function's stack frame
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;

  int64_t spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

// Metric names, as the metric registry knows them.
inline constexpr std::string_view kMetricRegisters = "cuda.registers";
inline constexpr std::string_view kMetricSmemBytes = "cuda.smem_bytes";
inline constexpr std::string_view kMetricSpillBytes = "cuda.spill_bytes";
inline constexpr std::string_view kMetricStackBytes = "cuda.stack_bytes";

struct CudaResources {
  std::vector<KernelResources> functions; // in report order
  std::vector<std::string> archs;         // architectures seen, in report order

  bool empty() const { return functions.empty(); }

  // The metrics of one architecture (empty: the last one compiled, which nvcc's -arch=sm_XX
  // makes the only one): cuda.registers, cuda.smem_bytes and cuda.stack_bytes are the maximum
  // over entry kernels; cuda.spill_bytes sums spill stores and loads over every function,
  // device functions included. Empty when the report has no function for that architecture.
  std::map<std::string, double> metrics(std::string_view arch = {}) const;

  // {"schema_version", "archs", "functions": [...], "metrics": {...}} (metrics of the last arch).
  nlohmann::json to_json() const;
};

// Reads every "ptxas info" line of `text` (compiler output may hold other lines too). Lines
// it does not know are skipped, so a newer ptxas with more fields still parses.
CudaResources parse_ptxas_resources(std::string_view text);

} // namespace temper::build
