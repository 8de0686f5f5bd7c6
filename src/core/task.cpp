#include "core/task.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace temper::core {

namespace {

// JSON has no inf or NaN; CANN-Bench's CSV spells them as strings, and so do we.
nlohmann::json number_json(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  return v;
}

// Shortest round-trip text that still reads as a floating-point literal ("-1.0", not "-1").
std::string float_string(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

} // namespace

std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
  case AttrKind::Int:
    return "int";
  case AttrKind::Float:
    return "float";
  case AttrKind::Bool:
    return "bool";
  case AttrKind::String:
    return "string";
  case AttrKind::IntList:
    return "ints";
  case AttrKind::FloatList:
    return "floats";
  }
  return "?";
}

std::optional<AttrKind> parse_attr_kind(std::string_view name) {
  std::string n;
  for (char c : name)
    if (c != '_' && c != ' ')
      n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "int" || n == "int64" || n == "int32" || n == "int64t" || n == "int32t" || n == "long")
    return AttrKind::Int;
  // A small integer tensor given inline in the case (group_list: [16, 32, ...]).
  if (n == "tensor")
    return AttrKind::IntList;
  if (n == "float" || n == "float32" || n == "float64" || n == "double")
    return AttrKind::Float;
  if (n == "bool" || n == "boolean")
    return AttrKind::Bool;
  if (n == "str" || n == "string")
    return AttrKind::String;
  for (std::string_view base : {"int", "int64", "int32"}) {
    std::string b(base);
    if (n == b + "s" || n == "list" + b || n == b + "[]" || n == "list[" + b + "]" ||
        n == "listof" + b)
      return AttrKind::IntList;
  }
  for (std::string_view base : {"float", "float32", "float64", "double"}) {
    std::string b(base);
    if (n == b + "s" || n == "list" + b || n == b + "[]" || n == "list[" + b + "]" ||
        n == "listof" + b)
      return AttrKind::FloatList;
  }
  return std::nullopt;
}

std::string AttrValue::to_string() const {
  switch (kind) {
  case AttrKind::Int:
    return std::to_string(i);
  case AttrKind::Float:
    return float_string(f);
  case AttrKind::Bool:
    return i ? "true" : "false";
  case AttrKind::String:
    return s;
  case AttrKind::IntList:
    return fmt::format("[{}]", fmt::join(ints, ", "));
  case AttrKind::FloatList: {
    std::vector<std::string> parts;
    for (double v : floats)
      parts.push_back(float_string(v));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }
  }
  return "";
}

nlohmann::json AttrValue::to_json() const {
  switch (kind) {
  case AttrKind::Int:
    return i;
  case AttrKind::Float:
    return number_json(f);
  case AttrKind::Bool:
    return i != 0;
  case AttrKind::String:
    return s;
  case AttrKind::IntList:
    return ints;
  case AttrKind::FloatList: {
    auto a = nlohmann::json::array();
    for (double v : floats)
      a.push_back(number_json(v));
    return a;
  }
  }
  return nullptr;
}

const AttrDecl* Operator::find_attr(std::string_view n) const {
  for (const auto& a : attrs)
    if (a.name == n)
      return &a;
  return nullptr;
}

