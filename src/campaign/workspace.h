// The agents' workspaces. The Teacher's holds the task (definition, cases, description), the
// target fingerprint, the certified knowledge entries for the target, and the sealed reference
// as a black box (measured times per case, disassembly summary, profile when available), never
// its source. The Student's holds only the current milestone (milestone.md), the knowledge
// entries the plan cites, its own earlier candidates and the judge's feedback on them.
#pragma once

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
};

// The target class this machine belongs to until the kb layer's fingerprints take over:
// $TEMPER_TARGET_CLASS, else "<arch>-<vendor>" ("x86_64-amd").
std::string provisional_target_class();

// Certified entries of `target_class` under `kb_root` (hw_kb/): every <class>/<id>/entry.yaml
// whose status is certified. A missing root or class gives none.
std::vector<KbEntryRef> certified_kb_entries(const std::filesystem::path& kb_root, const std::string& target_class);

// The task files an agent may read: the definition, cases, description and temper.yaml; never
// the reference source (nor the golden's).
Status copy_task_public(const std::filesystem::path& task_dir, const std::filesystem::path& dest);

// Copies entries into dest/<id>/ (entry.yaml, README.md, probe/) and writes dest/INDEX.md.
Status copy_kb_entries(const std::vector<KbEntryRef>& entries, const std::filesystem::path& dest);

// milestone.md: what the Student reads (requirements, contract, acceptance, budget, cited kb,
// starter and knobs).
std::string render_milestone(const Milestone& m, const std::string& task_name);

// milestone.json: the milestone's object exactly as the plan has it, for programs (the tuner
// Student): {"schema_version": 1, "kind": "temper.milestone", "task": T, "milestone": {..., "task": T}}.
nlohmann::json milestone_document(const nlohmann::json& milestone_source, const std::string& task_name);

// Where the Student finds the starter: src/starter/<file name>.
std::filesystem::path starter_workspace_path(const std::string& starter);

// The briefs (also written as BRIEF.md). Short, concrete, what to read, what to produce, how it
// is judged, what is forbidden.
std::string teacher_plan_brief(const std::string& task_name, const std::string& errors);
std::string teacher_revision_brief(const std::string& task_name, const std::string& trigger, const std::string& detail,
                                   const std::string& errors);
std::string student_brief(const Milestone& m, const std::string& task_name);

} // namespace temper::campaign
