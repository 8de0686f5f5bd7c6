#include "cli/commands.h"

namespace temper::cli {

void register_all(CLI::App& app, Action& action) {
  // Here rather than in main(): TEMPER_VERSION is defined for this library only.
  app.set_version_flag("--version", std::string("temper ") + TEMPER_VERSION);
  register_task_commands(app, action);
  register_judge_command(app, action);
  register_probe_command(app, action);
  register_seal_command(app, action);
  register_ref_commands(app, action);
  register_profile_command(app, action);
  register_kb_commands(app, action);
  register_campaign_commands(app, action);
  register_plan_commands(app, action);
  register_report_command(app, action);
  register_job_commands(app, action);
}

} // namespace temper::cli
