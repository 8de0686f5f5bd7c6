#include "core/task_loader.h"
#include "core/thread_count.h"
#include "util/fs.h"

#include <cmath>
#include <fstream>
#include <gtest/gtest.h>

namespace temper::core::task_loader_test {
namespace {

namespace fs = std::filesystem;

// A toy operator with every attr kind the loader handles and two inputs.
constexpr const char* kProto = R"(operator:
  name: Toy
  category: Elementwise
  difficulty: L1
  formula: y = x * w
  attrs:
  - name: dim
    type: int64
    default: -1
  - name: scale
    type: float
    default: 0.5
  - name: fast
    type: bool
    default: false
  - name: mode
    type: string
    required: true
  - name: pads
    type: list_int
    default: [1, 2]
  inputs:
  - name: x
    dtype: [float16, float32]
  - name: w
    dtype: [float32]
  outputs:
  - name: y
    dtype: [float16, float32]
)";

// One valid case; line 2 is the case, 3 case_id, 4 input_shape, 5 dtype, 6 attrs, 7 range.
constexpr const char* kCase1 = R"(cases:
- operator: Toy
  case_id: 1
  input_shape: [[4, 6], [6]]
  dtype: [float16, float32]
  attrs: {mode: a}
  value_range: [-1, 1]
  note: first
)";

class TaskDirTest : public ::testing::Test {
protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream f(dir() / name, std::ios::binary);
    f << text;
  }
  fs::path dir() const { return m_tmp.path(); }
  std::string file(const std::string& name) const { return (dir() / name).string(); }

  // Writes proto.yaml and the given cases.yaml, then checks.
  std::vector<Diagnostic> check_cases(const std::string& cases_yaml) {
    write("proto.yaml", kProto);
    write("cases.yaml", cases_yaml);
    return check_task(dir());
  }

  static std::string dump(const std::vector<Diagnostic>& ds) {
    std::string s;
    for (const auto& d : ds)
      s += d.to_string() + "\n";
    return s;
  }

  // Exactly one diagnostic, at `name`:`line`, containing `text`.
  void expect_one(const std::vector<Diagnostic>& ds,
                  const std::string& name,
                  int line,
                  const std::string& text) {
    ASSERT_EQ(ds.size(), 1u) << dump(ds);
    EXPECT_EQ(ds[0].file, file(name)) << dump(ds);
    EXPECT_EQ(ds[0].line, line) << dump(ds);
    EXPECT_NE(ds[0].message.find(text), std::string::npos) << "wanted '" << text << "' in\n"
                                                           << dump(ds);
  }

  // Some diagnostic at `name`:`line` contains `text`.
  void expect_has(const std::vector<Diagnostic>& ds,
                  const std::string& name,
                  int line,
                  const std::string& text) {
    for (const auto& d : ds)
      if (d.file == file(name) && d.line == line && d.message.find(text) != std::string::npos)
        return;
    ADD_FAILURE() << "no diagnostic " << name << ":" << line << " with '" << text << "' in\n"
                  << dump(ds);
  }

  util::TempDir m_tmp{"temper-task-test"};
};

