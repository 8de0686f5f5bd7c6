#include "kb/entry.h"

#include "core/expr.h"
#include "core/task_parse.h"
#include "judge/profile/metrics.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <sstream>

namespace temper::kb {

namespace fs = std::filesystem;
using core::detail::line_of;

std::string_view status_name(EntryStatus s) {
  switch (s) {
  case EntryStatus::Proposed: return "proposed";
  case EntryStatus::Certified: return "certified";
  case EntryStatus::Refuted: return "refuted";
  case EntryStatus::Stale: return "stale";
  }
  return "proposed";
}

std::optional<EntryStatus> parse_status(std::string_view text) {
  for (auto s : {EntryStatus::Proposed, EntryStatus::Certified, EntryStatus::Refuted, EntryStatus::Stale}) {
    if (status_name(s) == text) return s;
  }
  return std::nullopt;
}

std::string_view probe_kind_name(ProbeKind k) {
  switch (k) {
  case ProbeKind::Paired: return "paired";
  case ProbeKind::Measure: return "measure";
  case ProbeKind::Metric: return "metric";
  }
  return "paired";
}

std::string Range::to_string() const {
  return fmt::format("{}{}, {}{}", min ? "[" : "(", min ? fmt::format("{:g}", *min) : "-inf",
                     max ? fmt::format("{:g}", *max) : "inf", max ? "]" : ")");
}

const Evidence* Entry::last_decisive() const {
  for (auto it = evidence.rbegin(); it != evidence.rend(); ++it) {
    if (it->decisive()) return &*it;
  }
  return nullptr;
}

EntryStatus Entry::effective_status(const std::string& fingerprint) const {
  if (status != EntryStatus::Certified && status != EntryStatus::Refuted) return status;
  const Evidence* e = last_decisive();
  if (!e || e->fingerprint != fingerprint) return EntryStatus::Stale;
  return status;
}

namespace {

nlohmann::json range_json(const Range& r) {
  return {{"min", r.min ? nlohmann::json(*r.min) : nlohmann::json()}, {"max", r.max ? nlohmann::json(*r.max) : nlohmann::json()}};
}

nlohmann::json evidence_json(const Evidence& e) {
  return {{"date", e.date},       {"fingerprint", e.fingerprint}, {"target", e.target},          {"outcome", e.outcome},
          {"figures", e.figures}, {"reason", e.reason},           {"report_hash", e.report_hash}};
}

} // namespace

nlohmann::json Entry::to_json(const std::string& fingerprint) const {
  nlohmann::json p = {{"kind", probe_kind_name(probe.kind)},
                      {"task", probe.task.string()},
                      {"case", probe.case_id},
                      {"requires_flags", probe.requires_flags},
                      {"cache", probe.cache},
                      {"cap_s", probe.cap_s},
                      {"jobs", probe.jobs}};
  if (!probe.flags.empty()) p["flags"] = probe.flags;
  if (probe.kind == ProbeKind::Paired) {
    p["a"] = probe.a.string();
    p["b"] = probe.b.string();
    p["expect"] = {{"speedup", range_json(probe.expect)}};
  } else {
    p["kernel"] = probe.kernel.string();
  }
  if (probe.kind == ProbeKind::Measure) {
    p["figure"] = {{"name", probe.figure.name}, {"unit", probe.figure.unit}, {"work", probe.figure.work},
                   {"roofline", probe.figure.roofline}};
    p["accept"] = range_json(probe.accept);
  }
  if (probe.kind == ProbeKind::Metric) {
    p["metric"] = {{"name", probe.metric.name}, {"expect", range_json(probe.metric.expect)}};
    p["calls"] = probe.calls;
    p.erase("cap_s");
  }
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : evidence) ev.push_back(evidence_json(e));
  return {{"schema_version", kEntrySchemaVersion},
          {"id", id},
          {"title", title},
          {"target", target},
          {"claim", claim},
          {"mechanism", mechanism},
          {"usage", usage},
          {"tags", tags},
          {"probe", p},
          {"status", status_name(status)},
          {"effective_status", status_name(effective_status(fingerprint))},
          {"evidence", ev},
          {"dir", dir.string()}};
}

