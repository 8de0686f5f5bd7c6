#include "kb/bootstrap.h"

#include "judge/common.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>

namespace temper::kb {

namespace fs = std::filesystem;

namespace {

bool is_roofline_entry(const Entry& e) { return e.probe.kind == ProbeKind::Measure && !e.probe.figure.roofline.empty(); }

// zen -> 1, zen4 -> 4; nullopt for names without a generation number we can compare.
std::optional<int> zen_generation(const std::string& microarch) {
  if (microarch.rfind("zen", 0) != 0) return std::nullopt;
  const std::string rest = microarch.substr(3);
  if (rest.empty()) return 1;
  if (!std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::atoi(rest.c_str());
}

// The order of vector ISA tiers within an architecture; -1 for a name not in it.
int isa_rank(const std::string& arch, const std::string& tier) {
  static const std::vector<std::string> x86 = {"base", "sse4", "avx", "avx2", "avx512"}, arm = {"neon", "sve"};
  const auto& order = arch == "aarch64" ? arm : x86;
  auto it = std::find(order.begin(), order.end(), tier);
  return it == order.end() ? -1 : static_cast<int>(it - order.begin());
}

std::string read_or_empty(const fs::path& p) {
  auto text = util::read_file(p);
  return text ? *text : std::string();
}

// Whether two roofline entries measure the same thing: the same figure with the same kernel
// source at the same thread count.
bool same_probe(const Entry& a, const Entry& b) {
  if (a.probe.figure.name != b.probe.figure.name || a.probe.figure.roofline != b.probe.figure.roofline) return false;
  if (probe_threads(a) != probe_threads(b)) return false;
  const std::string ka = read_or_empty(a.dir / a.probe.kernel);
  return !ka.empty() && ka == read_or_empty(b.dir / b.probe.kernel);
}

std::string format_number(double v) { return fmt::format("{:g}", v); }

Range widened(const Range& r) {
  Range out;
  if (r.min) out.min = *r.min / kDerivedRangeWidening;
  if (r.max) out.max = *r.max * kDerivedRangeWidening;
  return out;
}

std::string range_yaml(const Range& r) {
  std::string s = "{";
  if (r.min) s += "min: " + format_number(*r.min);
  if (r.max) s += std::string(r.min ? ", " : "") + "max: " + format_number(*r.max);
  return s + "}";
}

bool indented_key(const std::string& line, std::string_view key) { return line.rfind(fmt::format("  {}:", key), 0) == 0; }
bool top_key(const std::string& line, std::string_view key) { return line.rfind(fmt::format("{}:", key), 0) == 0; }

// entry.yaml with the probe's cap_s replaced (the only line it changes).
std::string with_cap(const std::string& text, std::optional<double> cap_s) {
  if (!cap_s) return text;
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += (indented_key(line, "cap_s") ? "  cap_s: " + format_number(*cap_s) : line) + "\n";
  return out;
}

// The nearest class's entry.yaml rewritten for this class: id, target, claim and accepted range.
// Status and evidence are reset afterwards by write_status_and_evidence.
std::string derived_yaml(const std::string& text, const Entry& src, const std::string& id, const std::string& target_class) {
  const Range accept = widened(src.probe.accept);
  const std::string claim = fmt::format(
      "{} on {}: the probe's {} lies in {} {} (a sanity range: that of {} on {}, widened {:g}x each way; the roofline uses the "
      "certified figure itself).",
      src.title, target_class, src.probe.figure.name, accept.to_string(), src.probe.figure.unit, src.id, src.target, kDerivedRangeWidening);
  std::istringstream in(text);
  std::string line, out;
  bool in_claim = false, header_done = false;
  while (std::getline(in, line)) {
    if (in_claim) {
      if (!line.empty() && line[0] == ' ') continue;
      in_claim = false;
    }
    if (!header_done && (line.empty() || line[0] != '#')) {
      out += fmt::format("# Derived by `temper kb bootstrap` from {} ({}) on {}.\n", src.id, src.target, judge::utc_now());
      header_done = true;
    }
    if (top_key(line, "id")) out += "id: " + id + "\n";
    else if (top_key(line, "target")) out += "target: " + target_class + "\n";
    else if (top_key(line, "claim")) {
      out += "claim: >-\n  " + claim + "\n";
      in_claim = true;
    } else if (indented_key(line, "accept")) out += "  accept: " + range_yaml(accept) + "\n";
    else out += line + "\n";
  }
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

Status copy_entry_dir(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (fs::exists(to, ec)) return fail("{} already exists: remove it or certify it with `temper kb certify`", to.string());
  fs::create_directories(to.parent_path(), ec);
  fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec) return fail("cannot copy {} to {}: {}", from.string(), to.string(), ec.message());
  return {};
}

Expected<Entry> load_filed(const fs::path& dir, const fs::path& root) {
  EntryParse p = load_entry(dir);
  if (!p.entry) return fail("{} does not validate: {}", dir.string(), p.problems.empty() ? "unknown problem" : p.problems.front().to_string());
  p.entry->kb_root = root;
  return std::move(*p.entry);
}

} // namespace

std::string_view action_name(BootstrapItem::Action a) {
  switch (a) {
  case BootstrapItem::Action::Have: return "have";
  case BootstrapItem::Action::Certify: return "certify";
  case BootstrapItem::Action::Shadow: return "copy";
  case BootstrapItem::Action::Derive: return "derive";
  case BootstrapItem::Action::Skip: return "skip";
  }
  return "skip";
}

int BootstrapPlan::to_run() const {
  return static_cast<int>(std::count_if(items.begin(), items.end(), [](const BootstrapItem& i) {
    return i.action == BootstrapItem::Action::Certify || i.action == BootstrapItem::Action::Shadow || i.action == BootstrapItem::Action::Derive;
  }));
}

std::vector<const Entry*> roofline_entries(const KnowledgeBase& kb, const std::string& target_class) {
  std::vector<const Entry*> out;
  for (const auto& e : kb.entries) {
    if (e.target == target_class && is_roofline_entry(e)) out.push_back(&e);
  }
  return out;
}

std::optional<std::string> nearest_class(const KnowledgeBase& kb, const std::string& target_class) {
  const TargetClassParts here = parse_target_class(target_class);
  std::map<std::string, int> counts;
  for (const auto& e : kb.entries) {
    if (e.target != target_class && is_roofline_entry(e) && e.status == EntryStatus::Certified) ++counts[e.target];
  }
  using Key = std::tuple<int, int, int, int, std::string>;
  std::optional<Key> best;
  for (const auto& [cls, count] : counts) {
    const TargetClassParts there = parse_target_class(cls);
    if (there.arch != here.arch) continue;
    // A class with wider vectors writes its probes with instructions this machine may lack.
    const int rank_here = isa_rank(here.arch, here.isa_tier), rank_there = isa_rank(there.arch, there.isa_tier);
    if (rank_here >= 0 && rank_there > rank_here) continue;
    const std::string vendor = microarch_vendor(here.microarch);
    const int vendor_differs = vendor.empty() || vendor != microarch_vendor(there.microarch);
    const int isa_differs = here.isa_tier != there.isa_tier;
    const auto g1 = zen_generation(here.microarch), g2 = zen_generation(there.microarch);
    const int distance = g1 && g2 ? std::abs(*g1 - *g2) : 100;
    Key key{vendor_differs, isa_differs, distance, -count, cls};
    if (!best || key < *best) best = key;
  }
  if (!best) return std::nullopt;
  return std::get<4>(*best);
}

std::string derived_id(const std::string& source_id, const std::string& source_class, const std::string& target_class) {
  const std::string from = parse_target_class(source_class).microarch;
  const std::string to = parse_target_class(target_class).microarch;
  std::string base = source_id;
  if (!from.empty() && base.rfind(from + "-", 0) == 0) base = base.substr(from.size() + 1);
  return to.empty() ? base : to + "-" + base;
}

BootstrapPlan plan_bootstrap(const KnowledgeBase& kb, const TargetFingerprint& here, const fs::path& destination, const std::string& from) {
  BootstrapPlan plan;
  plan.target_class = here.target_class();
  const std::string fp = here.id();
  const std::vector<const Entry*> own = roofline_entries(kb, plan.target_class);

  auto too_many_threads = [&](const Entry& e, BootstrapItem& item) {
    const int t = probe_threads(e);
    if (here.cores > 0 && t > here.cores) {
      item.action = BootstrapItem::Action::Skip;
      item.reason = fmt::format("its probe runs {} threads and this machine has {} CPUs", t, here.cores);
      return true;
    }
    return false;
  };

  for (const Entry* e : own) {
    BootstrapItem item;
    item.id = e->id;
    item.source = e;
    if (e->effective_status(fp) == EntryStatus::Certified) {
      item.action = BootstrapItem::Action::Have;
      const Evidence* ev = e->last_decisive();
      item.reason = ev ? fmt::format("certified here on {}", ev->date) : "certified here";
    } else if (!too_many_threads(*e, item)) {
      item.action = same_root(e->kb_root, destination) ? BootstrapItem::Action::Certify : BootstrapItem::Action::Shadow;
    }
    plan.items.push_back(item);
  }

  const std::optional<std::string> source = from.empty() ? nearest_class(kb, plan.target_class) : std::optional<std::string>(from);
  if (!source || *source == plan.target_class) return plan;
  for (const Entry* e : roofline_entries(kb, *source)) {
    if (e->status != EntryStatus::Certified) continue;
    const std::string id = derived_id(e->id, *source, plan.target_class);
    const bool covered = std::any_of(own.begin(), own.end(), [&](const Entry* o) { return o->id == id || same_probe(*o, *e); });
    if (covered) continue;
    if (plan.source_class.empty()) plan.source_class = *source;
    BootstrapItem item;
    item.id = id;
    item.source = e;
    if (const Entry* clash = kb.find(id)) {
      item.action = BootstrapItem::Action::Skip;
      item.reason = fmt::format("the id {} is already used by {}", id, clash->dir.string());
    } else if (!too_many_threads(*e, item)) {
      item.action = BootstrapItem::Action::Derive;
    }
    plan.items.push_back(item);
  }
  return plan;
}

Expected<Entry> materialize(const BootstrapItem& item, const BootstrapPlan& plan, const fs::path& destination, std::optional<double> cap_s) {
  if (!item.source) return fail("bootstrap item {} has no source entry", item.id);
  const Entry& src = *item.source;
  const fs::path dest = destination / plan.target_class / item.id;
  switch (item.action) {
  case BootstrapItem::Action::Certify: {
    if (cap_s) {
      TEMPER_TRY_ASSIGN(std::string text, util::read_file(src.file()));
      TEMPER_TRY(util::write_file_atomic(src.file(), with_cap(text, cap_s)));
    }
    return load_filed(src.dir, destination);
  }
  case BootstrapItem::Action::Shadow: {
    TEMPER_TRY(copy_entry_dir(src.dir, dest));
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(dest / "entry.yaml"));
    TEMPER_TRY(util::write_file_atomic(dest / "entry.yaml", with_cap(text, cap_s)));
    return load_filed(dest, destination);
  }
  case BootstrapItem::Action::Derive: {
    TEMPER_TRY(copy_entry_dir(src.dir, dest));
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(dest / "entry.yaml"));
    TEMPER_TRY(util::write_file_atomic(dest / "entry.yaml", with_cap(derived_yaml(text, src, item.id, plan.target_class), cap_s)));
    if (fs::exists(dest / "README.md")) {
      TEMPER_TRY_ASSIGN(std::string readme, util::read_file(dest / "README.md"));
      readme = replace_all(readme, "kb show " + src.id, "kb show " + item.id);
      readme = replace_all(readme, "kb certify " + src.id, "kb certify " + item.id);
      readme = fmt::format("> Derived by `temper kb bootstrap` from `{}` ({}). The text below is that entry's; this entry's claim "
                           "and accepted range are in entry.yaml.\n\n{}",
                           src.id, src.target, readme);
      TEMPER_TRY(util::write_file_atomic(dest / "README.md", readme));
    }
    TEMPER_TRY_ASSIGN(Entry e, load_filed(dest, destination));
    e.status = EntryStatus::Proposed;
    e.evidence.clear();
    TEMPER_TRY(write_status_and_evidence(e));
    return e;
  }
  case BootstrapItem::Action::Have:
  case BootstrapItem::Action::Skip: break;
  }
  return fail("bootstrap item {} needs no entry filed ({})", item.id, action_name(item.action));
}

