// Which hardware a judgement runs kernels on: the compiler that builds candidates and
// references, the worker that runs them, and what the report and the timing protocol say about
// it. `cpu` is g++/clang++ and temper-worker; `cuda` is nvcc and temper-cuda-worker, on the
// GPU the worker finds (docs/cuda.md). The rest of the judge is the same for both.
#pragma once

#include "build/compile_cache.h"
#include "build/compiler.h"
#include "judge/case_result.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace temper::judge {

struct KernelBackend {
  std::string name = "cpu";
  build::CompilerSpec compiler;           // candidates and references
  build::CompilerSpec host_compiler;      // goldens (always a host compiler)
  std::filesystem::path worker_exe;
  std::optional<std::string> unsupported; // why kernels cannot run here ("no GPU: ..."); builds and static checks still run
  nlohmann::json facts = nlohmann::json::object(); // the report's context.backend
  std::string clock;                      // MeasurementProtocol::clock; empty: the CPU default
  size_t flush_bytes = 0;                 // default cold-cache buffer; 0: the host's default
};

struct BackendRequest {
  std::string name = "cpu";          // cpu | cuda
  build::CompilerSpec compiler;      // cpu: as given; cuda: program "nvcc" (found) or a path, and flags
  std::string cuda_arch;             // empty: the device's, else sm_90
  std::filesystem::path worker_exe;  // empty: the backend's worker beside temper
};

// Resolves the backend. Errors: an unknown name, nvcc missing for cuda, an invalid --cuda-arch,
// a broken worker. A machine without a GPU is not an error: `unsupported` says why.
Expected<KernelBackend> prepare_backend(const BackendRequest& request, util::ProcessRunner& runner);

// Records what the build of one case says about it: for CUDA builds, ptxas's registers, shared
// memory, spills and stack (CaseResult::resources). Nothing for CPU builds.
void attach_static_resources(const KernelBackend& backend, const build::CompileResult& build, CaseResult& result);

} // namespace temper::judge
