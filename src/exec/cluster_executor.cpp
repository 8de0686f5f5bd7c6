#include "exec/cluster_executor.h"

#include "exec/stop_signals.h"
#include "util/fs.h"
#include "util/json_file.h"
#include "util/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

namespace temper::exec {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kRecordFile = "submissions.json";
constexpr int kRecordSchemaVersion = 1;

double system_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// "EPOCH REST" from a stamp the batch script wrote; nullopt when absent or unreadable.
std::optional<std::pair<double, std::string>> read_stamp(const fs::path& file) {
  std::ifstream in(file);
  double epoch = 0;
  std::string rest;
  if (!(in >> epoch)) return std::nullopt;
  std::getline(in, rest);
  return std::make_pair(epoch, std::string(util::trim(rest)));
}

// The last lines of the job's Slurm output, for the note of an attempt that failed.
std::string output_tail(const fs::path& dir, const std::string& id) {
  auto text = util::read_file(dir / fmt::format("slurm-{}.out", id));
  if (!text || text->empty()) return "";
  std::string t = *text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  size_t at = t.size();
  for (int lines = 0; lines < 3 && at != std::string::npos && at > 0; ++lines) at = t.rfind('\n', at - 1);
  return at == std::string::npos ? t : t.substr(at + 1);
}

} // namespace

json JobAttempt::to_json() const {
  return {{"slurm_id", slurm_id}, {"number", number}, {"submitted_epoch", submitted_epoch}, {"state", state}, {"node", node},
          {"queue_seconds", queue_s}, {"run_seconds", run_s}, {"note", note}};
}

JobAttempt JobAttempt::from_json(const json& j) {
  JobAttempt a;
  a.slurm_id = j.value("slurm_id", "");
  a.number = j.value("number", 1);
  a.submitted_epoch = j.value("submitted_epoch", 0.0);
  a.state = j.value("state", "");
  a.node = j.value("node", "");
  a.queue_s = j.value("queue_seconds", 0.0);
  a.run_s = j.value("run_seconds", 0.0);
  a.note = j.value("note", "");
  return a;
}

double JobOutcome::queue_s() const {
  double s = 0;
  for (const auto& a : attempts) s += a.queue_s;
  return s;
}

double JobOutcome::run_s() const {
  double s = 0;
  for (const auto& a : attempts) s += a.run_s;
  return s;
}

json JobOutcome::to_json() const {
  json attempts_json = json::array();
  for (const auto& a : attempts) attempts_json.push_back(a.to_json());
  json j = {{"finished", finished}, {"queue_seconds", queue_s()}, {"run_seconds", run_s()}, {"attempts", attempts_json}};
  if (!error.empty()) j["error"] = error;
  return j;
}

std::string batch_script(const JobSpec& job, const ExecutorSettings& s) {
  std::string out = "#!/bin/sh\n";
  out += fmt::format("#SBATCH --job-name=temper-{}\n", job.key.substr(0, 24));
  out += "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n";
  // A timing job never shares its node: the other arm's noise would be someone else's job.
  out += "#SBATCH --exclusive\n";
  out += fmt::format("#SBATCH --time={}\n", std::max<int64_t>(1, static_cast<int64_t>(std::ceil(job.time_limit_s / 60.0))));
  out += fmt::format("#SBATCH --output={}\n", (job.dir / "slurm-%j.out").string());
  if (!s.partition.empty()) out += fmt::format("#SBATCH --partition={}\n", s.partition);
  if (!s.account.empty()) out += fmt::format("#SBATCH --account={}\n", s.account);
  if (!s.constraint.empty()) out += fmt::format("#SBATCH --constraint={}\n", s.constraint);
  out += fmt::format("# {} (temper, docs/scale-out.md): the node stamps its start and end beside the job's result.\n",
                     job.label.empty() ? job.key : job.label);
  out += fmt::format("cd {} || exit 1\n", shell_quote(job.dir.string()));
  out += "printf '%s %s\\n' \"$(date +%s.%N)\" \"$(hostname)\" > \"started-$SLURM_JOB_ID\"\n";
  std::string argv;
  for (const auto& a : job.argv) argv += (argv.empty() ? "" : " ") + shell_quote(a);
  out += argv + "\n";
  out += "rc=$?\n";
  out += "printf '%s %s\\n' \"$(date +%s.%N)\" \"$rc\" > \"finished-$SLURM_JOB_ID\"\n";
  out += "exit $rc\n";
  return out;
}