TEST_F(TaskDirTest, ValidTaskLoadsWithDefaultsInProtoOrder) {
  write("proto.yaml", kProto);
  write("cases.yaml", R"(cases:
- operator: Toy
  case_id: 3
  input_shape: [[4, 6], [6]]
  dtype: [float32, float32]
  attrs: {mode: fast, scale: 2, fast: true}
  value_range: [-.inf, .inf]
- case_id: 4
  input_shape:
  - [2, 3, 4]
  - [4]
  dtype: [float16, float32]
  attrs:
    mode: "x"
  value_range: [.nan, .nan]
)");
  EXPECT_TRUE(check_task(dir()).empty()) << dump(check_task(dir()));
  auto task = load_task(dir());
  ASSERT_TRUE(task.has_value()) << task.error().message;
  EXPECT_EQ(task->op.name, "Toy");
  EXPECT_EQ(task->cases_file, "cases.yaml");
  ASSERT_EQ(task->cases.size(), 2u);

  const Case& a = task->cases[0];
  EXPECT_EQ(a.id, 3);
  EXPECT_EQ(a.where.line, 2);
  ASSERT_EQ(a.attrs.size(), 5u);
  std::vector<std::string> order;
  for (const auto& [n, v] : a.attrs)
    order.push_back(n);
  EXPECT_EQ(order, (std::vector<std::string>{"dim", "scale", "fast", "mode", "pads"}));
  EXPECT_EQ(a.attr("dim")->i, -1);    // default
  EXPECT_EQ(a.attr("scale")->f, 2.0); // an integer literal for a float attr
  EXPECT_EQ(a.attr("fast")->i, 1);
  EXPECT_EQ(a.attr("mode")->s, "fast");
  EXPECT_EQ(a.attr("pads")->ints, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(std::isinf(a.ranges[0].lo) && a.ranges[0].lo < 0);
  EXPECT_TRUE(std::isinf(a.ranges[0].hi) && a.ranges[0].hi > 0);

  const Case& b = task->cases[1];
  EXPECT_EQ(b.input_shapes, (std::vector<Shape>{{2, 3, 4}, {4}}));
  EXPECT_EQ(b.dtypes, (std::vector<Dtype>{Dtype::F16, Dtype::F32}));
  EXPECT_TRUE(std::isnan(b.ranges[0].lo) && std::isnan(b.ranges[0].hi));
  auto specs = b.input_specs(task->op);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "x");
  EXPECT_EQ(specs[1].name, "w");
  EXPECT_EQ(specs[0].bytes(), 2u * 3 * 4 * 2);

  EXPECT_EQ(task->find_case(4), &task->cases[1]);
  EXPECT_EQ(task->find_case(5), nullptr);
  // A plain CANN-Bench task: no temper.yaml, defaults apply, no golden.
  EXPECT_FALSE(task->config.present);
  EXPECT_TRUE(task->config.golden.empty());
  EXPECT_EQ(task->config.tolerance.standard, "cann-bench");
  EXPECT_EQ(task->config.threads, 1);
  EXPECT_EQ(task->config.trials, 3);

  auto j = b.to_json();
  EXPECT_EQ(j["value_range"], nlohmann::json::array({"nan", "nan"}));
  EXPECT_EQ(j["attrs"]["scale"], 0.5);
  EXPECT_EQ(j["dtype"], nlohmann::json::array({"float16", "float32"}));
  EXPECT_EQ(task->to_json()["schema_version"], 1);
}

TEST_F(TaskDirTest, NotATaskDirectory) {
  auto ds = check_task(dir());
  expect_one(ds, "proto.yaml", 0, "proto.yaml is missing");
  auto ds2 = check_task(dir() / "nope");
  ASSERT_EQ(ds2.size(), 1u);
  EXPECT_NE(ds2[0].message.find("not a directory"), std::string::npos);
  EXPECT_FALSE(load_task(dir()).has_value());
}

TEST_F(TaskDirTest, NoCasesFile) {
  write("proto.yaml", kProto);
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].file, dir().string());
  EXPECT_NE(ds[0].message.find("neither cases.yaml nor cases.csv"), std::string::npos);
}

TEST_F(TaskDirTest, YamlSyntaxError) {
  expect_one(check_cases("cases:\n- case_id: 1\n  input_shape: [[4, 6], [6]\n  dtype: [float16]\n"),
             "cases.yaml", 4, "YAML syntax error");
}

TEST_F(TaskDirTest, MissingRequiredField) {
  expect_one(
      check_cases("cases:\n- case_id: 1\n  input_shape: [[4, 6], [6]]\n  attrs: {mode: a}\n"),
      "cases.yaml", 2, "case 1: missing 'dtype'");
}

TEST_F(TaskDirTest, UnknownCaseField) {
  std::string yaml = kCase1;
  yaml += "  colour: red\n";
  expect_one(check_cases(yaml), "cases.yaml", 9, "unknown key 'colour' in case");
}

TEST_F(TaskDirTest, UnknownTopLevelKeyInCases) {
  std::string yaml = kCase1;
  yaml += "extra: 1\n";
  expect_one(check_cases(yaml), "cases.yaml", 9, "unknown key 'extra' in cases.yaml");
}

TEST_F(TaskDirTest, DuplicateKeys) {
  write("temper.yaml", "schema_version: 1\nthreads: 2\nthreads: 3\n");
  auto ds =
      check_cases("cases:\n- case_id: 1\n  input_shape: [[4], [4]]\n  dtype: [float16, float32]\n"
                  "  attrs: {mode: a, mode: b}\n  case_id: 2\n");
  ASSERT_EQ(ds.size(), 3u) << dump(ds);
  expect_has(ds, "cases.yaml", 5, "duplicate key 'mode' (first at line 5)");
  expect_has(ds, "cases.yaml", 6, "duplicate key 'case_id' (first at line 2)");
  expect_has(ds, "temper.yaml", 3, "duplicate key 'threads' (first at line 2)");
}

TEST_F(TaskDirTest, EmptyCaseList) {
  expect_one(check_cases("cases: []\n"), "cases.yaml", 1, "no cases");
}

