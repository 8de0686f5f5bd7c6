#include "exec/cluster_executor.h"

#include "util/clock.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

namespace temper::exec::cluster_executor_test {
namespace {

namespace fs = std::filesystem;

// A fake Slurm in its own state directory, and an executor on it that polls fast.
struct FakeCluster {
  util::TempDir tmp;
  fs::path state = tmp.path() / "slurm";
  ExecutorSettings settings;
  util::SteadyClock clock;
  std::ostringstream progress;
  std::unique_ptr<SlurmClient> client;
  std::unique_ptr<ClusterExecutor> executor;

  explicit FakeCluster(int max_jobs = 4) {
    fs::create_directories(state);
    ::setenv("FAKE_SLURM_DIR", state.c_str(), 1);
    settings.kind = "slurm";
    settings.max_jobs = max_jobs;
    settings.bin_dir = fs::path(TEMPER_SOURCE_DIR) / "tests/fixtures/slurm_fake";
    client = std::make_unique<SlurmClient>(settings, util::default_process_runner());
    ExecutorTiming timing;
    timing.result_check_s = 0.05;
    timing.poll_s = 0.05;
    timing.max_poll_s = 0.1;
    timing.vanish_grace_s = 0.2;
    executor = std::make_unique<ClusterExecutor>(*client, clock, timing, &progress);
  }

  void plan(const std::string& steps) { ASSERT_TRUE(util::write_file_atomic(state / "plan", steps)); }
  std::string file(const std::string& name) { return util::read_file(state / name).value_or(""); }

  // A job that writes its result after `seconds`.
  JobSpec job(const std::string& key, double seconds = 0) {
    JobSpec j;
    j.key = key;
    j.dir = tmp.path() / "jobs" / key;
    j.argv = {"/bin/sh", "-c", "sleep " + std::to_string(seconds) + "; echo '{\"ok\": true}' > result.json.tmp && mv result.json.tmp result.json"};
    j.label = "job " + key;
    return j;
  }
};

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST(SlurmBatchScript, RunsExclusiveOnOneNodeAndStampsStartAndEnd) {
  ExecutorSettings s;
  s.kind = "slurm";
  s.partition = "gpu";
  s.account = "kernels";
  s.constraint = "zen5";
  JobSpec j;
  j.key = "abc";
  j.dir = "/shared/it's here";
  j.argv = {"/opt/temper/bin/temper", "job", "run", "/shared/it's here"};
  j.time_limit_s = 61;
  const std::string script = batch_script(j, s);
  EXPECT_NE(script.find("#SBATCH --exclusive\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --nodes=1\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --time=2\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --partition=gpu\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --account=kernels\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --constraint=zen5\n"), std::string::npos);
  EXPECT_NE(script.find("'/shared/it'\\''s here'"), std::string::npos) << script;
  EXPECT_NE(script.find("started-$SLURM_JOB_ID"), std::string::npos);
  EXPECT_NE(script.find("finished-$SLURM_JOB_ID"), std::string::npos);
}

TEST(ExecutorSettings, RefusesWhatSlurmWouldMisread) {
  ExecutorSettings s;
  s.kind = "pbs";
  EXPECT_FALSE(s.validate().has_value());
  s.kind = "local";
  s.partition = "debug";
  EXPECT_FALSE(s.validate().has_value()) << "a partition without slurm";
  s.kind = "slurm";
  EXPECT_TRUE(s.validate().has_value());
  s.partition = "a\nb";
  EXPECT_FALSE(s.validate().has_value());
  s.partition = "debug";
  s.max_jobs = 0;
  EXPECT_FALSE(s.validate().has_value());
  s.max_jobs = 3;
  auto back = ExecutorSettings::from_json(s.to_json());
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->partition, "debug");
  EXPECT_EQ(back->max_jobs, 3);
}

TEST(ClusterExecutor, RunsJobsAndTakesQueueAndRunTimesFromTheNodesStamps) {
  FakeCluster c;
  const std::vector<JobSpec> jobs = {c.job("a", 0.3), c.job("b", 0.3)};
  auto out = c.executor->run_all(jobs);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& o : out) {
    ASSERT_TRUE(o.finished) << o.error << "\n" << c.progress.str();
    ASSERT_EQ(o.attempts.size(), 1u);
    EXPECT_EQ(o.attempts[0].state, "COMPLETED");
    EXPECT_EQ(o.attempts[0].node, "fakenode");
    EXPECT_GE(o.attempts[0].run_s, 0.25);
    EXPECT_LT(o.attempts[0].queue_s, 5);
  }
  EXPECT_EQ(lines(c.file("submitted")), 2);
  // The record stays beside the job: a second run reads the result and submits nothing.
  auto again = c.executor->run_all(jobs);
  EXPECT_TRUE(again[0].finished && again[1].finished);
  EXPECT_EQ(lines(c.file("submitted")), 2);
}

TEST(ClusterExecutor, MaxJobsBoundsTheJobsOutAtOnce) {
  FakeCluster c(1);
  const std::vector<JobSpec> jobs = {c.job("a", 0.2), c.job("b", 0.2), c.job("c", 0.2)};
  auto out = c.executor->run_all(jobs);
  for (const auto& o : out) ASSERT_TRUE(o.finished) << o.error;
  // One at a time: each job started after the one before it ended.
  for (size_t i = 1; i < jobs.size(); ++i) {
    std::ifstream prev_end(jobs[i - 1].dir / ("finished-" + out[i - 1].attempts[0].slurm_id));
    std::ifstream next_start(jobs[i].dir / ("started-" + out[i].attempts[0].slurm_id));
    double end = 0, start = 0;
    ASSERT_TRUE(prev_end >> end);
    ASSERT_TRUE(next_start >> start);
    EXPECT_GE(start, end);
  }
}

