// A campaign whose judge runs go to a real Slurm: a one-node cluster started on this machine
// by scripts/slurm_test_cluster.sh (slurmctld, slurmd and munge from Debian's packages), the real
// temper binary with command-line agents, a probe shared out over two jobs, and one job cancelled
// with scancel while it runs, which the campaign submits again. Skips, saying why, where the
// cluster cannot start (not root, packages missing).
#include "campaign/ledger.h"
#include "rows_plan.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <optional>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace slurm_e2e_test {

using namespace temper;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

// A one-node Slurm for the test's life.
class TestCluster {
public:
  // Each test its own ports: ctest may run two of them at once.
  TestCluster(const fs::path& dir, int port) : m_dir(dir) {
    util::Command cmd;
    cmd.argv = {"bash", (kSource / "scripts" / "slurm_test_cluster.sh").string(), "start", dir.string(), std::to_string(port)};
    cmd.timeout = std::chrono::seconds(60);
    auto r = util::default_process_runner().run(cmd);
    m_started = r.ok();
    m_message = r.output;
  }
  ~TestCluster() {
    if (!m_started) return;
    util::Command cmd;
    cmd.argv = {"bash", (kSource / "scripts" / "slurm_test_cluster.sh").string(), "stop", m_dir.string()};
    cmd.timeout = std::chrono::seconds(60);
    (void)util::default_process_runner().run(cmd);
  }
  bool started() const { return m_started; }
  const std::string& message() const { return m_message; }
  fs::path conf() const { return m_dir / "slurm.conf"; }

private:
  fs::path m_dir;
  bool m_started = false;
  std::string m_message;
};

struct RunningJob {
  fs::path dir;
  std::string slurm_id;
};

// The first part of a probe that the campaign's records show running on its node.
std::optional<RunningJob> running_probe_job(const fs::path& jobs) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(jobs, ec)) {
    auto job = util::read_file(e.path() / "job.json");
    auto record = util::read_file(e.path() / "submissions.json");
    if (!job || !record || job->find("\"probe_grid\"") == std::string::npos) continue;
    const json r = json::parse(*record, nullptr, false);
    if (r.is_discarded() || r["attempts"].empty()) continue;
    const json& a = r["attempts"].back();
    const std::string id = a.value("slurm_id", "");
    if (a.value("state", "") != "RUNNING" || !fs::exists(e.path() / ("started-" + id)) || fs::exists(e.path() / "result.json")) continue;
    return RunningJob{e.path(), id};
  }
  return std::nullopt;
}

// Cancels (scancel) a probe's job in the middle of its run, as a user, an administrator or a
// preemption does.
std::string cancel_a_running_probe_job(const fs::path& jobs, const fs::path& conf) {
  auto job = running_probe_job(jobs);
  if (!job) return "";
  util::Command cmd;
  cmd.argv = {"scancel", job->slurm_id};
  cmd.env_set = {{"SLURM_CONF", conf.string()}};
  cmd.timeout = std::chrono::seconds(30);
  return util::default_process_runner().run(cmd).ok() ? job->slurm_id : "";
}

// The pid of `temper run|resume ... DIR` (argv holds DIR), or 0.
pid_t temper_pid_for(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = util::read_file(e.path() / "cmdline");
    if (!cmdline || cmdline->rfind(kBinary.string() + '\0', 0) != 0) continue;
    if (cmdline->find(dir.string() + '\0') == std::string::npos) continue;
    return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

// A task, a plan-writing Teacher and a probing-then-submitting Student in `root`, and the
// `temper run` line of a campaign on them whose judge runs go to the cluster.
util::Command slurm_campaign(const fs::path& root, const fs::path& dir, const fs::path& conf) {
  const fs::path task = root / "tasks" / "swi_glu";
  fs::create_directories(task);
  for (const auto& e : fs::directory_iterator(kSource / "tasks" / "swi_glu")) {
    if (e.is_regular_file()) fs::copy_file(e.path(), task / e.path().filename());
  }
  const fs::path kit = root / "kit";
  fs::create_directories(kit);
  std::ofstream(kit / "plan.json") << temper_e2e::rows_plan().dump(2);
  fs::copy_file(kSource / "tasks" / "swi_glu" / "kernels" / "rows.cpp", kit / "rows.cpp");
  std::ofstream(kit / "teacher.sh") << "cp " + (kit / "plan.json").string() + " plan.json\n";
  std::ofstream(kit / "student.sh") << "set -u\n"
                                       "cp " + (kit / "rows.cpp").string() + " kernel.cpp\n"
                                       "./harness probe kernel.cpp --case 13 --grid UNROLL=1,2\n"
                                       "./harness submit kernel.cpp\n";
  util::Command cmd;
  cmd.argv = {kBinary.string(), "run", task.string(), "--teacher", "cmd:sh " + (kit / "teacher.sh").string(), "--student",
              "cmd:sh " + (kit / "student.sh").string(), "--dir", dir.string(), "--cases", "13", "--cap", "0.3", "--cache", "warm",
              "--measure-jobs", "1", "--confirm-jobs", "1", "--min-samples", "5", "--min-time", "0.02", "--jobs", "2",
              "--no-vs-torch", "--no-sandbox", "--budget", "turn=600s", "--executor", "slurm", "--max-jobs", "2"};
  cmd.env_set = {{"SLURM_CONF", conf.string()},
                 {"TEMPER_SANDBOX_RO", kit.string()},
                 {"TEMPER_HARNESS_BIN", (fs::path(TEMPER_BINARY_DIR) / "harness").string()}};
  cmd.timeout = std::chrono::seconds(400);
  return cmd;
}

} // namespace