std::vector<BootstrapRow> run_bootstrap(const BootstrapPlan& plan, ProbeRunner& runner, const TargetFingerprint& here,
                                        const BootstrapOptions& options) {
  std::vector<BootstrapRow> rows;
  const int total = plan.to_run();
  int index = 0;
  for (const auto& item : plan.items) {
    BootstrapRow row;
    row.id = item.id;
    row.action = std::string(action_name(item.action));
    if (item.action == BootstrapItem::Action::Have || item.action == BootstrapItem::Action::Skip) {
      row.outcome = row.action;
      row.detail = item.reason;
      if (item.source) row.dir = item.source->dir;
      rows.push_back(row);
      if (options.on_done) options.on_done(row);
      continue;
    }
    ++index;
    if (options.on_start) options.on_start(index, total, item);
    auto entry = materialize(item, plan, options.destination, options.cap_s);
    if (!entry) {
      row.outcome = "error";
      row.detail = entry.error().message;
    } else if (row.dir = entry->dir; !options.certify) {
      row.outcome = "proposed";
      row.detail = "filed, not certified (--propose-only)";
    } else if (auto r = certify(*entry, runner, here, true); !r) {
      row.outcome = "error";
      row.detail = r.error().message;
    } else {
      row.outcome = r->decision.outcome;
      row.detail = r->decision.reason;
    }
    rows.push_back(row);
    if (options.on_done) options.on_done(row);
  }
  return rows;
}

} // namespace temper::kb
