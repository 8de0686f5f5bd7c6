// The judge's view of the GPU: asks temper-cuda-worker --probe (the only temper process that
// loads the CUDA driver) which device there is, or why there is none.
#pragma once

#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace temper::backend {

struct CudaDevice {
  bool supported = false;
  std::string reason;   // when not supported: "no GPU: ..." or what else is missing
  std::string name;     // "NVIDIA H200"
  std::string arch;     // "sm_90", from the compute capability
  int64_t l2_bytes = 0;
  nlohmann::json probe; // the worker's whole answer, for reports
};

// temper-cuda-worker beside the running executable, or $TEMPER_CUDA_WORKER.
std::filesystem::path default_cuda_worker_exe();

// Runs `worker_exe ARGS --probe` (ARGS: the worker's --driver/--runtime). A machine without a GPU is a CudaDevice with supported=false and
// the reason; an Error means the worker itself is missing or broken.
Expected<CudaDevice> probe_cuda_device(const std::filesystem::path& worker_exe, util::ProcessRunner& runner,
                                       const std::vector<std::string>& args = {});

// Parses the probe's JSON line (exposed for tests).
Expected<CudaDevice> parse_cuda_probe(const std::string& text);

} // namespace temper::backend
