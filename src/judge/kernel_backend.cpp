#include "judge/kernel_backend.h"

#include "backend/cuda_device.h"
#include "backend/device_content.h"
#include "build/cuda_compiler.h"
#include "build/ptxas_resources.h"
#include "judge/judge.h"
#include "util/fs.h"
#include "util/hash.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace temper::judge {

namespace fs = std::filesystem;

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
  // The runtime of the toolkit that builds the kernels, so the worker and every candidate share
  // it (the worker's fixed PATH may find another toolkit first).
  std::error_code ec;
  if (fs::path lib = build::cuda_library_dir(nvcc); !lib.empty() && fs::exists(lib / "libcudart.so", ec))
    b.worker_args = {"--runtime", (lib / "libcudart.so").string()};
  // $TEMPER_CUDA_DRIVER (docs/cuda.md) chooses the driver library; the worker's fixed
  // environment would drop it, so it goes as an argument.
  if (const char* d = std::getenv("TEMPER_CUDA_DRIVER"); d && *d) b.worker_args.insert(b.worker_args.end(), {"--driver", d});
  TEMPER_TRY_ASSIGN(backend::CudaDevice device, backend::probe_cuda_device(b.worker_exe, runner, b.worker_args));
  // The escape hatch for a driver the sandbox's rules break (docs/cuda.md), passed on as an
  // argument: a worker's environment holds no TEMPER_* variable.
  if (const char* s = std::getenv("TEMPER_CUDA_SANDBOX"); s && std::string(s) == "off") {
    b.worker_args.insert(b.worker_args.end(), {"--sandbox", "off"});
  }
  if (!device.supported) b.unsupported = device.reason;
  b.cuda_device = device;
  // The architecture: as asked, else the device's own, else Hopper.
  std::string arch = !req.cuda_arch.empty() ? req.cuda_arch : device.supported && !device.arch.empty() ? device.arch : build::kDefaultCudaArch;
  b.compiler = build::cuda_compiler_spec(nvcc, arch, req.compiler.flags);
  b.host_compiler = build::CompilerSpec{};
  b.clock = "cudaEventElapsedTime between events on the worker's stream around the call";
  b.max_lives = 3;
  if (device.l2_bytes > 0) b.flush_bytes = static_cast<size_t>(2 * device.l2_bytes);
  b.facts = {{"name", "cuda"}, {"nvcc", nvcc}, {"arch", b.compiler.cuda_arch}, {"device", device.probe}};
  return b;
}

Expected<std::filesystem::path> build_device_content(build::CompileCache& cache) {
  const std::string_view text = backend::device_content::library_source();
  // Named by its content: temper versions with different sources never share the file.
  const std::filesystem::path source =
      cache.root().parent_path() / "device-content" / fmt::format("device_content-{:016x}.cu", util::hash64(text.data(), text.size(), 0));
  std::error_code ec;
  std::filesystem::create_directories(source.parent_path(), ec);
  if (!std::filesystem::exists(source, ec)) TEMPER_TRY(util::write_file_atomic(source, text));
  build::CompileRequest req;
  req.source = source;
  req.label = "device-content library";
  TEMPER_TRY_ASSIGN(build::CompileResult r, cache.compile(req));
  if (!r.ok) return fail("the device-content library does not build with {}:\n{}", cache.compiler().program, r.diagnostics);
  return r.artifact;
}

Status apply_backend_to_timing(const KernelBackend& backend, const TimingOptions& options, bool torch_reference,
                               build::CompileCache& cache, TimingConfig& tc, util::Progress& progress) {
  tc.worker_args = backend.worker_args;
  tc.worker_env = backend.worker_env;
  tc.device_profiles = backend.device_profiles;
  // Both arms take the same cold-cache step. The evict step is temper-worker's; the PyTorch
  // runner, the CUDA worker (its L2) and the PyPTO runner flush with a buffer.
  if (backend.name != "cpu" || torch_reference) {
    if (options.protocol.cold_step == "evict") {
      return fail("--cold-step evict needs both arms in temper-worker (the CPU backend, a C++ reference); use buffer");
    }
    tc.protocol.cold_step = "buffer";
  }
  // CUDA's and PyPTO's runtimes keep threads of their own busy: measured there, not judged.
  tc.judge_work_outside_call = backend.name == "cpu";
  if (backend.max_warmup_calls > 0) tc.protocol.rule.warmup_max_calls = std::min(tc.protocol.rule.warmup_max_calls, backend.max_warmup_calls);
  // The PyTorch arm's lives fork from one server that imported torch once per judgement
  // (backend/forkserver.h), so it gets as many lives as the candidate.
  const int max_lives = backend.max_lives;
  if (max_lives > 0 && tc.protocol.rule.target_lives > max_lives) {
    tc.protocol.rule.target_lives = max_lives;
    tc.protocol.rule.min_lives = std::min(tc.protocol.rule.min_lives, max_lives);
  }
  if (!backend.clock.empty()) tc.protocol.clock = backend.clock;
  if (!backend.protocol_compiler.empty()) {
    // The arms run source in a runner, not builds of the compiler: the protocol names the runner.
    tc.protocol.compiler = backend.protocol_compiler;
    tc.protocol.flags = {};
  }
  if (options.protocol.flush_bytes == 0 && backend.flush_bytes > 0) tc.protocol.flush_bytes = backend.flush_bytes;
  const std::string& maker = options.content_maker;
  if (maker == "device" && backend.name != "cuda") return fail("--content-maker device needs --backend cuda");
  if (backend.name == "cuda" && maker != "host" && !backend.unsupported && tc.protocol.content == "fresh") {
    progress.status("building the device-content library");
    TEMPER_TRY_ASSIGN(tc.device_content, build_device_content(cache));
    tc.protocol.content_maker = "device";
  }
  return {};
}

void attach_static_resources(const KernelBackend& backend, const build::CompileResult& build, CaseResult& result) {
  if (backend.compiler.kind != build::CompilerKind::Cuda || !build.ok) return;
  build::CudaResources res = build::parse_ptxas_resources(build.diagnostics);
  if (!res.empty()) result.resources = res.to_json();
}

} // namespace temper::judge
