// The parts of CANN-Bench's official task format beyond plain tensors, on small inline tasks:
// per-input value ranges, tensor-list inputs, optional inputs, numeric attrs written as text,
// null attrs, output compare/index_gather, per-dtype precision thresholds, official CSV quoting.
// Then every official task in ../shared/cann-bench/tasks must check clean.
#include "core/inputs.h"
#include "core/task_loader.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace temper::core::task_official_format_test {
namespace {

namespace fs = std::filesystem;

// x: a tensor list; idx: an integer index input; bias: optional (`optional: true`); scale:
// optional (`required: false`). Outputs: y, and an index output compared through y.
constexpr const char* kProto = R"(operator:
  name: ListOp
  precision_thresholds:
    float32: 0.005
    float16: 0.01
  attrs:
  - name: epsilon
    type: float
    default: 1e-6
  - name: k
    type: int64_t
    required: true
  - name: mode
    type: string
    default: null
    required: false
  - name: group_list
    type: Tensor
    required: false
  inputs:
  - name: x
    dtype: [float32, float16]
    is_list: true
  - name: idx
    dtype: [int64]
  - name: bias
    dtype: [float32]
    optional: true
  - name: scale
    dtype: [float32]
    required: false
  outputs:
  - name: y
    dtype: [float32, float16]
  - name: idx_out
    dtype: [int64]
    compare: false
    index_gather: {input: x, dim_attr: k, value_output: y}
)";

class OfficialFormat : public ::testing::Test {
protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream f(m_tmp.path() / name, std::ios::binary);
    f << text;
  }
  std::string dump(const std::vector<Diagnostic>& ds) {
    std::string s;
    for (const auto& d : ds) s += d.to_string() + "\n";
    return s;
  }
  // Loads proto.yaml with the given cases.yaml; fails the test when it does not load.
  Task load(const std::string& cases) {
    write("proto.yaml", kProto);
    write("cases.yaml", cases);
    auto t = load_task(m_tmp.path());
    EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
    return t ? std::move(*t) : Task{};
  }
  std::vector<Diagnostic> check(const std::string& cases) {
    write("proto.yaml", kProto);
    write("cases.yaml", cases);
    return check_task(m_tmp.path());
  }
  util::TempDir m_tmp;
};

TEST_F(OfficialFormat, ProtoFieldsAreRead) {
  Task t = load("cases:\n- {case_id: 1, input_shape: [[[4]], [4]], dtype: [float32, int64], attrs: {k: 0}}\n");
  EXPECT_TRUE(t.op.inputs[0].is_list);
  EXPECT_FALSE(t.op.inputs[1].optional);
  EXPECT_TRUE(t.op.inputs[2].optional);
  EXPECT_TRUE(t.op.inputs[3].optional); // required: false
  EXPECT_TRUE(t.op.outputs[0].compare);
  EXPECT_FALSE(t.op.outputs[1].compare);
  ASSERT_TRUE(t.op.outputs[1].index_gather.has_value());
  EXPECT_EQ(t.op.outputs[1].index_gather->input, "x");
  EXPECT_EQ(t.op.outputs[1].index_gather->value_output, "y");
  EXPECT_EQ(t.op.attrs[1].kind, AttrKind::Int); // int64_t
  EXPECT_EQ(t.op.attrs[3].kind, AttrKind::IntList);
  EXPECT_EQ(t.op.attrs[3].type_name, "Tensor");
  // The operator's thresholds become the cann-bench standard's per-dtype T.
  EXPECT_EQ(t.op.precision_thresholds.at(Dtype::F16), 0.01);
  EXPECT_EQ(t.config.tolerance.thresholds.at(Dtype::F32), 0.005);
  EXPECT_EQ(t.config.tolerance.to_json()["thresholds"]["float16"], 0.01);
}