namespace {

// Units a figure may use, and what one unit is worth.
std::optional<double> unit_scale(std::string_view unit) {
  if (unit == "GB/s" || unit == "GFLOP/s" || unit == "Gelem/s") return 1e9;
  if (unit == "MB/s" || unit == "MFLOP/s" || unit == "Melem/s") return 1e6;
  if (unit == "TB/s" || unit == "TFLOP/s") return 1e12;
  if (unit == "GiB/s") return double(1ull << 30);
  return std::nullopt;
}

class EntryParser {
public:
  EntryParser(fs::path dir, bool check_location) : m_dir(std::move(dir)), m_file((m_dir / "entry.yaml").string()), m_check_location(check_location) {}

  EntryParse parse() {
    EntryParse out;
    auto root = core::detail::load_yaml(m_file, m_diags);
    if (!root) {
      out.problems = m_diags;
      return out;
    }
    if (!root->IsMap()) {
      error(*root, "entry.yaml must be a map that starts with 'schema_version: 1'");
      out.problems = m_diags;
      return out;
    }
    const YAML::Node& r = *root;
    core::detail::check_keys(r, {"schema_version", "id", "title", "target", "claim", "mechanism", "usage", "tags", "probe", "status", "evidence"},
                             "entry.yaml", m_file, m_diags);
    m_entry.dir = m_dir;
    if (auto v = number(r, "schema_version", true); v && *v != kEntrySchemaVersion)
      error(r["schema_version"], fmt::format("schema_version must be {}, got {}", kEntrySchemaVersion, *v));
    m_entry.id = text(r, "id", true);
    m_entry.title = text(r, "title", true);
    m_entry.target = text(r, "target", true);
    m_entry.claim = text(r, "claim", true);
    m_entry.mechanism = text(r, "mechanism", true);
    m_entry.usage = text(r, "usage", true);
    check_names(r);
    if (const YAML::Node n = r["tags"]; n.IsDefined()) m_entry.tags = text_list(n, "tags");
    if (const YAML::Node n = r["probe"]; n.IsDefined()) read_probe(n);
    else error(r, "missing 'probe' (kind: paired, measure or metric, and its files)");
    std::string status = text(r, "status", true);
    if (!status.empty()) {
      if (auto s = parse_status(status)) m_entry.status = *s;
      else error(r["status"], fmt::format("status must be proposed, certified, refuted or stale, not '{}'", status));
    }
    if (const YAML::Node n = r["evidence"]; n.IsDefined() && !n.IsNull()) read_evidence(n);
    if ((m_entry.status == EntryStatus::Certified || m_entry.status == EntryStatus::Refuted) && !m_entry.last_decisive())
      error(r["status"], fmt::format("status {} needs evidence: an outcome '{}' from `temper kb certify`", status, status));
    out.problems = m_diags;
    if (m_diags.empty()) out.entry = std::move(m_entry);
    return out;
  }

private:
  void error(const YAML::Node& n, std::string message) { core::detail::report(m_diags, m_file, line_of(n), std::move(message)); }

  std::string text(const YAML::Node& map, const char* key, bool required) {
    const YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) {
      if (required) error(map, fmt::format("missing '{}'", key));
      return {};
    }
    if (!n.IsScalar()) {
      error(n, fmt::format("'{}' must be text", key));
      return {};
    }
    std::string s = n.Scalar();
    if (required && s.empty()) error(n, fmt::format("'{}' must not be empty", key));
    return s;
  }

