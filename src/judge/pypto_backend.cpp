#include "judge/pypto_backend.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace temper::judge {

namespace fs = std::filesystem;

std::string pypto_entry_name(const core::Operator& op) {
  auto paren = op.schema.find('(');
  if (paren != std::string::npos) {
    std::string name = op.schema.substr(0, paren);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    if (!name.empty()) return name;
  }
  std::string out;
  for (size_t i = 0; i < op.name.size(); ++i) {
    unsigned char ch = static_cast<unsigned char>(op.name[i]);
    if (std::isupper(ch) && i > 0) out += '_';
    out += static_cast<char>(std::tolower(ch));
  }
  return out;
}

namespace {

fs::path on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

} // namespace

std::vector<std::string> pypto_worker_environment() {
  static const char* const kNames[] = {"PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
                                       "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
                                       "ASCEND_CUSTOM_OPP_PATH", "TOOLCHAIN_HOME", "TILE_FWK_DEVICE_ID", "ASCEND_RT_VISIBLE_DEVICES"};
  std::vector<std::string> env;
  for (const char* name : kNames) {
    if (const char* v = std::getenv(name); v && *v) env.push_back(fmt::format("{}={}", name, v));
  }
  return env;
}

Expected<RunnerLaunch> pypto_launch(const PyptoOptions& o, const core::Operator& op) {
  if (o.mode != "sim" && o.mode != "npu" && o.mode != "plain") {
    return fail("unknown PyPTO mode '{}' (sim, npu or plain)", o.mode);
  }
  RunnerLaunch l;
  l.mode = o.mode;
  if (o.mode == "sim") {
    if (!o.time.empty()) return fail("--pypto-time applies to npu and plain modes; sim mode's time is the cost model's estimate");
    l.time_kind = "simulated";
  } else if (o.time.empty()) {
    l.time_kind = o.mode == "npu" ? "device" : "host";
  } else if (o.time == "device" || o.time == "host") {
    l.time_kind = o.time;
  } else {
    return fail("unknown PyPTO time '{}' (device or host)", o.time);
  }
  l.entry = o.entry.empty() ? pypto_entry_name(op) : o.entry;
  std::string python = o.python.empty() ? env_or("TEMPER_PYPTO_PYTHON", "python3") : o.python.string();
  l.exe = on_path(python);
  if (l.exe.empty() || ::access(l.exe.c_str(), X_OK) != 0) {
    return fail("the Python interpreter '{}' for the PyPTO runner is not executable; give --pypto-python or set "
                "TEMPER_PYPTO_PYTHON (docs/pypto.md)",
                python);
  }
  fs::path runner = o.runner.empty() ? fs::path(env_or("TEMPER_PYPTO_RUNNER", TEMPER_PYPTO_RUNNER_DEFAULT)) : o.runner;
  std::error_code ec;
  if (!fs::is_regular_file(runner, ec)) {
    return fail("the PyPTO runner {} is missing; give --pypto-runner or set TEMPER_PYPTO_RUNNER", runner.string());
  }
  l.args = {runner.string(), "--entry", l.entry, "--mode", o.mode};
  if (l.time_kind != "simulated") l.args.insert(l.args.end(), {"--time", l.time_kind});
  return l;
}

} // namespace temper::judge