TEST_F(TaskDirTest, UnknownDtype) {
  expect_one(check_cases("cases:\n- case_id: 1\n  input_shape: [[4], [4]]\n  dtype: [float8, "
                         "float32]\n  attrs: {mode: a}\n"),
             "cases.yaml", 4, "unknown dtype 'float8' for input 'x'");
}

TEST_F(TaskDirTest, DtypeNotAllowedByTheOperator) {
  expect_one(check_cases("cases:\n- case_id: 1\n  input_shape: [[4], [4]]\n  dtype: [float16, "
                         "bfloat16]\n  attrs: {mode: a}\n"),
             "cases.yaml", 4, "dtype bfloat16 is not allowed for input 'w' (allowed: float32)");
}

TEST_F(TaskDirTest, WrongNumberOfShapesOrDtypes) {
  auto ds = check_cases("cases:\n- case_id: 1\n  input_shape: [[4]]\n  dtype: [float16, float32, "
                        "float32]\n  attrs: {mode: a}\n");
  ASSERT_EQ(ds.size(), 2u) << dump(ds);
  // Fewer shapes than inputs leave the rest out, which only optional inputs may be.
  expect_has(ds, "cases.yaml", 3, "input 'w' has no shape, but the operator does not declare it optional");
  expect_has(ds, "cases.yaml", 4, "dtype has 3 entries but the operator has 2 inputs");
}

