// The Teacher's plan (plan.json): architecture decisions D1..Dn and milestones M0..Mk with their
// acceptance conditions, and the Teacher's revisions (revision.json). Parsing validates
// everything and lists every problem with its JSON path, so a Teacher can fix them all in one
// turn. docs/plan-format.md is the format's description for people and agents.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace temper::campaign {

inline constexpr int kPlanSchemaVersion = 1;
inline constexpr int kRevisionSchemaVersion = 1;

struct Evidence {
  std::vector<std::string> kb;           // knowledge entry ids
  std::vector<std::string> measurements; // "reference case 2: 3.1 ms (ref-time)"
};

struct Decision {
  std::string id; // D1..Dn, in order
  std::string title;
  std::string choice;
  std::string rationale;
  Evidence evidence;
  std::vector<std::string> alternatives;
};

// A performance gate: the candidate is judged at `tier` on `cases` against the sealed
// reference. Two measures, at least one given: its geometric-mean speedup over the baseline
// (`min_speedup`), and the geometric mean of its fractions of this machine's roofline (certified
// bound / its median time; `min_roofline`). With both, reaching either passes: a speedup over a
// compute-bound reference shrinks with the machine's bandwidth, so a speedup set on one machine
// can be out of reach on another, while a kernel that close to the hardware bound has nothing
// left to gain there. Any SLOWER case fails a gate that asks more than "not slower".
struct PerformanceGate {
  std::string tier = "gate";           // probe | gate
  std::vector<int64_t> cases;          // empty: the campaign's case selection
  std::optional<double> min_speedup;   // 1.2: 20% faster than the baseline
  std::optional<double> min_roofline;  // 0.6: 60% of the roofline; always the candidate's own
  std::string against = "reference";   // reference | previous (the previous milestone's accepted speedup)
};

struct Acceptance {
  std::vector<int64_t> correctness_cases;    // empty: the campaign's case selection
  std::optional<PerformanceGate> performance; // never on M0; required from M1
  std::vector<std::string> expectations;     // mechanism expectations, evaluated by the profile layer
};

struct MilestoneBudget {
  int attempts = 8;       // submissions
  double seconds = 3600;  // judge and agent time spent on the milestone
};

struct Milestone {
  std::string id; // M0..Mk, in order
  std::string title;
  std::vector<std::string> requirements;
  std::string contract;                 // the interface contract the kernel must keep
  Acceptance acceptance;
  std::vector<std::string> kb;          // cited knowledge entry ids
  MilestoneBudget budget;
  std::vector<std::string> depends_on;  // decision ids
  // The kernel the Student starts from, as written (relative to the task directory or the
  // Teacher's workspace; resolve_starter finds it); empty: start from the accepted kernels.
  std::string starter;
  // Knob NAME -> the values the Student may try, as text; one value fixes the knob. Knobs not
  // named keep every value the kernel declares.
  std::map<std::string, std::vector<std::string>> knobs;
};

struct Plan {
  std::string summary;
  std::vector<Decision> decisions;
  std::vector<Milestone> milestones;
  nlohmann::json source; // the validated document as written

  int milestone_index(const std::string& id) const; // -1 when unknown
  int decision_index(const std::string& id) const;  // -1 when unknown
};

// One problem, at a JSON pointer ("/milestones/1/acceptance/performance/min_speedup").
struct PlanIssue {
  std::string path;
  std::string message;
};

// What a plan is checked against besides its own consistency. Empty sets mean "not checked".
struct PlanContext {
  std::set<int64_t> case_ids;    // the task's cases
  std::set<std::string> kb_ids;  // knowledge entries the Teacher was given
  // Where a milestone's `starter` is looked up: the Teacher's workspace first (a plan a Teacher
  // wrote), then the task directory (plans shipped with the task). Both empty: a plan that names
  // a starter is an error.
  std::filesystem::path teacher_workspace;
  std::filesystem::path task_dir;
  // Sources a starter may never be (by resolved path or by content): the task's references, its
  // golden, the campaign's starting reference. A starter is copied to the Student.
  std::vector<std::filesystem::path> refused_sources;
  // Non-empty: why this machine has no roofline (no certified figures, no cost model), so a gate
  // with `min_roofline` and no `min_speedup` could never be decided here and is an issue.
  // Empty: not checked.
  std::string roofline_missing;
};

// The context of a task's own plans: its case ids, task_dir, and its references and golden as
// refused sources (no knowledge entries: shipped plans cite none).
Expected<PlanContext> task_plan_context(const std::filesystem::path& task_dir);

// The file a milestone's `starter` names, checked: a relative path without "..", inside the
// Teacher's workspace or the task directory (symbolic links resolved), a regular file, and none
// of the refused sources. The error says why not.
Expected<std::filesystem::path> resolve_starter(const std::string& starter, const PlanContext& ctx);

// Every problem of the document; empty when valid.
std::vector<PlanIssue> validate_plan(const nlohmann::json& doc, const PlanContext& ctx);

// Parses a document validate_plan accepts; otherwise the error lists every issue, one a line.
Expected<Plan> parse_plan(const nlohmann::json& doc, const PlanContext& ctx);

// Reads and parses a plan file (JSON syntax errors name the line and column).
Expected<Plan> load_plan(const std::filesystem::path& file, const PlanContext& ctx);

// "path: message" lines.
std::string format_issues(const std::vector<PlanIssue>& issues);
nlohmann::json issues_to_json(const std::vector<PlanIssue>& issues);

// ---- Revisions -----------------------------------------------------------------------------

enum class RevisionKind { Resume, Replan };
const char* revision_kind_name(RevisionKind k); // "resume", "replan"

struct Revision {
  RevisionKind kind = RevisionKind::Resume;
  std::string from;   // Mi for resume, Dj for replan
  std::string reason;
};

// Where work restarts after a revision: the index of the first milestone to redo.
// resume Mi: i. replan Dj: the first milestone of the new plan that depends on Dj or a later
// decision (every milestone after it is redone too).
int restart_index(const Revision& r, const Plan& new_plan);

// Validates revision.json against the current plan and the plan the Teacher left in its
// workspace (the same plan when it did not change it). Checks: kind and `from` exist in the new
// plan; for resume, decisions and the milestones before Mi are unchanged; for replan, the
// decisions before Dj and the milestones before the restart point are unchanged.
std::vector<PlanIssue> validate_revision(const nlohmann::json& doc, const Plan& old_plan, const Plan& new_plan);
Expected<Revision> parse_revision(const nlohmann::json& doc, const Plan& old_plan, const Plan& new_plan);

} // namespace temper::campaign
