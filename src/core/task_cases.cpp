// cases.yaml and cases.csv: both are read into the same raw form (JSON values with lines), then
// validated against the operator by one function, so the two formats obey the same rules.
#include "core/csv_reader.h"
#include "core/task_parse.h"
#include "util/fs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>

namespace temper::core::detail {

namespace {

constexpr int kMaxRank = 8;

struct RawField {
  nlohmann::json value;
  int line = 0;
};

struct RawCase {
  int line = 0;
  std::map<std::string, RawField> fields;
  std::map<std::string, int> attr_lines; // per attr, where the format has them (YAML)
};

const std::vector<std::string_view>& case_keys() {
  static const std::vector<std::string_view> keys = {
      "operator", "case_id", "input_shape", "dtype", "attrs", "value_range", "note"};
  return keys;
}

std::string names_of(const std::vector<TensorDecl>& ts) {
  std::string s;
  for (const auto& t : ts)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", t.name);
  return s;
}

std::string dtype_list(const std::vector<Dtype>& ds) {
  std::string s;
  for (Dtype d : ds)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", dtype_name(d));
  return s;
}

class CaseBuilder {
public:
  CaseBuilder(const Operator& op, const RawCase& raw, const std::string& file, Diagnostics& diags)
      : m_op(op), m_raw(raw), m_file(file), m_diags(diags) {}

  std::optional<Case> build() {
    m_case.where = SourceLoc{m_file, m_raw.line};
    read_id();
    read_operator();
    read_shapes();
    read_dtypes();
    read_attrs();
    read_range();
    read_note();
    if (!m_ok)
      return std::nullopt;
    return m_case;
  }

private:
  const RawField* field(const char* key) const {
    auto it = m_raw.fields.find(key);
    return it == m_raw.fields.end() ? nullptr : &it->second;
  }

  void error(int line, std::string msg) {
    std::string prefix = m_has_id ? fmt::format("case {}: ", m_case.id) : std::string();
    report(m_diags, m_file, line ? line : m_raw.line, prefix + msg);
    m_ok = false;
  }

  const RawField* required(const char* key) {
    const RawField* f = field(key);
    if (!f || f->value.is_null()) {
      error(m_raw.line, fmt::format("missing '{}'", key));
      return nullptr;
    }
    return f;
  }

  void read_id() {
    const RawField* f = required("case_id");
    if (!f)
      return;
    if (!f->value.is_number_integer()) {
      error(f->line, fmt::format("case_id must be an integer, got {}", f->value.dump()));
      return;
    }
    m_case.id = f->value.get<int64_t>();
    m_has_id = true;
  }

  void read_operator() {
    const RawField* f = field("operator");
    if (!f || f->value.is_null())
      return;
    std::string name = f->value.is_string() ? f->value.get<std::string>() : f->value.dump();
    if (name != m_op.name)
      error(f->line, fmt::format("operator is '{}' but proto.yaml defines '{}'", name, m_op.name));
  }

  // A shape: a non-empty list of positive integers within temper's rank limit.
  std::optional<Shape> read_shape(const nlohmann::json& v, const std::string& what, int line) {
    Shape shape;
    bool good = v.is_array();
    if (good)
      for (const auto& d : v) {
        if (!d.is_number_integer())
          good = false;
        else
          shape.push_back(d.get<int64_t>());
      }
    if (!good) {
      error(line, fmt::format("shape of {} must be a list of integers, got {}", what, v.dump()));
      return std::nullopt;
    }
    if (shape.empty() || shape.size() > kMaxRank) {
      error(line, fmt::format("shape of {} has rank {}; temper supports ranks 1 to {}", what,
                              shape.size(), kMaxRank));
      return std::nullopt;
    }
    bool positive = true;
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d <= 0)
        positive = false;
      else if (n > std::numeric_limits<int64_t>::max() / 16 / d)
        n = -1;
      else if (n > 0)
        n *= d;
    }
    if (!positive) {
      error(line, fmt::format("shape of {} has a dimension below 1: {}", what, shape_string(shape)));
      return std::nullopt;
    }
    if (n < 0) {
      error(line, fmt::format("shape of {} has too many elements: {}", what, shape_string(shape)));
      return std::nullopt;
    }
    return shape;
  }

