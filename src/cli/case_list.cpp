#include "cli/case_list.h"

#include <charconv>
#include <string>

namespace temper::cli {

namespace {
Expected<int64_t> parse_id(std::string_view s, std::string_view whole) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    return fail("--cases '{}': '{}' is not a case id (use e.g. 1,5,12 or 1-4)", whole, s);
  }
  return v;
}
} // namespace

Expected<std::vector<int64_t>> parse_case_list(std::string_view text) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    size_t dash = item.find('-', 1);
    if (dash != std::string_view::npos) {
      TEMPER_TRY_ASSIGN(int64_t lo, parse_id(item.substr(0, dash), text));
      TEMPER_TRY_ASSIGN(int64_t hi, parse_id(item.substr(dash + 1), text));
      if (hi < lo) return fail("--cases '{}': range {} is backwards", text, item);
      for (int64_t v = lo; v <= hi; ++v) ids.push_back(v);
    } else {
      TEMPER_TRY_ASSIGN(int64_t v, parse_id(item, text));
      ids.push_back(v);
    }
    start = end + 1;
  }
  return ids;
}

} // namespace temper::cli