TEST_F(TaskDirTest, RankAndDimensionLimits) {
  auto ds = check_cases(R"(cases:
- case_id: 1
  input_shape: [[], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
- case_id: 2
  input_shape: [[1, 1, 1, 1, 1, 1, 1, 1, 1], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
- case_id: 3
  input_shape: [[4, 0], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
- case_id: 4
  input_shape: [[4, -2], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
- case_id: 5
  input_shape: [[4, 2.5], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
)");
  ASSERT_EQ(ds.size(), 5u) << dump(ds);
  expect_has(ds, "cases.yaml", 3,
             "case 1: shape of input 'x' has rank 0; temper supports ranks 1 to 8");
  expect_has(ds, "cases.yaml", 7, "case 2: shape of input 'x' has rank 9");
  expect_has(ds, "cases.yaml", 11, "case 3: shape of input 'x' has a dimension below 1: [4, 0]");
  expect_has(ds, "cases.yaml", 15, "case 4: shape of input 'x' has a dimension below 1: [4, -2]");
  expect_has(ds, "cases.yaml", 19, "case 5: shape of input 'x' must be a list of integers");
}

TEST_F(TaskDirTest, AttrProblems) {
  auto ds = check_cases(R"(cases:
- case_id: 1
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs:
    mode: a
    axis: 2
- case_id: 2
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs:
    mode: a
    dim: 1.5
    fast: 1
    pads: [1, x]
- case_id: 3
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {dim: 1}
- case_id: 4
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {mode: 3, scale: "0.5"}
)");
  // scale: "0.5" is a number written as text, which the official files do: not a problem.
  ASSERT_EQ(ds.size(), 6u) << dump(ds);
  expect_has(ds, "cases.yaml", 7,
             "case 1: unknown attr 'axis' (the operator declares: dim, scale, fast, mode, pads)");
  expect_has(ds, "cases.yaml", 13, "case 2: attr 'dim' must be int, got 1.5");
  expect_has(ds, "cases.yaml", 14, "case 2: attr 'fast' must be bool, got 1");
  expect_has(ds, "cases.yaml", 15, "case 2: attr 'pads' must be ints");
  expect_has(ds, "cases.yaml", 19, "case 3: missing required attr 'mode'");
  expect_has(ds, "cases.yaml", 23, "case 4: attr 'mode' must be string, got 3");
}

TEST_F(TaskDirTest, DuplicateCaseIds) {
  std::string yaml = kCase1;
  yaml +=
      "- case_id: 1\n  input_shape: [[4], [4]]\n  dtype: [float16, float32]\n  attrs: {mode: a}\n";
  expect_one(check_cases(yaml), "cases.yaml", 9, "duplicate case_id 1 (first at line 2)");
}

TEST_F(TaskDirTest, BadValueRanges) {
  auto ds = check_cases(R"(cases:
- case_id: 1
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
  value_range: [1, -1]
- case_id: 2
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
  value_range: [1, 2, 3]
- case_id: 3
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
  value_range: [low, 2]
- case_id: 4
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
  value_range: [.nan, 2]
)");
  ASSERT_EQ(ds.size(), 4u) << dump(ds);
  expect_has(ds, "cases.yaml", 6, "case 1: value_range has lo > hi: [1,-1]");
  expect_has(ds, "cases.yaml", 11, "case 2: value_range must be two numbers");
  expect_has(ds, "cases.yaml", 16, "case 3: value_range must be two numbers");
  expect_has(ds, "cases.yaml", 21, "case 4: value_range mixes NaN with a number");
}

TEST_F(TaskDirTest, OperatorNameMismatchAndBadCaseId) {
  auto ds = check_cases(R"(cases:
- operator: Other
  case_id: 1
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
- case_id: one
  input_shape: [[4], [4]]
  dtype: [float16, float32]
  attrs: {mode: a}
)");
  ASSERT_EQ(ds.size(), 2u) << dump(ds);
  expect_has(ds, "cases.yaml", 2, "case 1: operator is 'Other' but proto.yaml defines 'Toy'");
  expect_has(ds, "cases.yaml", 7, "case_id must be an integer, got \"one\"");
}

TEST_F(TaskDirTest, ProtoProblems) {
  write("proto.yaml", R"(operator:
  name: Toy
  colour: red
  attrs:
  - name: dim
    type: matrix
  - name: k
    type: int
    default: 1.5
  inputs:
  - name: x
    dtype: [float16, float7]
  outputs:
  - name: y
    dtype: [float16]
)");
  write("cases.yaml", "cases:\n- case_id: 1\n  input_shape: [[4]]\n  dtype: [float16]\n");
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 4u) << dump(ds);
  expect_has(ds, "proto.yaml", 3, "unknown key 'colour' in operator");
  expect_has(ds, "proto.yaml", 6, "unknown type 'matrix' of attr 'dim'");
  expect_has(ds, "proto.yaml", 9, "default of attr 'k' is not of type int");
  expect_has(ds, "proto.yaml", 12, "unknown dtype 'float7' in input 'x'");
}

TEST_F(TaskDirTest, ProtoWithoutInputsStopsEarly) {
  write("proto.yaml", "operator:\n  name: Toy\n  outputs:\n  - name: y\n    dtype: [float16]\n");
  write("cases.yaml", kCase1);
  expect_one(check_task(dir()), "proto.yaml", 2, "operator has no 'inputs' list");
}

TEST_F(TaskDirTest, ProtoSyntaxError) {
  write("proto.yaml", "operator:\n  name: [Toy\n");
  write("cases.yaml", kCase1);
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].file, file("proto.yaml"));
  EXPECT_NE(ds[0].message.find("YAML syntax error"), std::string::npos);
}

// --- cases.csv -----------------------------------------------------------------------------

constexpr const char* kCsvHeader = "operator,case_id,input_shape,dtype,attrs,value_range,note\n";

TEST_F(TaskDirTest, CsvOnlyTaskLoads) {
  write("proto.yaml", kProto);
  write("cases.csv",
        std::string(kCsvHeader) +
            "Toy,1,\"[[4, 6], [6]]\",\"[\"\"float16\"\", \"\"float32\"\"]\",\"{\"\"mode\"\": "
            "\"\"a\"\", "
            "\"\"dim\"\": 0}\",\"[\"\"-inf\"\", \"\"inf\"\"]\",\"note, with comma\"\r\n"
            "Toy,2,\"[[8], [8]]\",\"[\"\"float32\"\", \"\"float32\"\"]\",\"{\"\"mode\"\": "
            "\"\"b\"\"}\",,\r\n");
  auto task = load_task(dir());
  ASSERT_TRUE(task.has_value()) << task.error().message;
  EXPECT_EQ(task->cases_file, "cases.csv");
  ASSERT_EQ(task->cases.size(), 2u);
  EXPECT_EQ(task->cases[0].attr("dim")->i, 0);
  EXPECT_EQ(task->cases[0].attr("scale")->f, 0.5);
  EXPECT_EQ(task->cases[0].note, "note, with comma");
  EXPECT_TRUE(std::isinf(task->cases[0].ranges[0].lo));
  EXPECT_EQ(task->cases[1].where.line, 3);
  EXPECT_EQ(task->cases[1].ranges[0].lo, -1); // no value_range: the default
}

TEST_F(TaskDirTest, CsvSyntaxError) {
  write("proto.yaml", kProto);
  write("cases.csv", std::string(kCsvHeader) + "Toy,1,[[4]],x\"y,{},,\n");
  expect_one(check_task(dir()), "cases.csv", 2, "malformed CSV");
}

TEST_F(TaskDirTest, CsvHeaderAndRowProblems) {
  write("proto.yaml", kProto);
  write("cases.csv", "case_id,shape,dtype\n");
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 2u) << dump(ds);
  expect_has(ds, "cases.csv", 1, "unknown column 'shape'");
  expect_has(ds, "cases.csv", 1, "missing column 'input_shape'");

  write("cases.csv", std::string(kCsvHeader) +
                         "Toy,1,\"[[4], [4]]\",\"[\"\"float16\"\", "
                         "\"\"float32\"\"]\",\"{\"\"mode\"\": \"\"a\"\"}\"\n"
                         "Toy,2,\"[[4], [4]\",\"[\"\"float16\"\", "
                         "\"\"float32\"\"]\",\"{\"\"mode\"\": \"\"a\"\"}\",,\n"
                         "Toy,x,\"[[4], [4]]\",\"[\"\"float16\"\", "
                         "\"\"float32\"\"]\",\"{\"\"mode\"\": \"\"a\"\"}\",,\n");
  ds = check_task(dir());
  ASSERT_EQ(ds.size(), 3u) << dump(ds);
  expect_has(ds, "cases.csv", 2, "row has 5 fields but the header has 7");
  expect_has(ds, "cases.csv", 3, "input_shape is not valid JSON: [[4], [4]");
  expect_has(ds, "cases.csv", 4, "case_id must be an integer, got \"x\"");
}

TEST_F(TaskDirTest, CsvDisagreeingWithYamlIsReported) {
  write("proto.yaml", kProto);
  write("cases.yaml", std::string(kCase1) + "- case_id: 2\n  input_shape: [[4], [4]]\n  dtype: "
                                            "[float16, float32]\n  attrs: {mode: a}\n");
  write("cases.csv", std::string(kCsvHeader) +
                         "Toy,1,\"[[4, 7], [6]]\",\"[\"\"float16\"\", "
                         "\"\"float32\"\"]\",\"{\"\"mode\"\": \"\"a\"\"}\","
                         "\"[-1, 1]\",first\n"
                         "Toy,3,\"[[4], [4]]\",\"[\"\"float16\"\", "
                         "\"\"float32\"\"]\",\"{\"\"mode\"\": \"\"a\"\"}\",,\n");
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 3u) << dump(ds);
  expect_has(ds, "cases.csv", 2,
             "case 1: input_shape is [[4,7],[6]] here but [[4,6],[6]] in cases.yaml:2");
  expect_has(ds, "cases.csv", 0, "case 2 of cases.yaml:9 is missing here");
  expect_has(ds, "cases.csv", 3, "case 3 is not in cases.yaml");
  // Loading uses cases.yaml and does not compare.
  EXPECT_TRUE(load_task(dir()).has_value());
}