  // input_shape: one entry per declared input, as the official loader reads it: a shape, a list
  // of shapes (a tensor list), or null (an optional input left out). Inputs after the last
  // entry are left out too.
  void read_shapes() {
    const RawField* f = required("input_shape");
    if (!f)
      return;
    const auto& v = f->value;
    if (!v.is_array() || v.empty() || v[0].is_number()) {
      error(f->line,
            fmt::format("input_shape must be a list of shapes, one per input, got {}", v.dump()));
      return;
    }
    if (v.size() > m_op.inputs.size()) {
      error(f->line, fmt::format("input_shape has {} shapes but the operator has {} inputs ({})",
                                 v.size(), m_op.inputs.size(), names_of(m_op.inputs)));
      return;
    }
    for (size_t k = 0; k < m_op.inputs.size(); ++k) {
      const TensorDecl& in = m_op.inputs[k];
      const nlohmann::json item = k < v.size() ? v[k] : nlohmann::json();
      InputSlot slot;
      slot.first = m_case.input_shapes.size();
      if (item.is_null()) {
        slot.kind = InputKind::Absent;
        slot.count = 0;
        if (!in.optional)
          error(f->line, fmt::format("input '{}' has no shape, but the operator does not declare "
                                     "it optional",
                                     in.name));
      } else if (item.is_array() && !item.empty() && item[0].is_array()) {
        slot.kind = InputKind::List;
        slot.count = item.size();
        for (size_t j = 0; j < item.size(); ++j) {
          auto shape = read_shape(item[j], fmt::format("input '{}[{}]'", in.name, j), f->line);
          m_case.input_shapes.push_back(shape.value_or(Shape{}));
        }
      } else {
        if (in.is_list) {
          error(f->line, fmt::format("input '{}' is a tensor list: its entry must be a list of "
                                     "shapes, got {}",
                                     in.name, item.dump()));
          return;
        }
        auto shape = read_shape(item, fmt::format("input '{}'", in.name), f->line);
        m_case.input_shapes.push_back(shape.value_or(Shape{}));
      }
      m_case.slots.push_back(slot);
    }
  }

  std::optional<Dtype> read_one_dtype(const nlohmann::json& v, const TensorDecl& in, int line) {
    if (!v.is_string()) {
      error(line, fmt::format("dtype of input '{}' must be a dtype name, got {}", in.name, v.dump()));
      return std::nullopt;
    }
    auto dt = parse_dtype(v.get<std::string>());
    if (!dt) {
      error(line, fmt::format("unknown dtype '{}' for input '{}'", v.get<std::string>(), in.name));
      return std::nullopt;
    }
    if (std::find(in.dtypes.begin(), in.dtypes.end(), *dt) == in.dtypes.end()) {
      error(line, fmt::format("dtype {} is not allowed for input '{}' (allowed: {})",
                              dtype_name(*dt), in.name, dtype_list(in.dtypes)));
      return std::nullopt;
    }
    return dt;
  }

