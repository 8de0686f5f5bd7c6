#include "campaign/tuner_space.h"

#include "util/fs.h"
#include "util/text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <regex>
#include <set>

namespace temper::campaign::tuner {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Spaces up to this many combinations are enumerated and filtered; larger ones are sampled.
constexpr size_t kEnumerationBound = size_t{1} << 18;

// A uniform index below n from the generator's raw output: the same on every standard library,
// so a seeded sample is reproducible everywhere.
size_t below(std::mt19937_64& rng, size_t n) { return n <= 1 ? 0 : static_cast<size_t>(rng() % n); }

} // namespace

SplitSource strip_block(std::string_view source) {
  SplitSource out;
  const auto begin = source.find(kBlockBegin);
  if (begin == std::string_view::npos) {
    out.body = std::string(source);
    return out;
  }
  const auto end = source.find(kBlockEnd, begin);
  if (end == std::string_view::npos) {
    out.body = std::string(source);
    return out;
  }
  std::string_view block = source.substr(begin + kBlockBegin.size(), end - begin - kBlockBegin.size());
  static const std::regex define(R"(^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)\s+(\S+)\s*$)");
  size_t pos = 0;
  while (pos < block.size()) {
    const auto nl = block.find('\n', pos);
    const std::string line(block.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    std::smatch m;
    if (std::regex_match(line, m, define)) out.fixed[m[1].str()] = m[2].str();
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  size_t after = end + kBlockEnd.size();
  if (after < source.size() && source[after] == '\n') ++after;
  out.body = std::string(source.substr(0, begin)) + std::string(source.substr(after));
  return out;
}

std::string with_block(std::string_view body, const build::KnobValues& values) {
  std::string out(kBlockBegin);
  out += '\n';
  for (const auto& [name, value] : values) out += fmt::format("#define {} {}\n", name, value);
  out += kBlockEnd;
  out += '\n';
  out += body;
  return out;
}

Expected<TunerKernel> pick_kernel(const fs::path& workspace) {
  std::error_code ec;
  const fs::path starter = workspace / "src" / "starter";
  TunerKernel k;
  if (fs::is_directory(starter, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(starter, ec)) {
      // A C++ kernel, or a CUDA one (.cu) for a cuda campaign.
      if (e.is_regular_file() && (e.path().extension() == ".cpp" || e.path().extension() == ".cu")) files.push_back(e.path());
    }
    if (files.size() > 1) {
      return fail("src/starter/ holds {} kernel files (.cpp, .cu); the tuner starts from exactly one", files.size());
    }
    if (files.size() == 1) {
      k.file = files.front();
      k.origin = "starter " + files.front().filename().string();
    }
  }
  if (k.file.empty()) {
    const fs::path accepted = workspace / "src" / "accepted";
    static const std::regex name(R"(M([0-9]+)\.cpp)");
    int best = -1;
    if (fs::is_directory(accepted, ec)) {
      for (const auto& e : fs::directory_iterator(accepted, ec)) {
        std::smatch m;
        const std::string fname = e.path().filename().string();
        if (!e.is_regular_file() || !std::regex_match(fname, m, name)) continue;
        const int i = std::stoi(m[1].str());
        if (i > best) {
          best = i;
          k.file = e.path();
        }
      }
    }
    if (k.file.empty()) {
      return fail("no kernel to tune: the milestone names no starter (src/starter/*.cpp or *.cu) and no milestone is accepted yet "
                  "(src/accepted/M*.cpp)");
    }
    k.origin = fmt::format("accepted M{}", best);
  }
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(k.file));
  SplitSource split = strip_block(text);
  k.body = std::move(split.body);
  k.incumbent = std::move(split.fixed);
  return k;
}

Expected<std::string> knob_value_text(const json& value) {
  if (value.is_string()) return std::string(util::trim(value.get<std::string>()));
  if (value.is_number_integer()) return value.dump();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return std::to_string(static_cast<int64_t>(d));
    return value.dump();
  }
  return fail("a knob value must be a number or a string, not {}", value.dump());
}

