// YAML and JSON helpers shared by the task parsers.
#include "core/task_parse.h"
#include "util/fs.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <regex>

namespace temper::core::detail {

void report(Diagnostics& diags, const std::string& file, int line, std::string message) {
  diags.push_back(Diagnostic{file, line, std::move(message)});
}

int line_of(const YAML::Node& node) {
  if (!node.IsDefined())
    return 0;
  int line = node.Mark().line;
  return line < 0 ? 0 : line + 1;
}

std::optional<YAML::Node> load_yaml(const std::filesystem::path& path, Diagnostics& diags) {
  auto text = util::read_file(path);
  if (!text) {
    report(diags, path.string(), 0, text.error().message);
    return std::nullopt;
  }
  try {
    return YAML::Load(*text);
  } catch (const YAML::ParserException& e) {
    report(diags, path.string(), e.mark.line < 0 ? 0 : e.mark.line + 1,
           fmt::format("YAML syntax error: {}", e.msg));
  } catch (const YAML::Exception& e) {
    report(diags, path.string(), 0, fmt::format("YAML error: {}", e.what()));
  }
  return std::nullopt;
}

namespace {

nlohmann::json resolve_plain_scalar(const std::string& s) {
  // The YAML 1.2 core schema's resolution rules.
  static const std::regex null_re("~|null|Null|NULL|");
  static const std::regex true_re("true|True|TRUE");
  static const std::regex false_re("false|False|FALSE");
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  static const std::regex inf_re("[-+]?\\.(inf|Inf|INF)");
  static const std::regex nan_re("\\.(nan|NaN|NAN)");
  if (std::regex_match(s, null_re))
    return nullptr;
  if (std::regex_match(s, true_re))
    return true;
  if (std::regex_match(s, false_re))
    return false;
  if (std::regex_match(s, int_re)) {
    const char* b = s.data() + (s[0] == '+' ? 1 : 0);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size())
      return v;
    return std::stod(s); // beyond int64: keep the magnitude
  }
  if (std::regex_match(s, float_re))
    return std::stod(s);
  if (std::regex_match(s, inf_re))
    return s[0] == '-' ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity();
  if (std::regex_match(s, nan_re))
    return std::numeric_limits<double>::quiet_NaN();
  return s;
}

} // namespace

nlohmann::json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
  case YAML::NodeType::Undefined:
  case YAML::NodeType::Null:
    return nullptr;
  case YAML::NodeType::Scalar: {
    const std::string& tag = node.Tag();
    // yaml-cpp tags plain scalars "?" and quoted ones "!": quoting makes a string.
    if (tag == "!" || tag == "tag:yaml.org,2002:str")
      return node.Scalar();
    return resolve_plain_scalar(node.Scalar());
  }
  case YAML::NodeType::Sequence: {
    auto a = nlohmann::json::array();
    for (const auto& item : node)
      a.push_back(yaml_to_json(item));
    return a;
  }
  case YAML::NodeType::Map: {
    auto o = nlohmann::json::object();
    for (const auto& kv : node)
      o[kv.first.Scalar()] = yaml_to_json(kv.second);
    return o;
  }
  }
  return nullptr;
}

void check_duplicate_keys(const YAML::Node& map, const std::string& file, Diagnostics& diags) {
  if (!map.IsMap())
    return;
  std::map<std::string, int> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      continue;
    auto [it, fresh] = seen.emplace(kv.first.Scalar(), line_of(kv.first));
    if (!fresh)
      report(diags, file, line_of(kv.first),
             fmt::format("duplicate key '{}' (first at line {})", it->first, it->second));
  }
}

void check_keys(const YAML::Node& map,
                std::initializer_list<std::string_view> known,
                std::string_view where,
                const std::string& file,
                Diagnostics& diags) {
  if (!map.IsMap())
    return;
  check_duplicate_keys(map, file, diags);
  for (const auto& kv : map) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    bool ok = false;
    for (std::string_view k : known)
      ok = ok || k == key;
    if (!ok) {
      std::string list;
      for (std::string_view k : known)
        list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
      report(diags, file, line_of(kv.first),
             fmt::format("unknown key '{}' in {} (known: {})", key, where, list));
    }
  }
}

std::optional<double> json_number(const nlohmann::json& v) {
  if (v.is_number())
    return v.get<double>();
  if (!v.is_string())
    return std::nullopt;
  std::string s;
  for (char c : v.get<std::string>())
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+'))
    s.erase(0, 1);
  if (!s.empty() && s[0] == '.')
    s.erase(0, 1); // YAML's spelling, .inf
  if (s == "inf" || s == "infinity")
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  if (s == "nan")
    return std::numeric_limits<double>::quiet_NaN();
  // A number written as text ("1e-08"): the official CSV quotes values that PyYAML, a YAML 1.1
  // reader, took for strings, and its evaluator converts them with float().
  const std::string& text = v.get_ref<const std::string&>();
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())))
    return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(d))
    return std::nullopt;
  return d;
}

std::optional<AttrValue> json_to_attr(AttrKind kind, const nlohmann::json& v) {
  AttrValue a;
  a.kind = kind;
  auto as_double = [](const nlohmann::json& x) { return json_number(x); };
  switch (kind) {
  case AttrKind::Int:
    if (v.is_string()) {
      // An integer written as text, as the official CSV may quote it.
      const std::string& text = v.get_ref<const std::string&>();
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), a.i);
      if (text.empty() || ec != std::errc() || p != text.data() + text.size())
        return std::nullopt;
      return a;
    }
    if (!v.is_number_integer())
      return std::nullopt;
    a.i = v.get<int64_t>();
    return a;
  case AttrKind::Float: {
    auto d = as_double(v);
    if (!d)
      return std::nullopt;
    a.f = *d;
    return a;
  }
  case AttrKind::Bool:
    if (!v.is_boolean())
      return std::nullopt;
    a.i = v.get<bool>() ? 1 : 0;
    return a;
  case AttrKind::String:
    if (!v.is_string())
      return std::nullopt;
    a.s = v.get<std::string>();
    return a;
  case AttrKind::IntList:
    if (!v.is_array())
      return std::nullopt;
    for (const auto& x : v) {
      if (!x.is_number_integer())
        return std::nullopt;
      a.ints.push_back(x.get<int64_t>());
    }
    return a;
  case AttrKind::FloatList:
    if (!v.is_array())
      return std::nullopt;
    for (const auto& x : v) {
      auto d = as_double(x);
      if (!d)
        return std::nullopt;
      a.floats.push_back(*d);
    }
    return a;
  }
  return std::nullopt;
}

} // namespace temper::core::detail
