// JSON encoding and validation of harness requests and responses. Validation is strict (unknown
// keys, wrong types and fields that the op does not take are errors) so that a confused or
// hostile client gets a clear message instead of a half-understood request.
#include "agent/harness_protocol.h"
#include "util/text.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace temper::agent {

namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 7> kOps = {"probe",    "submit",      "escalate",  "status",
                                                  "ref-time", "ref-profile", "ref-disasm"};

bool known_op(std::string_view op) { return std::find(kOps.begin(), kOps.end(), op) != kOps.end(); }
bool takes_file(std::string_view op) { return op == "probe" || op == "submit"; }
bool takes_case(std::string_view op) { return op == "probe" || op.substr(0, 4) == "ref-"; }

std::string known_ops_list() {
  std::string s;
  for (auto op : kOps) s += (s.empty() ? "" : ", ") + std::string(op);
  return s;
}

Status check_protocol(const json& j) {
  auto it = j.find("protocol");
  if (it == j.end()) return fail("missing \"protocol\" (this harness speaks version {})", kHarnessProtocolVersion);
  if (!it->is_number_integer() || it->get<int64_t>() != kHarnessProtocolVersion) {
    return fail("protocol version {} is not supported (this side speaks version {})", it->dump(),
                kHarnessProtocolVersion);
  }
  return {};
}

} // namespace

Status validate_grid_axis(const std::string& axis) {
  auto eq = axis.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= axis.size()) {
    return fail("grid axis \"{}\" is not NAME=v1,v2,...", axis);
  }
  std::string_view name(axis.data(), eq);
  bool ident = std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
  if (!ident || (name[0] >= '0' && name[0] <= '9')) return fail("grid axis name \"{}\" is not an identifier", name);
  std::string_view values(axis.data() + eq + 1, axis.size() - eq - 1);
  size_t start = 0;
  while (start <= values.size()) {
    size_t end = values.find(',', start);
    if (end == std::string_view::npos) end = values.size();
    if (end == start) return fail("grid axis \"{}\" has an empty value", axis);
    start = end + 1;
  }
  return {};
}

namespace {

} // namespace

Status validate_variant(const std::map<std::string, std::string>& variant) {
  if (variant.empty()) return fail("a variant names no knob");
  for (const auto& [name, value] : variant) {
    if (!util::is_identifier(name)) return fail("variant knob name \"{}\" is not an identifier", name);
    if (value.empty()) return fail("variant knob {} has an empty value", name);
    if (std::any_of(value.begin(), value.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','; })) {
      return fail("variant knob {}: value \"{}\" contains whitespace or a comma", name, value);
    }
  }
  return {};
}

Expected<std::map<std::string, std::string>> parse_variant(const std::string& text) {
  std::map<std::string, std::string> v;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const auto eq = item.find('=');
    if (eq == std::string::npos) return fail("variant \"{}\": \"{}\" is not NAME=VALUE", text, item);
    if (!v.emplace(item.substr(0, eq), item.substr(eq + 1)).second) return fail("variant \"{}\" names {} twice", text, item.substr(0, eq));
    start = end + 1;
  }
  TEMPER_TRY(validate_variant(v));
  return v;
}

json HarnessRequest::to_json() const {
  json j = {{"protocol", kHarnessProtocolVersion}, {"op", op}};
  if (!file.empty()) j["file"] = file.string();
  if (case_id) j["case"] = *case_id;
  if (!cases.empty()) j["cases"] = cases;
  if (!grid.empty()) j["grid"] = grid;
  if (!variants.empty()) j["variants"] = variants;
  if (!text.empty()) j["text"] = text;
  return j;
}