struct ClusterExecutor::Tracked {
  const JobSpec* spec = nullptr;
  JobOutcome outcome;
  enum class Phase { Waiting, Active, Done } phase = Phase::Waiting;
  std::optional<double> gone_since; // clock time the job was first seen ended or missing without its result
};

ClusterExecutor::ClusterExecutor(SlurmClient& client, util::Clock& clock, ExecutorTiming timing, std::ostream* progress)
    : m_client(client), m_clock(clock), m_timing(timing), m_progress(progress), m_epoch(system_epoch) {}

bool ClusterExecutor::submitted(const JobSpec& job) {
  std::error_code ec;
  return fs::exists(job.dir / kRecordFile, ec) || fs::exists(job.dir / job.result_file, ec);
}

void ClusterExecutor::say(const std::string& line) const {
  if (m_progress) *m_progress << "temper: " << line << "\n" << std::flush;
}

int ClusterExecutor::stop_signal() const {
  const int requested = m_stop_requested.load();
  return requested ? requested : StopSignals::pending();
}

void ClusterExecutor::sleep_unless_stopped(double seconds) {
  // In slices, so that a stop is acted on within a quarter of a second.
  while (seconds > 0 && !stop_signal()) {
    const double slice = std::min(0.25, seconds);
    m_clock.sleep_for(slice);
    seconds -= slice;
  }
}

Status ClusterExecutor::save(const Tracked& t) const {
  json attempts = json::array();
  for (const auto& a : t.outcome.attempts) attempts.push_back(a.to_json());
  json record = {{"schema_version", kRecordSchemaVersion}, {"kind", "temper.cluster.job"}, {"key", t.spec->key},
                 {"label", t.spec->label}, {"attempts", attempts}};
  return util::write_file_atomic(t.spec->dir / kRecordFile, record.dump(2) + "\n");
}

Status ClusterExecutor::submit(Tracked& t) {
  const JobSpec& job = *t.spec;
  const int number = static_cast<int>(t.outcome.attempts.size()) + 1;
  const fs::path script = job.dir / fmt::format("job-{}.sh", number);
  TEMPER_TRY(util::write_file_atomic(script, batch_script(job, m_client.settings())));
  TEMPER_TRY_ASSIGN(std::string id, m_client.submit(script, job.dir));
  JobAttempt a;
  a.slurm_id = id;
  a.number = number;
  a.submitted_epoch = m_epoch();
  a.state = "PENDING";
  t.outcome.attempts.push_back(a);
  t.phase = Tracked::Phase::Active;
  t.gone_since.reset();
  say(fmt::format("cluster: {} submitted as Slurm job {}{}", job.label.empty() ? job.key : job.label, id,
                  number > 1 ? fmt::format(" (submission {} of {})", number, 1 + m_timing.max_resubmits) : ""));
  return save(t);
}

// The result is there: the times from the batch script's stamps.
void ClusterExecutor::finish(Tracked& t) {
  t.phase = Tracked::Phase::Done;
  t.outcome.finished = true;
  if (t.outcome.attempts.empty()) return; // finished before this record existed
  JobAttempt& a = t.outcome.attempts.back();
  take_times(*t.spec, a);
  if (!slurm_state_final(a.state)) a.state = "COMPLETED";
  (void)save(t);
}

// Queue and run seconds and the node, from the batch script's stamps: start (with the host) and
// end; a submission that never started waited all along.
void ClusterExecutor::take_times(const JobSpec& job, JobAttempt& a) const {
  const auto started = read_stamp(job.dir / ("started-" + a.slurm_id));
  if (!started) {
    a.queue_s = std::max(0.0, m_epoch() - a.submitted_epoch);
    return;
  }
  const auto ended = read_stamp(job.dir / ("finished-" + a.slurm_id));
  a.queue_s = std::max(0.0, started->first - a.submitted_epoch);
  a.run_s = std::max(0.0, (ended ? ended->first : m_epoch()) - started->first);
  if (a.node.empty()) a.node = started->second;
}

