// The campaign orchestrator: runs rounds (Teacher plan, Student milestones, revisions, round end
// and promotion) over the campaign directory, answers the agents' harness requests, and keeps
// campaign.json, the attempts and the ledger consistent so that a kill at any moment loses no
// accepted result and repeats no finished gate (see docs/campaigns.md, "Crash safety").
#pragma once

#include "agent/agent.h"
#include "agent/harness_protocol.h"
#include "campaign/campaign_state.h"
#include "campaign/expectations.h"
#include "campaign/judge_service.h"
#include "campaign/ledger.h"
#include "campaign/plan.h"
#include "campaign/reference_store.h"
#include "campaign/workspace.h"
#include "judge/roofline.h"
#include "util/clock.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace temper::campaign {

using AgentFactory = std::function<Expected<std::unique_ptr<agent::Agent>>(const std::string& spec, agent::Role role)>;
using HarnessStarter = std::function<Expected<std::unique_ptr<agent::HarnessServer>>(const std::filesystem::path& socket,
                                                                                      agent::HarnessHandler handler)>;
// ref-profile for the Teacher: a profile summary of the sealed reference on one case.
using RefProfileHook = std::function<Expected<std::string>(const SealedReference& ref, int64_t case_id)>;

struct OrchestratorDeps {
  JudgeService* judge = nullptr;              // required
  AgentFactory make_agent;                    // required
  HarnessStarter start_harness;               // empty: no socket (built-in agents call the handlers)
  std::unique_ptr<ReferenceStore> references; // empty: SealedReferenceStore(CAMPAIGN/refs)
  util::Clock* clock = nullptr;               // empty: a steady clock
  ExpectationEvaluator* expectations = nullptr; // empty: expectations reported unevaluated
  RefProfileHook ref_profile;                 // empty: "unsupported"
  std::vector<std::filesystem::path> kb_roots; // hw_kb/ and the user's (empty: no knowledge entries)
  std::string target_class;                   // empty: kb::current_target()'s class
  std::string target_fingerprint;             // empty: kb::current_target().id() (stale kb entries)
  std::ostream* progress = nullptr;           // progress lines; empty: none
  // This machine's certified peaks at the task's thread count: probes and gates report each
  // case's fraction of the roofline, and plans may gate on it (min_roofline). Empty: none here.
  std::optional<judge::Roofline> roofline;
  // Test seam: called at named points of every state change ("after_report", ...). A test
  // throws from it to simulate a kill there.
  std::function<void(std::string_view point)> checkpoint;
};

class Orchestrator {
public:
  // A new campaign in `dir` (created; must be absent or empty): campaign.json, the store with
  // the starting reference sealed as R0 (`config.initial_reference`, else the task's), the ledger.
  static Expected<std::unique_ptr<Orchestrator>> create(const std::filesystem::path& dir, CampaignConfig config,
                                                        OrchestratorDeps deps);
  // An existing campaign, for resume and status; finishes any half-done step on disk first.
  static Expected<std::unique_ptr<Orchestrator>> open(const std::filesystem::path& dir, OrchestratorDeps deps);

  ~Orchestrator();

  // Runs until the campaign is done or a budget ends it. Errors are harness problems (a task
  // that vanished, an agent that cannot start); state stays consistent for resume.
  Status run();

  // The harness handlers (the server calls them, built-in agents may call them directly).
  agent::HarnessResponse handle_student(const agent::HarnessRequest& request);
  agent::HarnessResponse handle_teacher(const agent::HarnessRequest& request);

  const CampaignState& state() const { return m_file.state; }
  const CampaignConfig& config() const { return m_file.config; }
  const std::filesystem::path& dir() const { return m_dir; }
  std::filesystem::path round_dir() const;
  std::filesystem::path teacher_workspace() const { return round_dir() / "teacher"; }
  std::filesystem::path student_workspace() const { return round_dir() / "student"; }
  const std::optional<Plan>& plan() const { return m_plan; }
  Ledger& ledger() { return *m_ledger; }
  ReferenceStore& references() { return *m_deps.references; }

private:
  Orchestrator(std::filesystem::path dir, CampaignFile file, OrchestratorDeps deps);
  Status init();
  Status save();
  void checkpoint(std::string_view point);
  void say(const std::string& line);
  std::string progress_tag() const;
  double elapsed() const;
  std::optional<std::string> budget_exhausted();

  // Phases.
  Status plan_phase();
  Status student_phase();
  Status revision_phase();
  Status round_end_phase();
  Status end_round(const std::string& reason);

  // Workspaces.
  // Fills the Teacher's workspace; returns why nothing can run here when the reference's every
  // case came back UNSUPPORTED (a CUDA campaign without a GPU), else nothing.
  Expected<std::optional<std::string>> prepare_teacher_workspace();
  Status prepare_student_workspace();
  PlanContext plan_context() const;
  Status load_round_plan();

  // Agent turns.
  Expected<agent::TurnResult> run_turn(agent::Role role, const std::string& purpose, const std::filesystem::path& workspace,
                                       const std::string& brief);

  // Attempts (orchestrator_attempts.cpp).
  std::filesystem::path attempt_dir(int n) const;
  Expected<int> begin_attempt(const std::string& op, const nlohmann::json& intent_extra,
                              const std::optional<std::filesystem::path>& candidate);
  Status finish_attempt(int n, bool resuming);
  Status apply_attempt(int n);
  Status reconcile_attempts();
  agent::HarnessResponse student_probe(const agent::HarnessRequest& r);
  agent::HarnessResponse student_submit(const agent::HarnessRequest& r);
  agent::HarnessResponse student_escalate(const agent::HarnessRequest& r);
  agent::HarnessResponse student_status();
  Expected<std::filesystem::path> resolve_candidate(const std::filesystem::path& file) const;
  Status write_feedback(int n, const nlohmann::json& result);
  Status write_trajectory();

  // Revisions and promotion.
  Status finish_revision(int number);
  Status finish_promotion();

  std::filesystem::path m_dir;
  CampaignFile m_file;
  OrchestratorDeps m_deps;
  std::unique_ptr<util::Clock> m_own_clock;
  util::Clock* m_clock = nullptr;
  std::optional<Ledger> m_ledger;
  std::optional<Plan> m_plan;
  std::unique_ptr<agent::Agent> m_teacher;
  std::unique_ptr<agent::Agent> m_student;
  double m_start = 0;
  double m_base_elapsed = 0;
  int m_ref_ops = 0;
  // The ledger key of the agent turn running now ("turn-12"), empty between turns: judge runs
  // that harness requests make are recorded as inside it, so costs do not count them twice.
  std::string m_turn_key;
};

// `temper status`: rounds, phase, current milestone, attempts, best verified speedup,
// revisions, costs by category, budget left.
Expected<nlohmann::json> campaign_status(const std::filesystem::path& dir);
std::string format_status(const nlohmann::json& status);

// Costs by category from the ledger's totals and the campaign's own elapsed seconds: agent
// (own), probe, gate, confirmation, compile and other add up to wall_s (elapsed plus the final
// report); agent_s (whole turns) and agent_judge_s (the judge runs inside them) say how the
// agents' share was found.
nlohmann::json cost_breakdown(const LedgerTotals& totals, double elapsed_s);
// Two lines: the categories with the wall time, then the agents' turns and what they cost.
std::string format_costs(const nlohmann::json& costs);

} // namespace temper::campaign
