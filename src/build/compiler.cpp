#include "build/compiler.h"

#include "build/cuda_compiler.h"

#include "util/hash.h"
#include "util/host.h"
#include "util/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <unistd.h>

namespace temper::build {

Expected<CompilerIdentity> identify_compiler(const std::string& program, util::ProcessRunner& runner) {
  static std::mutex mu;
  static std::map<std::string, CompilerIdentity> known;
  std::lock_guard lock(mu);
  if (auto it = known.find(program); it != known.end()) return it->second;

  std::string path = util::find_program(program);
  if (path.empty()) {
    return fail("compiler '{}' not found on PATH; install it or pass --compiler with a full path", program);
  }
  util::Command cmd;
  cmd.argv = {path, "--version"};
  cmd.timeout = std::chrono::seconds(30);
  util::ProcessResult r = runner.run(cmd);
  if (!r.ok()) return fail("'{} --version' failed ({}): {}", path, r.describe(), r.output);
  CompilerIdentity id;
  id.path = fs::weakly_canonical(path).string();
  id.version = r.output.substr(0, r.output.find('\n'));
  // nvcc's first line names the driver program; its version is on the "release" line.
  if (auto rel = r.output.find("release "); rel != std::string::npos) {
    auto b = r.output.rfind('\n', rel);
    b = b == std::string::npos ? 0 : b + 1;
    id.version = r.output.substr(b, r.output.find('\n', rel) - b);
  }
  util::Hasher h;
  h.add("compiler-identity-v1").add(id.path).add(r.output).add(util::host_info().cpu_signature());
  std::error_code ec;
  auto size = fs::file_size(id.path, ec);
  h.add(static_cast<int64_t>(ec ? 0 : size));
  id.key = h.hex();
  known.emplace(program, id);
  return id;
}

fs::path temper_include_dir() {
  if (const char* d = std::getenv("TEMPER_INCLUDE_DIR"); d && *d) return d;
#ifdef TEMPER_SOURCE_INCLUDE_DIR
  if (fs::exists(fs::path(TEMPER_SOURCE_INCLUDE_DIR) / "temper" / "kernel.h")) return TEMPER_SOURCE_INCLUDE_DIR;
#endif
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "include";
}

std::vector<std::string> compile_command(const CompilerSpec& compiler, const CompileRequest& req,
                                         const fs::path& output) {
  if (compiler.kind == CompilerKind::Cuda) return nvcc_command(compiler, req, output);
  std::vector<std::string> argv = {compiler.program, "-std=c++20"};
  const auto& opt = req.flags.empty() ? compiler.flags : req.flags;
  argv.insert(argv.end(), opt.begin(), opt.end());
  if (req.kind == ArtifactKind::SharedObject) {
    // Hidden by default: a kernel exports only what it marks TEMPER_EXPORT.
    // -z defs: every symbol the kernel uses must resolve against the libraries of the link,
    // so what the artifact imports is decided here, where the boundary checks read it, and
    // never by whatever the loader finds at run time (the reference's exports, say).
    argv.insert(argv.end(), {"-shared", "-fPIC", "-fvisibility=hidden"});
    // Sanitizer runtimes are resolved from the executable, which -z defs cannot see.
    const bool sanitized = std::any_of(opt.begin(), opt.end(), [](const std::string& f) { return f.rfind("-fsanitize", 0) == 0; });
    if (!sanitized) argv.push_back("-Wl,-z,defs");
  }
  argv.push_back("-I" + temper_include_dir().string());
  fs::path dir = req.source.parent_path();
  argv.push_back("-I" + (dir.empty() ? std::string(".") : dir.string()));
  for (const auto& inc : req.include_dirs) argv.push_back("-I" + inc.string());
  for (const auto& [name, value] : req.defines) {
    argv.push_back(value.empty() ? "-D" + name : "-D" + name + "=" + value);
  }
  argv.push_back(req.source.string());
  argv.push_back("-o");
  argv.push_back(output.string());
  if (req.kind == ArtifactKind::Executable) argv.push_back("-lm");
  return argv;
}

bool wants_specialization(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto p = line.find("//");
    if (p == std::string::npos) continue;
    std::string rest = line.substr(p + 2);
    auto b = rest.find_first_not_of(" \t");
    if (b != std::string::npos && rest.compare(b, 18, "temper: specialize") == 0) return true;
  }
  return false;
}

namespace {
} // namespace

std::vector<Define> specialization_defines(const core::Operator& op, const core::Case& c) {
  std::vector<Define> d;
  d.emplace_back("TEMPER_SPECIALIZED", "1");
  d.emplace_back("TEMPER_CASE_ID", std::to_string(c.id));
  d.emplace_back("TEMPER_NUM_INPUTS", std::to_string(c.input_shapes.size()));
  for (size_t i = 0; i < c.input_shapes.size(); ++i) {
    const auto& shape = c.input_shapes[i];
    d.emplace_back(fmt::format("TEMPER_IN{}_RANK", i), std::to_string(shape.size()));
    for (size_t k = 0; k < shape.size(); ++k) {
      d.emplace_back(fmt::format("TEMPER_IN{}_DIM{}", i, k), fmt::format("{}LL", shape[k]));
    }
    if (i < c.dtypes.size()) {
      d.emplace_back(fmt::format("TEMPER_IN{}_DTYPE", i), std::to_string(static_cast<int>(c.dtypes[i])));
    }
  }
  (void)op;
  for (const auto& [name, value] : c.attrs) {
    if (!util::is_identifier(name)) continue;
    switch (value.kind) {
    case core::AttrKind::Int:
    case core::AttrKind::Bool:
      d.emplace_back("TEMPER_ATTR_" + name, fmt::format("{}LL", value.i));
      break;
    case core::AttrKind::Float:
      if (std::isfinite(value.f)) d.emplace_back("TEMPER_ATTR_" + name, fmt::format("((double){:.17g})", value.f));
      break;
    default:
      break; // strings and lists have no macro form
    }
  }
  return d;
}

} // namespace temper::build