// --- temper.yaml ---------------------------------------------------------------------------

TEST_F(TaskDirTest, FullTemperYamlIsRead) {
  write("proto.yaml", kProto);
  write("cases.yaml", kCase1);
  write("golden.cpp", "// golden\n");
  write("reference.cpp", "// reference\n");
  write("temper.yaml", R"(schema_version: 1
golden: golden.cpp
reference:
  cpu: reference.cpp
tolerance:
  standard: flashinfer-bench
  atol: 1e-3
  rtol: 0.01
  outputs:
    y: {standard: flashattention, factor: 3}
threads: 4
trials: 5
in_place: true
allowed_libraries: [libm.so.6]
timing: {min_samples: 20, note: fast}
constraints:
  - check: "in0.shape[attr.dim] % 2 == 0"
    message: "the split dimension must have an even size"
cost:
  bytes: "in0.bytes * 3 / 2"
  flops: "in0.numel * 4"
)");
  auto task = load_task(dir());
  ASSERT_TRUE(task.has_value()) << task.error().message;
  const TemperConfig& c = task->config;
  EXPECT_TRUE(c.present);
  EXPECT_EQ(c.golden, dir() / "golden.cpp");
  EXPECT_EQ(c.reference.at("cpu"), dir() / "reference.cpp");
  EXPECT_EQ(c.tolerance.standard, "flashinfer-bench");
  EXPECT_EQ(c.tolerance.atol, 1e-3);
  EXPECT_EQ(c.tolerance.rtol, 0.01);
  EXPECT_EQ(task->tolerance_for("y").standard, "flashattention");
  EXPECT_EQ(task->tolerance_for("y").factor, 3.0);
  EXPECT_FALSE(task->tolerance_for("y").atol.has_value()); // a new standard starts afresh
  EXPECT_EQ(task->tolerance_for("other").standard, "flashinfer-bench");
  EXPECT_EQ(c.threads, 4);
  EXPECT_EQ(c.trials, 5);
  EXPECT_TRUE(c.in_place);
  EXPECT_EQ(c.allowed_libraries, (std::vector<std::string>{"libm.so.6"}));
  EXPECT_EQ(c.timing, (nlohmann::json{{"min_samples", 20}, {"note", "fast"}}));
  ASSERT_EQ(c.constraints.size(), 1u);
  EXPECT_EQ(c.constraints[0].message, "the split dimension must have an even size");
  EXPECT_EQ(c.constraints[0].where.line, 17);
  ASSERT_TRUE(c.cost.has_value());
  EXPECT_EQ(c.cost->bytes, "in0.bytes * 3 / 2");
  auto bytes = parse_expr(c.cost->bytes)->eval(make_case_scope(task->op, task->cases[0]));
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(*bytes, 4 * 6 * 2 * 3 / 2);
}

