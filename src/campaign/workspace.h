// The agents' workspaces. The Teacher's holds the task (definition, cases, description), the
// target fingerprint, the certified knowledge entries for the target, and the sealed reference
// as a black box (measured times per case, disassembly summary, profile when available), never
// its source. The Student's holds only the current milestone (milestone.md), the knowledge
// entries the plan cites, its own earlier candidates and the judge's feedback on them.
#pragma once

#include "campaign/campaign_state.h"
#include "campaign/plan.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace temper::campaign {

struct KbEntryRef {
  std::string id;
  std::filesystem::path dir; // hw_kb/<class>/<id>/
  std::string title;
  bool stale = false;        // certified on another fingerprint of the class: re-certify before relying on it
};

// The certified entries of `target_class` in the knowledge bases at `kb_roots` (kb::load_kb:
// only entries that validate; a later root's entry replaces an earlier one's of the same id), by id. `fingerprint` (kb::TargetFingerprint::id) marks entries
// certified on another machine of the class as stale. A missing root or class gives none.
std::vector<KbEntryRef> certified_kb_entries(const std::vector<std::filesystem::path>& kb_roots, const std::string& target_class,
                                             const std::string& fingerprint);

// The task files an agent may read: the definition, cases, description and temper.yaml; never
// the reference source (nor the golden's).
Status copy_task_public(const std::filesystem::path& task_dir, const std::filesystem::path& dest);

// Copies entries into dest/<id>/ (entry.yaml, README.md, probe/) and writes dest/INDEX.md.
Status copy_kb_entries(const std::vector<KbEntryRef>& entries, const std::filesystem::path& dest);

// milestone.md: what the Student reads (requirements, contract, acceptance, budget, cited kb,
// starter and knobs).
std::string render_milestone(const Milestone& m, const std::string& task_name);

// What every brief is rendered with besides its role's own facts.
struct BriefContext {
  std::string task_name;
  std::string target;                   // the target class ("x86_64-zen5-avx512")
  std::filesystem::path workspace;      // its top-level entries are listed in the brief
  double turn_s = 0;                    // wall time of one turn
  JudgeSettings judge;                  // compiler and flags the judge builds with
};

// The briefs (also written as BRIEF.md), rendered from the templates in briefs/ (teacher.md,
// teacher_revision.md, student.md; agent::render_brief_template): what the agent may read (the
// workspace's actual entries), what it must produce, how it is judged, what it must not do.
// `errors` are the problems of the Teacher's last answer ("" for none).
Expected<std::string> teacher_plan_brief(const BriefContext& context, const std::string& errors);
Expected<std::string> teacher_revision_brief(const BriefContext& context, const std::string& trigger, const std::string& detail,
                                             const std::string& errors);
Expected<std::string> student_brief(const BriefContext& context, const Milestone& m);

// The plan format for the Teacher: docs/plan-format.md ($TEMPER_PLAN_FORMAT overrides the file)
// and the grammar of mechanism expectations with every registered metric.
std::string plan_format_text();

// milestone.json: the milestone's object exactly as the plan has it, for programs (the tuner
// Student): {"schema_version": 1, "kind": "temper.milestone", "task": T, "milestone": {..., "task": T}}.
nlohmann::json milestone_document(const nlohmann::json& milestone_source, const std::string& task_name);

// Where the Student finds the starter: src/starter/<file name>.
std::filesystem::path starter_workspace_path(const std::string& starter);

} // namespace temper::campaign
