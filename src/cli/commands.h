// Subcommand registration. Each cmd_*.cpp adds its subcommands to the app; main() only parses,
// dispatches and maps errors to exit statuses.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace temper::cli {

// Exit statuses shared by every subcommand.
enum ExitStatus : int {
  kExitOk = 0,       // the command did what was asked and everything passed
  kExitFailed = 1,   // it ran, and something did not pass (a case failed, a check found problems)
  kExitUsage = 2,    // bad usage or a task/input error; the message says what to fix
};

// The action a parsed subcommand runs; it returns the exit status.
using Action = std::function<int()>;

// Each registrar adds subcommands and sets `action` when its subcommand is the one parsed.
void register_task_commands(CLI::App& app, Action& action);
void register_task_golden_command(CLI::App& task, Action& action); // task golden (cmd_task_golden.cpp)
void register_task_init_command(CLI::App& task, Action& action);   // task init (cmd_task_init.cpp)
void register_judge_command(CLI::App& app, Action& action);
void register_probe_command(CLI::App& app, Action& action);
void register_seal_command(CLI::App& app, Action& action);
void register_ref_commands(CLI::App& app, Action& action);
void register_profile_command(CLI::App& app, Action& action);
void register_kb_commands(CLI::App& app, Action& action);
void register_campaign_commands(CLI::App& app, Action& action); // run, resume, status
void register_plan_commands(CLI::App& app, Action& action);     // plan check
void register_report_command(CLI::App& app, Action& action);    // report (HTML)
void register_job_commands(CLI::App& app, Action& action);      // job run (cmd_job.cpp)

// Builds the whole app; used by main() and by tests.
void register_all(CLI::App& app, Action& action);

} // namespace temper::cli
