#include "kb/store.h"

#include "core/task_loader.h"
#include "util/fs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

namespace temper::kb {

namespace fs = std::filesystem;

fs::path default_kb_root() {
  if (const char* env = std::getenv("TEMPER_KB"); env && *env) return env;
  std::error_code ec;
  if (fs::is_directory("hw_kb", ec)) return fs::absolute("hw_kb");
  return fs::path(TEMPER_SOURCE_DIR) / "hw_kb";
}

fs::path user_kb_root() {
  if (const char* home = std::getenv("TEMPER_HOME"); home && *home) return fs::path(home) / "hw_kb";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".temper" / "hw_kb";
  return fs::path(".temper") / "hw_kb";
}

bool same_root(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return a == b || (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec));
}

std::vector<fs::path> default_kb_roots() {
  if (const char* env = std::getenv("TEMPER_KB"); env && *env) return {env};
  std::vector<fs::path> roots{default_kb_root()};
  if (const fs::path user = user_kb_root(); !same_root(user, roots.front())) roots.push_back(user);
  return roots;
}

const Entry* KnowledgeBase::find(const std::string& id) const {
  for (const auto& e : entries) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

Entry* KnowledgeBase::find(const std::string& id) {
  return const_cast<Entry*>(static_cast<const KnowledgeBase&>(*this).find(id));
}

KnowledgeBase load_kb(const fs::path& root) {
  KnowledgeBase kb;
  kb.root = root;
  kb.roots = {root};
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return kb;
  std::vector<fs::path> dirs;
  for (const auto& target : fs::directory_iterator(root, ec)) {
    if (!target.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(target.path(), ec)) {
      if (entry.is_directory() && fs::exists(entry.path() / "entry.yaml")) dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  std::map<std::string, fs::path> seen;
  for (const auto& d : dirs) {
    EntryParse p = load_entry(d);
    kb.problems.insert(kb.problems.end(), p.problems.begin(), p.problems.end());
    if (!p.entry) continue;
    if (auto it = seen.find(p.entry->id); it != seen.end()) {
      kb.problems.push_back({p.entry->file().string(), 0,
                             fmt::format("id '{}' is also used by {}: entry ids are unique across targets", p.entry->id, it->second.string())});
      continue;
    }
    seen[p.entry->id] = d;
    p.entry->kb_root = root;
    kb.entries.push_back(std::move(*p.entry));
  }
  return kb;
}

KnowledgeBase load_kb(const std::vector<fs::path>& roots) {
  KnowledgeBase kb;
  for (const auto& root : roots) {
    KnowledgeBase layer = load_kb(root);
    kb.problems.insert(kb.problems.end(), layer.problems.begin(), layer.problems.end());
    for (auto& e : layer.entries) {
      auto same = std::find_if(kb.entries.begin(), kb.entries.end(), [&](const Entry& x) { return x.id == e.id; });
      if (same != kb.entries.end()) *same = std::move(e);
      else kb.entries.push_back(std::move(e));
    }
  }
  std::sort(kb.entries.begin(), kb.entries.end(), [](const Entry& a, const Entry& b) { return std::tie(a.target, a.id) < std::tie(b.target, b.id); });
  kb.roots = roots;
  if (!roots.empty()) kb.root = roots.front();
  return kb;
}

Expected<fs::path> propose_entry(const fs::path& root, const fs::path& dir) {
  EntryParse p = load_entry(dir, false);
  if (!p.entry) {
    std::string text;
    for (const auto& d : p.problems) text += (text.empty() ? "" : "\n") + d.to_string();
    return fail("{}", text);
  }
  Entry e = *p.entry;
  const fs::path dest = root / e.target / e.id;
  std::error_code ec;
  const bool in_place = fs::exists(dest, ec) && fs::equivalent(dest, dir, ec);
  if (!in_place) {
    if (fs::exists(dest, ec)) return fail("{} already exists: an entry with id '{}' is filed there", dest.string(), e.id);
    KnowledgeBase kb = load_kb(root);
    if (const Entry* other = kb.find(e.id)) return fail("id '{}' is already used by {}", e.id, other->dir.string());
    fs::create_directories(dest.parent_path(), ec);
    fs::copy(dir, dest, fs::copy_options::recursive, ec);
    if (ec) return fail("cannot copy {} to {}: {}", dir.string(), dest.string(), ec.message());
  }
  e.dir = dest;
  e.status = EntryStatus::Proposed;
  e.evidence.clear();
  TEMPER_TRY(write_status_and_evidence(e));
  EntryParse check = load_entry(dest);
  if (!check.entry) return fail("{} does not validate where it was filed: {}", dest.string(), check.problems.front().to_string());
  return dest;
}

std::string export_markdown(const KnowledgeBase& kb, const std::string& target_class, const TargetFingerprint& here) {
  std::string out = fmt::format("# Hardware knowledge: {}\n\n", target_class);
  out += "Certified by temper's probes (`temper kb certify`): each claim below was confirmed on this target by the judge's\n"
         "paired timing protocol or its profiler, with the evidence shown. Use them; do not re-derive them.\n\n";
  int stale = 0, shown = 0;
  for (const auto& e : kb.entries) {
    if (e.target != target_class || e.status != EntryStatus::Certified) continue;
    if (e.effective_status(here.id()) == EntryStatus::Stale) {
      ++stale;
      continue;
    }
    const Evidence* ev = e.last_decisive();
    out += fmt::format("## {} ({})\n\n", e.title, e.id);
    out += fmt::format("- **Claim:** {}\n- **Mechanism:** {}\n- **In a kernel:** {}\n", e.claim, e.mechanism, e.usage);
    if (ev) out += fmt::format("- **Evidence:** {} on {} (fingerprint {}): {}\n", ev->outcome, ev->date, ev->fingerprint, ev->reason);
    if (!e.tags.empty()) out += fmt::format("- **Tags:** {}\n", fmt::join(e.tags, ", "));
    // Entries of the user's knowledge base (bootstrapped here) are not in the repository yet.
    if (kb.roots.size() > 1 && !e.kb_root.empty() && e.kb_root != kb.root)
      out += fmt::format("- **Files:** {} (this machine's knowledge base; contribute it as hw_kb/{}/{})\n", e.dir.string(), e.target, e.id);
    out += "\n";
    ++shown;
  }
  if (shown == 0) out += "No certified entries for this target yet.\n";
  if (stale) out += fmt::format("\n({} certified entr{} left out: certified on another fingerprint, stale here.)\n", stale, stale == 1 ? "y" : "ies");
  return out;
}

int probe_threads(const Entry& e) {
  auto task = core::load_task(e.dir / e.probe.task);
  return task ? task->config.threads : 1;
}

judge::Roofline roofline_from_kb(const KnowledgeBase& kb, const TargetFingerprint& here, int threads) {
  // Per side, the best candidate figure: one certified at exactly `threads` threads wins over
  // any other (a figure at another count is not a certified figure for this one), then the
  // highest. Without one at this count: bandwidth measured with fewer threads (a lower figure,
  // so a conservative bound), flops scaled by the thread ratio; the source says which.
  struct Pick {
    double value = 0;
    bool exact = false;
    int threads = 0;
    std::string id;
    bool better_than(const Pick& o) const { return exact != o.exact ? exact : value > o.value; }
  };
  Pick bw, fl;
  for (const auto& e : kb.entries) {
    if (e.target != here.target_class() || e.probe.kind != ProbeKind::Measure || e.probe.figure.roofline.empty()) continue;
    if (e.effective_status(here.id()) != EntryStatus::Certified) continue;
    const Evidence* ev = e.last_decisive();
    if (!ev || !ev->figures.contains("value") || !ev->figures["value"].is_number()) continue;
    const double value = ev->figures["value"].get<double>() * e.probe.figure.scale;
    const int t = probe_threads(e);
    if (e.probe.figure.roofline == "bytes_per_s") {
      const Pick p{value, t == threads, t, e.id};
      if (t <= threads && p.better_than(bw)) bw = p;
    } else {
      const double scaled = value * std::min(threads, here.cores > 0 ? here.cores : threads) / std::max(1, t);
      const Pick p{scaled, t == threads, t, e.id};
      if (p.better_than(fl)) fl = p;
    }
  }
  judge::Roofline r;
  r.bytes_per_s = bw.value;
  r.flops_per_s = fl.value;
  auto named = [&](const Pick& p, const char* how) {
    if (p.id.empty()) return std::string("none");
    return p.exact ? p.id : fmt::format("{} ({} from {} thread{})", p.id, how, p.threads, p.threads == 1 ? "" : "s");
  };
  r.source = fmt::format("hw_kb {}: bandwidth {}, flops {}", here.target_class(), named(bw, "measured"), named(fl, "scaled"));
  return r;
}

} // namespace temper::kb