Expected<build::KnobSpace> narrow_space(build::KnobSpace space, const json& milestone_knobs) {
  if (milestone_knobs.is_null()) return space;
  if (!milestone_knobs.is_object()) return fail("the milestone's knobs must be an object NAME -> values");
  for (const auto& [name, given] : milestone_knobs.items()) {
    build::Knob* knob = nullptr;
    for (auto& k : space.knobs) {
      if (k.name == name) knob = &k;
    }
    if (!knob) return fail("the milestone names knob {}, which the kernel does not declare", name);
    std::vector<std::string> wanted;
    if (given.is_array()) {
      for (const auto& v : given) {
        TEMPER_TRY_ASSIGN(std::string text, knob_value_text(v));
        wanted.push_back(std::move(text));
      }
      if (wanted.empty()) return fail("the milestone gives knob {} no values", name);
    } else {
      TEMPER_TRY_ASSIGN(std::string text, knob_value_text(given));
      wanted.push_back(std::move(text));
    }
    std::vector<std::string> kept;
    for (const auto& w : wanted) {
      if (std::find(knob->values.begin(), knob->values.end(), w) == knob->values.end()) {
        return fail("the milestone gives knob {} the value {}, which the kernel does not list ({{{}}})", name, w,
                    fmt::join(knob->values, ", "));
      }
    }
    // Declared order, so variants enumerate the same way whatever order the plan lists.
    for (const auto& v : knob->values) {
      if (std::find(wanted.begin(), wanted.end(), v) != wanted.end()) kept.push_back(v);
    }
    knob->values = kept;
    if (std::find(kept.begin(), kept.end(), knob->default_value) == kept.end()) knob->default_value = kept.front();
  }
  return space;
}

std::vector<std::string> keep_incumbent(build::KnobSpace& space, const json& milestone_knobs,
                                        const build::KnobValues& incumbent) {
  std::vector<std::string> kept;
  if (!milestone_knobs.is_object()) return kept; // no knobs named: the kernel's whole space
  for (auto& k : space.knobs) {
    if (milestone_knobs.contains(k.name)) continue;
    const auto it = incumbent.find(k.name);
    if (it == incumbent.end() || std::find(k.values.begin(), k.values.end(), it->second) == k.values.end()) continue;
    k.values = {it->second};
    k.default_value = it->second;
    kept.push_back(k.name);
  }
  return kept;
}

build::KnobValues complete(const build::KnobSpace& space, const build::KnobValues& values) {
  build::KnobValues out = space.defaults();
  for (const auto& [name, value] : values) {
    if (space.find(name)) out[name] = value;
  }
  return out;
}

bool in_space(const build::KnobSpace& space, const build::KnobValues& values) {
  for (const auto& [name, value] : values) {
    const build::Knob* k = space.find(name);
    if (!k || std::find(k->values.begin(), k->values.end(), value) == k->values.end()) return false;
  }
  return true;
}

Expected<VariantDraw> draw_variants(const build::KnobSpace& space, const build::KnobValues& incumbent,
                                    const core::ExprScope& case_scope, size_t limit, uint64_t seed) {
  VariantDraw draw;
  if (limit == 0) return draw;
  std::mt19937_64 rng(seed);
  std::vector<build::KnobValues> chosen;
  std::set<std::string> seen;
  const build::KnobValues first = complete(space, incumbent);
  if (in_space(space, first)) {
    TEMPER_TRY_ASSIGN(bool ok, build::satisfies(space, first, &case_scope));
    if (ok) {
      chosen.push_back(first);
      seen.insert(build::knob_label(first));
    }
  }
  if (space.size() <= kEnumerationBound) {
    std::vector<build::KnobValues> valid;
    for (auto& v : space.enumerate()) {
      TEMPER_TRY_ASSIGN(bool ok, build::satisfies(space, v, &case_scope));
      if (ok) valid.push_back(std::move(v));
    }
    draw.valid = valid.size();
    draw.exhaustive = valid.size() <= limit;
    if (!draw.exhaustive) {
      // Fisher-Yates with the seeded generator; the first `limit` are the sample.
      for (size_t i = valid.size(); i > 1; --i) std::swap(valid[i - 1], valid[below(rng, i)]);
    }
    for (auto& v : valid) {
      if (chosen.size() >= limit) break;
      if (seen.insert(build::knob_label(v)).second) chosen.push_back(std::move(v));
    }
  } else {
    // Too many to list: draw combinations one knob value at a time, keep the valid new ones.
    draw.valid = space.size();
    const size_t tries = limit * 64;
    for (size_t t = 0; t < tries && chosen.size() < limit; ++t) {
      build::KnobValues v;
      for (const auto& k : space.knobs) v[k.name] = k.values[below(rng, k.values.size())];
      TEMPER_TRY_ASSIGN(bool ok, build::satisfies(space, v, &case_scope));
      if (ok && seen.insert(build::knob_label(v)).second) chosen.push_back(std::move(v));
    }
  }
  draw.variants = std::move(chosen);
  return draw;
}

} // namespace temper::campaign::tuner
