// A small campaign whose judge runs go to a cluster: the fake Slurm of tests/fixtures/slurm_fake
// runs each job here, in the background, with the real `temper job run`; the states a one-node
// cluster cannot show on demand (a preempted job) come from its plan. The real Slurm is in
// tests/e2e/slurm_e2e_test.cpp.
#include "campaign/cluster_judge_service.h"
#include "campaign/orchestrator.h"
#include "campaign/planfile_teacher.h"
#include "campaign_fakes.h"
#include "campaign/judge_job.h"
#include "core/thread_count.h"
#include "kb/target.h"
#include "util/clock.h"
#include "util/host.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace temper::campaign::cluster_campaign_test {
namespace {

using namespace testing;

TEST(ClusterCampaignTest, JudgeRunsGoToTheClusterAndAProbeIsSharedOutOverMaxJobs) {
  util::TempDir tmp("temper-campaign-cluster");
  json plan = test_plan("rows");
  plan["milestones"][1]["acceptance"]["performance"]["min_speedup"] = 0.01;
  plan["milestones"][1]["acceptance"]["performance"]["cases"] = {7, 13};
  plan["milestones"].erase(2);
  const fs::path task = make_task(tmp.path(), {plan});
  const std::string good = *util::read_file(source_dir() / "tasks" / "swi_glu" / "kernels" / "rows.cpp");

  CampaignConfig c = test_config(task, 1);
  c.student = "scripted";
  c.judge.cases = {7, 13};
  c.judge.cap_s = 0.3;
  c.judge.cache_mode = "warm";
  c.judge.measure_jobs = 1;
  c.judge.confirm_jobs = 1;
  c.judge.min_samples = 5;
  c.judge.min_time_s = 0.02;
  c.judge.jobs = 2;
  c.executor.kind = "slurm";
  c.executor.max_jobs = 2;
  c.executor.bin_dir = source_dir() / "tests" / "fixtures" / "slurm_fake";

  // The second submission is preempted; the executor submits it again.
  const fs::path slurm = tmp.path() / "slurm";
  fs::create_directories(slurm);
  ::setenv("FAKE_SLURM_DIR", slurm.c_str(), 1);
  ASSERT_TRUE(util::write_file_atomic(slurm / "plan", "run\npreempt\n"));

  RealJudgeService local(c.judge, util::default_process_runner());
  exec::SlurmClient client(c.executor, util::default_process_runner());
  util::SteadyClock clock;
  exec::ExecutorTiming timing;
  timing.result_check_s = 0.05;
  timing.poll_s = 0.1;
  timing.max_poll_s = 0.2;
  timing.vanish_grace_s = 0.5;
  std::ostringstream progress;
  exec::ClusterExecutor executor(client, clock, timing, &progress);
  ClusterJudgeOptions opts;
  opts.jobs_root = tmp.path() / "campaign" / "jobs";
  opts.temper_exe = fs::path(TEMPER_BINARY_DIR) / "temper";
  opts.kb_roots = {source_dir() / "hw_kb"};
  opts.max_jobs = c.executor.max_jobs;
  ClusterJudgeService judge(c.judge, opts, executor, local, clock);

  ScriptedStudent student;
  Orchestrator* current = nullptr;
  student.orchestrator = &current;
  student.script["R1/M0"] = {{{"submit", good, ""}}};
  // Both cases at once, as a tuner's rung: 2 cases x 4 variants as 4 jobs, 2 out at a time.
  const Action probe{"probe", good, "", {"UNROLL=1,2", "PF_DIST=0,4096"}, {7, 13}};
  student.script["R1/M1"] = {{probe, {"submit", good, ""}}};
  OrchestratorDeps d;
  d.judge = &judge;
  d.make_agent = [&](const std::string& spec, agent::Role role) -> Expected<std::unique_ptr<agent::Agent>> {
    if (role == agent::Role::Student) return std::unique_ptr<agent::Agent>(new AgentRef(student));
    return make_campaign_agent(spec, task);
  };
  auto o = Orchestrator::create(tmp.path() / "campaign", c, std::move(d));
  ASSERT_TRUE(o.has_value()) << o.error().message;
  current = o->get();
  auto ran = (*o)->run();
  ASSERT_TRUE(ran.has_value()) << ran.error().message << "\n" << progress.str();

  const fs::path r1 = tmp.path() / "campaign" / "rounds" / "R1";
  auto result = [&](int n) { return json::parse(*util::read_file(r1 / "attempts" / fmt::format("{:04}", n) / "result.json")); };
  EXPECT_EQ(result(1)["status"], "accepted") << result(1).dump(2) << progress.str();
  // The probe's four variants on each case ran as two jobs per case and came back as one
  // ranking per case.
  json probe_result = result(2);
  EXPECT_EQ(probe_result["op"], "probe");
  ASSERT_EQ(probe_result["variants"].size(), 4u) << probe_result.dump(2);
  ASSERT_EQ(probe_result["variants_by_case"]["7"].size(), 4u) << probe_result.dump(2);
  ASSERT_EQ(probe_result["variants_by_case"]["13"].size(), 4u) << probe_result.dump(2);
  json probe_report = json::parse(*util::read_file(r1 / "attempts" / "0002" / "report-case-13.json"));
  EXPECT_EQ(probe_report["executor"]["parts"], 2);
  EXPECT_EQ(probe_report["executor"]["jobs"].size(), 2u);
  int rank = 0;
  for (const auto& v : probe_report["variants"]) {
    if (!v["rank"].is_number()) continue;
    EXPECT_EQ(v["rank"], ++rank);
  }
  EXPECT_EQ(rank, probe_report["summary"]["timed"].get<int>());
  // Every report says where it ran.
  json gate = json::parse(*util::read_file(r1 / "attempts" / "0003" / "report.json"));
  EXPECT_EQ(result(3)["status"], "accepted") << result(3).dump(2);
  // The gate's two cases ran as two jobs, each case with its measurement and confirmation job,
  // and came back as one report in the campaign's order.
  EXPECT_EQ(gate["executor"]["parts"], 2);
  ASSERT_EQ(gate["cases"].size(), 2u);
  EXPECT_EQ(gate["cases"][0]["case_id"], 7);
  EXPECT_EQ(gate["cases"][1]["case_id"], 13);
  EXPECT_EQ(gate["timing"]["cases_timed"], 2);
  EXPECT_EQ(gate["cases"][1]["timing"]["jobs"].size(), 2u);
  EXPECT_EQ(gate["executor"]["node"]["hostname"], util::host_info().hostname);
  EXPECT_EQ(gate["executor"]["node"]["target_class"], kb::current_target().target_class());
  EXPECT_EQ(gate["executor"]["jobs"][0]["attempts"][0]["node"], "fakenode");

  // The ledger: every submission, the preempted one and its resubmission included, and the
  // time spent waiting on the cluster.
  auto t = (*o)->ledger().totals();
  ASSERT_TRUE(t.has_value());
  // Reference times, M0's correctness (submitted twice), M1's probe (2 cases x 2 parts) and its
  // gate (2 jobs).
  EXPECT_EQ(t->cluster_jobs, 1 + 2 + 4 + 2) << progress.str();
  EXPECT_EQ(t->cluster_failed, 1);
  EXPECT_GT(t->queue_s, 0);
  EXPECT_NE(progress.str().find("PREEMPTED"), std::string::npos) << progress.str();
  // Status names the cluster; nothing is out once the campaign is done.
  auto st = campaign_status(tmp.path() / "campaign");
  ASSERT_TRUE(st.has_value()) << st.error().message;
  EXPECT_EQ((*st)["cluster"]["executor"]["kind"], "slurm");
  EXPECT_TRUE((*st)["cluster"]["jobs_out"].empty());
  EXPECT_NE(format_status(*st).find("cluster: Slurm, up to 2 job(s) at once; 0 out now"), std::string::npos) << format_status(*st);
  EXPECT_NE(format_status(*st).find(", queue "), std::string::npos) << format_status(*st);
}

// A judge job as files: it reads back as it was written, its key follows the candidate's
// content, and a node runs it on its own CPUs when the campaign asked for all of them.
TEST(ClusterCampaignTest, AJudgeJobIsFilesThatANodeRunsOnItsOwnCpus) {
  util::TempDir tmp("temper-judge-job");
  const fs::path kernel = tmp.path() / "k.cpp";
  ASSERT_TRUE(util::write_file_atomic(kernel, *util::read_file(source_dir() / "tasks" / "swi_glu" / "kernels" / "rows.cpp")));
  JudgeJob job;
  job.settings.threads = 64; // the submitting machine's count
  job.settings.threads_all = true;
  job.call.task_dir = source_dir() / "tasks" / "swi_glu";
  job.call.candidate = kernel;
  job.call.tier = "correctness";
  job.call.cases = {13};
  job.call.reference_seconds = {{13, 0.25}};
  auto back = JudgeJob::from_json(json::parse(job.to_json().dump()));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->to_json(), job.to_json());
  EXPECT_EQ(back->key(), job.key());
  const std::string key = job.key();
  ASSERT_TRUE(util::write_file_atomic(kernel, *util::read_file(kernel) + "\n// edited\n"));
  EXPECT_NE(job.key(), key) << "the same path with other content is another job";

