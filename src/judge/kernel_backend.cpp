#include "judge/kernel_backend.h"

#include "backend/cuda_device.h"
#include "build/cuda_compiler.h"
#include "build/ptxas_resources.h"
#include "judge/judge.h"

#include <fmt/format.h>

namespace temper::judge {

Expected<KernelBackend> prepare_backend(const BackendRequest& req, util::ProcessRunner& runner) {
  KernelBackend b;
  b.name = req.name;
  if (req.name == "cpu") {
    b.compiler = req.compiler;
    b.host_compiler = req.compiler;
    b.worker_exe = req.worker_exe.empty() ? default_worker_exe() : req.worker_exe;
    b.facts = {{"name", "cpu"}};
    return b;
  }
  if (req.name == "pypto") {
    if (!req.op) return fail("the pypto backend needs the task's operator to name the entry");
    TEMPER_TRY_ASSIGN(RunnerLaunch launch, pypto_launch(req.pypto, *req.op));
    b.compiler = req.compiler; // builds only the golden, on the host
    b.host_compiler = req.compiler;
    b.worker_exe = launch.exe;
    b.worker_args = launch.args;
    b.worker_env = pypto_worker_environment();
    b.builds_kernels = false;
    b.device_profiles = launch.device_profiles();
    if (b.device_profiles) b.max_warmup_calls = 3;
    b.clock = launch.time_kind == "simulated" ? "PyPTO cost model (simulated)"
              : launch.device_profiles()      ? "NPU profiler: the call's kernel Duration(us) summed (torch_npu kernel_details.csv)"
                                              : "host wall clock around the call, in the runner";
    b.protocol_compiler = fmt::format("pypto runner ({} mode, {} time, {})", launch.mode, launch.time_kind, launch.exe.string());
    b.facts = {{"name", "pypto"},
               {"mode", launch.mode},
               {"entry", launch.entry},
               {"python", launch.exe.string()},
               {"time_kind", launch.time_kind}};
    return b;
  }
  if (req.name != "cuda") return fail("unknown backend '{}' (known: cpu, cuda, pypto)", req.name);

  std::string nvcc = req.compiler.program.empty() || req.compiler.program == "nvcc" ? build::find_nvcc() : req.compiler.program;
  if (nvcc.empty()) {
    return fail("the cuda backend needs nvcc, found neither on PATH nor in $CUDA_HOME/bin or /usr/local/cuda/bin; "
                "install the CUDA toolkit or set TEMPER_NVCC");
  }
  if (!req.cuda_arch.empty() && build::normalize_cuda_arch(req.cuda_arch).empty()) {
    return fail("--cuda-arch '{}' is not an architecture (e.g. sm_90, 90, 9.0, sm_90a)", req.cuda_arch);
  }
  b.worker_exe = req.worker_exe.empty() ? backend::default_cuda_worker_exe() : req.worker_exe;
  TEMPER_TRY_ASSIGN(backend::CudaDevice device, backend::probe_cuda_device(b.worker_exe, runner));
  if (!device.supported) b.unsupported = device.reason;
  // The architecture: as asked, else the device's own, else Hopper.
  std::string arch = !req.cuda_arch.empty() ? req.cuda_arch : device.supported && !device.arch.empty() ? device.arch : build::kDefaultCudaArch;
  b.compiler = build::cuda_compiler_spec(nvcc, arch, req.compiler.flags);
  b.host_compiler = build::CompilerSpec{};
  b.clock = "cudaEventElapsedTime between events on the worker's stream around the call";
  if (device.l2_bytes > 0) b.flush_bytes = static_cast<size_t>(2 * device.l2_bytes);
  b.facts = {{"name", "cuda"}, {"nvcc", nvcc}, {"arch", b.compiler.cuda_arch}, {"device", device.probe}};
  return b;
}

void attach_static_resources(const KernelBackend& backend, const build::CompileResult& build, CaseResult& result) {
  if (backend.compiler.kind != build::CompilerKind::Cuda || !build.ok) return;
  build::CudaResources res = build::parse_ptxas_resources(build.diagnostics);
  if (!res.empty()) result.resources = res.to_json();
}

} // namespace temper::judge