TEST_F(OfficialFormat, TensorListInputWithPerElementDtypesAndRanges) {
  Task t = load(R"(cases:
- case_id: 1
  input_shape:
  - - [4, 8]
    - [16]
    - [2, 2]
  - [4]
  dtype: [[float16], int64]
  attrs: {k: 1}
  value_range:
  - [[-1, 1], [-2, 2]]
  - [0, 1023]
)");
  ASSERT_EQ(t.cases.size(), 1u);
  const Case& c = t.cases[0];
  ASSERT_EQ(c.slots.size(), 4u);
  EXPECT_EQ(c.slots[0].kind, InputKind::List);
  EXPECT_EQ(c.slots[0].count, 3u);
  EXPECT_EQ(c.slots[1].kind, InputKind::Tensor);
  EXPECT_EQ(c.slots[1].first, 3u);
  EXPECT_EQ(c.slots[2].kind, InputKind::Absent); // left out after the last shape
  EXPECT_EQ(c.slots[3].kind, InputKind::Absent);
  EXPECT_FALSE(c.plain_inputs());
  EXPECT_EQ(c.input_shapes, (std::vector<Shape>{{4, 8}, {16}, {2, 2}, {4}}));
  EXPECT_EQ(c.dtypes, (std::vector<Dtype>{Dtype::F16, Dtype::F16, Dtype::F16, Dtype::I64}));
  ASSERT_EQ(c.ranges.size(), 4u);
  EXPECT_EQ(c.ranges[0].hi, 1);
  EXPECT_EQ(c.ranges[1].hi, 2);
  EXPECT_EQ(c.ranges[2].hi, 2); // the per-element list is padded with its last entry
  EXPECT_EQ(c.ranges[3].hi, 1023);
  auto specs = c.input_specs(t.op);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "x[0]");
  EXPECT_EQ(specs[2].name, "x[2]");
  EXPECT_EQ(specs[3].name, "idx");
  // The public description keeps the official shape of the entries.
  auto j = c.to_json();
  EXPECT_EQ(j["input_shape"].dump(), "[[[4,8],[16],[2,2]],[4],null,null]");
  EXPECT_EQ(j["dtype"].dump(), R"([["float16","float16","float16"],"int64",null,null])");
}

TEST_F(OfficialFormat, InputsAreGeneratedFromTheirOwnRanges) {
  Task t = load(R"(cases:
- case_id: 1
  input_shape: [[[512], [512]], [512], [512]]
  dtype: [float32, int64, float32]
  attrs: {k: 0}
  value_range: [[-1, 1], [0, 1023], [5, 6]]
)");
  ASSERT_EQ(t.cases.size(), 1u);
  auto tensors = generate_inputs(t.op, t.cases[0], 42, 0);
  ASSERT_EQ(tensors.size(), 4u);
  double lo[4], hi[4];
  for (size_t k = 0; k < 4; ++k) {
    lo[k] = hi[k] = tensors[k].at(0);
    for (size_t i = 0; i < 512; ++i) {
      lo[k] = std::min(lo[k], tensors[k].at(i));
      hi[k] = std::max(hi[k], tensors[k].at(i));
    }
  }
  EXPECT_GE(lo[0], -1);
  EXPECT_LT(lo[0], -0.5); // both list elements take the list's range
  EXPECT_LE(hi[1], 1);
  EXPECT_GE(lo[2], 0);
  EXPECT_GT(hi[2], 100); // the index input reaches far beyond [-1, 1]
  EXPECT_LE(hi[2], 1023);
  EXPECT_EQ(tensors[2].at(0), std::floor(tensors[2].at(0)));
  EXPECT_GE(lo[3], 5);
  EXPECT_LE(hi[3], 6);
}

TEST_F(OfficialFormat, ScalarRangeServesEveryInputAndShortListsArePaddedWithTheLast) {
  Task t = load(R"(cases:
- {case_id: 1, input_shape: [[[4]], [4], [4], [4]], dtype: [float32, int64, float32], attrs: {k: 0}, value_range: [-3, 3]}
- {case_id: 2, input_shape: [[[4]], [4], [4], [4]], dtype: [float32, int64, float32, float32], attrs: {k: 0}, value_range: [[-1, 1], [0, 9]]}
)");
  ASSERT_EQ(t.cases.size(), 2u);
  for (const auto& r : t.cases[0].ranges) EXPECT_EQ(r.hi, 3);
  EXPECT_EQ(t.cases[0].dtypes.back(), Dtype::F32); // dtype list padded with its last entry
  EXPECT_EQ(t.cases[1].ranges[0].hi, 1);
  EXPECT_EQ(t.cases[1].ranges[2].hi, 9);
  EXPECT_EQ(t.cases[1].ranges[3].hi, 9);
}