  const fs::path dir = tmp.path() / "job";
  fs::create_directories(dir);
  ASSERT_TRUE(util::write_file_atomic(dir / "job.json", job.to_json().dump()));
  // In the test binary the worker is not beside the running executable, as it is beside temper.
  ::setenv("TEMPER_WORKER", (fs::path(TEMPER_BINARY_DIR) / "temper-worker").c_str(), 1);
  ASSERT_TRUE(run_judge_job(dir, util::default_process_runner(), "test").has_value());
  const json result = json::parse(*util::read_file(dir / "result.json"));
  ASSERT_TRUE(result.value("ok", false)) << result.dump(2);
  EXPECT_EQ(result["node"]["target_class"], kb::current_target().target_class());
  EXPECT_EQ(result["report"]["summary"]["passed"], 1) << result["report"].dump(2).substr(0, 2000);
  EXPECT_EQ(result["report"]["context"]["threads"], core::usable_cpus());

  // Told to stop while it ran (scancel, a preemption): no result, so the job is submitted again
  // rather than read with its workers' deaths in it.
  const fs::path stopped = tmp.path() / "stopped";
  fs::create_directories(stopped);
  ASSERT_TRUE(util::write_file_atomic(stopped / "job.json", job.to_json().dump()));
  auto st = run_judge_job(stopped, util::default_process_runner(), "test", [] { return true; });
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().message.find("no result written"), std::string::npos) << st.error().message;
  EXPECT_FALSE(fs::exists(stopped / "result.json"));
}

