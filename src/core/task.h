// A task: one operator in CANN-Bench's layout (proto.yaml, cases.yaml or cases.csv, desc.md) plus
// temper.yaml for what temper adds (golden and reference sources, tolerance standard, threads,
// timing overrides, cost model).
#pragma once

#include "core/dtype.h"
#include "core/expr.h"
#include "core/tensor.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace temper::core {

enum class AttrKind { Int, Float, Bool, String, IntList, FloatList };

std::string_view attr_kind_name(AttrKind k); // int, float, bool, string, ints, floats

// Reads a proto.yaml attr type, case-insensitively: int/int64/int32, float/float32/double,
// bool, str/string, and lists as ints/list_int/listint/int[]/list[int] (floats alike).
std::optional<AttrKind> parse_attr_kind(std::string_view name);

struct AttrValue {
  AttrKind kind = AttrKind::Int;
  int64_t i = 0; // Int, and Bool as 0/1
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  std::string to_string() const; // for tables and macros: "-1", "0.08838", "true"
  nlohmann::json to_json() const;
};

struct AttrDecl {
  std::string name;
  AttrKind kind = AttrKind::Int;
  std::string type_name; // as proto.yaml writes it ("ListInt", "Tensor"): goldens may need it
  std::optional<AttrValue> default_value;
  bool required = false;
  std::string description;
};

// How the official checker treats an index output (proto.yaml `index_gather`): rather than the
// indices themselves, the values they pick from `input` along the dim in attr `dim_attr` are
// compared with `value_output` (another output) or with `value_reduce` of the input ("amax").
struct IndexGather {
  std::string input;
  std::string dim_attr;
  std::string value_output;
  std::string value_reduce;
  std::string keepdim_attr;
};

struct TensorDecl {
  std::string name;
  std::vector<Dtype> dtypes; // allowed
  std::string shape;         // documentation, e.g. "[B, S, N_q, D]"
  std::string description;
  bool optional = false;     // an input a case may leave out (`optional: true`, `required: false`)
  bool is_list = false;      // declared a tensor list (`is_list: true`); cases decide by their shapes
  bool compare = true;       // outputs: `compare: false` means the checker does not compare it directly
  std::optional<IndexGather> index_gather; // outputs
};

struct Operator {
  std::string name;
  std::string category;
  std::string difficulty;
  std::string formula;
  std::string description;
  std::string schema;
  std::vector<AttrDecl> attrs;
  std::vector<TensorDecl> inputs;
  std::vector<TensorDecl> outputs;
  std::map<Dtype, double> precision_thresholds; // proto.yaml: the operator's own T per output dtype

  const AttrDecl* find_attr(std::string_view name) const;
  const TensorDecl* find_input(std::string_view name) const;
  nlohmann::json to_json() const;
};

// Where a value came from, for diagnostics.
struct SourceLoc {
  std::string file;
  int line = 0; // 1-based; 0 when unknown
};

// Inputs are drawn uniformly from [lo, hi]; the special ranges CANN-Bench uses are kept as they
// are: [-inf, inf] (a mix of infinities and finite values), [nan, nan] (all NaN), [0, 0].
struct ValueRange {
  double lo = -1;
  double hi = 1;
};

// How a declared input appears in one case: one tensor, a list of tensors (foreach operators,
// RNN weights), or absent (an optional input the case leaves out).
enum class InputKind { Tensor, List, Absent };

std::string_view input_kind_name(InputKind k); // tensor, list, absent

// Where a declared input's tensors sit among a case's flat tensors.
struct InputSlot {
  InputKind kind = InputKind::Tensor;
  size_t first = 0; // index of its first tensor in Case::input_shapes
  size_t count = 1; // 1 for a tensor, the list's length, 0 when absent
};

struct Case {
  int64_t id = 0;
  // The tensors the kernel and the golden receive, flat: every declared input's tensors in proto
  // order, a list's elements in order, none for an absent input. `slots` says which are which;
  // for a task with only plain tensors the two views coincide (slot k is tensor k).
  std::vector<Shape> input_shapes;
  std::vector<Dtype> dtypes;       // one per tensor
  std::vector<ValueRange> ranges;  // one per tensor
  std::vector<InputSlot> slots;    // one per declared input, in proto order (see input_slots)
  std::vector<std::pair<std::string, AttrValue>> attrs; // declared attrs with a value, defaults filled, proto order
  std::string note;
  SourceLoc where;

  const AttrValue* attr(std::string_view name) const;
  // `slots`, or one tensor per input when a case built in code left them empty.
  std::vector<InputSlot> input_slots() const;
  // True when every declared input is one tensor (what ABI version 1 kernels can take).
  bool plain_inputs() const;
  // One spec per flat tensor; a list's elements are named "x[0]", "x[1]", ...
  std::vector<TensorSpec> input_specs(const Operator& op) const;
  nlohmann::json to_json() const; // public description: id, shapes, dtypes, attrs, value_range
};

// A tolerance standard and its parameters. Numbers not given in temper.yaml take the standard's
// defaults (see tolerance.h).
struct ToleranceSpec {
  std::string standard = "cann-bench"; // cann-bench | flashinfer-bench | flashattention | exact
  std::optional<double> atol;
  std::optional<double> rtol;
  std::optional<double> matched_ratio; // flashinfer-bench
  std::optional<double> factor;        // flashattention, default 2
  std::map<Dtype, double> thresholds;  // cann-bench: T per output dtype (proto.yaml), under rtol

  nlohmann::json to_json() const; // only the numbers that were given
};

struct CostModel {
  std::string bytes; // expression of the case's shapes and dtypes
  std::string flops;
};

// An operator-specific validity check, evaluated per case (see expr.h for the language).
struct Constraint {
  Expr check;
  std::string message; // shown when the check is false
  SourceLoc where;     // the temper.yaml entry
};

struct TemperConfig {
  std::filesystem::path golden;                              // golden.cpp, relative paths resolved
  std::map<std::string, std::filesystem::path> reference;    // backend -> reference kernel source
  ToleranceSpec tolerance;
  std::map<std::string, ToleranceSpec> output_tolerance;     // per output name
  int threads = 1;                                           // threads a kernel may use
  bool threads_all = false;                                  // asked as `threads: all` (threads: this machine's CPUs)
  bool in_place = false;                                     // the op may write its inputs
  std::vector<std::string> allowed_libraries;                // beyond the defaults
  std::vector<std::string> allowed_cuda_features;            // CUDA candidates: "streams", "l2_persistence"
  nlohmann::json timing = nlohmann::json::object();         // timing overrides, kept verbatim
  // Where a campaign on this task sends its judge runs unless `temper run` says otherwise
  // (docs/scale-out.md): kind (local|slurm), partition, account, constraint, max_jobs; null: not given.
  nlohmann::json executor;
  std::optional<CostModel> cost;
  std::map<int64_t, double> hardware_bound_us;               // case id -> hardware lower bound (us)
  int trials = 3;                                            // correctness trials per case
  std::vector<Constraint> constraints;
  bool present = false;                                      // the task has a temper.yaml

  nlohmann::json to_json() const;
};

struct Task {
  std::filesystem::path dir;
  Operator op;
  std::vector<Case> cases;
  TemperConfig config;
  std::string cases_file; // which file the cases came from

  const Case* find_case(int64_t id) const;
  const ToleranceSpec& tolerance_for(const std::string& output) const;
  nlohmann::json to_json() const; // the whole task, with schema_version
};

} // namespace temper::core
