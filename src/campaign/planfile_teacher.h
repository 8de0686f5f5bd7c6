// `planfile`: a built-in Teacher that answers from plans shipped with the task
// (tasks/<task>/plans/*.json, in file-name order). A planning turn writes the first plan; a
// revision turn switches to the next alternative plan (a replan from the first decision that
// differs, or a resume from the first milestone that differs), and when none is left resumes
// from the stalled milestone. It reads REVISION.json, which the orchestrator writes with every
// revision request. Deterministic, free, and a demonstration of the file contract.
#pragma once

#include "agent/agent.h"

#include <filesystem>
#include <vector>

namespace temper::campaign {

class PlanfileTeacher final : public agent::Agent {
public:
  explicit PlanfileTeacher(std::filesystem::path plans_dir) : m_plans_dir(std::move(plans_dir)) {}
  std::string name() const override { return "planfile"; }
  Expected<agent::TurnResult> run_turn(const agent::TurnRequest& request) override;

private:
  std::filesystem::path m_plans_dir;
};

// Campaign-level agent specs: "planfile" (plans of the task) or "planfile:DIR", "tuner" or
// "tuner:KEY=VALUE,..." (campaign/tuner_student.h); anything else
// goes to the agent layer's make_agent. `task_dir` locates the task's plans.
// `backend`: the campaign's (JudgeSettings::backend); the planfile Teacher of a cuda campaign
// reads the task's plans/cuda/.
Expected<std::unique_ptr<agent::Agent>> make_campaign_agent(const std::string& spec, const std::filesystem::path& task_dir,
                                                            const std::string& backend = "cpu");

} // namespace temper::campaign
