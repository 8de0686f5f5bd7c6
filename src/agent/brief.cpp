#include "agent/brief.h"

#include "util/fs.h"

#include <cstdlib>
#include <set>

#ifndef TEMPER_BRIEFS_DIR_DEFAULT
#define TEMPER_BRIEFS_DIR_DEFAULT "briefs"
#endif

namespace temper::agent {

namespace {

bool is_variable_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!(c == '_' || c == '.' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

} // namespace

Expected<std::string> render_brief(std::string_view text, const BriefVars& vars) {
  std::string out;
  std::set<std::string> missing;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    std::string_view name = trim_spaces(text.substr(open + 2, close - open - 2));
    out.append(text.substr(pos, open - pos));
    if (!is_variable_name(name)) {
      out.append(text.substr(open, 2));
      pos = open + 2;
      continue;
    }
    if (auto it = vars.find(std::string(name)); it != vars.end()) {
      out.append(it->second);
    } else {
      missing.emplace(name);
    }
    pos = close + 2;
  }
  out.append(text.substr(std::min(pos, text.size())));
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return fail("brief placeholders without a value: {}", list);
  }
  return out;
}

std::filesystem::path briefs_dir() {
  if (const char* d = std::getenv("TEMPER_BRIEFS_DIR"); d && *d) return d;
  return TEMPER_BRIEFS_DIR_DEFAULT;
}

Expected<std::string> render_brief_template(std::string_view name, const BriefVars& vars) {
  auto path = briefs_dir() / (std::string(name) + ".md");
  auto text = util::read_file(path);
  if (!text) return fail("brief template {}: {}", path.string(), text.error().message);
  auto rendered = render_brief(*text, vars);
  if (!rendered) return fail("brief template {}: {}", path.string(), rendered.error().message);
  return rendered;
}

} // namespace temper::agent
