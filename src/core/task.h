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
  std::optional<AttrValue> default_value;
  bool required = false;
  std::string description;
};

struct TensorDecl {
  std::string name;
  std::vector<Dtype> dtypes; // allowed
  std::string shape;         // documentation, e.g. "[B, S, N_q, D]"
  std::string description;
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

  const AttrDecl* find_attr(std::string_view name) const;
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

struct Case {
  int64_t id = 0;
  std::vector<Shape> input_shapes; // one per input, in proto order
  std::vector<Dtype> dtypes;       // one per input
  std::vector<std::pair<std::string, AttrValue>> attrs; // every declared attr, defaults filled, proto order
  ValueRange range;
  std::string note;
  SourceLoc where;

  const AttrValue* attr(std::string_view name) const;
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
  bool in_place = false;                                     // the op may write its inputs
  std::vector<std::string> allowed_libraries;                // beyond the defaults
  std::vector<std::string> allowed_cuda_features;            // CUDA candidates: "streams", "l2_persistence"
  nlohmann::json timing = nlohmann::json::object();         // timing overrides, kept verbatim
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