// Speedups are compared only between nodes of one class: a probe whose parts come back from
// nodes of two classes is an error that says so. The parts' results are already in their job
// directories (as a finished job leaves them), so nothing is submitted.
TEST(ClusterCampaignTest, AProbeWhosePartsRanOnTwoClassesIsAnError) {
  util::TempDir tmp("temper-cluster-classes");
  const fs::path slurm = tmp.path() / "slurm";
  fs::create_directories(slurm);
  ::setenv("FAKE_SLURM_DIR", slurm.c_str(), 1);
  exec::ExecutorSettings es;
  es.kind = "slurm";
  es.max_jobs = 2;
  es.bin_dir = source_dir() / "tests" / "fixtures" / "slurm_fake";
  exec::SlurmClient client(es, util::default_process_runner());
  util::SteadyClock clock;
  exec::ClusterExecutor executor(client, clock);
  JudgeSettings settings;
  RealJudgeService local(settings, util::default_process_runner());
  ClusterJudgeOptions opts;
  opts.jobs_root = tmp.path() / "jobs";
  opts.temper_exe = fs::path(TEMPER_BINARY_DIR) / "temper";
  opts.max_jobs = 2;
  ClusterJudgeService service(settings, opts, executor, local, clock);
  JudgeCall call;
  call.task_dir = source_dir() / "tasks" / "swi_glu";
  call.candidate = source_dir() / "tasks" / "swi_glu" / "kernels" / "rows.cpp";
  call.tier = "probe";
  call.cases = {13};
  call.grid = {"UNROLL=1,2"};
  auto jobs = service.jobs_for(call, true);
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 2u);
  const char* classes[] = {"x86_64-zen4-avx512", "x86_64-zen5-avx512"};
  for (size_t i = 0; i < 2; ++i) {
    const fs::path dir = opts.jobs_root / (*jobs)[i].key();
    fs::create_directories(dir);
    const json report = {{"kind", "temper.probe.report"}, {"summary", {{"wall_seconds", 1.0}}}, {"variants", json::array()}};
    const json result = {{"kind", "temper.judge.job.result"}, {"ok", true}, {"report", report},
                         {"node", {{"hostname", fmt::format("n{}", i)}, {"target_class", classes[i]}}}};
    ASSERT_TRUE(util::write_file_atomic(dir / "result.json", result.dump()));
  }
  EXPECT_TRUE(service.has_job(call, true));
  auto out = service.probe_grid(call);
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.error().message.find("different classes (x86_64-zen4-avx512, x86_64-zen5-avx512)"), std::string::npos)
      << out.error().message;
  EXPECT_FALSE(fs::exists(slurm / "submitted")) << "nothing was submitted";
}

