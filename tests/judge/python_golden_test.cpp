// Python goldens (judge/python_golden.h, runners/golden/temper_golden_runner.py): which function is
// picked, torch_npu refused, the environment found by its marker, and the official CANN-Bench
// goldens run on the CPU (skipped without ../shared or without the environment scripts/setup.sh
// makes), agreeing with temper's C++ fp64 golden where temper has one.
#include "build/compile_cache.h"
#include "core/inputs.h"
#include "core/task_loader.h"
#include "judge/golden.h"
#include "judge/python_golden.h"
#include "util/fs.h"
#include "util/process.h"

#include <temper/bundle.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace temper::judge::python_golden_test {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kOfficial = kSource / ".." / "shared" / "cann-bench" / "tasks";

// Sets an environment variable for one test's lifetime (each test runs in its own process).
class ScopedEnv {
public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (m_old) ::setenv(m_name, m_old->c_str(), 1);
    else ::unsetenv(m_name);
  }

private:
  const char* m_name;
  std::optional<std::string> m_old;
};

TEST(PythonGolden, PicksTheSchemaFunctionThenTheOperatorName) {
  core::Operator op;
  op.name = "GroupNorm";
  op.schema = "group_norm(Tensor x, Tensor gamma, int num_groups) -> Tensor y";
  EXPECT_EQ(golden_function_names(op), (std::vector<std::string>{"group_norm", "groupnorm"}));
  op.schema = "  gelu (Tensor x) -> Tensor y";
  op.name = "Gelu";
  EXPECT_EQ(golden_function_names(op), (std::vector<std::string>{"gelu"}));
  op.schema = "";
  op.name = "NMS";
  EXPECT_EQ(golden_function_names(op), (std::vector<std::string>{"nms"}));
}

TEST(PythonGolden, RecognisesATorchNpuImport) {
  EXPECT_TRUE(imports_torch_npu("import torch\nimport torch_npu\n"));
  EXPECT_TRUE(imports_torch_npu("try:\n    from torch_npu.contrib import transfer_to_npu\nexcept ImportError:\n    pass\n"));
  EXPECT_FALSE(imports_torch_npu("import torch\n# import torch_npu is not needed\n"));
  EXPECT_FALSE(imports_torch_npu("import torch_npux\nx = 'import torch_npu'\n"));
}

TEST(PythonGolden, FindsTheEnvironmentWhoseMarkerMatchesTheRequirements) {
  util::TempDir dir;
  fs::path req = dir.path() / "requirements.txt";
  std::ofstream(req) << "torch==9.9.9\n";
  ScopedEnv xdg("XDG_CACHE_HOME", (dir.path() / "cache").string());
  ::unsetenv("TEMPER_GOLDEN_PYTHON");
  ::unsetenv("TEMPER_GOLDEN_VENV");
  auto missing = find_golden_python(req);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("scripts/setup.sh"), std::string::npos) << missing.error().message;

  for (const char* name : {"venv-old", "venv-new"}) {
    fs::path venv = dir.path() / "cache" / "temper" / name;
    fs::create_directories(venv / "bin");
    std::ofstream(venv / "bin" / "python") << "";
    std::ofstream(venv / ".temper-requirements") << (std::string(name) == "venv-new" ? "torch==9.9.9\n" : "torch==1.0\n");
  }
  auto found = find_golden_python(req);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->parent_path().parent_path().filename(), "venv-new");

  ScopedEnv explicit_python("TEMPER_GOLDEN_PYTHON", (dir.path() / "nowhere" / "python").string());
  EXPECT_FALSE(find_golden_python(req));
}

// --- the official goldens ------------------------------------------------------------------------

// Skips (with the reason) unless ../shared and the golden environment are here.
#define REQUIRE_OFFICIAL_AND_TORCH()                                                                      \
  do {                                                                                                   \
    if (!fs::exists(kOfficial)) GTEST_SKIP() << "../shared/cann-bench is not present";                  \
    auto py = find_golden_python(golden_runner_script().parent_path() / "requirements.txt");             \
    if (!py) GTEST_SKIP() << "no golden environment: " << py.error().message;                           \
  } while (0)

struct GoldenFixture {
  util::TempDir dir;
  build::CompileCache cache{dir.path() / "compile", build::CompilerSpec{"g++", {"-O1"}}, util::default_process_runner()};
};

const core::Case& smallest_case(const core::Task& task) {
  const core::Case* best = &task.cases.front();
  auto size = [](const core::Case& c) {
    int64_t n = 0;
    for (const auto& s : c.input_shapes) n += core::numel(s);
    return n;
  };
  for (const auto& c : task.cases)
    if (size(c) < size(*best)) best = &c;
  return *best;
}