namespace {
nlohmann::json tensors_json(const std::vector<TensorDecl>& ts, bool outputs) {
  auto out = nlohmann::json::array();
  for (const auto& t : ts) {
    auto dtypes = nlohmann::json::array();
    for (Dtype d : t.dtypes)
      dtypes.push_back(dtype_name(d));
    nlohmann::json j = {
        {"name", t.name}, {"dtypes", dtypes}, {"shape", t.shape}, {"description", t.description}};
    if (outputs) {
      j["compare"] = t.compare;
      if (t.index_gather)
        j["index_gather"] = {{"input", t.index_gather->input},
                             {"dim_attr", t.index_gather->dim_attr},
                             {"value_output", t.index_gather->value_output},
                             {"value_reduce", t.index_gather->value_reduce},
                             {"keepdim_attr", t.index_gather->keepdim_attr}};
    } else {
      j["optional"] = t.optional;
      j["is_list"] = t.is_list;
    }
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json thresholds_json(const std::map<Dtype, double>& th) {
  auto j = nlohmann::json::object();
  for (const auto& [d, t] : th)
    j[std::string(dtype_name(d))] = t;
  return j;
}

nlohmann::json range_json(const ValueRange& r) {
  return nlohmann::json::array({number_json(r.lo), number_json(r.hi)});
}
} // namespace

nlohmann::json Operator::to_json() const {
  auto a = nlohmann::json::array();
  for (const auto& d : attrs) {
    a.push_back({{"name", d.name},
                 {"type", attr_kind_name(d.kind)},
                 {"proto_type", d.type_name},
                 {"default", d.default_value ? d.default_value->to_json() : nlohmann::json()},
                 {"required", d.required},
                 {"description", d.description}});
  }
  return {
      {"name", name},       {"category", category},           {"difficulty", difficulty},
      {"formula", formula}, {"description", description},     {"schema", schema},
      {"attrs", a},         {"inputs", tensors_json(inputs, false)},
      {"outputs", tensors_json(outputs, true)},
      {"precision_thresholds", thresholds_json(precision_thresholds)}};
}

const TensorDecl* Operator::find_input(std::string_view n) const {
  for (const auto& t : inputs)
    if (t.name == n)
      return &t;
  return nullptr;
}

std::string_view input_kind_name(InputKind k) {
  switch (k) {
  case InputKind::Tensor:
    return "tensor";
  case InputKind::List:
    return "list";
  case InputKind::Absent:
    return "absent";
  }
  return "?";
}

const AttrValue* Case::attr(std::string_view name) const {
  for (const auto& [n, v] : attrs)
    if (n == name)
      return &v;
  return nullptr;
}

std::vector<InputSlot> Case::input_slots() const {
  if (!slots.empty())
    return slots;
  std::vector<InputSlot> out;
  for (size_t k = 0; k < input_shapes.size(); ++k)
    out.push_back(InputSlot{InputKind::Tensor, k, 1});
  return out;
}

bool Case::plain_inputs() const {
  return std::all_of(slots.begin(), slots.end(),
                     [](const InputSlot& s) { return s.kind == InputKind::Tensor; });
}

std::vector<TensorSpec> Case::input_specs(const Operator& op) const {
  std::vector<TensorSpec> out;
  size_t n = std::min(input_shapes.size(), dtypes.size());
  out.reserve(n);
  const std::vector<InputSlot> all = input_slots();
  for (size_t s = 0; s < all.size(); ++s) {
    const InputSlot& slot = all[s];
    std::string base = s < op.inputs.size() ? op.inputs[s].name : "in" + std::to_string(s);
    for (size_t j = 0; j < slot.count && slot.first + j < n; ++j) {
      size_t k = slot.first + j;
      std::string name = slot.kind == InputKind::List ? fmt::format("{}[{}]", base, j) : base;
      out.push_back(TensorSpec{std::move(name), dtypes[k], input_shapes[k]});
    }
  }
  return out;
}

nlohmann::json Case::to_json() const {
  // Per declared input, in the official file's shape: a tensor's value, a list of its elements'
  // values for a tensor list, null for an absent input.
  auto per_slot = [&](auto value_of) {
    auto out = nlohmann::json::array();
    for (const auto& slot : input_slots()) {
      if (slot.kind == InputKind::Absent) {
        out.push_back(nullptr);
      } else if (slot.kind == InputKind::Tensor) {
        out.push_back(value_of(slot.first));
      } else {
        auto items = nlohmann::json::array();
        for (size_t j = 0; j < slot.count; ++j)
          items.push_back(value_of(slot.first + j));
        out.push_back(std::move(items));
      }
    }
    return out;
  };
  auto a = nlohmann::json::object();
  for (const auto& [n, v] : attrs)
    a[n] = v.to_json();
  // One range for every tensor is written once, as the official files usually do.
  bool uniform = !ranges.empty() && std::all_of(ranges.begin(), ranges.end(), [&](const ValueRange& r) {
    return range_json(r) == range_json(ranges[0]);
  });
  nlohmann::json range = uniform ? range_json(ranges[0])
                         : ranges.empty()
                             ? nlohmann::json::array()
                             : per_slot([&](size_t k) { return range_json(ranges[k]); });
  return {{"case_id", id},
          {"input_shape", per_slot([&](size_t k) { return nlohmann::json(input_shapes[k]); })},
          {"dtype", per_slot([&](size_t k) { return nlohmann::json(dtype_name(dtypes[k])); })},
          {"attrs", a},
          {"value_range", range},
          {"note", note}};
}

nlohmann::json ToleranceSpec::to_json() const {
  nlohmann::json j = {{"standard", standard}};
  if (atol)
    j["atol"] = *atol;
  if (rtol)
    j["rtol"] = *rtol;
  if (matched_ratio)
    j["matched_ratio"] = *matched_ratio;
  if (factor)
    j["factor"] = *factor;
  if (!thresholds.empty())
    j["thresholds"] = thresholds_json(thresholds);
  return j;
}

nlohmann::json TemperConfig::to_json() const {
  auto refs = nlohmann::json::object();
  for (const auto& [backend, path] : reference)
    refs[backend] = path.string();
  auto outs = nlohmann::json::object();
  for (const auto& [name, spec] : output_tolerance)
    outs[name] = spec.to_json();
  auto cons = nlohmann::json::array();
  for (const auto& c : constraints)
    cons.push_back({{"check", c.check.source()}, {"message", c.message}});
  nlohmann::json j = {
      {"present", present},
      {"golden", golden.empty() ? nlohmann::json() : nlohmann::json(golden.string())},
      {"reference", refs},
      {"tolerance", tolerance.to_json()},
      {"output_tolerance", outs},
      {"threads", threads},
      {"trials", trials},
      {"in_place", in_place},
      {"allowed_libraries", allowed_libraries},
      {"timing", timing},
      {"executor", executor},
      {"constraints", cons}};
  if (threads_all) j["threads_requested"] = "all";
  j["cost"] =
      cost ? nlohmann::json{{"bytes", cost->bytes}, {"flops", cost->flops}} : nlohmann::json();
  return j;
}

const Case* Task::find_case(int64_t id) const {
  for (const auto& c : cases)
    if (c.id == id)
      return &c;
  return nullptr;
}

const ToleranceSpec& Task::tolerance_for(const std::string& output) const {
  auto it = config.output_tolerance.find(output);
  return it != config.output_tolerance.end() ? it->second : config.tolerance;
}

nlohmann::json Task::to_json() const {
  auto cs = nlohmann::json::array();
  for (const auto& c : cases)
    cs.push_back(c.to_json());
  return {{"schema_version", 1},      {"dir", dir.string()},        {"cases_file", cases_file},
          {"operator", op.to_json()}, {"config", config.to_json()}, {"cases", cs}};
}

} // namespace temper::core
