#include "campaign/planfile_teacher.h"
#include "campaign/tuner_student.h"

#include "util/fs.h"
#include "util/json_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

} // namespace

Expected<agent::TurnResult> PlanfileTeacher::run_turn(const agent::TurnRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  if (request.role != agent::Role::Teacher) return fail("planfile is a Teacher; it cannot play the Student");
  std::vector<fs::path> plans;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(m_plans_dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".json") plans.push_back(e.path());
  }
  if (plans.empty()) return fail("planfile: no plans (*.json) in {}", m_plans_dir.string());
  std::sort(plans.begin(), plans.end());
  // Which plan is current: the one equal to the plan.json the orchestrator put in the
  // workspace (robust to a turn repeated after a kill); else the first.
  size_t current = 0;
  if (auto ws_plan = util::read_json(request.workspace / "plan.json")) {
    for (size_t i = 0; i < plans.size(); ++i) {
      if (auto p = util::read_json(plans[i]); p && p->dump() == ws_plan->dump()) {
        current = i;
        break;
      }
    }
  }
  agent::TurnResult result;
  const fs::path revision_request = request.workspace / "REVISION.json";
  if (!fs::exists(revision_request)) {
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(plans[0]));
    TEMPER_TRY(util::write_file_atomic(request.workspace / "plan.json", text));
    result.summary = "planfile: wrote " + plans[0].filename().string();
  } else {
    TEMPER_TRY_ASSIGN(json req, util::read_json(revision_request));
    TEMPER_TRY_ASSIGN(json old_plan, util::read_json(plans[std::min(current, plans.size() - 1)]));
    json revision = {{"schema_version", 1}};
    if (current + 1 < plans.size()) {
      TEMPER_TRY_ASSIGN(json next, util::read_json(plans[current + 1]));
      // Replan from the first decision that differs; equal decisions: resume from the first
      // milestone that differs.
      const json& od = old_plan.at("decisions");
      const json& nd = next.at("decisions");
      std::string from;
      for (size_t i = 0; i < nd.size(); ++i) {
        if (i >= od.size() || od[i].dump() != nd[i].dump()) {
          from = nd[i].value("id", "");
          break;
        }
      }
      if (!from.empty()) {
        revision["kind"] = "replan";
        revision["from"] = from;
      } else {
        const json& om = old_plan.at("milestones");
        const json& nm = next.at("milestones");
        std::string mfrom = nm.empty() ? "M0" : nm.back().value("id", "M0");
        for (size_t i = 0; i < nm.size(); ++i) {
          if (i >= om.size() || om[i].dump() != nm[i].dump()) {
            mfrom = nm[i].value("id", "M0");
            break;
          }
        }
        revision["kind"] = "resume";
        revision["from"] = mfrom;
      }
      revision["reason"] = fmt::format("planfile: {} ({}); switching to the alternative plan {}", req.value("trigger", "stall"),
                                       req.value("detail", ""), plans[current + 1].filename().string());
      TEMPER_TRY(util::write_file_atomic(request.workspace / "plan.json", next.dump(2) + "\n"));
    } else {
      // No alternative left: give the stalled milestone another budget under the same plan.
      revision["kind"] = "resume";
      revision["from"] = req.value("milestone", "M0");
      revision["reason"] = fmt::format("planfile: {} ({}); no alternative plan left, resuming", req.value("trigger", "stall"), req.value("detail", ""));
      TEMPER_TRY(util::write_file_atomic(request.workspace / "plan.json", old_plan.dump(2) + "\n"));
    }
    TEMPER_TRY(util::write_file_atomic(request.workspace / "revision.json", revision.dump(2) + "\n"));
    result.summary = fmt::format("planfile: {} from {}", revision["kind"].get<std::string>(), revision["from"].get<std::string>());
  }
  result.exit_code = 0;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.cost_usd = 0;
  return result;
}

Expected<std::unique_ptr<agent::Agent>> make_campaign_agent(const std::string& spec, const fs::path& task_dir, const std::string& backend) {
  if (spec == "planfile") return std::make_unique<PlanfileTeacher>(backend == "cpu" ? task_dir / "plans" : task_dir / "plans" / backend);
  if (spec.rfind("planfile:", 0) == 0) return std::make_unique<PlanfileTeacher>(fs::path(spec.substr(9)));
  if (spec == "tuner" || spec.rfind("tuner:", 0) == 0) {
    TEMPER_TRY_ASSIGN(TunerOptions options, parse_tuner_spec(spec));
    return std::make_unique<TunerStudent>(task_dir, std::move(options));
  }
#ifdef TEMPER_HAVE_AGENT_LAYER
  return agent::make_agent(spec);
#else
  return fail("agent '{}': this build has no agent layer (src/agent); only the built-in planfile Teacher is available", spec);
#endif
}

} // namespace temper::campaign