TEST_F(TaskDirTest, PerOutputNumbersRefineTheTaskSpec) {
  write("proto.yaml", kProto);
  write("cases.yaml", kCase1);
  write("temper.yaml",
        "schema_version: 1\ntolerance:\n  standard: flashinfer-bench\n  atol: 0.1\n  outputs:\n"
        "    y: {rtol: 0.2}\n");
  auto task = load_task(dir());
  ASSERT_TRUE(task.has_value()) << task.error().message;
  EXPECT_EQ(task->tolerance_for("y").standard, "flashinfer-bench");
  EXPECT_EQ(task->tolerance_for("y").atol, 0.1);
  EXPECT_EQ(task->tolerance_for("y").rtol, 0.2);
}

TEST_F(TaskDirTest, TemperYamlProblems) {
  write("proto.yaml", kProto);
  write("cases.yaml", kCase1);
  write("temper.yaml", R"(schema_version: 1
golden: missing_golden.cpp
reference:
  cpu: missing_ref.cpp
  tpu: x.cpp
tolerance:
  standard: close-enough
  outputs:
    z: {standard: exact}
threads: 0
trials: 2
in_place: maybe
colour: blue
)");
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 9u) << dump(ds);
  expect_has(ds, "temper.yaml", 2, "golden file 'missing_golden.cpp' not found");
  expect_has(ds, "temper.yaml", 4, "reference.cpu file 'missing_ref.cpp' not found");
  expect_has(ds, "temper.yaml", 5, "unknown backend 'tpu'");
  expect_has(ds, "temper.yaml", 7, "unknown tolerance standard 'close-enough'");
  expect_has(ds, "temper.yaml", 9,
             "tolerance.outputs names 'z', which is not an output (outputs: y)");
  expect_has(ds, "temper.yaml", 10, "threads must be 1 to 4096 or 'all' (every CPU this process may use), got '0'");
  expect_has(ds, "temper.yaml", 11, "trials must be 3 to 1000, got 2");
  expect_has(ds, "temper.yaml", 12, "in_place must be true or false");
  expect_has(ds, "temper.yaml", 13, "unknown key 'colour' in temper.yaml");
}

TEST_F(TaskDirTest, ThreadsAllIsEveryCpuThisProcessMayUse) {
  write("proto.yaml", kProto);
  write("cases.yaml", kCase1);
  write("temper.yaml", "schema_version: 1\nthreads: all\n");
  auto task = load_task(dir());
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->config.threads, usable_cpus());
  EXPECT_TRUE(task->config.threads_all);
  EXPECT_EQ(task->config.to_json().value("threads_requested", ""), "all");
  write("temper.yaml", "schema_version: 1\nthreads: some\n");
  expect_one(check_task(dir()), "temper.yaml", 2, "threads must be 1 to 4096 or 'all'");
}

TEST_F(TaskDirTest, ExecutorSaysWhereCampaignsSendTheirJudgeRuns) {
  write("proto.yaml", kProto);
  write("cases.yaml", kCase1);
  write("temper.yaml", "schema_version: 1\nexecutor:\n  kind: slurm\n  partition: cpu\n  constraint: zen5\n  max_jobs: 8\n");
  auto task = load_task(dir());
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->config.executor, nlohmann::json({{"kind", "slurm"}, {"partition", "cpu"}, {"constraint", "zen5"}, {"max_jobs", 8}}));
  write("temper.yaml", "schema_version: 1\nexecutor:\n  kind: pbs\n");
  expect_one(check_task(dir()), "temper.yaml", 3, "executor.kind must be local or slurm");
  write("temper.yaml", "schema_version: 1\nexecutor:\n  kind: slurm\n  max_jobs: 0\n");
  expect_one(check_task(dir()), "temper.yaml", 4, "executor.max_jobs must be 1 to 1000");
  write("temper.yaml", "schema_version: 1\nexecutor:\n  kind: slurm\n  queue: fast\n");
  expect_one(check_task(dir()), "temper.yaml", 4, "queue");
}

TEST(ThreadCount, ParsesCountsAndAllAndNamesWhatIsAccepted) {
  EXPECT_EQ(parse_thread_count("3").value(), 3);
  EXPECT_EQ(parse_thread_count("all").value(), usable_cpus());
  EXPECT_GE(usable_cpus(), 1);
  for (const char* bad : {"0", "-1", "4097", "2x", "", "ALL"}) {
    auto r = parse_thread_count(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("'all'"), std::string::npos);
  }
}