// A copy of the bundled SwiGLU task without temper.yaml and with `golden_py` as its golden.py.
fs::path task_with_golden_py(const fs::path& root, const std::string& golden_py) {
  fs::path dir = root / "task";
  fs::create_directories(dir);
  for (const char* f : {"proto.yaml", "cases.yaml", "desc.md"}) fs::copy_file(kSource / "tasks" / "swi_glu" / f, dir / f);
  std::ofstream(dir / "golden.py") << golden_py;
  return dir;
}

TEST(PythonGolden, GoldenPyIsTheGoldenWhenTemperYamlNamesNone) {
  util::TempDir root;
  auto task = core::load_task(task_with_golden_py(root.path(), "import torch\n"));
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->config.golden.filename(), "golden.py");
  auto bundled = core::load_task(kSource / "tasks" / "swi_glu");
  ASSERT_TRUE(bundled) << bundled.error().message;
  EXPECT_EQ(bundled->config.golden.filename(), "golden.cpp");
}

TEST(PythonGolden, TorchNpuGoldenIsATaskErrorThatSaysHowToGiveACpuGolden) {
  util::TempDir root;
  auto task = core::load_task(task_with_golden_py(root.path(), "import torch\nimport torch_npu\n\ndef swi_glu(x, dim=-1):\n    return x\n"));
  ASSERT_TRUE(task) << task.error().message;
  GoldenFixture f;
  GoldenRunner golden(*task, f.cache, util::default_process_runner(), f.dir.path() / "golden");
  auto prepared = golden.prepare();
  ASSERT_FALSE(prepared);
  EXPECT_NE(prepared.error().message.find("imports torch_npu"), std::string::npos) << prepared.error().message;
  EXPECT_NE(prepared.error().message.find("temper.yaml"), std::string::npos) << prepared.error().message;
}

class OfficialGolden : public ::testing::TestWithParam<const char*> {};

