#include "campaign/plan.h"

#include "build/knobs.h"
#include "core/task_loader.h"
#include "util/fs.h"
#include "util/text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

namespace temper::campaign {

namespace fs = std::filesystem;

namespace {

using nlohmann::json;

// A knob value as the text a kernel's declaration and -DNAME=VALUE use: 1 and "1" are the same.
std::optional<std::string> knob_text(const json& v) {
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float() && std::isfinite(v.get<double>())) return v.dump();
  if (v.is_string() && !v.get<std::string>().empty()) return v.get<std::string>();
  return std::nullopt;
}

// Collects issues while walking a document; every check records its own path.
class Checker {
public:
  explicit Checker(const PlanContext& ctx) : m_ctx(ctx) {}
  std::vector<PlanIssue> issues;

  void add(const std::string& path, std::string message) { issues.push_back({path.empty() ? "/" : path, std::move(message)}); }

  const json* field(const json& obj, const std::string& path, const char* key, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) add(path, fmt::format("missing required field '{}'", key));
      return nullptr;
    }
    return &*it;
  }

  std::string text(const json& obj, const std::string& path, const char* key, bool required = true) {
    const json* v = field(obj, path, key, required);
    if (!v) return {};
    if (!v->is_string() || v->get<std::string>().empty()) {
      add(path + "/" + key, "must be a non-empty string");
      return {};
    }
    return v->get<std::string>();
  }

  std::vector<std::string> strings(const json& obj, const std::string& path, const char* key, bool required,
                                   bool non_empty) {
    std::vector<std::string> out;
    const json* v = field(obj, path, key, required);
    if (!v) return out;
    const std::string p = path + "/" + key;
    if (!v->is_array()) {
      add(p, "must be an array of strings");
      return out;
    }
    if (non_empty && v->empty()) add(p, "must not be empty");
    for (size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (!e.is_string() || e.get<std::string>().empty()) {
        add(fmt::format("{}/{}", p, i), "must be a non-empty string");
      } else {
        out.push_back(e.get<std::string>());
      }
    }
    return out;
  }

  // "all" (or absent) is the campaign's selection, else a list of the task's case ids.
  std::vector<int64_t> cases(const json& obj, const std::string& path, const char* key) {
    std::vector<int64_t> out;
    const json* v = field(obj, path, key, false);
    if (!v || (v->is_string() && v->get<std::string>() == "all")) return out;
    const std::string p = path + "/" + key;
    if (!v->is_array() || v->empty()) {
      add(p, "must be \"all\" or a non-empty array of case ids");
      return out;
    }
    for (size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (!e.is_number_integer()) {
        add(fmt::format("{}/{}", p, i), "must be an integer case id");
        continue;
      }
      int64_t id = e.get<int64_t>();
      if (!m_ctx.case_ids.empty() && !m_ctx.case_ids.count(id)) {
        add(fmt::format("{}/{}", p, i), fmt::format("case {} does not exist in the task", id));
      }
      out.push_back(id);
    }
    return out;
  }

  void kb_ids(const std::vector<std::string>& ids, const std::string& path) {
    if (m_ctx.kb_ids.empty() && !ids.empty()) {
      for (size_t i = 0; i < ids.size(); ++i) {
        add(fmt::format("{}/{}", path, i), fmt::format("knowledge entry '{}' is unknown: no certified entries were given for this target", ids[i]));
      }
      return;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!m_ctx.kb_ids.count(ids[i])) add(fmt::format("{}/{}", path, i), fmt::format("knowledge entry '{}' is not among the certified entries given", ids[i]));
    }
  }

  void unknown_keys(const json& obj, const std::string& path, std::initializer_list<const char*> known) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (const char* k : known) ok = ok || it.key() == k;
      if (!ok) add(path + "/" + it.key(), "unknown field (check the spelling against docs/plan-format.md)");
    }
  }

  const PlanContext& ctx() const { return m_ctx; }

