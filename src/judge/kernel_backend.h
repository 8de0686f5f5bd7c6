// Which hardware a judgement runs kernels on: the compiler that builds candidates and
// references, the worker that runs them, and what the report and the timing protocol say about
// it. `cpu` is g++/clang++ and temper-worker; `cuda` is nvcc and temper-cuda-worker, on the
// GPU the worker finds (docs/cuda.md); `pypto` runs PyPTO Python files, unbuilt, in temper's
// PyPTO runner, a Python process speaking the worker protocol (docs/pypto.md). The rest of the
// judge is the same for all.
#pragma once

#include "backend/cuda_device.h"
#include "build/compile_cache.h"
#include "build/compiler.h"
#include "judge/case_result.h"
#include "judge/judge.h"
#include "judge/pypto_backend.h"
#include "judge/timing.h"
#include "util/error.h"
#include "util/process.h"
#include "util/progress.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace temper::judge {

struct KernelBackend {
  std::string name = "cpu";
  build::CompilerSpec compiler;           // candidates and references
  build::CompilerSpec host_compiler;      // goldens (always a host compiler)
  std::filesystem::path worker_exe;       // pypto: the Python interpreter
  std::vector<std::string> worker_args;   // before "--protocol N": pypto's runner script and its flags
  std::vector<std::string> worker_env;    // added to the workers' fixed environment: pypto's Python and CANN setup
  // false (pypto): candidates are source files the worker runs as they are; nothing is compiled
  // for them and the ELF boundary checks do not apply (docs/pypto.md says what that leaves open).
  bool builds_kernels = true;
  std::optional<std::string> unsupported; // why kernels cannot run here ("no GPU: ..."); builds and static checks still run
  backend::CudaDevice cuda_device;        // cuda: what the worker's probe found (the knowledge base's GPU target)
  nlohmann::json facts = nlohmann::json::object(); // the report's context.backend
  std::string clock;                      // MeasurementProtocol::clock; empty: the CPU default
  std::string protocol_compiler;          // MeasurementProtocol::compiler; empty: the compiler's version
  size_t flush_bytes = 0;                 // default cold-cache buffer; 0: the host's default
  bool device_profiles = false;           // pypto --time device: workers get a profile root (WorkerOptions)
  // > 0: at most this many warm-up calls per arm. A device-timed call charges the cap its
  // microseconds of kernel time while its profile costs seconds of wall time, so warmup_s alone
  // would buy dozens of profiled calls; pypto's device time takes CANN-Bench's 3 warm-up steps.
  int max_warmup_calls = 0;
  // > 0: at most this many worker lives per arm per job. A CUDA worker's new life is a new
  // context (a tenth of a second or more) and places nothing the CPU's lives vary (code and
  // pages in the host's memory); a few still vary the device allocations.
  int max_lives = 0;
};

struct BackendRequest {
  std::string name = "cpu";          // cpu | cuda | pypto
  build::CompilerSpec compiler;      // cpu: as given; cuda: program "nvcc" (found) or a path, and flags
  std::string cuda_arch;             // empty: the device's, else sm_90
  std::filesystem::path worker_exe;  // empty: the backend's worker beside temper
  PyptoOptions pypto;                // pypto: mode, interpreter, runner, entry
  const core::Operator* op = nullptr; // pypto: names the default entry
};

// Resolves the backend. Errors: an unknown name, nvcc missing for cuda, an invalid --cuda-arch,
// a broken worker, pypto's interpreter or runner missing. A machine without a GPU is not an error: `unsupported` says why.
Expected<KernelBackend> prepare_backend(const BackendRequest& request, util::ProcessRunner& runner);

// Builds the device-content library (backend/device/device_content.cu, built into temper) with
// the cuda backend's nvcc and architecture, through the compile cache; its source is written
// under the cache root first. The artifact's path, or why it does not build.
Expected<std::filesystem::path> build_device_content(build::CompileCache& cache);

// What the backend changes in a timing job's configuration, the same for the judge and the
// probe: the worker's arguments and environment, the cold-cache step (a buffer outside
// temper-worker), whether work outside calls is judged, warm-up calls and worker lives, the
// clock, the flush size, and on a GPU the device-content library for fresh inputs made there.
// `torch_reference`: the reference arm is the PyTorch runner. Errors: a cold step or content
// maker the backend cannot give, the device-content library not building.
Status apply_backend_to_timing(const KernelBackend& backend, const TimingOptions& options, bool torch_reference,
                               build::CompileCache& cache, TimingConfig& tc, util::Progress& progress);

// Records what the build of one case says about it: for CUDA builds, ptxas's registers, shared
// memory, spills and stack (CaseResult::resources). Nothing for CPU builds.
void attach_static_resources(const KernelBackend& backend, const build::CompileResult& build, CaseResult& result);

} // namespace temper::judge