TEST_F(TaskDirTest, TemperYamlSchemaVersion) {
  write("proto.yaml", kProto);
  write("cases.yaml", kCase1);
  write("temper.yaml", "threads: 2\n");
  expect_one(check_task(dir()), "temper.yaml", 1, "temper.yaml has no schema_version");
  write("temper.yaml", "schema_version: 2\n");
  expect_one(check_task(dir()), "temper.yaml", 1, "unsupported schema_version 2");
  write("temper.yaml", "schema_version: 1\ntolerance: {standard: exact, atol: -1}\n");
  expect_one(check_task(dir()), "temper.yaml", 2, "atol must be a non-negative number");
}

TEST_F(TaskDirTest, ConstraintsAreEvaluatedPerCase) {
  write("proto.yaml", kProto);
  write("cases.yaml", R"(cases:
- case_id: 1
  input_shape: [[4, 6], [6]]
  dtype: [float16, float32]
  attrs: {mode: a}
- case_id: 2
  input_shape: [[4, 7], [7]]
  dtype: [float16, float32]
  attrs: {mode: a}
- case_id: 3
  input_shape: [[4, 6], [5]]
  dtype: [float16, float32]
  attrs: {mode: a, dim: 5}
)");
  write("temper.yaml", R"(schema_version: 1
constraints:
  - check: "x.shape[attr.dim] % 2 == 0"
    message: "the split dimension must have an even size"
  - check: "w.shape[0] == x.shape[-1]"
  - check: "in0.shape[0] +"
  - check: "in2.rank == 1 && bogus > 0"
)");
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 5u) << dump(ds);
  expect_has(ds, "temper.yaml", 6, "constraint 'in0.shape[0] +' does not parse: column 15:");
  expect_has(ds, "temper.yaml", 7, "reads unknown variable 'bogus', 'in2.rank'");
  expect_has(ds, "cases.yaml", 6, "case 2: the split dimension must have an even size");
  expect_has(ds, "cases.yaml", 10,
             "case 3: constraint 'x.shape[attr.dim] % 2 == 0' (temper.yaml:3) cannot be "
             "evaluated: index 5 out of range for x.shape (size 2)");
  expect_has(ds, "cases.yaml", 10, "case 3: constraint failed: w.shape[0] == x.shape[-1]");
  auto loaded = load_task(dir());
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.error().message.find("cases.yaml:6: case 2: the split dimension"),
            std::string::npos)
      << loaded.error().message;
}

TEST_F(TaskDirTest, CostModelProblems) {
  write("proto.yaml", kProto);
  write("cases.yaml", kCase1);
  write("temper.yaml", "schema_version: 1\ncost:\n  bytes: \"in0.bytes *\"\n  flops: \"in0.numel / "
                       "(attr.dim + 1)\"\n");
  auto ds = check_task(dir());
  ASSERT_EQ(ds.size(), 2u) << dump(ds);
  expect_has(ds, "temper.yaml", 3, "cost.bytes 'in0.bytes *' does not parse");
  expect_has(ds, "cases.yaml", 2, "case 1: cost.flops cannot be evaluated: division by zero");
}

// --- the real CANN-Bench tasks -------------------------------------------------------------

fs::path cann_bench_tasks() {
  return fs::path(TEMPER_SOURCE_DIR "/../shared/cann-bench/tasks");
}

class CannBenchTasks : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fs::is_directory(cann_bench_tasks()))
      GTEST_SKIP() << "CANN-Bench tasks not found at " << cann_bench_tasks().string();
  }
  static Task load(const std::string& rel) {
    auto t = load_task(cann_bench_tasks() / rel);
    EXPECT_TRUE(t.has_value()) << rel << ": " << (t ? "" : t.error().message);
    return t ? std::move(*t) : Task{};
  }
};

TEST_F(CannBenchTasks, AllFiveTasksCheckCleanlyAndCsvAgreesWithYaml) {
  for (const char* rel :
       {"level1/swi_glu", "level1/exp", "level2/rms_norm", "level2/softmax", "level4/gqa"}) {
    auto ds = check_task(cann_bench_tasks() / rel);
    std::string all;
    for (const auto& d : ds)
      all += d.to_string() + "\n";
    EXPECT_TRUE(ds.empty()) << rel << ":\n" << all;
  }
}