// The official golden of the task's smallest case runs on the CPU: one process writes the fp64
// golden and the same-precision run (the second is a cache hit), every declared output comes
// back with the dtype the case's precision gives, and the two runs agree as loosely as the
// output's precision allows (a float64 run that went wrong, or inputs bound to the wrong
// parameters, would not).
TEST_P(OfficialGolden, RunsOnTheCpuInBothPrecisions) {
  REQUIRE_OFFICIAL_AND_TORCH();
  auto task = core::load_task(kOfficial / GetParam());
  if (!task) {
    const std::string& why = task.error().message;
    GTEST_SKIP() << GetParam() << " does not load yet (issue 20, item 1): " << why.substr(0, why.find('\n'));
  }
  ASSERT_EQ(task->config.golden.filename(), "golden.py");
  const core::Case& c = smallest_case(*task);
  auto inputs = core::generate_inputs(task->op, c, 20261204, 0);
  bool finite_inputs = true; // CANN-Bench's [nan, nan] and [-inf, inf] cases give no finite outputs
  for (const auto& t : inputs)
    for (int64_t i = 0; i < core::numel(t.spec.shape); ++i) finite_inputs = finite_inputs && std::isfinite(t.at(static_cast<size_t>(i)));

  GoldenFixture f;
  GoldenRunner golden(*task, f.cache, util::default_process_runner(), f.dir.path() / "golden");
  ASSERT_TRUE(golden.prepare()) << golden.prepare().error().message;
  auto gold = golden.outputs(c, inputs, GoldenPrecision::Fp64);
  ASSERT_TRUE(gold) << gold.error().message;
  EXPECT_FALSE(gold->cache_hit);
  auto lowp = golden.outputs(c, inputs, GoldenPrecision::LowPrecision);
  ASSERT_TRUE(lowp) << lowp.error().message;
  EXPECT_TRUE(lowp->cache_hit) << "the runner writes both precisions in one process";

  // Every output is a declared one, or an element NAME[k] of a declared tensor-list output
  // (foreach operators); an optional output the case leaves out is simply missing.
  ASSERT_FALSE(gold->outputs.empty());
  ASSERT_EQ(gold->outputs.size(), lowp->outputs.size());
  for (size_t k = 0; k < gold->outputs.size(); ++k) {
    const GoldenOutput& g = gold->outputs[k];
    const GoldenOutput& l = lowp->outputs[k];
    const std::string declared = g.name.substr(0, g.name.find('['));
    EXPECT_TRUE(std::any_of(task->op.outputs.begin(), task->op.outputs.end(),
                            [&](const core::TensorDecl& d) { return d.name == declared; }))
        << g.name;
    EXPECT_EQ(g.name, l.name);
    EXPECT_EQ(g.dtype, l.dtype);
    ASSERT_EQ(g.values.size(), l.values.size());
    ASSERT_FALSE(g.values.empty()) << g.name;
    size_t finite = 0;
    double err = 0, scale = 0;
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (!std::isfinite(g.values[i]) || !std::isfinite(l.values[i])) continue;
      ++finite;
      err += std::fabs(g.values[i] - l.values[i]);
      scale += std::fabs(g.values[i]);
    }
    if (finite_inputs) {
      EXPECT_GT(finite, 0u) << g.name;
    }
    // Mean absolute difference relative to the mean magnitude: the precision's error, never more
    // than a few percent (bfloat16 has 8 significant bits), and 0 for indices and exact ops.
    if (scale > 0) {
      EXPECT_LT(err / scale, 0.02) << g.name << " in " << core::dtype_name(g.dtype);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tasks, OfficialGolden,
                         ::testing::Values(
                             // load today: elementwise, normalizations, layout, pooling, attention, a matmul chain
                             "level1/gelu", "level1/sigmoid", "level2/rms_norm", "level2/softmax", "level3/mhc_sinkhorn",
                             "level3/transpose", "level3/adaptive_avg_pool_3d", "level4/gqa", "level4/mha", "level4/mla",
                             "level4/mla_prolog",
                             // load once issue 20 item 1 lands: foreach, indices, gather/scatter, conv, grouped matmul
                             "level1/foreach_norm", "level2/arg_max", "level2/cummin", "level2/gather", "level2/scatter",
                             "level3/conv_2d", "level3/grouped_matmul"),
                         [](const ::testing::TestParamInfo<const char*>& task) {
                           std::string name = task.param;
                           for (char& ch : name)
                             if (ch == '/') ch = '_';
                           return name;
                         });

// The judge's golden phase: every input set of a case in one runner process, both precisions
// cached, and a second pass all cache hits.
TEST(PythonGolden, EnsureSetsComputesEverySetInOneProcess) {
  REQUIRE_OFFICIAL_AND_TORCH();
  auto task = core::load_task(kOfficial / "level1" / "gelu");
  ASSERT_TRUE(task) << task.error().message;
  const core::Case& c = smallest_case(*task);
  auto make = [&](int t) { return core::generate_inputs(task->op, c, 99, t); };
  GoldenFixture f;
  GoldenRunner golden(*task, f.cache, util::default_process_runner(), f.dir.path() / "golden");
  ASSERT_TRUE(golden.prepare());
  auto first = golden.ensure_sets(c, 3, make, true);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_EQ(first->size(), 3u);
  for (const auto& g : *first) {
    EXPECT_FALSE(g.cache_hit);
    EXPECT_GT(g.seconds, 0);
  }
  for (int t = 0; t < 3; ++t) {
    for (auto p : {GoldenPrecision::Fp64, GoldenPrecision::LowPrecision}) {
      auto r = golden.outputs(c, make(t), p);
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_TRUE(r->cache_hit) << "set " << t;
    }
  }
  auto second = golden.ensure_sets(c, 3, make, true);
  ASSERT_TRUE(second);
  for (const auto& g : *second) EXPECT_TRUE(g.cache_hit);
}

// Writes a bundle by hand: version 2 with `list` and `absent` lines when `grouped`, else version
// 1 with the list elements only named NAME[k]. Tensors are float32 of the given shapes.
void write_gru_bundle(const fs::path& path, bool grouped) {
  struct T {
    std::string name;
    std::vector<int64_t> shape;
  };
  const std::vector<T> tensors = {{"x", {5, 2, 32}}, {"weight_ih[0]", {48, 32}}, {"weight_hh[0]", {48, 16}},
                                  {"bias_ih[0]", {48}}, {"bias_hh[0]", {48}}};
  std::string header = grouped ? "TEMPER-BUNDLE 2\n" : "TEMPER-BUNDLE 1\n";
  header += "attr inputSize int 32\nattr hiddenSize int 16\n";
  std::string data;
  uint32_t state = 12345;
  for (const auto& t : tensors) {
    if (grouped && t.name != "x") header += "list " + t.name.substr(0, t.name.find('[')) + " 1\n";
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    header += "tensor " + t.name + " float32 " + std::to_string(t.shape.size());
    for (int64_t d : t.shape) header += " " + std::to_string(d);
    header += " " + std::to_string(data.size()) + " " + std::to_string(n * 4) + "\n";
    for (int64_t i = 0; i < n; ++i) {
      state = state * 1664525u + 1013904223u;
      float v = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
      data.append(reinterpret_cast<const char*>(&v), 4);
    }
    data.resize((data.size() + 63) / 64 * 64, '\0');
  }
  if (grouped) header += "absent h0\n";
  header += "end\n";
  header.resize((header.size() + 63) / 64 * 64, '\0');
  std::ofstream(path, std::ios::binary) << header << data;
}

// Tensor lists and absent optional inputs (issue 20, item 1's bundle version 2) reach a golden as
// a list and as the parameter's default: GRU's weights are lists, h0 is absent. The version 1
// spelling (elements named NAME[k], the absent input missing) gives the same bytes.
TEST(PythonGolden, RunnerTakesTensorListsAndAbsentInputs) {
  REQUIRE_OFFICIAL_AND_TORCH();
  auto py = find_golden_python(golden_runner_script().parent_path() / "requirements.txt");
  util::TempDir dir;
  std::vector<std::string> outputs;
  for (bool grouped : {true, false}) {
    fs::path in = dir.path() / "in.bundle";
    write_gru_bundle(in, grouped);
    std::string tag = grouped ? "v2" : "v1";
    util::Command cmd;
    cmd.argv = {py->string(), golden_runner_script().string(), "--golden", (kOfficial / "level4" / "gru" / "golden.py").string(),
                "--function", "gru", "--input-names=x,weight_ih,weight_hh,bias_ih,bias_hh,h0", "--output-names=y,hn",
                in.string(), (dir.path() / (tag + ".fp64")).string(), (dir.path() / (tag + ".lowp")).string()};
    cmd.timeout = std::chrono::seconds(120);
    auto r = util::default_process_runner().run(cmd);
    ASSERT_TRUE(r.ok()) << tag << ": " << r.describe() << "\n" << r.output;
    temper_bundle::Bundle out;
    ASSERT_EQ(temper_bundle::read_bundle((dir.path() / (tag + ".fp64")).string(), out), "");
    ASSERT_EQ(out.tensors.size(), 2u);
    EXPECT_EQ(out.tensors[0].shape, (std::vector<int64_t>{5, 2, 16}));
    EXPECT_EQ(out.tensors[1].shape, (std::vector<int64_t>{1, 2, 16}));
    outputs.push_back(std::string(out.tensors[0].bytes.begin(), out.tensors[0].bytes.end()));
  }
  EXPECT_EQ(outputs[0], outputs[1]);
}

// temper's own GQA task has a C++ fp64 golden; the official golden.py must agree with it to
// float64 rounding on the same inputs.
TEST(PythonGolden, OfficialGqaAgreesWithTempersCppGolden) {
  REQUIRE_OFFICIAL_AND_TORCH();
  auto cpp_task = core::load_task(kSource / "tasks" / "gqa");
  ASSERT_TRUE(cpp_task) << cpp_task.error().message;
  core::Task py_task = *cpp_task;
  py_task.config.golden = kOfficial / "level4" / "gqa" / "golden.py";
  const core::Case& c = smallest_case(*cpp_task);
  auto inputs = core::generate_inputs(cpp_task->op, c, 7, 0);

  GoldenFixture f;
  GoldenRunner cpp(*cpp_task, f.cache, util::default_process_runner(), f.dir.path() / "golden");
  GoldenRunner py(py_task, f.cache, util::default_process_runner(), f.dir.path() / "golden");
  ASSERT_TRUE(cpp.prepare());
  ASSERT_TRUE(py.prepare()) << py.prepare().error().message;
  auto a = cpp.outputs(c, inputs, GoldenPrecision::Fp64);
  auto b = py.outputs(c, inputs, GoldenPrecision::Fp64);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(a->outputs.size(), 1u);
  ASSERT_EQ(b->outputs.size(), 1u);
  EXPECT_EQ(a->outputs[0].dtype, b->outputs[0].dtype);
  ASSERT_EQ(a->outputs[0].values.size(), b->outputs[0].values.size());
  double worst = 0;
  for (size_t i = 0; i < a->outputs[0].values.size(); ++i) {
    double x = a->outputs[0].values[i], y = b->outputs[0].values[i];
    worst = std::max(worst, std::fabs(x - y) / std::max(std::fabs(x), 1e-3));
  }
  EXPECT_LT(worst, 1e-12) << "case " << c.id;
}

} // namespace
} // namespace temper::judge::python_golden_test
