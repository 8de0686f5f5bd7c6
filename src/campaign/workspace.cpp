#include "campaign/workspace.h"

#include "util/fs.h"
#include "util/host.h"

#include <fmt/format.h>

#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace temper::campaign {

namespace fs = std::filesystem;

std::string provisional_target_class() {
  if (const char* env = std::getenv("TEMPER_TARGET_CLASS"); env && *env) return env;
  struct utsname u {};
  std::string arch = ::uname(&u) == 0 ? u.machine : "unknown";
  std::string vendor = util::host_info().cpu_vendor;
  if (vendor == "AuthenticAMD") vendor = "amd";
  else if (vendor == "GenuineIntel") vendor = "intel";
  std::transform(vendor.begin(), vendor.end(), vendor.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return arch + "-" + (vendor.empty() ? "unknown" : vendor);
}

std::vector<KbEntryRef> certified_kb_entries(const fs::path& kb_root, const std::string& target_class) {
  std::vector<KbEntryRef> out;
  std::error_code ec;
  const fs::path dir = kb_root / target_class;
  if (target_class.empty() || !fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory()) continue;
    auto text = util::read_file(e.path() / "entry.yaml");
    if (!text) continue;
    std::istringstream in(*text);
    std::string line;
    bool certified = false;
    std::string id = e.path().filename().string();
    while (std::getline(in, line)) {
      if (line.rfind("status:", 0) == 0) certified = line.find("certified") != std::string::npos;
      if (line.rfind("id:", 0) == 0) {
        std::string v = line.substr(3);
        v.erase(0, v.find_first_not_of(" \t\"'"));
        v.erase(v.find_last_not_of(" \t\"'\r") + 1);
        if (!v.empty()) id = v;
      }
    }
    if (certified) out.push_back({id, e.path()});
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
    index += fmt::format("- `{}` (kb/{}/entry.yaml)\n", e.id, e.id);
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
    s += fmt::format("- performance: {} tier on {}, geometric-mean speedup at least {:.3g}x over {}\n", g->tier,
                     cases_text(g->cases), g->min_speedup, g->against == "previous" ? "the previous milestone's accepted kernel" : "the reference");
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

std::string teacher_plan_brief(const std::string& task_name, const std::string& errors) {
  std::string s = fmt::format(R"(# Teacher: plan the architecture of a faster {0} kernel

You read: task/ (definition, cases, description), target.json (this machine), kb/ (certified
hardware knowledge for this target), reference/ (the kernel to beat, as a black box: times.json
per case, disassembly.txt). You never see the reference's source. `./harness ref-time --case N`,
`./harness ref-disasm` and `./harness ref-profile` measure it further.

You write plan.json in this directory: decisions D1..Dn (each with choice, rationale, evidence,
alternatives) and milestones M0..Mk (requirements, contract, acceptance, kb, budget, depends_on),
exactly as docs/plan-format.md describes. M0 asks for the structure and correct results only;
from M1 every milestone has a performance gate. A Student implements one milestone at a time and
sees only that milestone, the knowledge entries it cites and the judge's feedback.
)",
                              task_name);
  if (!errors.empty()) s += "\n## Your last plan.json was not valid\n\n" + errors + "\nFix every problem listed (plan_errors.json has them too).\n";
  return s;
}

std::string teacher_revision_brief(const std::string& task_name, const std::string& trigger, const std::string& detail,
                                   const std::string& errors) {
  std::string s = fmt::format(R"(# Teacher: revise the {0} plan

The Student stalled: {1} ({2}). trajectory/ holds every attempt of this round with its judge
report and metrics, and any escalation text. plan.json is the current plan.

Write revision.json: {{"schema_version": 1, "kind": "resume" | "replan", "from": "Mi" | "Dj",
"reason": "..."}}. `resume` from Mi keeps the accepted milestones before Mi (you may rewrite Mi
and later milestones in plan.json); `replan` from Dj changes the architecture from decision Dj:
rewrite plan.json, keeping the decisions before Dj and the milestones that do not depend on Dj
or later decisions unchanged. docs/plan-format.md has the rules.
)",
                              task_name, trigger, detail);
  if (!errors.empty()) s += "\n## Your last revision was not valid\n\n" + errors + "\nFix every problem listed (plan_errors.json has them too).\n";
  return s;
}

std::string student_brief(const Milestone& m, const std::string& task_name) {
  return fmt::format(R"(# Student: implement {0} of the {1} plan

Read milestone.md: requirements, interface contract, acceptance (milestone.json has the same for
programs). kb/ holds the knowledge entries the plan cites; src/ your earlier candidates, accepted
kernels and, when the milestone names one, the kernel to start from (src/starter/); feedback/ the
judge's verdicts on your submissions.

Write one self-contained C++ file (it may include only <temper/kernel.h>, <temper/half.h> and the
standard library) and use the harness, your only way to the judge:
  ./harness probe FILE [--case N] [--grid NAME=v1,v2]   quick direction: one case, short timing
  ./harness submit FILE                                 judged at the milestone's acceptance
  ./harness escalate "why"                              only an architecture change can help
  ./harness status
You may not change the architecture the milestone describes, call or copy the reference, or
read outside this directory.
)",
                     m.id, task_name);
}

} // namespace temper::campaign