TEST_F(CannBenchTasks, SwiGlu) {
  Task t = load("level1/swi_glu");
  EXPECT_EQ(t.op.name, "SwiGlu");
  EXPECT_EQ(t.op.category, "Elementwise");
  ASSERT_EQ(t.op.attrs.size(), 1u);
  EXPECT_EQ(t.op.attrs[0].kind, AttrKind::Int); // spelled int64
  EXPECT_EQ(t.op.inputs[0].dtypes, (std::vector<Dtype>{Dtype::F16, Dtype::F32, Dtype::BF16}));
  ASSERT_EQ(t.cases.size(), 20u);
  const Case* c4 = t.find_case(4);
  ASSERT_NE(c4, nullptr);
  EXPECT_EQ(c4->input_shapes, (std::vector<Shape>{{8192, 16384}}));
  EXPECT_EQ(c4->dtypes, (std::vector<Dtype>{Dtype::F16}));
  EXPECT_EQ(c4->attr("dim")->i, 0);
  EXPECT_EQ(c4->ranges[0].lo, -10);
  const Case* c12 = t.find_case(12);
  EXPECT_TRUE(std::isinf(c12->ranges[0].lo) && std::isinf(c12->ranges[0].hi) && c12->ranges[0].lo < 0);
  const Case* c13 = t.find_case(13);
  EXPECT_TRUE(std::isnan(c13->ranges[0].lo) && std::isnan(c13->ranges[0].hi));
  EXPECT_EQ(c13->input_shapes[0], (Shape{11, 13, 16, 67}));
  EXPECT_FALSE(t.config.present);
  EXPECT_EQ(t.config.tolerance.standard, "cann-bench");
}

TEST_F(CannBenchTasks, ExpFloatAttrs) {
  Task t = load("level1/exp");
  ASSERT_EQ(t.op.attrs.size(), 3u);
  EXPECT_EQ(t.op.attrs[0].kind, AttrKind::Float);
  EXPECT_EQ(t.op.attrs[0].default_value->f, -1.0);
  ASSERT_EQ(t.cases.size(), 20u);
  const Case* c2 = t.find_case(2);
  EXPECT_EQ(c2->attr("scale")->f, 1.5);
  EXPECT_EQ(c2->attr("base")->f, -1.0);
  EXPECT_EQ(t.find_case(12)->input_shapes[0], (Shape{1000007}));
  EXPECT_EQ(t.find_case(13)->input_shapes[0], (Shape{11, 13, 17, 67, 67}));
}

TEST_F(CannBenchTasks, RmsNormTwoInputs) {
  Task t = load("level2/rms_norm");
  ASSERT_EQ(t.op.inputs.size(), 2u);
  EXPECT_EQ(t.op.inputs[1].name, "gamma");
  EXPECT_EQ(t.op.attrs[0].default_value->f, 1e-6);
  ASSERT_EQ(t.cases.size(), 20u);
  const Case* c6 = t.find_case(6);
  EXPECT_EQ(c6->input_shapes, (std::vector<Shape>{{4, 1023, 4097}, {4097}}));
  EXPECT_EQ(c6->dtypes, (std::vector<Dtype>{Dtype::BF16, Dtype::BF16}));
  EXPECT_EQ(c6->attr("epsilon")->f, 1e-5);
}

TEST_F(CannBenchTasks, SoftmaxIntAttrSpelledInt) {
  Task t = load("level2/softmax");
  EXPECT_EQ(t.op.attrs[0].kind, AttrKind::Int); // spelled Int
  EXPECT_EQ(t.op.attrs[0].default_value->i, -1);
  ASSERT_EQ(t.cases.size(), 20u);
  EXPECT_EQ(t.find_case(6)->attr("dim")->i, 2);
  EXPECT_EQ(t.find_case(6)->input_shapes[0], (Shape{31, 67, 127, 257}));
}

TEST_F(CannBenchTasks, GqaBlockStyleYaml) {
  Task t = load("level4/gqa");
  ASSERT_EQ(t.op.inputs.size(), 3u);
  EXPECT_EQ(t.op.inputs[0].shape, "[B, S, N_q, D]");
  EXPECT_EQ(t.op.attrs[1].kind, AttrKind::Bool);
  EXPECT_FALSE(t.op.attrs[1].default_value->i);
  ASSERT_EQ(t.cases.size(), 20u);
  const Case* c1 = t.find_case(1);
  EXPECT_EQ(c1->input_shapes,
            (std::vector<Shape>{{2, 128, 32, 128}, {2, 128, 8, 128}, {2, 128, 8, 128}}));
  EXPECT_EQ(c1->attr("is_causal")->i, 1);
  EXPECT_EQ(c1->attr("scaleValue")->f, -1.0);
  EXPECT_EQ(c1->where.line, 12);
  // The proto names work in expressions.
  auto e = parse_expr("query.shape[2] / key.shape[2]");
  EXPECT_EQ(*e->eval(make_case_scope(t.op, *c1)), 4);
}

} // namespace
} // namespace temper::core::task_loader_test
