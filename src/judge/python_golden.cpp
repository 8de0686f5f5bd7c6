#include "judge/python_golden.h"

#include "util/fs.h"
#include "util/hash.h"

#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <sstream>

namespace temper::judge {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::vector<std::string> names_of(const std::vector<core::TensorDecl>& decls) {
  std::vector<std::string> out;
  for (const auto& d : decls) out.push_back(d.name);
  return out;
}

// The environments setup.sh makes live under the user's cache directory, not $TEMPER_CACHE_DIR:
// tests and campaigns point that elsewhere, and the environment is gigabytes to share.
fs::path venv_parent() {
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty()) return fs::path(x) / "temper";
  if (std::string h = env("HOME"); !h.empty()) return fs::path(h) / ".cache" / "temper";
  return {};
}

} // namespace

bool is_python_golden(const fs::path& golden) { return golden.extension() == ".py"; }

std::vector<std::string> golden_function_names(const core::Operator& op) {
  std::vector<std::string> names;
  // The official loader's rule: the identifier before the first '(' of the schema.
  size_t start = op.schema.find_first_not_of(" \t\r\n");
  if (start != std::string::npos) {
    size_t end = start;
    while (end < op.schema.size() && (std::isalnum(static_cast<unsigned char>(op.schema[end])) || op.schema[end] == '_')) ++end;
    size_t paren = op.schema.find_first_not_of(" \t", end);
    if (end > start && paren != std::string::npos && op.schema[paren] == '(') names.push_back(op.schema.substr(start, end - start));
  }
  std::string lower = op.name;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!lower.empty() && (names.empty() || names[0] != lower)) names.push_back(lower);
  return names;
}

bool imports_torch_npu(const std::string& source) {
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos) continue;
    std::string_view rest(line);
    rest.remove_prefix(i);
    for (std::string_view lead : {"import ", "from "}) {
      if (!rest.starts_with(lead)) continue;
      std::string_view mod = rest.substr(lead.size());
      mod.remove_prefix(std::min(mod.find_first_not_of(" \t"), mod.size()));
      if (mod.starts_with("torch_npu") &&
          (mod.size() == 9 || !(std::isalnum(static_cast<unsigned char>(mod[9])) || mod[9] == '_')))
        return true;
    }
  }
  return false;
}

fs::path golden_runner_script() {
  std::string r = env("TEMPER_GOLDEN_RUNNER");
  return r.empty() ? fs::path(TEMPER_GOLDEN_RUNNER_DEFAULT) : fs::path(r);
}

Expected<fs::path> find_golden_python(const fs::path& requirements) {
  std::error_code ec;
  if (std::string p = env("TEMPER_GOLDEN_PYTHON"); !p.empty()) {
    if (!fs::is_regular_file(p, ec)) return fail("TEMPER_GOLDEN_PYTHON names {}, which is not a file", p);
    return fs::path(p);
  }
  if (std::string v = env("TEMPER_GOLDEN_VENV"); !v.empty()) {
    fs::path py = fs::path(v) / "bin" / "python";
    if (!fs::exists(py, ec)) return fail("TEMPER_GOLDEN_VENV names {}, which has no bin/python", v);
    return py;
  }
  TEMPER_TRY_ASSIGN(std::string wanted, util::read_file(requirements));
  fs::path parent = venv_parent();
  if (!parent.empty() && fs::is_directory(parent, ec)) {
    for (const auto& entry : fs::directory_iterator(parent, ec)) {
      if (!entry.path().filename().string().starts_with("venv-")) continue;
      auto marker = util::read_file(entry.path() / ".temper-requirements");
      fs::path py = entry.path() / "bin" / "python";
      if (marker && *marker == wanted && fs::exists(py, ec)) return py;
    }
  }
  return fail("no Python environment for goldens written in Python (golden.py): run scripts/setup.sh, which "
              "installs the pinned PyTorch of {} under {}/venv-*, or set TEMPER_GOLDEN_PYTHON to an interpreter "
              "that has torch",
              requirements.string(), parent.empty() ? std::string("~/.cache/temper") : parent.string());
}