  // dtype: one entry per input; as in the official loader a shorter list is padded with its last
  // entry (so one dtype serves every input). A tensor list's entry is a dtype for all its
  // elements or a list, one per element (padded the same way).
  void read_dtypes() {
    const RawField* f = required("dtype");
    if (!f || m_case.slots.size() != m_op.inputs.size())
      return;
    nlohmann::json v = f->value;
    if (v.is_string())
      v = nlohmann::json::array({v});
    if (!v.is_array() || v.empty()) {
      error(f->line, fmt::format("dtype must be a list, one dtype per input, got {}", v.dump()));
      return;
    }
    if (v.size() > m_op.inputs.size()) {
      error(f->line, fmt::format("dtype has {} entries but the operator has {} inputs ({})",
                                 v.size(), m_op.inputs.size(), names_of(m_op.inputs)));
      return;
    }
    m_case.dtypes.assign(m_case.input_shapes.size(), Dtype::F32);
    for (size_t k = 0; k < m_case.slots.size(); ++k) {
      const InputSlot& slot = m_case.slots[k];
      if (slot.kind == InputKind::Absent)
        continue; // whatever the file says for it (usually null) describes nothing
      const nlohmann::json& item = k < v.size() ? v[k] : v.back();
      for (size_t j = 0; j < slot.count; ++j) {
        const nlohmann::json& d =
            item.is_array() && slot.kind == InputKind::List
                ? (item.empty() ? item : item[std::min(j, item.size() - 1)])
                : item;
        if (auto dt = read_one_dtype(d, m_op.inputs[k], f->line))
          m_case.dtypes[slot.first + j] = *dt;
        else
          break;
      }
    }
  }

  void read_attrs() {
    const RawField* f = field("attrs");
    nlohmann::json given = nlohmann::json::object();
    int line = m_raw.line;
    if (f && !f->value.is_null()) {
      line = f->line;
      if (!f->value.is_object()) {
        error(line, fmt::format("attrs must be a map of name to value, got {}", f->value.dump()));
        return;
      }
      given = f->value;
    }
    for (const auto& [name, value] : given.items()) {
      if (m_op.find_attr(name))
        continue;
      // The official files sometimes repeat an optional input as `name: null` among the attrs
      // (QuantMatmul's bias): it says the input is left out, which the shapes already say.
      if (const TensorDecl* in = m_op.find_input(name); in && in->optional && value.is_null())
        continue;
      std::string declared;
      for (const auto& a : m_op.attrs)
        declared += fmt::format("{}{}", declared.empty() ? "" : ", ", a.name);
      error(attr_line(name, line), fmt::format("unknown attr '{}' (the operator declares: {})", name,
                                               declared.empty() ? "none" : declared));
    }
    // Every declared attr, in proto order: the case's value, else the proto default. `null`
    // leaves an attr at its default, as the official evaluator does.
    for (const auto& decl : m_op.attrs) {
      if (given.contains(decl.name) && !given[decl.name].is_null()) {
        const auto& v = given[decl.name];
        auto a = json_to_attr(decl.kind, v);
        if (!a) {
          error(attr_line(decl.name, line), fmt::format("attr '{}' must be {}, got {}", decl.name,
                                                        attr_kind_name(decl.kind), v.dump()));
          continue;
        }
        m_case.attrs.emplace_back(decl.name, std::move(*a));
      } else if (decl.default_value) {
        m_case.attrs.emplace_back(decl.name, *decl.default_value);
      } else if (decl.required) {
        error(given.contains(decl.name) ? attr_line(decl.name, line) : line,
              fmt::format("missing required attr '{}'", decl.name));
      }
    }
  }

  int attr_line(const std::string& name, int fallback) const {
    auto it = m_raw.attr_lines.find(name);
    return it == m_raw.attr_lines.end() ? fallback : it->second;
  }

  // One [lo, hi] pair; nullopt (reported) when malformed.
  std::optional<ValueRange> read_one_range(const nlohmann::json& v, int line) {
    std::optional<double> lo, hi;
    if (v.is_array() && v.size() == 2) {
      lo = json_number(v[0]);
      hi = json_number(v[1]);
    }
    if (!lo || !hi) {
      error(line, fmt::format("value_range must be two numbers [lo, hi], got {}", v.dump()));
      return std::nullopt;
    }
    if (std::isnan(*lo) != std::isnan(*hi)) {
      error(line, fmt::format("value_range mixes NaN with a number: {}", v.dump()));
      return std::nullopt;
    }
    if (*lo > *hi) {
      error(line, fmt::format("value_range has lo > hi: {}", v.dump()));
      return std::nullopt;
    }
    return ValueRange{*lo, *hi};
  }

  static bool is_pair(const nlohmann::json& v) { return v.is_array() && !v.empty() && !v[0].is_array() && !v[0].is_null(); }

