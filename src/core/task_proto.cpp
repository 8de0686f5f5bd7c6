// proto.yaml: the operator's definition in CANN-Bench's layout.
#include "core/task_parse.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace temper::core::detail {

namespace {

struct Ctx {
  std::string file;
  Diagnostics& diags;
  void error(const YAML::Node& at, std::string msg) const {
    report(diags, file, line_of(at), std::move(msg));
  }
};

// A scalar as text; other node kinds are reported.
std::string text_field(
    const Ctx& ctx, const YAML::Node& map, const char* key, bool required, std::string_view where) {
  const YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (required)
      ctx.error(map, fmt::format("{} has no '{}'", where, key));
    return "";
  }
  if (!n.IsScalar()) {
    ctx.error(n, fmt::format("'{}' in {} must be text", key, where));
    return "";
  }
  return n.Scalar();
}

std::vector<Dtype>
parse_dtype_list(const Ctx& ctx, const YAML::Node& map, const std::string& where) {
  std::vector<Dtype> out;
  const YAML::Node n = map["dtype"];
  if (!n.IsDefined()) {
    ctx.error(map, fmt::format("{} has no 'dtype' list", where));
    return out;
  }
  std::vector<YAML::Node> items;
  if (n.IsScalar())
    items.push_back(n); // a single dtype written without brackets
  if (n.IsSequence())
    for (const auto& d : n)
      items.push_back(d);
  if (items.empty()) {
    ctx.error(n, fmt::format("'dtype' of {} must be a non-empty list of dtype names", where));
    return out;
  }
  for (const auto& d : items) {
    auto dt = d.IsScalar() ? parse_dtype(d.Scalar()) : std::nullopt;
    if (!dt) {
      ctx.error(d.IsScalar() ? d : n,
                fmt::format("unknown dtype '{}' in {} (known: float16, bfloat16, float32, float64, "
                            "int8, int16, int32, int64, uint8, bool)",
                            d.IsScalar() ? d.Scalar() : "?", where));
      continue;
    }
    out.push_back(*dt);
  }
  return out;
}

// A boolean field of an entry; false when absent, reported when not a boolean.
bool bool_field(const Ctx& ctx, const YAML::Node& map, const char* key, bool dflt, std::string_view where) {
  const YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull())
    return dflt;
  auto j = yaml_to_json(n);
  if (!j.is_boolean()) {
    ctx.error(n, fmt::format("'{}' of {} must be true or false", key, where));
    return dflt;
  }
  return j.get<bool>();
}

std::optional<IndexGather> parse_index_gather(const Ctx& ctx, const YAML::Node& n, std::string_view where) {
  if (!n.IsDefined() || n.IsNull())
    return std::nullopt;
  if (!n.IsMap()) {
    ctx.error(n, fmt::format("'index_gather' of {} must be a map", where));
    return std::nullopt;
  }
  std::string w = fmt::format("index_gather of {}", where);
  check_keys(n, {"input", "dim_attr", "value_output", "value_reduce", "keepdim_attr"}, w, ctx.file,
             ctx.diags);
  IndexGather g;
  g.input = text_field(ctx, n, "input", true, w);
  g.dim_attr = text_field(ctx, n, "dim_attr", false, w);
  g.value_output = text_field(ctx, n, "value_output", false, w);
  g.value_reduce = text_field(ctx, n, "value_reduce", false, w);
  g.keepdim_attr = text_field(ctx, n, "keepdim_attr", false, w);
  if (g.value_output.empty() == g.value_reduce.empty())
    ctx.error(n, fmt::format("{} needs exactly one of value_output and value_reduce", w));
  return g;
}

std::map<Dtype, double> parse_thresholds(const Ctx& ctx, const YAML::Node& n) {
  std::map<Dtype, double> out;
  if (!n.IsDefined() || n.IsNull())
    return out;
  if (!n.IsMap()) {
    ctx.error(n, "precision_thresholds must be a map of dtype to threshold");
    return out;
  }
  check_duplicate_keys(n, ctx.file, ctx.diags);
  for (const auto& kv : n) {
    auto dt = kv.first.IsScalar() ? parse_dtype(kv.first.Scalar()) : std::nullopt;
    if (!dt) {
      ctx.error(kv.first, fmt::format("unknown dtype '{}' in precision_thresholds",
                                      kv.first.IsScalar() ? kv.first.Scalar() : "?"));
      continue;
    }
    auto v = json_number(yaml_to_json(kv.second));
    if (!v || !std::isfinite(*v) || *v < 0) {
      ctx.error(kv.second, fmt::format("precision threshold of {} must be a non-negative number",
                                       dtype_name(*dt)));
      continue;
    }
    out[*dt] = *v;
  }
  return out;
}

