// `temper job run DIR`: what a cluster node runs for a campaign's judge job (docs/scale-out.md).
#include "campaign/judge_job.h"
#include "cli/commands.h"
#include "exec/stop_signals.h"
#include "util/process.h"

#include <iostream>
#include <memory>
#include <optional>

namespace temper::cli {

void register_job_commands(CLI::App& app, Action& action) {
  CLI::App* job = app.add_subcommand("job", "Judge jobs sent to a cluster (what its nodes run)");
  job->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  CLI::App* run = job->add_subcommand("run", "Run the judge job in DIR here (DIR/job.json) and write DIR/result.json");
  run->add_option("dir", *dir, "Job directory")->required();
  run->callback([dir, &action] {
    action = [dir] {
      // scancel and preemption send SIGTERM to every process of the job, the judge's workers
      // included, in no set order: were the job to outlive its workers it would write a result
      // with their deaths in it. Noted instead, the signal ends the job after the judge, without
      // a result, so the job is submitted again.
      std::optional<exec::StopSignals> stop(std::in_place);
      auto st = campaign::run_judge_job(*dir, util::default_process_runner(), TEMPER_VERSION,
                                        [] { return exec::StopSignals::pending() != 0; });
      const int signal = exec::StopSignals::pending();
      stop.reset();
      if (signal != 0) exec::StopSignals::reraise(signal);
      if (!st) {
        std::cerr << "temper: error: job " << *dir << ": " << st.error().message << "\n";
        return int{kExitUsage};
      }
      return int{kExitOk};
    };
  });
}

} // namespace temper::cli
