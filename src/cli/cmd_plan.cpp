// `temper plan check TASK [PLAN...]`: validates plan files (default: the task's plans/*.json)
// against the task as a campaign would (case ids, starters, knobs), and lists every problem with
// its JSON path. For people writing plans; a campaign checks the Teacher's plans the same way.
#include "campaign/plan.h"
#include "cli/commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

namespace temper::cli {

namespace {

namespace fs = std::filesystem;

struct PlanCheckArgs {
  std::string task;
  std::vector<std::string> plans;
};

int run_check(const PlanCheckArgs& a) {
  auto ctx = campaign::task_plan_context(a.task);
  if (!ctx) {
    std::cerr << "temper: error: " << ctx.error().message << "\n";
    return kExitUsage;
  }
  std::vector<fs::path> files(a.plans.begin(), a.plans.end());
  if (files.empty()) {
    std::error_code ec;
    // The CPU's plans, and those of other backends in their own folders (plans/cuda/).
    for (const fs::path& dir : {fs::path(a.task) / "plans", fs::path(a.task) / "plans" / "cuda"}) {
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
      }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      std::cerr << "temper: error: no plans (*.json) in " << (fs::path(a.task) / "plans").string() << "\n";
      return kExitUsage;
    }
  }
  int bad = 0;
  for (const auto& f : files) {
    auto plan = campaign::load_plan(f, *ctx);
    if (plan) {
      std::cout << fmt::format("ok: {}: {} decisions, {} milestones\n", f.string(), plan->decisions.size(), plan->milestones.size());
    } else {
      ++bad;
      std::cout << plan.error().message << "\n";
    }
  }
  return bad == 0 ? kExitOk : kExitFailed;
}

} // namespace

void register_plan_commands(CLI::App& app, Action& action) {
  CLI::App* plan = app.add_subcommand("plan", "Campaign plans (plan.json): check them against a task");
  plan->require_subcommand(1);
  auto args = std::make_shared<PlanCheckArgs>();
  CLI::App* check = plan->add_subcommand("check", "Validate plan files against a task: every problem with its JSON path");
  check->add_option("task", args->task, "Task directory")->required();
  check->add_option("plans", args->plans, "Plan files (default: the task's plans/*.json and plans/cuda/*.json)");
  check->callback([args, &action] { action = [args] { return run_check(*args); }; });
}

} // namespace temper::cli
