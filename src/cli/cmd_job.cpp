// `temper job run DIR`: what a cluster node runs for a campaign's judge job (docs/scale-out.md).
#include "campaign/judge_job.h"
#include "cli/commands.h"
#include "util/process.h"

#include <iostream>
#include <memory>

namespace temper::cli {

void register_job_commands(CLI::App& app, Action& action) {
  CLI::App* job = app.add_subcommand("job", "Judge jobs sent to a cluster (what its nodes run)");
  job->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  CLI::App* run = job->add_subcommand("run", "Run the judge job in DIR here (DIR/job.json) and write DIR/result.json");
  run->add_option("dir", *dir, "Job directory")->required();
  run->callback([dir, &action] {
    action = [dir] {
      auto st = campaign::run_judge_job(*dir, util::default_process_runner(), TEMPER_VERSION);
      if (!st) {
        std::cerr << "temper: error: job " << *dir << ": " << st.error().message << "\n";
        return int{kExitUsage};
      }
      return int{kExitOk};
    };
  });
}

} // namespace temper::cli
