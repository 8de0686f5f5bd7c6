#include "campaign/workspace.h"

#include "agent/brief.h"
#include "build/compiler.h"
#include "campaign/judge_service.h"
#include "judge/profile/metrics.h"
#include "kb/store.h"
#include "util/fs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <map>

namespace temper::campaign {

namespace fs = std::filesystem;

std::vector<KbEntryRef> certified_kb_entries(const std::vector<fs::path>& kb_roots, const std::string& target_class, const std::string& fingerprint) {
  std::vector<KbEntryRef> out;
  if (kb_roots.empty() || target_class.empty()) return out;
  const kb::KnowledgeBase base = kb::load_kb(kb_roots);
  for (const auto& e : base.entries) {
    if (e.target != target_class || e.status != kb::EntryStatus::Certified) continue;
    out.push_back({e.id, e.dir, e.title, e.effective_status(fingerprint) == kb::EntryStatus::Stale});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

Status copy_task_public(const fs::path& task_dir, const fs::path& dest) {
  TEMPER_TRY(util::make_dirs(dest));
  for (const char* name : {"proto.yaml", "cases.yaml", "cases.csv", "desc.md", "temper.yaml"}) {
    const fs::path src = task_dir / name;
    if (!fs::exists(src)) continue;
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(src));
    TEMPER_TRY(util::write_file_atomic(dest / name, text));
  }
  return {};
}

Status copy_kb_entries(const std::vector<KbEntryRef>& entries, const fs::path& dest) {
  TEMPER_TRY(util::make_dirs(dest));
  std::string index = "# Knowledge entries\n\n";
  if (entries.empty()) index += "No certified entries for this target yet.\n";
  for (const auto& e : entries) {
    std::error_code ec;
    fs::copy(e.dir, dest / e.id, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    if (ec) return fail("copying knowledge entry {}: {}", e.id, ec.message());
    index += fmt::format("- `{}`: {} (kb/{}/entry.yaml){}\n", e.id, e.title, e.id,
                         e.stale ? "; certified on another machine of this class, not yet re-checked here" : "");
  }
  return util::write_file_atomic(dest / "INDEX.md", index);
}

std::string render_milestone(const Milestone& m, const std::string& task_name) {
  std::string s = fmt::format("# {} {}: {}\n\n", task_name, m.id, m.title);
  s += "## Requirements\n\n";
  for (const auto& r : m.requirements) s += "- " + r + "\n";
  s += "\n## Interface contract\n\n" + m.contract + "\n\n## Acceptance\n\n";
  const auto cases_text = [](const std::vector<int64_t>& c) {
    return c.empty() ? std::string("the campaign's cases") : fmt::format("cases {}", fmt::join(c, ", "));
  };
  s += "- correctness on " + cases_text(m.acceptance.correctness_cases) + " (the task's tolerance standard)\n";
  if (const auto& g = m.acceptance.performance) {
    const std::string over = g->against == "previous" ? "the previous milestone's accepted kernel" : "the reference";
    std::vector<std::string> measures;
    if (g->min_speedup) measures.push_back(fmt::format("geometric-mean speedup at least {:.3g}x over {}", *g->min_speedup, over));
    if (g->min_roofline) measures.push_back(fmt::format("at least {:.3g}% of this machine's roofline (geometric mean of the cases' fractions)", 100 * *g->min_roofline));
    s += fmt::format("- performance: {} tier on {}, {}\n", g->tier, cases_text(g->cases), fmt::join(measures, ", or "));
  }
  for (const auto& e : m.acceptance.expectations) s += "- mechanism expectation: " + e + "\n";
  s += fmt::format("\n## Budget\n\n{} submissions, {:.0f} s of judging and work.\n", m.budget.attempts, m.budget.seconds);
  if (!m.kb.empty()) {
    s += "\n## Knowledge entries (in kb/)\n\n";
    for (const auto& k : m.kb) s += "- " + k + "\n";
  }
  if (!m.starter.empty() || !m.knobs.empty()) {
    s += "\n## Starting point\n\n";
    if (!m.starter.empty()) {
      s += fmt::format("Start from {} (a copy of the plan's {}).\n", starter_workspace_path(m.starter).string(), m.starter);
    } else {
      s += "Start from your newest accepted kernel (src/accepted/).\n";
    }
    if (!m.knobs.empty()) {
      s += "\nKnobs (the kernel's `// temper: knob` declarations; knobs not listed keep every declared value):\n\n";
      for (const auto& [name, values] : m.knobs) {
        s += values.size() == 1 ? fmt::format("- {} fixed at {}\n", name, values[0])
                                : fmt::format("- {} in {{{}}}\n", name, fmt::join(values, ", "));
      }
    }
  }
  return s;
}

nlohmann::json milestone_document(const nlohmann::json& milestone_source, const std::string& task_name) {
  nlohmann::json m = milestone_source;
  m["task"] = task_name;
  return {{"schema_version", 1}, {"kind", "temper.milestone"}, {"task", task_name}, {"milestone", m}};
}

fs::path starter_workspace_path(const std::string& starter) { return fs::path("src") / "starter" / fs::path(starter).filename(); }

namespace {

// What a workspace entry is, for the brief's "what you may read" list.
std::string describe_entry(const std::string& name, bool teacher) {
  static const std::map<std::string, std::string> teacher_entries = {
      {"task", "the task: `proto.yaml` (inputs, outputs, attributes), `cases.yaml`/`cases.csv` (every case's shapes and "
               "dtypes), `desc.md` (what the operator computes), `temper.yaml` (tolerance, threads, trials)"},
      {"target.json", "this machine: the knowledge base's fingerprint and target class"},
      {"kb", "certified hardware knowledge for this target (`kb/INDEX.md` lists the entries; cite their ids)"},
      {"reference", "the sealed reference as a black box: `times.json` (kernel seconds per case, and its roofline bound where this machine has one), `disassembly.txt`, "
                    "`profile.txt`"},
      {"trajectory", "every attempt of this round (`INDEX.md` is the table): result, the judge's report excerpts, the "
                     "candidate as judged"},
      {"plan.json", "the current plan (rewrite it when your revision changes it)"},
      {"REVISION.md", "the revision request: trigger, detail, the milestone that stalled"},
      {"REVISION.json", "the same request as JSON, with the accepted milestones"},
      {"plan_errors.json", "every problem of your last answer, with its JSON path"},
  };
  static const std::map<std::string, std::string> student_entries = {
      {"milestone.md", "your milestone: requirements, interface contract, acceptance, budget"},
      {"milestone.json", "the same milestone as JSON, exactly as in the plan"},
      {"kb", "the knowledge entries the milestone cites (`kb/INDEX.md`)"},
      {"src", "`src/accepted/Mi.cpp`: kernels accepted for earlier milestones (build on the latest); "
              "`src/starter/`: a kernel the plan gives you to start from, when there is one"},
      {"feedback", "`NNNN.md` / `NNNN.json` / `NNNN.cpp`: the judge's verdict on each of your probes and submissions, with "
                   "the candidate as it was judged"},
  };
  const auto& table = teacher ? teacher_entries : student_entries;
  if (auto it = table.find(name); it != table.end()) return it->second;
  return "your own file";
}

std::string workspace_listing(const fs::path& ws, bool teacher) {
  std::vector<std::pair<std::string, bool>> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ws, ec)) {
    const std::string n = e.path().filename().string();
    if (n == "BRIEF.md" || n == "harness" || n.rfind('.', 0) == 0) continue;
    names.emplace_back(n, e.is_directory());
  }
  std::sort(names.begin(), names.end());
  std::string out = "- `BRIEF.md`: this brief\n- `harness`: your way to the judge (below)\n";
  for (const auto& [n, dir] : names) out += fmt::format("- `{}{}`: {}\n", n, dir ? "/" : "", describe_entry(n, teacher));
  return out;
}

std::string errors_section(const std::string& errors, const std::string& what) {
  if (errors.empty()) return "";
  return fmt::format("## Your last {} was not valid\n\n{}\nFix every problem listed (`plan_errors.json` has them too); "
                     "temper gives the turn back until the answer is valid or your turns run out.\n",
                     what, errors);
}

agent::BriefVars common_vars(const BriefContext& c) {
  return {{"task_name", c.task_name},
          {"target", c.target.empty() ? std::string("this machine") : fmt::format("`{}`", c.target)},
          {"budget", fmt::format("{:.0f} s of wall time for this turn; the turn is stopped when it runs out", c.turn_s)}};
}

} // namespace

std::string plan_format_text() {
  fs::path doc = TEMPER_PLAN_FORMAT_DEFAULT;
  if (const char* env = std::getenv("TEMPER_PLAN_FORMAT"); env && *env) doc = env;
  auto text = util::read_file(doc);
  std::string out = text ? *text : "(the plan format document " + doc.string() + " is missing: " + text.error().message + ")\n";
  // The document's own title would compete with the brief's headings.
  if (out.rfind("# ", 0) == 0) out = "#" + out;
  out += "\n### Mechanism expectations (`acceptance.expectations`)\n\n"
         "The profiling layer checks each expectation on the accepted candidate (one of the gate's cases):\n\n"
         "    METRIC OP NUMBER                 absolute, e.g.  static.vec512_ops > 0\n"
         "    METRIC change OP NUMBER%         against the sealed reference, e.g.  time.median_us change <= -20%\n"
         "    OP is one of  < <= > >= == !=\n\n"
         "An expectation that is measured and fails rejects the submission. One this machine cannot measure (no hardware "
         "counters, no valgrind) or that is not in this grammar is reported as unsupported and decides nothing, so predict "
         "with metrics that can be measured. The metrics:\n\n";
  for (const auto& m : judge::profile::metric_registry()) {
    out += fmt::format("- `{}` ({}, {} is better; {}): {}\n", m.name, m.unit, judge::profile::direction_name(m.direction),
                       m.source, m.description);
  }
  return out;
}

Expected<std::string> teacher_plan_brief(const BriefContext& c, const std::string& errors) {
  agent::BriefVars v = common_vars(c);
  v["files"] = workspace_listing(c.workspace, true);
  v["plan_format"] = plan_format_text();
  v["previous_errors"] = errors_section(errors, "plan.json");
  return agent::render_brief_template("teacher", v);
}

Expected<std::string> teacher_revision_brief(const BriefContext& c, const std::string& trigger, const std::string& detail,
                                             const std::string& errors) {
  agent::BriefVars v = common_vars(c);
  v["files"] = workspace_listing(c.workspace, true);
  v["trigger"] = trigger;
  v["trigger_detail"] = detail;
  v["plan_format"] = plan_format_text();
  v["previous_errors"] = errors_section(errors, "revision");
  return agent::render_brief_template("teacher_revision", v);
}

Expected<std::string> student_brief(const BriefContext& c, const Milestone& m) {
  agent::BriefVars v = common_vars(c);
  v["milestone_id"] = m.id;
  v["milestone"] = render_milestone(m, c.task_name);
  v["files"] = workspace_listing(c.workspace, false);
  const build::CompilerSpec spec = compiler_spec(c.judge);
  if (c.judge.cuda()) {
    // What the judge runs (build/cuda_compiler.h), less ptxas's report; there may be no GPU
    // where the agent works, but nvcc builds without one.
    v["candidate_file"] = "kernel.cu";
    v["compile_command"] = fmt::format("{} -std=c++20 {} -arch={} -shared -Xcompiler -fPIC -cudart shared -I{} kernel.cu -o /tmp/kernel.so",
                                       spec.program, fmt::join(spec.flags, " "), spec.cuda_arch, build::temper_include_dir().string());
  } else {
    v["candidate_file"] = "kernel.cpp";
    v["compile_command"] = fmt::format("{} {} -std=c++20 -fPIC -shared -I{} kernel.cpp -o /tmp/kernel.so", spec.program,
                                       fmt::join(spec.flags, " "), build::temper_include_dir().string());
  }
  v["budget"] = fmt::format("{} submissions and {:.0f} s of judging and work for this milestone; this turn ends after {:.0f} s",
                            m.budget.attempts, m.budget.seconds, c.turn_s);
  return agent::render_brief_template("student", v);
}

} // namespace temper::campaign
