#include "agent/cli_usage.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace temper::agent {

namespace {

using nlohmann::json;

std::vector<json> json_lines(std::string_view text) {
  std::vector<json> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.find('{') == std::string_view::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

int64_t int_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

void add(std::optional<int64_t>& total, int64_t v) { total = total.value_or(0) + v; }

} // namespace

CliUsage parse_claude_output(std::string_view stdout_text) {
  CliUsage u;
  json result;
  json whole = json::parse(stdout_text, nullptr, false);
  if (!whole.is_discarded() && whole.is_object()) {
    result = whole;
  } else {
    for (auto& j : json_lines(stdout_text)) {
      if (j.value("type", "") == "result") result = std::move(j);
    }
  }
  if (!result.is_object()) return u;
  if (auto usage = result.find("usage"); usage != result.end() && usage->is_object()) {
    u.input_tokens = int_at(*usage, "input_tokens") + int_at(*usage, "cache_creation_input_tokens") +
                     int_at(*usage, "cache_read_input_tokens");
    u.output_tokens = int_at(*usage, "output_tokens");
  }
  if (auto cost = result.find("total_cost_usd"); cost != result.end() && cost->is_number()) {
    u.cost_usd = cost->get<double>();
  }
  u.is_error = result.value("is_error", false);
  if (auto text = result.find("result"); text != result.end() && text->is_string()) {
    u.final_text = text->get<std::string>();
  } else if (auto errors = result.find("errors"); errors != result.end() && errors->is_array()) {
    for (const auto& e : *errors) {
      if (e.is_string()) u.final_text += (u.final_text.empty() ? "" : "; ") + e.get<std::string>();
    }
  }
  return u;
}

CliUsage parse_codex_output(std::string_view stdout_text) {
  CliUsage u;
  for (const auto& j : json_lines(stdout_text)) {
    std::string type = j.value("type", "");
    if (type == "turn.completed") {
      if (auto usage = j.find("usage"); usage != j.end() && usage->is_object()) {
        add(u.input_tokens, int_at(*usage, "input_tokens")); // cached input is part of it
        add(u.output_tokens, int_at(*usage, "output_tokens") + int_at(*usage, "reasoning_output_tokens"));
      }
    } else if (type == "turn.failed") {
      u.is_error = true;
      if (auto e = j.find("error"); e != j.end() && e->is_object()) u.final_text = e->value("message", "");
    } else if (type == "item.completed") {
      auto item = j.find("item");
      if (item != j.end() && item->is_object() && item->value("type", "") == "agent_message") {
        u.final_text = item->value("text", "");
      }
    }
  }
  return u;
}

CliUsage parse_opencode_output(std::string_view stdout_text) {
  CliUsage u;
  for (const auto& j : json_lines(stdout_text)) {
    std::string type = j.value("type", "");
    auto part = j.find("part");
    bool has_part = part != j.end() && part->is_object();
    if (type == "step_finish" && has_part) {
      if (auto t = part->find("tokens"); t != part->end() && t->is_object()) {
        int64_t cached = 0;
        if (auto c = t->find("cache"); c != t->end() && c->is_object()) cached = int_at(*c, "read") + int_at(*c, "write");
        add(u.input_tokens, int_at(*t, "input") + cached);
        add(u.output_tokens, int_at(*t, "output") + int_at(*t, "reasoning"));
      }
      if (auto c = part->find("cost"); c != part->end() && c->is_number()) u.cost_usd = u.cost_usd.value_or(0) + c->get<double>();
    } else if (type == "text" && has_part) {
      u.final_text = part->value("text", "");
    } else if (type == "error") {
      u.is_error = true;
      if (auto e = j.find("error"); e != j.end() && e->is_object()) {
        auto data = e->find("data");
        u.final_text = data != e->end() && data->is_object() ? data->value("message", e->value("name", ""))
                                                             : e->value("name", "");
      }
    }
  }
  return u;
}

} // namespace temper::agent