TEST(ClusterExecutor, APreemptedFailedOrVanishedJobIsSubmittedAgain) {
  for (const std::string first : {"preempt", "fail", "node_fail", "vanish"}) {
    FakeCluster c;
    c.plan(first + "\nrun\n");
    auto out = c.executor->run_all({c.job("a")});
    ASSERT_TRUE(out[0].finished) << first << ": " << out[0].error;
    ASSERT_EQ(out[0].attempts.size(), 2u) << first;
    const std::string expected = first == "preempt" ? "PREEMPTED" : first == "fail" ? "FAILED" : first == "node_fail" ? "NODE_FAIL" : "VANISHED";
    EXPECT_EQ(out[0].attempts[0].state, expected);
    EXPECT_FALSE(out[0].attempts[0].note.empty());
    EXPECT_EQ(out[0].attempts[1].state, "COMPLETED");
    EXPECT_NE(c.progress.str().find("submitting it again"), std::string::npos);
  }
}

TEST(ClusterExecutor, GivesUpAfterTwoResubmissions) {
  FakeCluster c;
  c.plan("fail\nfail\nfail\nrun\n");
  auto out = c.executor->run_all({c.job("a")});
  EXPECT_FALSE(out[0].finished);
  EXPECT_EQ(out[0].attempts.size(), 3u);
  EXPECT_NE(out[0].error.find("FAILED"), std::string::npos) << out[0].error;
  EXPECT_NE(out[0].error.find("3 submissions"), std::string::npos) << out[0].error;
}

TEST(ClusterExecutor, AJobThatEndsWithoutItsResultIsAFailureWithItsOutput) {
  FakeCluster c;
  c.plan("run\nrun\nrun\n");
  JobSpec j = c.job("a");
  j.argv = {"/bin/sh", "-c", "echo 'error: no task here' >&2; exit 3"};
  auto out = c.executor->run_all({j});
  ASSERT_FALSE(out[0].finished);
  EXPECT_EQ(out[0].attempts[0].state, "FAILED");
  EXPECT_NE(out[0].attempts[0].note.find("error: no task here"), std::string::npos) << out[0].attempts[0].note;
}

TEST(ClusterExecutor, ARefusedSubmissionIsAnErrorAndNotRetried) {
  FakeCluster c;
  ASSERT_TRUE(util::write_file_atomic(c.state / "refuse", ""));
  auto out = c.executor->run_all({c.job("a")});
  EXPECT_FALSE(out[0].finished);
  EXPECT_NE(out[0].error.find("Invalid partition"), std::string::npos) << out[0].error;
  EXPECT_TRUE(out[0].attempts.empty());
}

TEST(ClusterExecutor, StoppingCancelsEveryJobStillOut) {
  FakeCluster c;
  c.plan("pending\npending\n");
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    c.executor->request_stop(15);
  });
  auto out = c.executor->run_all({c.job("a"), c.job("b")});
  stopper.join();
  EXPECT_EQ(c.executor->stopped_by(), 15);
  for (const auto& o : out) {
    EXPECT_FALSE(o.finished);
    EXPECT_NE(o.error.find("cancelled"), std::string::npos) << o.error;
  }
  EXPECT_EQ(c.file("cancelled"), c.file("submitted"));
  EXPECT_EQ(lines(c.file("cancelled")), 2);
}

TEST(ClusterExecutor, AJobFromAnEarlierTemperIsWaitedForNotSubmittedAgain) {
  FakeCluster c;
  c.plan("pending\n");
  JobSpec j = c.job("a");
  EXPECT_FALSE(ClusterExecutor::submitted(j));
  // An earlier temper submitted it, recorded it and was killed (SIGKILL cancels nothing).
  fs::create_directories(j.dir);
  ASSERT_TRUE(util::write_file_atomic(j.dir / "job-1.sh", batch_script(j, c.settings)));
  auto id = c.client->submit(j.dir / "job-1.sh", j.dir);
  ASSERT_TRUE(id.has_value()) << id.error().message;
  JobAttempt a;
  a.slurm_id = *id;
  a.state = "PENDING";
  nlohmann::json record = {{"schema_version", 1}, {"kind", "temper.cluster.job"}, {"key", "a"}, {"attempts", {a.to_json()}}};
  ASSERT_TRUE(util::write_file_atomic(j.dir / "submissions.json", record.dump()));
  EXPECT_TRUE(ClusterExecutor::submitted(j));
  // The queued job runs and finishes while the new temper waits for it.
  std::thread node([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    (void)util::write_file_atomic(j.dir / "result.json", "{}");
    (void)util::write_file_atomic(c.state / "jobs" / *id / "state", "COMPLETED\n");
  });
  auto out = c.executor->run_all({j});
  node.join();
  ASSERT_TRUE(out[0].finished) << out[0].error;
  ASSERT_EQ(out[0].attempts.size(), 1u);
  EXPECT_EQ(out[0].attempts[0].slurm_id, *id);
  EXPECT_EQ(lines(c.file("submitted")), 1) << "attached, not submitted again";
  EXPECT_NE(c.progress.str().find("from before"), std::string::npos);
}

} // namespace
} // namespace temper::exec::cluster_executor_test