  std::optional<double> number(const YAML::Node& map, const char* key, bool required) {
    const YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) {
      if (required) error(map, fmt::format("missing '{}'", key));
      return std::nullopt;
    }
    auto j = core::detail::yaml_to_json(n);
    if (!j.is_number()) {
      error(n, fmt::format("'{}' must be a number, not '{}'", key, n.IsScalar() ? n.Scalar() : "a " + std::string(n.IsMap() ? "map" : "list")));
      return std::nullopt;
    }
    return j.get<double>();
  }

  std::vector<std::string> text_list(const YAML::Node& n, const char* key) {
    std::vector<std::string> out;
    if (!n.IsSequence()) {
      error(n, fmt::format("'{}' must be a list of words", key));
      return out;
    }
    for (const auto& item : n) {
      if (!item.IsScalar()) error(item, fmt::format("'{}' items must be words", key));
      else out.push_back(item.Scalar());
    }
    return out;
  }

  void check_names(const YAML::Node& r) {
    static const std::regex kName("[a-z0-9][a-z0-9._-]*");
    if (!m_entry.id.empty() && !std::regex_match(m_entry.id, kName))
      error(r["id"], fmt::format("id '{}' must be lower-case letters, digits, '.', '_' or '-'", m_entry.id));
    if (!m_entry.target.empty() && !std::regex_match(m_entry.target, kName))
      error(r["target"], fmt::format("target '{}' must be a target class such as x86_64-zen5-avx512", m_entry.target));
    if (!m_check_location) return;
    fs::path abs = fs::absolute(m_dir).lexically_normal();
    if (abs.filename().empty()) abs = abs.parent_path();
    if (!m_entry.id.empty() && abs.filename() != m_entry.id)
      error(r["id"], fmt::format("id '{}' must equal the entry's directory name '{}'", m_entry.id, abs.filename().string()));
    if (!m_entry.target.empty() && abs.parent_path().filename() != m_entry.target)
      error(r["target"], fmt::format("target '{}' must equal the directory above the entry, '{}' (hw_kb/<target>/<id>/)", m_entry.target,
                                     abs.parent_path().filename().string()));
  }

  Range range(const YAML::Node& n, const char* what) {
    Range out;
    if (!n.IsMap()) {
      error(n, fmt::format("'{}' must be a map with 'min' and/or 'max'", what));
      return out;
    }
    core::detail::check_keys(n, {"min", "max"}, what, m_file, m_diags);
    out.min = number(n, "min", false);
    out.max = number(n, "max", false);
    if (!out.min && !out.max) error(n, fmt::format("'{}' needs 'min', 'max' or both", what));
    if (out.min && out.max && *out.min > *out.max) error(n, fmt::format("'{}': min {} is above max {}", what, *out.min, *out.max));
    return out;
  }

  fs::path file_of(const YAML::Node& p, const char* key, const fs::path& task_dir) {
    std::string name = text(p, key, true);
    if (name.empty()) return {};
    fs::path f = task_dir / name;
    std::error_code ec;
    if (!fs::is_regular_file(m_dir / f, ec)) error(p[key], fmt::format("probe.{}: no file {}", key, (m_dir / f).string()));
    return f;
  }

  void read_probe(const YAML::Node& p) {
    Probe& pr = m_entry.probe;
    if (!p.IsMap()) {
      error(p, "'probe' must be a map (kind, task, case, and the kind's keys)");
      return;
    }
    core::detail::check_keys(p, {"kind", "task", "case", "requires_flags", "cache", "cap_s", "jobs", "flags", "a", "b", "expect", "kernel", "figure", "accept", "metric", "calls"},
                             "probe", m_file, m_diags);
    std::string kind = text(p, "kind", true);
    if (kind == "paired") pr.kind = ProbeKind::Paired;
    else if (kind == "measure") pr.kind = ProbeKind::Measure;
    else if (kind == "metric") pr.kind = ProbeKind::Metric;
    else if (!kind.empty()) error(p["kind"], fmt::format("probe.kind must be paired, measure or metric, not '{}'", kind));
    if (std::string t = text(p, "task", false); !t.empty()) pr.task = t;
    std::error_code ec;
    for (const char* f : {"proto.yaml", "temper.yaml", "golden.cpp"}) {
      if (!fs::is_regular_file(m_dir / pr.task / f, ec))
        error(p, fmt::format("probe task {} has no {} (a probe's task is a temper task directory)", (m_dir / pr.task).string(), f));
    }
    if (auto c = number(p, "case", false)) pr.case_id = static_cast<int64_t>(*c);
    if (const YAML::Node n = p["requires_flags"]; n.IsDefined()) pr.requires_flags = text_list(n, "probe.requires_flags");
    if (std::string c = text(p, "cache", false); !c.empty()) {
      if (c != "cold" && c != "warm") error(p["cache"], fmt::format("probe.cache must be cold or warm, not '{}'", c));
      pr.cache = c;
    }
    if (auto v = number(p, "cap_s", false)) {
      if (*v <= 0 || *v > 60) error(p["cap_s"], fmt::format("probe.cap_s must be in (0, 60] seconds, got {}", *v));
      pr.cap_s = *v;
    }
    if (auto v = number(p, "jobs", false)) {
      if (*v < 1 || *v > 5) error(p["jobs"], fmt::format("probe.jobs must be 1 to 5, got {}", *v));
      pr.jobs = static_cast<int>(*v);
    }
    pr.flags = text(p, "flags", false);
    auto forbid = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        if (p[k].IsDefined()) error(p[k], fmt::format("probe.{} does not belong to a {} probe", k, kind));
      }
    };
    if (pr.kind == ProbeKind::Paired) {
      forbid({"kernel", "figure", "accept", "metric", "calls"});
      pr.a = file_of(p, "a", pr.task);
      pr.b = file_of(p, "b", pr.task);
      if (const YAML::Node e = p["expect"]; e.IsDefined()) {
        if (!e.IsMap() || !e["speedup"].IsDefined()) error(e, "probe.expect must be {speedup: {min: X, max: Y}} (b's speedup over a)");
        else {
          core::detail::check_keys(e, {"speedup"}, "probe.expect", m_file, m_diags);
          pr.expect = range(e["speedup"], "probe.expect.speedup");
        }
      } else {
        error(p, "a paired probe needs 'expect: {speedup: {min: X}}' (b's speedup over a)");
      }
      return;
    }
    forbid({"a", "b", "expect"});
    pr.kernel = file_of(p, "kernel", pr.task);
    if (pr.kind == ProbeKind::Measure) {
      forbid({"metric", "calls"});
      const YAML::Node f = p["figure"];
      if (!f.IsDefined() || !f.IsMap()) {
        error(f.IsDefined() ? f : p, "a measure probe needs 'figure: {name, unit, work}' (work: bytes or flops per call, an expression of the case)");
      } else {
        core::detail::check_keys(f, {"name", "unit", "work", "roofline"}, "probe.figure", m_file, m_diags);
        pr.figure.name = text(f, "name", true);
        pr.figure.unit = text(f, "unit", true);
        pr.figure.work = text(f, "work", true);
        pr.figure.roofline = text(f, "roofline", false);
        if (!pr.figure.unit.empty()) {
          if (auto s = unit_scale(pr.figure.unit)) pr.figure.scale = *s;
          else error(f["unit"], fmt::format("probe.figure.unit '{}' is not one of GB/s, GiB/s, MB/s, TB/s, GFLOP/s, TFLOP/s, MFLOP/s, Gelem/s, Melem/s", pr.figure.unit));
        }
        if (!pr.figure.roofline.empty() && pr.figure.roofline != "bytes_per_s" && pr.figure.roofline != "flops_per_s")
          error(f["roofline"], fmt::format("probe.figure.roofline must be bytes_per_s or flops_per_s, not '{}'", pr.figure.roofline));
        if (!pr.figure.work.empty()) {
          if (auto e = core::parse_expr(pr.figure.work); !e)
            error(f["work"], fmt::format("probe.figure.work '{}' does not parse: {}", pr.figure.work, e.error().message));
        }
      }
      if (const YAML::Node a = p["accept"]; a.IsDefined()) pr.accept = range(a, "probe.accept");
      else error(p, "a measure probe needs 'accept: {min: X, max: Y}' (the figure's accepted range)");
      return;
    }
    read_metric(p);
  }

  // A metric probe profiles `calls` cold calls per job (the profiler flushes the caches before each).
  void read_metric(const YAML::Node& p) {
    Probe& pr = m_entry.probe;
    for (const char* k : {"figure", "accept", "cap_s"}) {
      if (p[k].IsDefined())
        error(p[k], fmt::format("probe.{} does not belong to a metric probe{}", k, std::string_view(k) == "cap_s" ? " (it profiles 'calls' calls per job)" : ""));
    }
    if (pr.cache != "cold") error(p["cache"], "probe.cache: a metric probe profiles cold calls (the profiler flushes the caches before each call); write cold or leave it out");
    if (auto v = number(p, "calls", false)) {
      if (*v < 6 || *v > 1000) error(p["calls"], fmt::format("probe.calls must be 6 to 1000 (6 is the fewest with a 95% interval of a median), got {}", *v));
      pr.calls = static_cast<int>(*v);
    }
    const YAML::Node m = p["metric"];
    if (!m.IsDefined() || !m.IsMap()) {
      error(m.IsDefined() ? m : p, "a metric probe needs 'metric: {name: NAME, expect: {min: X, max: Y}}' (NAME from docs/metrics.md)");
      return;
    }
    core::detail::check_keys(m, {"name", "expect"}, "probe.metric", m_file, m_diags);
    pr.metric.name = text(m, "name", true);
    if (!pr.metric.name.empty()) {
      if (!judge::profile::find_metric(pr.metric.name)) {
        std::string near = judge::profile::closest_metric(pr.metric.name);
        error(m["name"], fmt::format("probe.metric.name '{}' is not a metric temper measures{}; docs/metrics.md lists them", pr.metric.name,
                                     near.empty() ? "" : fmt::format(" (did you mean {}?)", near)));
      } else if (pr.metric.name == "time.speedup") {
        error(m["name"], "probe.metric.name time.speedup compares two kernels: write a paired probe (a, b, expect: {speedup: ...})");
      }
    }
    if (m["expect"].IsDefined()) pr.metric.expect = range(m["expect"], "probe.metric.expect");
    else error(m, "probe.metric needs 'expect: {min: X, max: Y}'");
  }

  void read_evidence(const YAML::Node& n) {
    if (!n.IsSequence()) {
      error(n, "'evidence' must be a list (written by `temper kb certify`)");
      return;
    }
    for (const auto& item : n) {
      if (!item.IsMap()) {
        error(item, "each evidence item must be a map");
        continue;
      }
      core::detail::check_keys(item, {"date", "fingerprint", "target", "outcome", "figures", "reason", "report_hash"}, "evidence", m_file, m_diags);
      Evidence e;
      e.date = text(item, "date", true);
      e.fingerprint = text(item, "fingerprint", true);
      e.target = text(item, "target", false);
      e.outcome = text(item, "outcome", true);
      if (!e.outcome.empty() && e.outcome != "certified" && e.outcome != "refuted" && e.outcome != "ambiguous")
        error(item["outcome"], fmt::format("evidence outcome must be certified, refuted or ambiguous, not '{}'", e.outcome));
      if (item["figures"].IsDefined()) e.figures = core::detail::yaml_to_json(item["figures"]);
      e.reason = text(item, "reason", false);
      e.report_hash = text(item, "report_hash", false);
      m_entry.evidence.push_back(std::move(e));
    }
  }

  fs::path m_dir;
  std::string m_file;
  bool m_check_location;
  Entry m_entry;
  core::detail::Diagnostics m_diags;
};

