// Runs jobs on a Slurm cluster and waits for them: each job is a command line that a node runs
// against a job directory on a filesystem both machines see, and that writes a result file there
// when it is done. The executor knows nothing of what the command does (the campaign's judge
// jobs are `temper job run DIR`); it submits up to max_jobs at a time (`sbatch --exclusive`: a
// timing job never shares its node), watches them (squeue; sacct where the cluster keeps
// accounts), resubmits a job that failed, was preempted or vanished (at most twice), and
// cancels what it submitted when asked to stop. Each job directory keeps a record of its
// submissions (submissions.json), so a later temper attaches to a job still queued or running
// instead of submitting it again (`temper resume`).
#pragma once

#include "exec/slurm_client.h"
#include "util/clock.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <atomic>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace temper::exec {

struct JobSpec {
  std::string key;               // stable and unique among a run's jobs
  std::filesystem::path dir;     // the job's directory (created); absolute, on the shared filesystem
  std::vector<std::string> argv; // what the node runs; it writes dir/result_file when it is done
  std::string result_file = "result.json";
  double time_limit_s = 7200;    // Slurm's --time (rounded up to minutes)
  std::string label;             // for progress lines and the job name
};

// One submission of a job.
struct JobAttempt {
  std::string slurm_id;
  int number = 1;
  double submitted_epoch = 0; // Unix seconds when sbatch accepted it
  std::string state;          // the last state seen: PENDING, RUNNING, COMPLETED, FAILED, VANISHED, ...
  std::string node;
  double queue_s = 0;         // submission to start (the batch script stamps its start)
  double run_s = 0;           // start to end, or to the moment it was given up
  std::string note;           // why this submission did not bring a result

  nlohmann::json to_json() const;
  static JobAttempt from_json(const nlohmann::json& j);
};

struct JobOutcome {
  bool finished = false; // the result file is there
  std::string error;     // when not: why
  std::vector<JobAttempt> attempts;

  double queue_s() const;
  double run_s() const;
  nlohmann::json to_json() const;
};

struct ExecutorTiming {
  double result_check_s = 0.2; // how often result files are looked for (a stat each)
  double poll_s = 2;           // first wait between squeue calls
  double max_poll_s = 10;      // the wait grows to this while nothing changes
  double vanish_grace_s = 15; // a job gone from squeue, or ended, without its result file: how long to wait for the file (shared filesystems lag)
  int max_resubmits = 2;
};

class ClusterExecutor {
public:
  ClusterExecutor(SlurmClient& client, util::Clock& clock, ExecutorTiming timing = {}, std::ostream* progress = nullptr);

  // Runs every job (those finished before are not run again; those queued or running from an
  // earlier temper are waited for) and returns their outcomes in order. Stops early, cancelling
  // every job still queued or running, when a stop is requested (request_stop, or a signal
  // caught by a StopSignals scope).
  std::vector<JobOutcome> run_all(const std::vector<JobSpec>& jobs);

  // Whether `job` has been submitted before: a record of it in its directory.
  static bool submitted(const JobSpec& job);

  void request_stop(int signal) { m_stop_requested = signal; }
  // The signal that stopped the last run_all, or 0.
  int stopped_by() const { return m_stopped_by; }

  // Test seam: Unix seconds now (the batch script's stamps are on that scale).
  void set_epoch_clock(std::function<double()> epoch) { m_epoch = std::move(epoch); }

private:
  struct Tracked;
  Status submit(Tracked& t);
  void finish(Tracked& t);
  void take_times(const JobSpec& job, JobAttempt& a) const;
  void give_up_attempt(Tracked& t, const std::string& state, const std::string& note);
  Status save(const Tracked& t) const;
  void say(const std::string& line) const;
  void sleep_unless_stopped(double seconds);
  int stop_signal() const;

  SlurmClient& m_client;
  util::Clock& m_clock;
  ExecutorTiming m_timing;
  std::ostream* m_progress;
  std::function<double()> m_epoch;
  std::atomic<int> m_stop_requested{0};
  int m_stopped_by = 0;
};

// The batch script for one submission of `job`.
std::string batch_script(const JobSpec& job, const ExecutorSettings& settings);

} // namespace temper::exec
