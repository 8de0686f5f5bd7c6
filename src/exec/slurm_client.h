// Slurm's command-line clients behind one small class: submit a batch script (sbatch), ask the
// controller what became of jobs (squeue, and sacct where accounting is on), cancel them
// (scancel). Everything goes through util::ProcessRunner, so tests drive it with fake scripts
// that play the states a real cluster shows (tests/fixtures/slurm_fake).
#pragma once

#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace temper::exec {

// Where and how judge jobs run: `--executor local|slurm --partition P --account A --constraint C
// --max-jobs N`, recorded with a campaign so that `temper resume` uses the same.
struct ExecutorSettings {
  std::string kind = "local"; // local | slurm
  std::string partition;      // empty: the cluster's default partition
  std::string account;
  std::string constraint;     // node features (--constraint): keep a campaign on one node class
  int max_jobs = 4;           // jobs queued or running at once
  // Where sbatch, squeue, scancel and sacct are; empty: found on PATH.
  std::filesystem::path bin_dir;

  bool slurm() const { return kind == "slurm"; }
  nlohmann::json to_json() const;
  static Expected<ExecutorSettings> from_json(const nlohmann::json& j);
  Status validate() const;
};

// One job as squeue shows it: its state (PENDING, RUNNING, COMPLETED, FAILED, ...), the node
// it runs or ran on, and the reason Slurm gives for the state.
struct SlurmJobState {
  std::string id;
  std::string state;
  std::string node;
  std::string reason;
};

// States after which a job never runs again (without a requeue, which shows as PENDING).
bool slurm_state_final(const std::string& state);

class SlurmClient {
public:
  SlurmClient(ExecutorSettings settings, util::ProcessRunner& runner) : m_settings(std::move(settings)), m_runner(runner) {}

  // Whether sbatch can be found; the error says where it looked.
  Status available() const;
  // sbatch --parsable SCRIPT (run in `cwd`): the job id.
  Expected<std::string> submit(const std::filesystem::path& script, const std::filesystem::path& cwd);
  // The jobs the controller still knows, by id (squeue --states=all); an id missing from the
  // map is one the controller forgot (purged after MinJobAge) or never had.
  Expected<std::map<std::string, SlurmJobState>> query(const std::vector<std::string>& ids);
  // The job's final state from accounting (sacct), where the cluster keeps accounts; empty
  // where it does not.
  std::optional<std::string> accounting_state(const std::string& id);
  Status cancel(const std::vector<std::string>& ids);

  const ExecutorSettings& settings() const { return m_settings; }

private:
  std::string program(const std::string& name) const;

  ExecutorSettings m_settings;
  util::ProcessRunner& m_runner;
};

} // namespace temper::exec