namespace {

// The golden runner, its environment's interpreter and pins: what both of its uses need.
struct RunnerSetup {
  fs::path runner, requirements, python;
  std::string runner_source;
};

Expected<RunnerSetup> runner_setup() {
  RunnerSetup r;
  r.runner = golden_runner_script();
  std::error_code ec;
  if (!fs::is_regular_file(r.runner, ec)) return fail("the golden runner {} is missing; set TEMPER_GOLDEN_RUNNER", r.runner.string());
  r.requirements = r.runner.parent_path() / "requirements.txt";
  TEMPER_TRY_ASSIGN(r.python, find_golden_python(r.requirements));
  TEMPER_TRY_ASSIGN(r.runner_source, util::read_file(r.runner));
  return r;
}

} // namespace

Expected<PythonGolden> prepare_python_golden(const core::Task& task) {
  const fs::path& golden = task.config.golden;
  auto source = util::read_file(golden);
  if (!source) return fail("cannot read the golden {}: {}", golden.string(), source.error().message);
  if (imports_torch_npu(*source)) {
    return fail("the golden {} imports torch_npu, which needs an Ascend NPU, so it cannot run on the CPU. Give the "
                "task a CPU golden in its temper.yaml: `golden: golden.cpp` (a C++ golden, include/temper/golden.h) "
                "or `golden: cpu_golden.py` (the same function written with torch alone)",
                golden.string());
  }
  TEMPER_TRY_ASSIGN(RunnerSetup setup, runner_setup());
  const fs::path& runner = setup.runner;
  const fs::path& requirements = setup.requirements;
  const fs::path& python = setup.python;
  const std::string& runner_source = setup.runner_source;
  std::error_code ec;

  PythonGolden g;
  g.argv = {python.string(), runner.string(), "--golden", fs::absolute(golden, ec).string()};
  for (const auto& name : golden_function_names(task.op)) {
    g.argv.push_back("--function");
    g.argv.push_back(name);
  }
  g.argv.push_back("--input-names=" + join(names_of(task.op.inputs)));
  g.argv.push_back("--output-names=" + join(names_of(task.op.outputs)));
  util::Hasher h;
  h.add("python-golden-v1").add(*source).add(runner_source).add(python.string());
  auto pins = util::read_file(requirements);
  h.add(pins ? *pins : std::string());
  for (size_t k = 4; k < g.argv.size(); ++k) h.add(g.argv[k]); // the flags, not the paths
  g.key = h.hex();
  return g;
}

fs::path torch_function_of(const core::Task& task) {
  if (auto it = task.config.reference.find("torch"); it != task.config.reference.end()) return it->second;
  if (is_python_golden(task.config.golden)) return task.config.golden;
  return {};
}

Expected<TorchReference> prepare_torch_reference(const core::Task& task, int threads) {
  const fs::path source = torch_function_of(task);
  if (source.empty())
    return fail("--reference torch needs the task's PyTorch function: a golden.py, or `reference: {{torch: FILE.py}}` in "
                "temper.yaml (a function named as golden.py's would be)");
  auto text = util::read_file(source);
  if (!text) return fail("cannot read the PyTorch reference {}: {}", source.string(), text.error().message);
  if (imports_torch_npu(*text)) return fail("the PyTorch reference {} imports torch_npu, which needs an Ascend NPU", source.string());
  TEMPER_TRY_ASSIGN(RunnerSetup setup, runner_setup());
  const fs::path& runner = setup.runner;
  const fs::path& requirements = setup.requirements;
  const fs::path& python = setup.python;
  const std::string& runner_source = setup.runner_source;
  std::error_code ec;
  TorchReference r;
  r.source = fs::absolute(source, ec);
  r.argv = {python.string(), runner.string(), "--serve", "--golden", r.source.string()};
  for (const auto& name : golden_function_names(task.op)) {
    r.argv.push_back("--function");
    r.argv.push_back(name);
  }
  r.argv.push_back("--input-names=" + join(names_of(task.op.inputs)));
  r.argv.push_back("--output-names=" + join(names_of(task.op.outputs)));
  r.argv.push_back(fmt::format("--threads={}", std::max(0, threads)));
  util::Hasher h;
  h.add("torch-reference-v1").add(*text).add(runner_source).add(python.string());
  auto pins = util::read_file(requirements);
  h.add(pins ? *pins : std::string());
  for (size_t k = 5; k < r.argv.size(); ++k) h.add(r.argv[k]);
  r.key = h.hex();
  return r;
}

} // namespace temper::judge