private:
  const PlanContext& m_ctx;
};

Decision check_decision(Checker& c, const json& d, const std::string& path, size_t index) {
  Decision out;
  if (!d.is_object()) {
    c.add(path, "must be an object");
    return out;
  }
  c.unknown_keys(d, path, {"id", "title", "choice", "rationale", "evidence", "alternatives"});
  out.id = c.text(d, path, "id");
  const std::string expect = fmt::format("D{}", index + 1);
  if (!out.id.empty() && out.id != expect) c.add(path + "/id", fmt::format("decisions are numbered D1..Dn in order: expected '{}', got '{}'", expect, out.id));
  out.title = c.text(d, path, "title");
  out.choice = c.text(d, path, "choice");
  out.rationale = c.text(d, path, "rationale");
  if (const json* e = c.field(d, path, "evidence", true)) {
    const std::string p = path + "/evidence";
    if (!e->is_object()) {
      c.add(p, "must be an object {\"kb\": [...], \"measurements\": [...]}");
    } else {
      c.unknown_keys(*e, p, {"kb", "measurements"});
      out.evidence.kb = c.strings(*e, p, "kb", false, false);
      c.kb_ids(out.evidence.kb, p + "/kb");
      out.evidence.measurements = c.strings(*e, p, "measurements", false, false);
      if (out.evidence.kb.empty() && out.evidence.measurements.empty()) c.add(p, "a decision rests on evidence: cite at least one knowledge entry or measurement");
    }
  }
  out.alternatives = c.strings(d, path, "alternatives", false, false);
  return out;
}

std::optional<PerformanceGate> check_gate(Checker& c, const json& g, const std::string& path) {
  if (!g.is_object()) {
    c.add(path, "must be an object {tier, cases, min_speedup and/or min_roofline, against}");
    return std::nullopt;
  }
  c.unknown_keys(g, path, {"tier", "cases", "min_speedup", "min_roofline", "against"});
  PerformanceGate out;
  out.tier = c.text(g, path, "tier");
  if (!out.tier.empty() && out.tier != "probe" && out.tier != "gate") c.add(path + "/tier", fmt::format("must be \"probe\" or \"gate\", not '{}'", out.tier));
  out.cases = c.cases(g, path, "cases");
  if (!g.contains("min_speedup") && !g.contains("min_roofline")) {
    c.add(path, "needs min_speedup (over the baseline) or min_roofline (a fraction of this machine's roofline), or both");
  }
  if (const json* m = c.field(g, path, "min_speedup", false)) {
    if (!m->is_number() || !std::isfinite(m->get<double>()) || m->get<double>() <= 0) {
      c.add(path + "/min_speedup", "must be a positive number (1.2 means 20% faster than the baseline)");
    } else {
      out.min_speedup = m->get<double>();
    }
  }
  if (const json* m = c.field(g, path, "min_roofline", false)) {
    if (!m->is_number() || !std::isfinite(m->get<double>()) || m->get<double>() <= 0 || m->get<double>() > 1) {
      c.add(path + "/min_roofline", "must be a fraction in (0, 1] (0.6 means 60% of the roofline)");
    } else if (!c.ctx().roofline_missing.empty() && !g.contains("min_speedup")) {
      c.add(path + "/min_roofline", fmt::format("this machine has no roofline ({}): add min_speedup, or certify the "
                                                "machine's peaks with `temper kb bootstrap`", c.ctx().roofline_missing));
    } else {
      out.min_roofline = m->get<double>();
    }
  }
  if (const json* a = c.field(g, path, "against", false)) {
    if (!a->is_string() || (*a != "reference" && *a != "previous")) {
      c.add(path + "/against", "must be \"reference\" or \"previous\"");
    } else {
      out.against = a->get<std::string>();
    }
  }
  return out;
}