// One campaign through the one-node Slurm, and the two faults a cluster brings: M0's probe has
// a job cancelled with scancel while it runs (submitted again), then temper itself is killed
// with SIGKILL while M1's probe runs, which nothing can cancel: `temper resume` waits for that
// job rather than submitting it again or calling the attempt interrupted.
TEST(SlurmE2E, ACampaignSurvivesACancelledJobAndAKilledTemper) {
  if (::geteuid() != 0) GTEST_SKIP() << "a test Slurm needs root to run slurmctld and slurmd";
  util::TempDir tmp("temper-slurm-e2e");
  TestCluster cluster(tmp.path() / "cluster", 16817);
  if (!cluster.started()) GTEST_SKIP() << "no test Slurm here: " << cluster.message();
  const fs::path dir = tmp.path() / "campaign";
  util::Command cmd = slurm_campaign(tmp.path(), dir, cluster.conf());

  std::atomic<bool> done{false};
  std::string cancelled;
  std::optional<RunningJob> left;
  std::thread watcher([&] {
    while (!done && cancelled.empty()) {
      cancelled = cancel_a_running_probe_job(dir / "jobs", cluster.conf());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // M1's probe: a job of another probe than the one cancelled, running.
    while (!done && !left) {
      auto job = running_probe_job(dir / "jobs");
      const bool other = job && util::read_file(job->dir / "submissions.json").value_or("").find("\"" + cancelled + "\"") == std::string::npos;
      if (other && fs::exists(dir / "rounds" / "R1" / "attempts" / "0003")) {
        if (pid_t pid = temper_pid_for(dir); pid > 0 && ::kill(pid, SIGKILL) == 0) left = job;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  auto first = util::default_process_runner().run(cmd);
  done = true;
  watcher.join();
  ASSERT_FALSE(cancelled.empty()) << "no probe job was seen running: " << first.output;
  ASSERT_TRUE(left.has_value()) << "M1's probe was not seen running: " << first.output;
  EXPECT_EQ(first.outcome, util::Outcome::Signalled) << first.output;
  EXPECT_NE(first.output.find("submitted as Slurm job"), std::string::npos) << first.output;

  util::Command resume = cmd;
  resume.argv = {kBinary.string(), "resume", dir.string()};
  auto second = util::default_process_runner().run(resume);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("from before: waiting for it"), std::string::npos) << second.output;
  const json campaign = json::parse(*util::read_file(dir / "campaign.json"));
  EXPECT_EQ(campaign["state"]["phase"], "done");
  EXPECT_EQ(campaign["config"]["executor"]["kind"], "slurm");

  // The job cancelled mid-run was submitted again and brought its result.
  bool resubmitted = false;
  for (const auto& e : fs::directory_iterator(dir / "jobs")) {
    const json rec = json::parse(util::read_file(e.path() / "submissions.json").value_or("{}"));
    const json attempts = rec.value("attempts", json::array());
    if (attempts.size() < 2 || attempts[0].value("slurm_id", "") != cancelled) continue;
    EXPECT_EQ(attempts[0]["state"], "CANCELLED") << rec.dump(2);
    EXPECT_EQ(attempts.back()["state"], "COMPLETED") << rec.dump(2);
    EXPECT_TRUE(fs::exists(e.path() / "result.json"));
    resubmitted = true;
  }
  EXPECT_TRUE(resubmitted) << "job " << cancelled << " was not submitted again: " << first.output;
  // The job the killed temper left running was waited for: one submission, and its result.
  const json rec = json::parse(*util::read_file(left->dir / "submissions.json"));
  ASSERT_EQ(rec["attempts"].size(), 1u) << rec.dump(2);
  EXPECT_EQ(rec["attempts"][0]["slurm_id"], left->slurm_id);
  EXPECT_EQ(rec["attempts"][0]["state"], "COMPLETED") << rec.dump(2);
  EXPECT_TRUE(fs::exists(left->dir / "result.json"));

  // M1's probe of two variants ran as two jobs, was judged, and no attempt was interrupted.
  const fs::path r1 = dir / "rounds" / "R1";
  const json probe = json::parse(*util::read_file(r1 / "attempts" / "0003" / "report.json"));
  EXPECT_EQ(probe["kind"], "temper.probe.report") << probe.dump(2).substr(0, 2000);
  EXPECT_EQ(probe["executor"]["parts"], 2);
  EXPECT_EQ(probe["variants"].size(), 2u);
  for (const auto& e : fs::directory_iterator(r1 / "attempts")) {
    const json r = json::parse(util::read_file(e.path() / "result.json").value_or("{}"));
    EXPECT_NE(r.value("status", ""), "interrupted") << e.path();
  }

  auto ledger = campaign::Ledger::open(dir / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  auto t = ledger->totals();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_GE(t->cluster_failed, 1);
  EXPECT_GE(t->cluster_jobs, 7);
  EXPECT_TRUE(fs::exists(dir / "final" / "summary.json"));
}

// Ctrl-C or kill of `temper run` while its jobs wait in the queue: it cancels them (scancel)
// before it ends, as that signal would end it. The fake Slurm keeps the job pending forever.
TEST(SlurmE2E, StoppingTemperCancelsTheJobsItSubmitted) {
  util::TempDir tmp("temper-slurm-stop");
  const fs::path slurm = tmp.path() / "slurm";
  fs::create_directories(slurm);
  ASSERT_TRUE(util::write_file_atomic(slurm / "plan", "pending\n"));
  const fs::path dir = tmp.path() / "campaign";
  const std::string script =
      "'" + kBinary.string() + "' run '" + (kSource / "tasks" / "swi_glu").string() + "' --dir '" + dir.string() +
      "' --cases 13 --no-vs-torch --executor slurm --quiet & pid=$!\n"
      "for i in $(seq 1 600); do [ -s '" + (slurm / "submitted").string() + "' ] && break; sleep 0.1; done\n"
      "sleep 0.3; kill -TERM $pid; wait $pid; echo \"exit=$?\"\n";
  util::Command cmd;
  cmd.argv = {"bash", "-c", script};
  cmd.env_set = {{"PATH", (kSource / "tests" / "fixtures" / "slurm_fake").string() + ":" + std::getenv("PATH")},
                 {"FAKE_SLURM_DIR", slurm.string()}};
  cmd.timeout = std::chrono::seconds(120);
  auto r = util::default_process_runner().run(cmd);
  ASSERT_TRUE(r.ok()) << r.output;
  // Ended by SIGTERM (143), after cancelling the job it had out.
  EXPECT_NE(r.output.find("exit=143"), std::string::npos) << r.output;
  const std::string submitted = util::read_file(slurm / "submitted").value_or("");
  ASSERT_FALSE(submitted.empty()) << r.output;
  EXPECT_EQ(util::read_file(slurm / "cancelled").value_or(""), submitted) << r.output;
  // The record says why, and the campaign's state is there to resume.
  bool recorded = false;
  for (const auto& e : fs::directory_iterator(dir / "jobs")) {
    const json rec = json::parse(util::read_file(e.path() / "submissions.json").value_or("{}"));
    if (rec.value("attempts", json::array()).empty()) continue;
    EXPECT_EQ(rec["attempts"][0]["state"], "CANCELLED") << rec.dump(2);
    recorded = true;
  }
  EXPECT_TRUE(recorded);
  EXPECT_TRUE(fs::exists(dir / "campaign.json"));
}

// A knowledge-base command sent to a node of the class it certifies (the fake Slurm runs it
// here): its output comes back, with the node it ran on and the exit status it had there.
TEST(SlurmE2E, KbBootstrapRunsAsAJobOnANode) {
  util::TempDir tmp("temper-slurm-kb");
  const fs::path slurm = tmp.path() / "slurm";
  fs::create_directories(slurm);
  util::Command cmd;
  cmd.argv = {kBinary.string(), "kb", "bootstrap", "--plan", "--executor", "slurm", "--constraint", "zen"};
  cmd.env_set = {{"PATH", (kSource / "tests" / "fixtures" / "slurm_fake").string() + ":" + std::getenv("PATH")},
                 {"FAKE_SLURM_DIR", slurm.string()},
                 {"TEMPER_HOME", (tmp.path() / "home").string()}};
  cmd.timeout = std::chrono::seconds(120);
  auto r = util::default_process_runner().run(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("submitted as Slurm job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bootstrap x86_64-"), std::string::npos) << r.output; // the node's own output
  EXPECT_NE(r.output.find("ran on"), std::string::npos) << r.output;
  // The batch script asked for the class's nodes, exclusively.
  bool found = false;
  for (const auto& e : fs::directory_iterator(tmp.path() / "home" / "jobs")) {
    const std::string script = util::read_file(e.path() / "job-1.sh").value_or("");
    EXPECT_NE(script.find("#SBATCH --constraint=zen\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --exclusive\n"), std::string::npos) << script;
    const json result = json::parse(util::read_file(e.path() / "result.json").value_or("{}"));
    EXPECT_EQ(result.value("exit_code", -1), 0);
    EXPECT_FALSE(result["node"].value("target_class", "").empty()) << result.dump();
    found = true;
  }
  EXPECT_TRUE(found);
}

} // namespace slurm_e2e_test