  // value_range, as the official generator reads it: one [lo, hi] for every input, or one entry
  // per input padded with the last (a tensor list's entry: one pair, or one per element padded
  // the same way; an absent input's entry is null). None at all keeps temper's default [-1, 1].
  void read_range() {
    m_case.ranges.assign(m_case.input_shapes.size(), ValueRange{});
    const RawField* f = field("value_range");
    if (!f || f->value.is_null() || (f->value.is_array() && f->value.empty()))
      return;
    const auto& v = f->value;
    if (is_pair(v) || !v.is_array()) {
      auto r = read_one_range(v, f->line);
      if (r)
        std::fill(m_case.ranges.begin(), m_case.ranges.end(), *r);
      return;
    }
    if (v.size() > m_op.inputs.size()) {
      error(f->line, fmt::format("value_range has {} entries but the operator has {} inputs ({})",
                                 v.size(), m_op.inputs.size(), names_of(m_op.inputs)));
      return;
    }
    if (m_case.slots.size() != m_op.inputs.size())
      return; // the shapes were wrong; already reported
    for (size_t k = 0; k < m_case.slots.size(); ++k) {
      const InputSlot& slot = m_case.slots[k];
      if (slot.kind == InputKind::Absent)
        continue;
      const nlohmann::json& item = k < v.size() ? v[k] : v.back();
      if (item.is_null())
        continue; // no range given for this input: the default
      for (size_t j = 0; j < slot.count; ++j) {
        const nlohmann::json& r =
            slot.kind == InputKind::List && item.is_array() && !item.empty() && item[0].is_array()
                ? item[std::min(j, item.size() - 1)]
                : item;
        auto range = read_one_range(r, f->line);
        if (!range)
          return;
        m_case.ranges[slot.first + j] = *range;
      }
    }
  }

  void read_note() {
    const RawField* f = field("note");
    if (!f || f->value.is_null())
      return;
    m_case.note = f->value.is_string() ? f->value.get<std::string>() : f->value.dump();
  }

  const Operator& m_op;
  const RawCase& m_raw;
  const std::string& m_file;
  Diagnostics& m_diags;
  Case m_case;
  bool m_has_id = false;
  bool m_ok = true;
};

std::vector<Case> build_cases(const std::vector<RawCase>& raws,
                              const Operator& op,
                              const std::string& file,
                              Diagnostics& diags) {
  std::vector<Case> out;
  std::map<int64_t, int> first_line;
  for (const auto& raw : raws) {
    auto c = CaseBuilder(op, raw, file, diags).build();
    auto id = raw.fields.find("case_id");
    if (id != raw.fields.end() && id->second.value.is_number_integer()) {
      auto [it, fresh] = first_line.emplace(id->second.value.get<int64_t>(), raw.line);
      if (!fresh) {
        report(diags, file, id->second.line,
               fmt::format("duplicate case_id {} (first at line {})", it->first, it->second));
        continue;
      }
    }
    if (c)
      out.push_back(std::move(*c));
  }
  return out;
}

} // namespace

std::vector<Case>
parse_cases_yaml(const std::filesystem::path& path, const Operator& op, Diagnostics& diags) {
  const std::string file = path.string();
  auto doc = load_yaml(path, diags);
  if (!doc)
    return {};
  const YAML::Node& root = *doc;
  if (!root.IsMap() || !root["cases"].IsDefined() || !root["cases"].IsSequence()) {
    report(diags, file, line_of(root), "cases.yaml must be a map with a 'cases' list");
    return {};
  }
  check_keys(root, {"cases"}, "cases.yaml", file, diags);
  if (root["cases"].size() == 0)
    report(diags, file, line_of(root["cases"]), "no cases");
  std::vector<RawCase> raws;
  for (const auto& node : root["cases"]) {
    if (!node.IsMap()) {
      report(diags, file, line_of(node), "each case must be a map");
      continue;
    }
    RawCase raw;
    raw.line = line_of(node);
    check_duplicate_keys(node, file, diags);
    if (const YAML::Node attrs = node["attrs"]; attrs.IsDefined())
      check_duplicate_keys(attrs, file, diags);
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (std::find(case_keys().begin(), case_keys().end(), key) == case_keys().end()) {
        report(
            diags, file, line_of(kv.first),
            fmt::format("unknown key '{}' in case (known: operator, case_id, input_shape, dtype, "
                        "attrs, value_range, note)",
                        key));
        continue;
      }
      raw.fields[key] = RawField{yaml_to_json(kv.second), line_of(kv.second)};
      if (key == "attrs" && kv.second.IsMap())
        for (const auto& a : kv.second)
          raw.attr_lines[a.first.Scalar()] = line_of(a.first);
    }
    raws.push_back(std::move(raw));
  }
  return build_cases(raws, op, file, diags);
}