// A YAML scalar that survives a round trip: JSON's double-quoted strings are valid YAML.
std::string yaml_scalar(const std::string& s) { return nlohmann::json(s).dump(); }

std::string yaml_value(const nlohmann::json& j) {
  if (j.is_string()) return yaml_scalar(j.get<std::string>());
  if (j.is_number_float()) {
    double v = j.get<double>();
    if (!std::isfinite(v)) return v > 0 ? ".inf" : v < 0 ? "-.inf" : ".nan";
    return fmt::format("{:.6g}", v);
  }
  if (j.is_object()) {
    std::string out = "{";
    for (auto it = j.begin(); it != j.end(); ++it) out += fmt::format("{}{}: {}", out.size() > 1 ? ", " : "", it.key(), yaml_value(it.value()));
    return out + "}";
  }
  return j.dump();
}

bool top_level_key(const std::string& line, std::string_view key) {
  return line.rfind(std::string(key) + ":", 0) == 0;
}

} // namespace

EntryParse load_entry(const fs::path& dir, bool check_location) { return EntryParser(dir, check_location).parse(); }

Status write_status_and_evidence(const Entry& e) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(e.file()));
  std::istringstream in(text);
  std::string line, kept;
  bool skipping = false;
  while (std::getline(in, line)) {
    if (top_level_key(line, "status") || top_level_key(line, "evidence")) {
      skipping = top_level_key(line, "evidence");
      continue;
    }
    // The evidence block runs until the next top-level key or comment.
    if (skipping && !line.empty() && line[0] != ' ' && line[0] != '-') skipping = false;
    if (skipping) continue;
    kept += line + "\n";
  }
  while (kept.size() >= 2 && kept[kept.size() - 1] == '\n' && kept[kept.size() - 2] == '\n') kept.pop_back();
  kept += fmt::format("status: {}\n", status_name(e.status));
  if (e.evidence.empty()) {
    kept += "evidence: []\n";
  } else {
    kept += "evidence:\n";
    for (const auto& ev : e.evidence) {
      kept += fmt::format("- date: {}\n", yaml_scalar(ev.date));
      kept += fmt::format("  fingerprint: {}\n", yaml_scalar(ev.fingerprint));
      kept += fmt::format("  target: {}\n", yaml_scalar(ev.target));
      kept += fmt::format("  outcome: {}\n", ev.outcome);
      kept += fmt::format("  figures: {}\n", yaml_value(ev.figures));
      kept += fmt::format("  reason: {}\n", yaml_scalar(ev.reason));
      kept += fmt::format("  report_hash: {}\n", yaml_scalar(ev.report_hash));
    }
  }
  return util::write_file_atomic(e.file(), kept);
}

} // namespace temper::kb