json timed_case(int64_t id, double speedup, const std::string& verdict) {
  return {{"case_id", id},
          {"status", "PASSED"},
          {"timing",
           {{"verdict", verdict},
            {"speedup", speedup},
            {"cann_bench_score", 0.75},
            {"jobs", {{{"kind", "measurement"}, {"estimate", {{"n", 30}, {"speedup", speedup}, {"ci", {speedup * 0.9, speedup * 1.1}}, {"half_width_log", 0.1}}}}}}}}};
}

json part(std::vector<json> cases, double wall) {
  return {{"kind", "temper.judge.report"},
          {"summary", {{"wall_seconds", wall}, {"compile_seconds", 1.0}, {"golden_compile_seconds", 0.5}}},
          {"cases", cases},
          {"timing", {{"tier", "gate"}, {"noise_floor", 0.01}, {"verdicts", {{"FASTER", 0}}}}}};
}

// A gate whose cases ran as two jobs is one report again: the cases in the order asked for, the
// counts of both, and the geometric mean and its interval by the judge's own rule over all of them.
TEST(ClusterCampaignTest, AGatesPartsMergeIntoOneReport) {
  const json a = part({timed_case(1, 2.0, "FASTER"), timed_case(3, 1.0, "SAME")}, 10);
  json b = part({timed_case(2, 8.0, "FASTER")}, 12);
  b["cases"].push_back({{"case_id", 4}, {"status", "INCORRECT_NUMERICAL"}});
  const json m = merge_judge_reports({a, b}, {1, 2, 3, 4}, 12);
  ASSERT_EQ(m["cases"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m["cases"][i]["case_id"], i + 1);
  EXPECT_EQ(m["summary"]["cases"], 4);
  EXPECT_EQ(m["summary"]["passed"], 3);
  EXPECT_EQ(m["summary"]["all_passed"], false);
  EXPECT_EQ(m["summary"]["status_counts"]["INCORRECT_NUMERICAL"], 1);
  EXPECT_DOUBLE_EQ(m["summary"]["wall_seconds"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(m["summary"]["compile_seconds"].get<double>(), 2);
  EXPECT_EQ(m["timing"]["cases_timed"], 3);
  EXPECT_NEAR(m["timing"]["geomean_speedup"].get<double>(), std::cbrt(2.0 * 8.0 * 1.0), 1e-12);
  // sqrt(3 * 0.1^2) / 3 in log units around the mean.
  const double half = std::sqrt(3 * 0.01) / 3;
  EXPECT_NEAR(m["timing"]["geomean_ci"][0].get<double>(), std::cbrt(16.0) * std::exp(-half), 1e-9);
  EXPECT_EQ(m["timing"]["verdicts"]["FASTER"], 2);
  EXPECT_EQ(m["timing"]["verdicts"]["SAME"], 1);
  EXPECT_DOUBLE_EQ(m["timing"]["cann_bench_score"].get<double>(), 0.75);
  // Summarized as the orchestrator reads any gate.
  const ReportSummary s = summarize_report(m);
  EXPECT_EQ(s.faster, 2);
  EXPECT_EQ(s.passed, 3);
}

} // namespace
} // namespace temper::campaign::cluster_campaign_test