std::vector<Case>
parse_cases_csv(const std::filesystem::path& path, const Operator& op, Diagnostics& diags) {
  const std::string file = path.string();
  auto text = util::read_file(path);
  if (!text) {
    report(diags, file, 0, text.error().message);
    return {};
  }
  CsvResult csv = parse_csv(*text);
  if (!csv.ok()) {
    report(diags, file, csv.error_line, csv.error);
    return {};
  }
  if (csv.records.empty()) {
    report(diags, file, 0, "cases.csv is empty: it needs a header row and one row per case");
    return {};
  }
  const CsvRecord& header = csv.records[0];
  bool header_ok = true;
  for (size_t i = 0; i < header.fields.size(); ++i) {
    const std::string& col = header.fields[i];
    if (std::find(case_keys().begin(), case_keys().end(), col) == case_keys().end()) {
      report(
          diags, file, header.line,
          fmt::format("unknown column '{}' (known: operator, case_id, input_shape, dtype, attrs, "
                      "value_range, note)",
                      col));
      header_ok = false;
    }
    for (size_t j = 0; j < i; ++j)
      if (header.fields[j] == col) {
        report(diags, file, header.line, fmt::format("duplicate column '{}'", col));
        header_ok = false;
      }
  }
  for (const char* col : {"case_id", "input_shape", "dtype"}) {
    if (std::find(header.fields.begin(), header.fields.end(), col) == header.fields.end()) {
      report(diags, file, header.line, fmt::format("missing column '{}'", col));
      header_ok = false;
    }
  }
  if (!header_ok)
    return {};
  if (csv.records.size() == 1)
    report(diags, file, header.line, "no cases: only a header row");

  std::vector<RawCase> raws;
  for (size_t r = 1; r < csv.records.size(); ++r) {
    const CsvRecord& rec = csv.records[r];
    if (rec.fields.size() != header.fields.size()) {
      report(diags, file, rec.line,
             fmt::format("row has {} fields but the header has {}", rec.fields.size(),
                         header.fields.size()));
      continue;
    }
    RawCase raw;
    raw.line = rec.line;
    bool ok = true;
    for (size_t i = 0; i < rec.fields.size(); ++i) {
      const std::string& col = header.fields[i];
      const std::string& cell = rec.fields[i];
      nlohmann::json value;
      if (col == "operator" || col == "note") {
        value = cell;
      } else if (cell.empty()) {
        value = nullptr; // an absent value: required columns report it as missing
      } else if (col == "case_id") {
        int64_t id = 0;
        auto [p, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), id);
        if (ec == std::errc() && p == cell.data() + cell.size())
          value = id;
        else
          value = cell; // reported as not an integer
      } else {
        value = nlohmann::json::parse(cell, nullptr, /*allow_exceptions=*/false);
        if (value.is_discarded()) {
          report(diags, file, rec.line, fmt::format("{} is not valid JSON: {}", col, cell));
          ok = false;
          continue;
        }
      }
      raw.fields[col] = RawField{std::move(value), rec.line};
    }
    if (ok)
      raws.push_back(std::move(raw));
  }
  return build_cases(raws, op, file, diags);
}

} // namespace temper::core::detail
