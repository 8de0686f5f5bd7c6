#include "build/cuda_compiler.h"

#include "util/process.h"

#include <cctype>
#include <cstdlib>
#include <unistd.h>

namespace temper::build {

namespace fs = std::filesystem;

std::string find_nvcc() {
  auto executable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (const char* e = std::getenv("TEMPER_NVCC"); e && *e) return executable(e) ? std::string(e) : std::string();
  if (std::string p = util::find_program("nvcc"); !p.empty()) return p;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* d = std::getenv(var); d && *d && executable(fs::path(d) / "bin" / "nvcc")) {
      return (fs::path(d) / "bin" / "nvcc").string();
    }
  }
  if (executable("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return {};
}

fs::path cuda_library_dir(const std::string& nvcc) {
  if (nvcc.empty()) return {};
  std::error_code ec;
  fs::path bin = fs::weakly_canonical(nvcc, ec).parent_path();
  for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}) {
    fs::path d = bin.parent_path() / sub;
    if (fs::is_directory(d, ec)) return d;
  }
  return {};
}

std::string normalize_cuda_arch(const std::string& text) {
  std::string t = text;
  for (const char* prefix : {"sm_", "compute_"}) {
    if (t.rfind(prefix, 0) == 0) t = t.substr(std::char_traits<char>::length(prefix));
  }
  if (auto dot = t.find('.'); dot != std::string::npos) t.erase(dot, 1);
  if (t.empty() || t.size() > 4) return {};
  size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
  if (digits < 2) return {};
  for (size_t k = digits; k < t.size(); ++k) {
    if (t[k] != 'a' && t[k] != 'f') return {}; // sm_90a, sm_100f: architecture-specific features
  }
  return "sm_" + t;
}

CompilerSpec cuda_compiler_spec(std::string nvcc, const std::string& arch, std::vector<std::string> flags) {
  CompilerSpec s;
  s.program = std::move(nvcc);
  s.flags = flags.empty() ? std::vector<std::string>{"-O3"} : std::move(flags);
  s.kind = CompilerKind::Cuda;
  s.cuda_arch = normalize_cuda_arch(arch);
  if (s.cuda_arch.empty()) s.cuda_arch = kDefaultCudaArch;
  return s;
}

std::vector<std::string> nvcc_command(const CompilerSpec& compiler, const CompileRequest& req, const fs::path& output) {
  std::vector<std::string> argv = {compiler.program, "-std=c++20"};
  const auto& opt = req.flags.empty() ? compiler.flags : req.flags;
  argv.insert(argv.end(), opt.begin(), opt.end());
  argv.push_back("-arch=" + (compiler.cuda_arch.empty() ? std::string(kDefaultCudaArch) : compiler.cuda_arch));
  if (req.kind == ArtifactKind::SharedObject) {
    argv.insert(argv.end(), {"-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-cudart", "shared"});
  }
  argv.insert(argv.end(), {"-Xptxas", "-v"});
  argv.push_back("-I" + temper_include_dir().string());
  fs::path dir = req.source.parent_path();
  argv.push_back("-I" + (dir.empty() ? std::string(".") : dir.string()));
  for (const auto& inc : req.include_dirs) argv.push_back("-I" + inc.string());
  for (const auto& [name, value] : req.defines) {
    argv.push_back(value.empty() ? "-D" + name : "-D" + name + "=" + value);
  }
  // CUDA whatever the file is called: a campaign keeps its candidates as candidate.cpp and its
  // accepted kernels as Mi.cpp, which nvcc would otherwise hand to the host compiler alone.
  argv.insert(argv.end(), {"-x", "cu"});
  argv.push_back(req.source.string());
  argv.push_back("-o");
  argv.push_back(output.string());
  return argv;
}

} // namespace temper::build