void ClusterExecutor::give_up_attempt(Tracked& t, const std::string& state, const std::string& note) {
  JobAttempt& a = t.outcome.attempts.back();
  a.state = state;
  a.note = note;
  take_times(*t.spec, a);
  const int made = static_cast<int>(t.outcome.attempts.size());
  const std::string what = t.spec->label.empty() ? t.spec->key : t.spec->label;
  if (made < 1 + m_timing.max_resubmits) {
    say(fmt::format("cluster: {} (Slurm job {}) {}: {}; submitting it again", what, a.slurm_id, state, note));
    t.phase = Tracked::Phase::Waiting;
  } else {
    t.phase = Tracked::Phase::Done;
    t.outcome.error = fmt::format("Slurm job {} {} ({}), the last of {} submissions", a.slurm_id, state, note, made);
    say(fmt::format("cluster: {} gave no result: {}", what, t.outcome.error));
  }
  t.gone_since.reset();
  (void)save(t);
}

std::vector<JobOutcome> ClusterExecutor::run_all(const std::vector<JobSpec>& jobs) {
  m_stopped_by = 0;
  std::vector<Tracked> tracked(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    Tracked& t = tracked[i];
    t.spec = &jobs[i];
    std::error_code ec;
    fs::create_directories(jobs[i].dir, ec);
    if (auto record = util::read_json(jobs[i].dir / kRecordFile)) {
      for (const auto& a : record->value("attempts", json::array())) t.outcome.attempts.push_back(JobAttempt::from_json(a));
    }
    if (fs::exists(jobs[i].dir / jobs[i].result_file, ec)) {
      t.phase = Tracked::Phase::Done;
      t.outcome.finished = true;
    } else if (!t.outcome.attempts.empty() && !slurm_state_final(t.outcome.attempts.back().state) &&
               t.outcome.attempts.back().state != "VANISHED") {
      t.phase = Tracked::Phase::Active; // an earlier temper's job: wait for it
      say(fmt::format("cluster: {} is Slurm job {} from before: waiting for it", jobs[i].label.empty() ? jobs[i].key : jobs[i].label,
                      t.outcome.attempts.back().slurm_id));
    } else if (static_cast<int>(t.outcome.attempts.size()) >= 1 + m_timing.max_resubmits) {
      t.phase = Tracked::Phase::Done;
      t.outcome.error = fmt::format("no result after {} submissions (last: {})", t.outcome.attempts.size(),
                                    t.outcome.attempts.back().state);
    }
  }

  const int max_jobs = std::max(1, m_client.settings().max_jobs);
  double wait = m_timing.poll_s;
  double last_query = m_clock.now();
  for (;;) {
    if (int sig = stop_signal()) {
      std::vector<std::string> ids;
      for (auto& t : tracked) {
        if (t.phase != Tracked::Phase::Active) continue;
        ids.push_back(t.outcome.attempts.back().slurm_id);
        t.outcome.attempts.back().state = "CANCELLED";
        t.outcome.attempts.back().note = fmt::format("cancelled: temper was stopped (signal {})", sig);
        t.outcome.error = t.outcome.attempts.back().note;
        t.phase = Tracked::Phase::Done;
        (void)save(t);
      }
      for (auto& t : tracked) {
        if (t.phase == Tracked::Phase::Waiting) {
          t.phase = Tracked::Phase::Done;
          t.outcome.error = "not submitted: temper was stopped";
        }
      }
      if (!ids.empty()) {
        auto cancelled = m_client.cancel(ids);
        say(cancelled ? fmt::format("cluster: stopped; cancelled {} Slurm job(s)", ids.size())
                      : fmt::format("cluster: stopped; {}", cancelled.error().message));
      }
      m_stopped_by = sig;
      break;
    }
    int active = 0, waiting = 0;
    for (const auto& t : tracked) {
      active += t.phase == Tracked::Phase::Active;
      waiting += t.phase == Tracked::Phase::Waiting;
    }
    for (auto& t : tracked) {
      if (active >= max_jobs) break;
      if (t.phase != Tracked::Phase::Waiting) continue;
      if (auto st = submit(t); !st) {
        // A refused submission (bad partition, account, limits) is not a job that failed: it
        // would be refused again.
        t.phase = Tracked::Phase::Done;
        t.outcome.error = st.error().message;
        say("cluster: " + st.error().message);
      } else {
        ++active;
      }
      --waiting;
    }
    if (active == 0 && waiting == 0) break;

    // A finished job shows as its result file, which costs a stat to see: looked for often, so
    // that the campaign goes on as soon as a node is done. The controller is asked less often
    // (squeue, backing off while nothing changes): it is needed only for jobs that end without
    // a result.
    sleep_unless_stopped(m_timing.result_check_s);
    if (stop_signal()) continue;
    bool finished_any = false;
    for (auto& t : tracked) {
      std::error_code ec;
      if (t.phase == Tracked::Phase::Active && fs::exists(t.spec->dir / t.spec->result_file, ec)) {
        finish(t);
        finished_any = true;
      }
    }
    if (finished_any) continue;
    if (m_clock.now() - last_query < wait) continue;
    last_query = m_clock.now();
    std::vector<std::string> ids;
    for (const auto& t : tracked) {
      if (t.phase == Tracked::Phase::Active) ids.push_back(t.outcome.attempts.back().slurm_id);
    }
    auto states = m_client.query(ids);
    if (!states) {
      say("cluster: " + states.error().message + " (trying again)");
      wait = std::min(m_timing.max_poll_s, wait * 2);
      continue;
    }
    bool changed = false;
    for (auto& t : tracked) {
      if (t.phase != Tracked::Phase::Active) continue;
      JobAttempt& a = t.outcome.attempts.back();
      std::error_code ec;
      auto it = states->find(a.slurm_id);
      if (it != states->end()) {
        if (it->second.state != a.state || (!it->second.node.empty() && it->second.node != a.node)) {
          changed = true;
          a.state = it->second.state;
          if (!it->second.node.empty()) a.node = it->second.node;
          (void)save(t);
        }
      }
      if (fs::exists(t.spec->dir / t.spec->result_file, ec)) {
        finish(t);
        changed = true;
        continue;
      }
      const bool ended = it == states->end() || slurm_state_final(it->second.state);
      if (!ended) {
        t.gone_since.reset();
        continue;
      }
      // A job that completed, or that the controller forgot, may have written its result a
      // moment ago on a filesystem that shows it late: wait a little for it. A job that failed
      // or was cancelled, preempted, timed out did not finish its command.
      const bool may_have_result = it == states->end() || it->second.state == "COMPLETED";
      if (!t.gone_since) t.gone_since = m_clock.now();
      if (may_have_result && m_clock.now() - *t.gone_since < m_timing.vanish_grace_s) continue;
      changed = true;
      std::string state = it != states->end() ? it->second.state : "";
      if (state.empty()) state = m_client.accounting_state(a.slurm_id).value_or("VANISHED");
      std::string note = it == states->end() && state == "VANISHED" ? "the controller no longer knows the job, and it left no result"
                                                                     : "it ended without a result";
      if (it != states->end() && !it->second.reason.empty() && it->second.reason != "None") note += " (" + it->second.reason + ")";
      if (std::string tail = output_tail(t.spec->dir, a.slurm_id); !tail.empty()) note += "; its output ends: " + tail;
      give_up_attempt(t, state, note);
    }
    wait = changed ? m_timing.poll_s : std::min(m_timing.max_poll_s, wait * 1.5);
  }
  std::vector<JobOutcome> out;
  out.reserve(tracked.size());
  for (auto& t : tracked) out.push_back(std::move(t.outcome));
  return out;
}

} // namespace temper::exec
