#include "cli/cluster_command.h"

#include "campaign/judge_job.h"
#include "cli/commands.h"
#include "exec/cluster_executor.h"
#include "exec/stop_signals.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json_file.h"

#include <fmt/format.h>

#include <iostream>

namespace temper::cli {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path self_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("temper") : exe;
}

int write_command_result(const std::string& file, int exit_code) {
  const json result = {{"schema_version", 1}, {"kind", "temper.command.result"}, {"exit_code", exit_code}, {"node", campaign::node_facts()}};
  if (auto st = util::write_file_atomic(file, result.dump(2) + "\n"); !st) {
    std::cerr << "temper: error: --result " << file << ": " << st.error().message << "\n";
    return kExitUsage;
  }
  return exit_code;
}

int run_command_on_cluster(const exec::ExecutorSettings& settings, const fs::path& job_dir, std::vector<std::string> argv,
                           const std::string& label, bool quiet) {
  exec::SlurmClient client(settings, util::default_process_runner());
  if (auto ok = client.available(); !ok) {
    std::cerr << "temper: error: --executor slurm: " << ok.error().message << "\n";
    return kExitUsage;
  }
  exec::JobSpec job;
  job.dir = fs::absolute(job_dir);
  job.key = job.dir.filename().string();
  job.label = label;
  job.time_limit_s = 4 * 3600;
  argv.push_back("--result");
  argv.push_back((job.dir / job.result_file).string());
  job.argv = std::move(argv);
  util::SteadyClock clock;
  exec::ClusterExecutor executor(client, clock, exec::ExecutorTiming{}, quiet ? nullptr : &std::cerr);
  std::vector<exec::JobOutcome> outcomes;
  {
    exec::StopSignals signals;
    outcomes = executor.run_all({job});
  }
  if (int sig = executor.stopped_by()) exec::StopSignals::reraise(sig);
  const exec::JobOutcome& o = outcomes.front();
  if (!o.attempts.empty()) {
    // What the command printed on the node (stdout and stderr, as Slurm kept them).
    if (auto text = util::read_file(job.dir / fmt::format("slurm-{}.out", o.attempts.back().slurm_id))) std::cout << *text;
  }
  if (!o.finished) {
    std::cerr << "temper: error: " << label << " gave no result: " << o.error << "\n";
    return o.attempts.empty() ? kExitUsage : kExitFailed;
  }
  auto result = util::read_json(job.dir / job.result_file);
  if (!result) {
    std::cerr << "temper: error: " << label << ": " << result.error().message << "\n";
    return kExitFailed;
  }
  const json node = result->value("node", json::object());
  if (!quiet) {
    std::cerr << fmt::format("temper: {} ran on {} ({}, fingerprint {}); its files are in {}\n", label, node.value("hostname", "?"),
                             node.value("target_class", "?"), node.value("fingerprint", "?"), job.dir.string());
  }
  return result->value("exit_code", int{kExitFailed});
}

} // namespace temper::cli