std::vector<TensorDecl> parse_tensors(const Ctx& ctx, const YAML::Node& op, const char* key) {
  std::vector<TensorDecl> out;
  const YAML::Node list = op[key];
  if (!list.IsDefined() || !list.IsSequence() || list.size() == 0) {
    ctx.error(list.IsDefined() ? list : op, fmt::format("operator has no '{}' list", key));
    return out;
  }
  for (const auto& t : list) {
    if (!t.IsMap()) {
      ctx.error(t, fmt::format("each entry of '{}' must be a map with name and dtype", key));
      continue;
    }
    const bool inputs = key == std::string_view("inputs");
    std::string where = fmt::format("{} entry", key);
    if (inputs)
      check_keys(t, {"name", "dtype", "shape", "description", "optional", "required", "is_list"},
                 where, ctx.file, ctx.diags);
    else
      check_keys(t,
                 {"name", "dtype", "shape", "description", "optional", "compare", "index_gather"},
                 where, ctx.file, ctx.diags);
    TensorDecl d;
    d.name = text_field(ctx, t, "name", true, where);
    if (!d.name.empty())
      where = fmt::format("{} '{}'", inputs ? "input" : "output", d.name);
    d.dtypes = parse_dtype_list(ctx, t, where);
    d.shape = text_field(ctx, t, "shape", false, where);
    d.description = text_field(ctx, t, "description", false, where);
    // Both spellings occur in the official tasks: `optional: true` and `required: false`.
    d.optional = bool_field(ctx, t, "optional", false, where) ||
                 !bool_field(ctx, t, "required", true, where);
    d.is_list = bool_field(ctx, t, "is_list", false, where);
    d.compare = bool_field(ctx, t, "compare", true, where);
    if (!inputs)
      d.index_gather = parse_index_gather(ctx, t["index_gather"], where);
    for (const auto& prev : out)
      if (!d.name.empty() && prev.name == d.name)
        ctx.error(t, fmt::format("duplicate {} name '{}'", key, d.name));
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<AttrDecl> parse_attrs(const Ctx& ctx, const YAML::Node& op) {
  std::vector<AttrDecl> out;
  const YAML::Node list = op["attrs"];
  if (!list.IsDefined() || list.IsNull())
    return out;
  if (!list.IsSequence()) {
    ctx.error(list, "'attrs' must be a list");
    return out;
  }
  for (const auto& a : list) {
    if (!a.IsMap()) {
      ctx.error(a, "each attr must be a map with name and type");
      continue;
    }
    check_keys(a, {"name", "type", "default", "required", "description"}, "attr", ctx.file,
               ctx.diags);
    AttrDecl d;
    d.name = text_field(ctx, a, "name", true, "attr");
    std::string where = fmt::format("attr '{}'", d.name);
    std::string type = text_field(ctx, a, "type", true, where);
    d.type_name = type;
    d.description = text_field(ctx, a, "description", false, where);
    bool ok = !d.name.empty() && !type.empty();
    if (!type.empty()) {
      auto kind = parse_attr_kind(type);
      if (!kind) {
        ctx.error(a["type"], fmt::format("unknown type '{}' of {} (known: int, int64, float, bool, "
                                         "string, ints, floats)",
                                         type, where));
        ok = false;
      } else {
        d.kind = *kind;
      }
    }
    if (const YAML::Node r = a["required"]; r.IsDefined()) {
      auto j = yaml_to_json(r);
      if (!j.is_boolean())
        ctx.error(r, fmt::format("'required' of {} must be true or false", where));
      else
        d.required = j.get<bool>();
    }
    if (const YAML::Node def = a["default"]; ok && def.IsDefined() && !def.IsNull()) {
      auto v = json_to_attr(d.kind, yaml_to_json(def));
      if (!v)
        ctx.error(def,
                  fmt::format("default of {} is not of type {}", where, attr_kind_name(d.kind)));
      d.default_value = v;
    }
    for (const auto& prev : out)
      if (prev.name == d.name)
        ctx.error(a, fmt::format("duplicate attr name '{}'", d.name));
    if (ok)
      out.push_back(std::move(d));
  }
  return out;
}

} // namespace

std::optional<Operator> parse_proto(const std::filesystem::path& path, Diagnostics& diags) {
  auto doc = load_yaml(path, diags);
  if (!doc)
    return std::nullopt;
  Ctx ctx{path.string(), diags};
  if (!doc->IsMap()) {
    ctx.error(*doc, "proto.yaml must be a map with an 'operator' key");
    return std::nullopt;
  }
  check_keys(*doc, {"operator"}, "proto.yaml", ctx.file, diags);
  const YAML::Node& root = *doc;
  const YAML::Node node = root["operator"];
  if (!node.IsDefined() || !node.IsMap()) {
    ctx.error(node.IsDefined() ? node : root, "proto.yaml has no 'operator' map");
    return std::nullopt;
  }
  check_keys(node,
             {"name", "category", "difficulty", "formula", "description", "shape_support", "note",
              "attrs", "inputs", "outputs", "schema", "precision_thresholds"},
             "operator", ctx.file, diags);
  Operator op;
  op.name = text_field(ctx, node, "name", true, "operator");
  op.category = text_field(ctx, node, "category", false, "operator");
  op.difficulty = text_field(ctx, node, "difficulty", false, "operator");
  op.formula = text_field(ctx, node, "formula", false, "operator");
  op.description = text_field(ctx, node, "description", false, "operator");
  op.schema = text_field(ctx, node, "schema", false, "operator");
  op.attrs = parse_attrs(ctx, node);
  op.inputs = parse_tensors(ctx, node, "inputs");
  op.outputs = parse_tensors(ctx, node, "outputs");
  op.precision_thresholds = parse_thresholds(ctx, node["precision_thresholds"]);
  for (const auto& o : op.outputs) {
    if (!o.index_gather)
      continue;
    if (!op.find_input(o.index_gather->input))
      ctx.error(node, fmt::format("index_gather of output '{}' names unknown input '{}'", o.name,
                                  o.index_gather->input));
    const std::string& vo = o.index_gather->value_output;
    if (!vo.empty() && std::none_of(op.outputs.begin(), op.outputs.end(),
                                    [&](const TensorDecl& x) { return x.name == vo; }))
      ctx.error(node, fmt::format("index_gather of output '{}' names unknown output '{}'", o.name, vo));
  }
  if (op.name.empty() || op.inputs.empty())
    return std::nullopt;
  return op;
}

} // namespace temper::core::detail
