#include "backend/cuda_device.h"

#include <cstdlib>

namespace temper::backend {

namespace fs = std::filesystem;

fs::path default_cuda_worker_exe() {
  if (const char* w = std::getenv("TEMPER_CUDA_WORKER"); w && *w) return w;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path() / "temper-cuda-worker";
}

Expected<CudaDevice> parse_cuda_probe(const std::string& text) {
  // The JSON object is the last line; a driver may print warnings before it.
  auto brace = text.rfind("\n{");
  std::string line = text.substr(brace == std::string::npos ? 0 : brace + 1);
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("supported")) {
    return fail("temper-cuda-worker --probe gave no device report: {}", text);
  }
  CudaDevice d;
  d.probe = j;
  d.supported = j.value("supported", false);
  d.reason = j.value("reason", "");
  d.name = j.value("device", "");
  d.arch = j.value("arch", "");
  d.l2_bytes = j.value("l2_bytes", int64_t{0});
  if (!d.supported && d.reason.empty()) d.reason = "no GPU: the CUDA worker gave no reason";
  return d;
}

Expected<CudaDevice> probe_cuda_device(const fs::path& worker_exe, util::ProcessRunner& runner, const std::vector<std::string>& args) {
  std::error_code ec;
  if (!fs::is_regular_file(worker_exe, ec)) return fail("the CUDA worker {} is missing; rebuild temper", worker_exe.string());
  util::Command cmd;
  cmd.argv = {worker_exe.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.argv.push_back("--probe");
  cmd.timeout = std::chrono::seconds(60); // driver initialization on a cold machine takes seconds
  util::ProcessResult r = runner.run(cmd);
  if (!r.ok()) return fail("{} --probe failed ({}): {}", worker_exe.string(), r.describe(), r.output);
  return parse_cuda_probe(r.output);
}

} // namespace temper::backend