TEST_F(OfficialFormat, OptionalInputsMayBeNullOrLeftOffButRequiredOnesMayNot) {
  Task t = load(R"(cases:
- {case_id: 1, input_shape: [[[4]], [4], null, [4]], dtype: [float32, int64, null, float32], attrs: {k: 0}}
)");
  ASSERT_EQ(t.cases.size(), 1u);
  EXPECT_EQ(t.cases[0].slots[2].kind, InputKind::Absent);
  EXPECT_EQ(t.cases[0].slots[3].kind, InputKind::Tensor);
  EXPECT_EQ(t.cases[0].input_shapes.size(), 3u); // x's one element, idx, scale

  auto ds = check(R"(cases:
- {case_id: 1, input_shape: [[[4]], null], dtype: [float32], attrs: {k: 0}}
- {case_id: 2, input_shape: [[4], [4]], dtype: [float32, int64], attrs: {k: 0}}
- {case_id: 3, input_shape: [[[4]], [4], [4], [4], [4]], dtype: [float32], attrs: {k: 0}}
)");
  std::string all = dump(ds);
  EXPECT_NE(all.find("case 1: input 'idx' has no shape, but the operator does not declare it optional"), std::string::npos) << all;
  EXPECT_NE(all.find("case 2: input 'x' is a tensor list"), std::string::npos) << all;
  EXPECT_NE(all.find("case 3: input_shape has 5 shapes but the operator has 4 inputs"), std::string::npos) << all;
}