Expected<HarnessRequest> HarnessRequest::from_json(const json& j) {
  if (!j.is_object()) return fail("a request must be a JSON object, got {}", j.type_name());
  TEMPER_TRY(check_protocol(j));
  for (const auto& [key, value] : j.items()) {
    if (key != "protocol" && key != "op" && key != "file" && key != "case" && key != "cases" && key != "grid" && key != "variants" && key != "text") {
      return fail("unknown request field \"{}\"", key);
    }
  }
  HarnessRequest r;
  auto op = j.find("op");
  if (op == j.end() || !op->is_string()) return fail("missing string field \"op\"");
  r.op = op->get<std::string>();
  if (!known_op(r.op)) return fail("unknown op \"{}\" (known: {})", r.op, known_ops_list());

  if (auto f = j.find("file"); f != j.end()) {
    if (!takes_file(r.op)) return fail("op \"{}\" takes no file", r.op);
    if (!f->is_string() || f->get<std::string>().empty()) return fail("\"file\" must be a non-empty string");
    r.file = f->get<std::string>();
  } else if (takes_file(r.op)) {
    return fail("op \"{}\" needs a file", r.op);
  }

  if (auto c = j.find("case"); c != j.end()) {
    if (!takes_case(r.op)) return fail("op \"{}\" takes no case", r.op);
    if (!c->is_number_integer() || c->get<int64_t>() < 0) return fail("\"case\" must be a non-negative integer");
    r.case_id = c->get<int64_t>();
  }

  if (auto cs = j.find("cases"); cs != j.end()) {
    if (r.op != "probe") return fail("op \"{}\" takes no cases", r.op);
    if (r.case_id) return fail("a probe takes \"case\" or \"cases\", not both");
    if (!cs->is_array() || cs->empty()) return fail("\"cases\" must be a non-empty array of case ids");
    for (const auto& c : *cs) {
      if (!c.is_number_integer() || c.get<int64_t>() < 0) return fail("\"cases\" must be a non-empty array of case ids");
      r.cases.push_back(c.get<int64_t>());
    }
  }

  if (auto g = j.find("grid"); g != j.end()) {
    if (r.op != "probe") return fail("op \"{}\" takes no grid", r.op);
    if (!g->is_array()) return fail("\"grid\" must be an array of \"NAME=v1,v2\" strings");
    for (const auto& axis : *g) {
      if (!axis.is_string()) return fail("\"grid\" must be an array of \"NAME=v1,v2\" strings");
      TEMPER_TRY(validate_grid_axis(axis.get<std::string>()));
      r.grid.push_back(axis.get<std::string>());
    }
  }

  if (auto vs = j.find("variants"); vs != j.end()) {
    if (r.op != "probe") return fail("op \"{}\" takes no variants", r.op);
    if (!r.grid.empty()) return fail("a probe takes a grid or a list of variants, not both");
    if (!vs->is_array()) return fail("\"variants\" must be an array of objects NAME -> value");
    for (const auto& v : *vs) {
      if (!v.is_object()) return fail("\"variants\" must be an array of objects NAME -> value");
      std::map<std::string, std::string> variant;
      for (const auto& [name, value] : v.items()) {
        if (value.is_string()) variant[name] = value.get<std::string>();
        else if (value.is_number_integer()) variant[name] = std::to_string(value.get<int64_t>());
        else if (value.is_number()) variant[name] = value.dump();
        else return fail("variant knob {}: the value must be a string or a number", name);
      }
      TEMPER_TRY(validate_variant(variant));
      r.variants.push_back(std::move(variant));
    }
  }

  if (auto t = j.find("text"); t != j.end()) {
    if (r.op != "escalate") return fail("op \"{}\" takes no text", r.op);
    if (!t->is_string()) return fail("\"text\" must be a string");
    r.text = t->get<std::string>();
  }
  if (r.op == "escalate" && r.text.empty()) return fail("escalate needs a reason (\"text\")");
  return r;
}

json HarnessResponse::to_json() const {
  return {{"protocol", kHarnessProtocolVersion}, {"ok", ok}, {"message", message}, {"body", body}};
}

Expected<HarnessResponse> HarnessResponse::from_json(const json& j) {
  if (!j.is_object()) return fail("a response must be a JSON object, got {}", j.type_name());
  TEMPER_TRY(check_protocol(j));
  HarnessResponse r;
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) return fail("response misses boolean \"ok\"");
  r.ok = ok->get<bool>();
  auto msg = j.find("message");
  if (msg == j.end() || !msg->is_string()) return fail("response misses string \"message\"");
  r.message = msg->get<std::string>();
  if (auto b = j.find("body"); b != j.end()) r.body = *b;
  return r;
}

} // namespace temper::agent