// The knob declarations of `starter`, or an issue at `where` saying why there are none.
std::optional<build::KnobSpace> starter_knobs(Checker& c, const std::string& starter, const std::string& where) {
  auto file = resolve_starter(starter, c.ctx());
  if (!file) {
    c.add(where, file.error().message);
  } else if (auto text = util::read_file(*file); !text) {
    c.add(where, text.error().message);
  } else if (auto space = build::parse_knobs(*text); !space) {
    c.add(where, fmt::format("the starter's knob declarations are not valid: {}", space.error().message));
  } else {
    return std::move(*space);
  }
  return std::nullopt;
}

// `starter` (a kernel file the Student starts from) and `knobs` (NAME -> values, or one value
// that fixes the knob). The knobs are checked against the starter's declarations; a milestone
// without a starter continues from the accepted kernel of an earlier one, so its knobs are
// checked against the nearest earlier milestone's starter.
void check_starter_and_knobs(Checker& c, const json& m, const std::string& path, Milestone& out,
                             const std::vector<Milestone>& before) {
  std::optional<build::KnobSpace> declared;
  std::string kernel; // names the declaring kernel in messages
  if (const json* st = c.field(m, path, "starter", false)) {
    if (!st->is_string() || st->get<std::string>().empty()) {
      c.add(path + "/starter", "must be a non-empty string: a kernel file relative to the task directory (kernels/NAME.cpp)");
    } else {
      out.starter = st->get<std::string>();
      declared = starter_knobs(c, out.starter, path + "/starter");
      kernel = "the starter " + out.starter;
    }
  }
  const json* kn = c.field(m, path, "knobs", false);
  if (!kn) return;
  if (out.starter.empty()) {
    for (auto b = before.rbegin(); b != before.rend(); ++b) {
      if (b->starter.empty()) continue;
      // An unreadable starter was reported at its own milestone; nothing to check against then.
      Checker quiet(c.ctx());
      declared = starter_knobs(quiet, b->starter, path);
      kernel = fmt::format("{} ({}'s starter, which this milestone continues from)", b->starter, b->id);
      break;
    }
  }
  const std::string p = path + "/knobs";
  if (!kn->is_object()) {
    c.add(p, "must be an object {\"NAME\": [values] | value}");
    return;
  }
  for (auto it = kn->begin(); it != kn->end(); ++it) {
    const std::string& name = it.key();
    const std::string kp = p + "/" + name;
    if (!util::is_identifier(name)) {
      c.add(kp, fmt::format("'{}' is not a knob name (a C identifier)", name));
      continue;
    }
    const build::Knob* knob = declared ? declared->find(name) : nullptr;
    if (declared && !knob) {
      std::vector<std::string> names;
      for (const auto& k : declared->knobs) names.push_back(k.name);
      c.add(kp, fmt::format("{} declares no knob {} (it declares: {})", kernel, name,
                            names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
      continue;
    }
    std::vector<std::pair<std::string, std::string>> values; // path, text
    if (it->is_array()) {
      if (it->empty()) c.add(kp, "must not be empty: list the values to try, or give one value to fix the knob");
      for (size_t i = 0; i < it->size(); ++i) {
        auto t = knob_text((*it)[i]);
        if (!t) c.add(fmt::format("{}/{}", kp, i), "must be a number or a non-empty string");
        else values.emplace_back(fmt::format("{}/{}", kp, i), *t);
      }
    } else if (auto t = knob_text(*it)) {
      values.emplace_back(kp, *t);
    } else {
      c.add(kp, "must be a value (number or string) or a non-empty array of values");
    }
    std::vector<std::string>& kept = out.knobs[name];
    for (const auto& [vp, v] : values) {
      if (std::find(kept.begin(), kept.end(), v) != kept.end()) {
        c.add(vp, fmt::format("value {} listed twice", v));
        continue;
      }
      if (knob && std::find(knob->values.begin(), knob->values.end(), v) == knob->values.end()) {
        c.add(vp, fmt::format("{} is not a declared value of knob {} in {} ({{{}}})", v, name, kernel, fmt::join(knob->values, ", ")));
        continue;
      }
      kept.push_back(v);
    }
  }
}

Milestone check_milestone(Checker& c, const json& m, const std::string& path, size_t index,
                          const std::vector<Decision>& decisions, const std::vector<Milestone>& before) {
  Milestone out;
  if (!m.is_object()) {
    c.add(path, "must be an object");
    return out;
  }
  c.unknown_keys(m, path, {"id", "title", "requirements", "contract", "acceptance", "kb", "budget", "depends_on", "starter", "knobs"});
  out.id = c.text(m, path, "id");
  const std::string expect = fmt::format("M{}", index);
  if (!out.id.empty() && out.id != expect) c.add(path + "/id", fmt::format("milestones are numbered M0..Mk in order: expected '{}', got '{}'", expect, out.id));
  out.title = c.text(m, path, "title");
  out.requirements = c.strings(m, path, "requirements", true, true);
  out.contract = c.text(m, path, "contract");
  out.kb = c.strings(m, path, "kb", false, false);
  c.kb_ids(out.kb, path + "/kb");
  out.depends_on = c.strings(m, path, "depends_on", true, true);
  for (size_t i = 0; i < out.depends_on.size(); ++i) {
    bool known = false;
    for (const auto& d : decisions) known = known || d.id == out.depends_on[i];
    if (!known) c.add(fmt::format("{}/depends_on/{}", path, i), fmt::format("unknown decision '{}'", out.depends_on[i]));
  }
  if (const json* b = c.field(m, path, "budget", true)) {
    const std::string p = path + "/budget";
    if (!b->is_object()) {
      c.add(p, "must be an object {attempts, seconds}");
    } else {
      c.unknown_keys(*b, p, {"attempts", "seconds"});
      if (const json* a = c.field(*b, p, "attempts", true)) {
        if (!a->is_number_integer() || a->get<int64_t>() < 1 || a->get<int64_t>() > 1000) c.add(p + "/attempts", "must be an integer from 1 to 1000");
        else out.budget.attempts = a->get<int>();
      }
      if (const json* s = c.field(*b, p, "seconds", true)) {
        if (!s->is_number() || !(s->get<double>() > 0)) c.add(p + "/seconds", "must be a positive number of seconds");
        else out.budget.seconds = s->get<double>();
      }
    }
  }
  check_starter_and_knobs(c, m, path, out, before);
  if (const json* a = c.field(m, path, "acceptance", true)) {
    const std::string p = path + "/acceptance";
    if (!a->is_object()) {
      c.add(p, "must be an object {correctness, performance, expectations}");
      return out;
    }
    c.unknown_keys(*a, p, {"correctness", "performance", "expectations"});
    if (const json* corr = c.field(*a, p, "correctness", false)) {
      if (!corr->is_object()) c.add(p + "/correctness", "must be an object {\"cases\": \"all\" | [ids]} (correctness is always checked)");
      else {
        c.unknown_keys(*corr, p + "/correctness", {"cases"});
        out.acceptance.correctness_cases = c.cases(*corr, p + "/correctness", "cases");
      }
    }
    const json* perf = c.field(*a, p, "performance", false);
    if (index == 0 && perf && !perf->is_null()) {
      c.add(p + "/performance", "M0 has no performance gate: it asks only for the right structure and correct results");
    } else if (index > 0 && (!perf || perf->is_null())) {
      c.add(p, "missing required field 'performance': from M1 every milestone has a performance gate");
    } else if (perf && !perf->is_null()) {
      out.acceptance.performance = check_gate(c, *perf, p + "/performance");
      if (out.acceptance.performance && out.acceptance.performance->against == "previous" &&
          (before.empty() || !before.back().acceptance.performance)) {
        c.add(p + "/performance/against", "\"previous\" needs a previous milestone with a performance gate (M0 has none): use \"reference\"");
      }
    }
    out.acceptance.expectations = c.strings(*a, p, "expectations", false, false);
  }
  return out;
}

} // namespace

int Plan::milestone_index(const std::string& id) const {
  for (size_t i = 0; i < milestones.size(); ++i) {
    if (milestones[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

int Plan::decision_index(const std::string& id) const {
  for (size_t i = 0; i < decisions.size(); ++i) {
    if (decisions[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

Expected<fs::path> resolve_starter(const std::string& starter, const PlanContext& ctx) {
  const fs::path rel(starter);
  if (rel.is_absolute()) return fail("'{}' must be a path relative to the task directory (kernels/NAME.cpp) or to your workspace", starter);
  for (const auto& part : rel) {
    if (part == "..") return fail("'{}' must not contain '..'", starter);
  }
  std::vector<fs::path> bases;
  if (!ctx.teacher_workspace.empty()) bases.push_back(ctx.teacher_workspace);
  if (!ctx.task_dir.empty()) bases.push_back(ctx.task_dir);
  if (bases.empty()) return fail("'{}' cannot be checked: no task directory or workspace to find it in", starter);
  for (const auto& base : bases) {
    std::error_code ec;
    const fs::path candidate = base / rel;
    if (!fs::exists(candidate, ec)) continue;
    const fs::path canon_base = fs::weakly_canonical(base, ec);
    const fs::path file = fs::weakly_canonical(candidate, ec);
    if (ec) return fail("'{}': {}", starter, ec.message());
    // Inside its base after symbolic links are resolved: a link cannot reach anything else.
    if (std::mismatch(canon_base.begin(), canon_base.end(), file.begin(), file.end()).first != canon_base.end()) {
      return fail("'{}' leads outside the directory it is found in (a symbolic link)", starter);
    }
    if (!fs::is_regular_file(file, ec)) return fail("'{}' is not a regular file", starter);
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
    for (const auto& refused : ctx.refused_sources) {
      std::error_code rec;
      if (!fs::exists(refused, rec)) continue;
      auto other = util::read_file(refused);
      if (fs::equivalent(file, refused, rec) || (other && *other == text)) {
        return fail("'{}' is a reference or golden source of the task: the Student never sees those; name a kernel of the task's kernels/ or one you wrote", starter);
      }
    }
    return file;
  }
  return fail("'{}' does not exist (looked in {})", starter, ctx.teacher_workspace.empty() ? "the task directory" :
                                                              ctx.task_dir.empty() ? "your workspace" : "your workspace and the task directory");
}

Expected<PlanContext> task_plan_context(const fs::path& task_dir) {
  TEMPER_TRY_ASSIGN(auto task, core::load_task(task_dir));
  PlanContext ctx;
  for (const auto& c : task.cases) ctx.case_ids.insert(c.id);
  ctx.task_dir = fs::absolute(task_dir).lexically_normal();
  for (const auto& [backend, ref] : task.config.reference) ctx.refused_sources.push_back(ref.is_absolute() ? ref : ctx.task_dir / ref);
  if (!task.config.golden.empty()) {
    ctx.refused_sources.push_back(task.config.golden.is_absolute() ? task.config.golden : ctx.task_dir / task.config.golden);
  }
  return ctx;
}

namespace {

Plan check_plan(Checker& c, const json& doc) {
  Plan plan;
  if (!doc.is_object()) {
    c.add("/", "a plan is a JSON object {schema_version, summary, decisions, milestones}");
    return plan;
  }
  c.unknown_keys(doc, "", {"schema_version", "kind", "task", "summary", "decisions", "milestones"});
  if (const json* v = c.field(doc, "", "schema_version", true)) {
    if (!v->is_number_integer() || v->get<int>() != kPlanSchemaVersion) c.add("/schema_version", fmt::format("must be {}", kPlanSchemaVersion));
  }
  if (const json* k = c.field(doc, "", "kind", false)) {
    if (*k != "temper.plan") c.add("/kind", "must be \"temper.plan\" when present");
  }
  plan.summary = c.text(doc, "", "summary", false);
  if (const json* ds = c.field(doc, "", "decisions", true)) {
    if (!ds->is_array() || ds->empty()) c.add("/decisions", "must be a non-empty array of decisions D1..Dn");
    else {
      for (size_t i = 0; i < ds->size(); ++i) plan.decisions.push_back(check_decision(c, (*ds)[i], fmt::format("/decisions/{}", i), i));
    }
  }
  if (const json* ms = c.field(doc, "", "milestones", true)) {
    if (!ms->is_array() || ms->empty()) c.add("/milestones", "must be a non-empty array of milestones M0..Mk");
    else {
      for (size_t i = 0; i < ms->size(); ++i) {
        Milestone m = check_milestone(c, (*ms)[i], fmt::format("/milestones/{}", i), i, plan.decisions, plan.milestones);
        plan.milestones.push_back(std::move(m));
      }
    }
  }
  // Every decision should matter to some milestone, or it is not part of the architecture.
  for (size_t i = 0; i < plan.decisions.size(); ++i) {
    bool used = false;
    for (const auto& m : plan.milestones) {
      for (const auto& d : m.depends_on) used = used || d == plan.decisions[i].id;
    }
    if (!used && !plan.milestones.empty()) c.add(fmt::format("/decisions/{}", i), fmt::format("no milestone depends on {}", plan.decisions[i].id));
  }
  plan.source = doc;
  return plan;
}

} // namespace

std::vector<PlanIssue> validate_plan(const json& doc, const PlanContext& ctx) {
  Checker c(ctx);
  check_plan(c, doc);
  return c.issues;
}

Expected<Plan> parse_plan(const json& doc, const PlanContext& ctx) {
  Checker c(ctx);
  Plan plan = check_plan(c, doc);
  if (!c.issues.empty()) return fail("the plan has {} problem(s):\n{}", c.issues.size(), format_issues(c.issues));
  return plan;
}

Expected<Plan> load_plan(const std::filesystem::path& file, const PlanContext& ctx) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail("{}: not valid JSON: {}", file.string(), e.what());
  }
  auto plan = parse_plan(doc, ctx);
  if (!plan) return fail("{}: {}", file.string(), plan.error().message);
  return plan;
}

std::string format_issues(const std::vector<PlanIssue>& issues) {
  std::string out;
  for (const auto& i : issues) out += fmt::format("  {}: {}\n", i.path, i.message);
  return out;
}

json issues_to_json(const std::vector<PlanIssue>& issues) {
  json out = json::array();
  for (const auto& i : issues) out.push_back({{"path", i.path}, {"message", i.message}});
  return out;
}

// ---- Revisions -----------------------------------------------------------------------------

const char* revision_kind_name(RevisionKind k) { return k == RevisionKind::Resume ? "resume" : "replan"; }

int restart_index(const Revision& r, const Plan& new_plan) {
  if (r.kind == RevisionKind::Resume) return std::max(0, new_plan.milestone_index(r.from));
  const int from = new_plan.decision_index(r.from);
  for (size_t i = 0; i < new_plan.milestones.size(); ++i) {
    for (const auto& d : new_plan.milestones[i].depends_on) {
      if (new_plan.decision_index(d) >= from) return static_cast<int>(i);
    }
  }
  return static_cast<int>(new_plan.milestones.size());
}

namespace {

bool same_json(const json& a, const json& b) { return a.dump() == b.dump(); }

const json& nth(const json& doc, const char* key, size_t i) { return doc.at(key).at(i); }

} // namespace

std::vector<PlanIssue> validate_revision(const json& doc, const Plan& old_plan, const Plan& new_plan) {
  std::vector<PlanIssue> issues;
  auto add = [&](std::string path, std::string message) { issues.push_back({std::move(path), std::move(message)}); };
  if (!doc.is_object()) {
    add("/", "a revision is a JSON object {schema_version, kind, from, reason}");
    return issues;
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "schema_version" && it.key() != "kind" && it.key() != "from" && it.key() != "reason") add("/" + it.key(), "unknown field");
  }
  if (!doc.contains("schema_version") || doc["schema_version"] != kRevisionSchemaVersion) add("/schema_version", fmt::format("must be {}", kRevisionSchemaVersion));
  const std::string kind = doc.value("kind", std::string());
  const std::string from = doc.contains("from") && doc["from"].is_string() ? doc["from"].get<std::string>() : "";
  if (!doc.contains("reason") || !doc["reason"].is_string() || doc["reason"].get<std::string>().empty()) add("/reason", "must be a non-empty string: why this revision helps");
  if (kind != "resume" && kind != "replan") {
    add("/kind", "must be \"resume\" (from a milestone Mi) or \"replan\" (from a decision Dj)");
    return issues;
  }
  if (kind == "resume") {
    const int i = new_plan.milestone_index(from);
    if (i < 0) {
      add("/from", fmt::format("resume needs a milestone id of the plan (M0..M{}), not '{}'", new_plan.milestones.size() - 1, from));
      return issues;
    }
    if (!same_json(old_plan.source.at("decisions"), new_plan.source.at("decisions"))) {
      add("/kind", "the decisions changed: a change of architecture is a \"replan\" from the earliest changed decision");
    }
    for (int k = 0; k < i; ++k) {
      if (static_cast<size_t>(k) >= old_plan.milestones.size() ||
          !same_json(nth(old_plan.source, "milestones", static_cast<size_t>(k)), nth(new_plan.source, "milestones", static_cast<size_t>(k)))) {
        add(fmt::format("/from"), fmt::format("milestone M{} before {} changed: resume from M{} or earlier", k, from, k));
        break;
      }
    }
    return issues;
  }
  const int j = new_plan.decision_index(from);
  if (j < 0) {
    add("/from", fmt::format("replan needs a decision id of the new plan (D1..D{}), not '{}'", new_plan.decisions.size(), from));
    return issues;
  }
  for (int k = 0; k < j; ++k) {
    if (static_cast<size_t>(k) >= old_plan.decisions.size() ||
        !same_json(nth(old_plan.source, "decisions", static_cast<size_t>(k)), nth(new_plan.source, "decisions", static_cast<size_t>(k)))) {
      add("/from", fmt::format("decision D{} before {} changed: replan from D{}", k + 1, from, k + 1));
      return issues;
    }
  }
  Revision r{RevisionKind::Replan, from, ""};
  const int restart = restart_index(r, new_plan);
  for (int k = 0; k < restart; ++k) {
    if (static_cast<size_t>(k) >= old_plan.milestones.size() ||
        !same_json(nth(old_plan.source, "milestones", static_cast<size_t>(k)), nth(new_plan.source, "milestones", static_cast<size_t>(k)))) {
      add("/from", fmt::format("milestone M{} changed but does not depend on {} or a later decision: make it depend on the decision, or replan from an earlier one", k, from));
      break;
    }
  }
  return issues;
}

Expected<Revision> parse_revision(const json& doc, const Plan& old_plan, const Plan& new_plan) {
  auto issues = validate_revision(doc, old_plan, new_plan);
  if (!issues.empty()) return fail("the revision has {} problem(s):\n{}", issues.size(), format_issues(issues));
  Revision r;
  r.kind = doc["kind"] == "resume" ? RevisionKind::Resume : RevisionKind::Replan;
  r.from = doc["from"].get<std::string>();
  r.reason = doc["reason"].get<std::string>();
  return r;
}

} // namespace temper::campaign