TEST_F(OfficialFormat, AttrsAsTextNullAndOptionalInputsNamedAmongThem) {
  Task t = load(R"(cases:
- {case_id: 1, input_shape: [[[4]], [4]], dtype: [float32, int64], attrs: {k: "3", epsilon: "1e-5", mode: null, bias: null, group_list: [2, 4]}}
- {case_id: 2, input_shape: [[[4]], [4]], dtype: [float32, int64], attrs: {k: 1, epsilon: null}}
)");
  ASSERT_EQ(t.cases.size(), 2u);
  const Case& a = t.cases[0];
  EXPECT_EQ(a.attr("k")->i, 3);
  EXPECT_EQ(a.attr("epsilon")->f, 1e-5);
  EXPECT_EQ(a.attr("mode"), nullptr); // null and no default: left out
  EXPECT_EQ(a.attr("group_list")->ints, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(t.cases[1].attr("epsilon")->f, 1e-6); // null: the default

  auto ds = check(R"(cases:
- {case_id: 1, input_shape: [[[4]], [4]], dtype: [float32, int64], attrs: {k: null}}
- {case_id: 2, input_shape: [[[4]], [4]], dtype: [float32, int64], attrs: {k: "3.5"}}
- {case_id: 3, input_shape: [[[4]], [4]], dtype: [float32, int64], attrs: {k: 1, idx: null, bias: [1]}}
)");
  std::string all = dump(ds);
  EXPECT_NE(all.find("case 1: missing required attr 'k'"), std::string::npos) << all;
  EXPECT_NE(all.find("case 2: attr 'k' must be int"), std::string::npos) << all;
  EXPECT_NE(all.find("case 3: unknown attr 'idx'"), std::string::npos) << all; // not optional
  EXPECT_NE(all.find("case 3: unknown attr 'bias'"), std::string::npos) << all;  // not null
}

TEST_F(OfficialFormat, CsvAsTheOfficialWriterQuotesItAgreesWithYaml) {
  write("cases.csv",
        "operator,case_id,input_shape,dtype,attrs,value_range,note\n"
        "ListOp,1,\"[[[4, 8], [16]], [4], null]\",\"[[\"\"float16\"\"], \"\"int64\"\", null]\","
        "\"{\"\"k\"\": 1, \"\"epsilon\"\": \"\"1e-05\"\", \"\"bias\"\": null}\","
        "\"[[[-1, 1], [-2, 2]], [0, 1023], null]\",S-float16 | baseline_kernels: A×1\n");
  auto ds = check(R"(cases:
- operator: ListOp
  case_id: 1
  input_shape:
  - - [4, 8]
    - [16]
  - [4]
  -
  dtype: [[float16], int64]
  attrs: {k: 1, epsilon: 1e-05}
  value_range: [[[-1, 1], [-2, 2]], [0, 1023]]
  note: "S-float16 | baseline_kernels: A×1"
)");
  EXPECT_TRUE(ds.empty()) << dump(ds);
}

TEST_F(OfficialFormat, BadThresholdsAndIndexGatherAreReported) {
  write("proto.yaml", R"(operator:
  name: Bad
  precision_thresholds: {float8: 0.1, float32: -1}
  inputs:
  - {name: x, dtype: [float32]}
  outputs:
  - {name: i, dtype: [int64], index_gather: {input: nope, value_reduce: amax}}
)");
  write("cases.yaml", "cases:\n- {case_id: 1, input_shape: [[4]], dtype: [float32]}\n");
  std::string all = dump(check_task(m_tmp.path()));
  EXPECT_NE(all.find("unknown dtype 'float8' in precision_thresholds"), std::string::npos) << all;
  EXPECT_NE(all.find("precision threshold of float32 must be a non-negative number"), std::string::npos) << all;
  EXPECT_NE(all.find("index_gather of output 'i' names unknown input 'nope'"), std::string::npos) << all;
}

// --- every official task -----------------------------------------------------------------------

fs::path official_tasks() { return fs::path(TEMPER_SOURCE_DIR "/../shared/cann-bench/tasks"); }

TEST(OfficialTasks, EveryTaskChecksClean) {
  if (!fs::is_directory(official_tasks())) GTEST_SKIP() << "CANN-Bench tasks not found at " << official_tasks().string();
  std::vector<fs::path> dirs;
  for (const auto& level : fs::directory_iterator(official_tasks())) {
    if (!level.is_directory() || level.path().filename().string().rfind("level", 0) != 0) continue;
    for (const auto& op : fs::directory_iterator(level.path()))
      if (fs::exists(op.path() / "proto.yaml")) dirs.push_back(op.path());
  }
  std::sort(dirs.begin(), dirs.end());
  EXPECT_EQ(dirs.size(), 53u);
  int clean = 0;
  for (const auto& d : dirs) {
    auto ds = check_task(d);
    std::string all;
    for (const auto& x : ds) all += x.to_string() + "\n";
    EXPECT_TRUE(ds.empty()) << d.string() << ":\n" << all;
    auto t = load_task(d);
    ASSERT_TRUE(t.has_value()) << d.string();
    EXPECT_EQ(t->cases.size(), 20u) << d.string();
    clean += ds.empty() ? 1 : 0;
  }
  EXPECT_EQ(clean, static_cast<int>(dirs.size()));
}

TEST(OfficialTasks, ListsOptionalInputsAndThresholdsLandWhereTheyBelong) {
  if (!fs::is_directory(official_tasks())) GTEST_SKIP() << "CANN-Bench tasks not found at " << official_tasks().string();
  auto gru = load_task(official_tasks() / "level4/gru");
  ASSERT_TRUE(gru.has_value()) << gru.error().message;
  const Case* c1 = gru->find_case(1);
  ASSERT_NE(c1, nullptr);
  // x, weight_ih [[96, 64]], weight_hh [[96, 32]], bias_ih, bias_hh, h0 (null)
  EXPECT_EQ(c1->slots[1].kind, InputKind::List);
  EXPECT_EQ(c1->slots.back().kind, InputKind::Absent);
  EXPECT_EQ(c1->input_shapes[1], (Shape{96, 64}));
  EXPECT_EQ(gru->config.tolerance.thresholds.at(Dtype::F32), 0.05);

  auto norm = load_task(official_tasks() / "level1/foreach_norm");
  ASSERT_TRUE(norm.has_value());
  EXPECT_EQ(norm->find_case(2)->slots[0].count, 3u);

  auto adam = load_task(official_tasks() / "level2/apply_adam_w");
  ASSERT_TRUE(adam.has_value());
  EXPECT_EQ(adam->find_case(1)->ranges[3].lo, 0); // per-input ranges
  EXPECT_EQ(adam->find_case(1)->ranges[3].hi, 0.1);
}

} // namespace
} // namespace temper::core::task_official_format_test
