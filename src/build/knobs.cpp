#include "build/knobs.h"
#include "util/text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <sstream>

namespace temper::build {
namespace {

// A macro value: a number or an identifier, nothing that could smuggle more flags in.
bool is_value(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+';
  });
}

std::optional<double> as_number(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The text after `// temper:` on a line, or nothing.
std::optional<std::string_view> directive(std::string_view line) {
  const auto p = line.find("//");
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = util::trim(line.substr(p + 2));
  constexpr std::string_view kPrefix = "temper:";
  if (rest.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return util::trim(rest.substr(kPrefix.size()));
}

Expected<Knob> parse_knob(std::string_view text, int line) {
  auto bad = [&](std::string_view why) {
    return fail("{}", fmt::format("line {}: {} (expected `// temper: knob NAME = DEFAULT in {{v1, v2, ...}}`)", line, why));
  };
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) return bad("no '='");
  Knob k;
  k.line = line;
  k.name = std::string(util::trim(text.substr(0, eq)));
  if (!util::is_identifier(k.name)) return bad(fmt::format("'{}' is not a macro name", k.name));
  std::string_view rest = util::trim(text.substr(eq + 1));
  const auto in = rest.find(" in ");
  if (in == std::string_view::npos) return bad(fmt::format("knob {}: no ' in {{...}}'", k.name));
  k.default_value = std::string(util::trim(rest.substr(0, in)));
  std::string_view set = util::trim(rest.substr(in + 4));
  if (set.size() < 2 || set.front() != '{' || set.back() != '}') return bad(fmt::format("knob {}: values must be in braces", k.name));
  set = set.substr(1, set.size() - 2);
  while (!set.empty()) {
    const auto comma = set.find(',');
    const std::string_view v = util::trim(set.substr(0, comma));
    if (!is_value(v)) return bad(fmt::format("knob {}: '{}' is not a number or a name", k.name, v));
    if (std::find(k.values.begin(), k.values.end(), v) != k.values.end()) {
      return bad(fmt::format("knob {}: value {} listed twice", k.name, v));
    }
    k.values.emplace_back(v);
    if (comma == std::string_view::npos) break;
    set = set.substr(comma + 1);
  }
  if (k.values.empty()) return bad(fmt::format("knob {}: no values", k.name));
  if (std::find(k.values.begin(), k.values.end(), k.default_value) == k.values.end()) {
    return fail("{}", fmt::format("line {}: knob {}: default {} is not one of its values {{{}}}", line, k.name,
                                  k.default_value, fmt::join(k.values, ", ")));
  }
  return k;
}

} // namespace

const Knob* KnobSpace::find(std::string_view name) const {
  for (const auto& k : knobs) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

size_t KnobSpace::size() const {
  size_t n = 1;
  for (const auto& k : knobs) {
    if (n > std::numeric_limits<size_t>::max() / k.values.size()) return std::numeric_limits<size_t>::max();
    n *= k.values.size();
  }
  return n;
}

KnobValues KnobSpace::defaults() const {
  KnobValues v;
  for (const auto& k : knobs) v[k.name] = k.default_value;
  return v;
}

std::vector<KnobValues> KnobSpace::enumerate() const {
  std::vector<KnobValues> out;
  if (knobs.empty()) return {KnobValues{}};
  std::vector<size_t> index(knobs.size(), 0);
  for (;;) {
    KnobValues v;
    for (size_t i = 0; i < knobs.size(); ++i) v[knobs[i].name] = knobs[i].values[index[i]];
    out.push_back(std::move(v));
    size_t i = knobs.size();
    while (i > 0) {
      --i;
      if (++index[i] < knobs[i].values.size()) break;
      index[i] = 0;
      if (i == 0) return out;
    }
  }
}

Expected<KnobSpace> parse_knobs(std::string_view source) {
  KnobSpace space;
  std::vector<std::pair<std::string, int>> constraint_text;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= source.size()) {
    const auto end = source.find('\n', pos);
    const std::string_view line = source.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    ++line_no;
    if (auto d = directive(line)) {
      constexpr std::string_view kKnob = "knob ";
      constexpr std::string_view kConstraint = "knob-constraint ";
      if (d->substr(0, kConstraint.size()) == kConstraint) {
        constraint_text.emplace_back(std::string(util::trim(d->substr(kConstraint.size()))), line_no);
      } else if (d->substr(0, kKnob.size()) == kKnob) {
        TEMPER_TRY_ASSIGN(Knob knob, parse_knob(util::trim(d->substr(kKnob.size())), line_no));
        if (const Knob* prior = space.find(knob.name)) {
          return fail("{}", fmt::format("line {}: knob {} is already declared on line {}", line_no, knob.name, prior->line));
        }
        space.knobs.push_back(std::move(knob));
      }
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  for (const auto& [text, line] : constraint_text) {
    auto expr = core::parse_expr(text);
    if (!expr) return fail("{}", fmt::format("line {}: knob-constraint: {}", line, expr.error().message));
    for (const auto& name : expr->variables()) {
      // Case variables are dotted (in0.shape, attr.dim, case.id); anything else must be a knob.
      if (name.find('.') == std::string::npos && space.find(name) == nullptr) {
        return fail("{}", fmt::format("line {}: knob-constraint names {}, which is not a declared knob", line, name));
      }
    }
    space.constraints.push_back(std::move(*expr));
  }
  return space;
}

Expected<void> validate_values(const KnobSpace& space, const KnobValues& values) {
  for (const auto& [name, value] : values) {
    const Knob* k = space.find(name);
    if (k == nullptr) return fail("{}", fmt::format("{} is not a knob of this kernel", name));
    if (std::find(k->values.begin(), k->values.end(), value) == k->values.end()) {
      return fail("{}", fmt::format("knob {}: {} is not one of its values {{{}}}", name, value, fmt::join(k->values, ", ")));
    }
  }
  return {};
}

Expected<bool> satisfies(const KnobSpace& space, const KnobValues& values, const core::ExprScope* case_scope) {
  if (space.constraints.empty()) return true;
  core::ExprScope scope = case_scope ? *case_scope : core::ExprScope{};
  for (const auto& [name, value] : values) {
    if (auto v = as_number(value)) scope.values[name] = *v;
  }
  for (const auto& c : space.constraints) {
    auto ok = c.test(scope);
    if (!ok) return fail("{}", fmt::format("knob-constraint {}: {}", c.source(), ok.error().message));
    if (!*ok) return false;
  }
  return true;
}

std::vector<Define> knob_defines(const KnobValues& values) {
  std::vector<Define> out;
  for (const auto& [name, value] : values) out.emplace_back(name, value);
  return out;
}

std::string knob_label(const KnobValues& values) {
  std::string out;
  for (const auto& [name, value] : values) {
    if (!out.empty()) out += ',';
    out += name + "=" + value;
  }
  return out;
}

} // namespace temper::build
