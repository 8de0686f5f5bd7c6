// The real binary timing real kernels against the bundled SwiGLU reference: a candidate doing
// twice the work is SLOWER; the reference against itself is never FASTER or SLOWER.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace timing_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct Run {
  int exit_code = -1;
  std::string output;
  nlohmann::json report;
};

Run temper_cmd(std::vector<std::string> args, const fs::path& json) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.argv.insert(cmd.argv.end(), {"--json", json.string(), "--quiet"});
  cmd.timeout = std::chrono::seconds(300);
  auto r = util::default_process_runner().run(cmd);
  Run out;
  out.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  out.output = r.describe() + "\n" + r.output;
  if (auto text = util::read_file(json)) out.report = nlohmann::json::parse(*text);
  return out;
}

std::string src(const char* p) { return (kSource / p).string(); }

} // namespace

TEST(TimingE2E, TwiceTheWorkIsSlower) {
  util::TempDir dir;
  auto r = temper_cmd({"judge", src("tasks/swi_glu"), src("tests/fixtures/swi_glu/double_work.cpp"), "--reference",
                       src("tasks/swi_glu/reference.cpp"), "--cases", "1", "--measure-jobs", "1", "--confirm-jobs", "1",
                       "--cap", "1.5"},
                      dir.path() / "r.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& t = r.report["cases"][0]["timing"];
  EXPECT_EQ(t["verdict"], "SLOWER") << t.dump(2);
  EXPECT_TRUE(t["confirmed"].get<bool>()) << t.dump(2);
  EXPECT_LT(t["speedup"].get<double>(), 0.8) << t.dump(2);
  ASSERT_EQ(t["jobs"].size(), 2u);
  EXPECT_EQ(t["jobs"][1]["kind"], "confirmation");
  EXPECT_NE(t["jobs"][0]["seed_id"], t["jobs"][1]["seed_id"]);
  const auto& job = t["jobs"][0];
  EXPECT_GE(job["reference"]["n"].get<int>(), 10);
  EXPECT_EQ(job["reference"]["n"], job["candidate"]["n"]);
  EXPECT_GE(job["input_sets"].get<int>(), 4);
  // Fresh values every call, and a sample of the recorded calls run again and checked: every
  // recorded call while there are fewer than the sample size. Warm-ups are timed calls too, but
  // their times count for nothing and they are not sampled.
  EXPECT_EQ(job["content"], "fresh");
  const int calls = job["activity"]["candidate"]["timed_calls"].get<int>();
  const int recorded = job["candidate"]["n"].get<int>();
  EXPECT_GT(calls, recorded) << job.dump(2);
  // The sample is drawn from the calls not already proved, sized for them (at most 90).
  const auto& check = job["check"];
  const int proved = check["proved_by_identity"].get<int>() + check["proved_by_reference"].get<int>();
  const int target = check["target"].get<int>();
  EXPECT_LE(target, std::min(90, recorded - proved)) << job.dump(2);
  // Unproven calls enough to hide 5% of the calls in: some of them are sampled
  // (CheckSampleSize.* in the unit tests has the exact sizes).
  if (recorded - proved >= (recorded + 19) / 20) {
    EXPECT_GT(target, 0) << job.dump(2);
  }
  EXPECT_EQ(job["rechecks"].get<int>(), target) << job.dump(2);
  EXPECT_LE(job["rechecks"].get<int>() + proved, recorded) << job.dump(2);
  if (job["rechecks"].get<int>() > 0) {
    EXPECT_GT(check["golden_seconds"].get<double>(), 0);
  }
  EXPECT_FALSE(job["check"]["unprovable"].get<bool>());
  // An honest one-thread kernel's other threads (the worker's watchdog) do next to nothing
  // outside its calls: what the reference's do in the same harness, give or take.
  const double ref_outside = job["activity"]["reference"]["outside_call_cpu_seconds"].get<double>();
  EXPECT_LT(job["activity"]["candidate"]["outside_call_cpu_seconds"].get<double>(), 2 * ref_outside + 2e-3) << job.dump(2);
  // The protocol is recorded with the overall block.
  const auto& overall = r.report["timing"];
  EXPECT_EQ(overall["protocol"]["cache_mode"], "cold");
  EXPECT_GT(overall["protocol"]["flush_bytes"].get<double>(), 0);
  EXPECT_EQ(overall["verdicts"]["SLOWER"], 1);
}

TEST(TimingE2E, ReferenceAgainstItselfIsNeitherFasterNorSlower) {
  // A gate: a verdict counts only when the confirmation job agrees, as in real use.
  util::TempDir dir;
  auto r = temper_cmd({"judge", src("tasks/swi_glu"), src("tasks/swi_glu/reference.cpp"), "--reference",
                       src("tasks/swi_glu/reference.cpp"), "--cases", "1,15", "--measure-jobs", "1", "--confirm-jobs", "1",
                       "--cap", "1.5"},
                      dir.path() / "r.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& c : r.report["cases"]) {
    std::string v = c["timing"]["verdict"];
    EXPECT_TRUE(v == "SAME" || v == "AMBIGUOUS") << c["timing"].dump(2);
  }
}

// A kernel whose last bits change from call to call cannot have its timed outputs matched to
// checked ones: it gets no speed verdict, and is not accused of anything.
TEST(TimingE2E, ANondeterministicCandidateGetsNoVerdict) {
  util::TempDir dir;
  const std::string nondet = src("tests/fixtures/swi_glu/nondeterministic.cpp");
  auto r = temper_cmd({"judge", src("tasks/swi_glu"), nondet, "--reference", src("tasks/swi_glu/reference.cpp"), "--cases", "15", "--measure-jobs", "1",
                       "--confirm-jobs", "0", "--cap", "0.6"},
                      dir.path() / "r.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& c = r.report["cases"][0];
  EXPECT_EQ(c["status"], "PASSED") << c.dump(2);
  const auto& job = c["timing"]["jobs"][0];
  EXPECT_TRUE(job["check"]["unprovable"].get<bool>()) << job.dump(2);
  EXPECT_EQ(job["verdict"], "AMBIGUOUS") << job.dump(2);
  EXPECT_NE(job.value("message", "").find("nondeterministic"), std::string::npos) << job.dump(2);
}

TEST(TimingE2E, DifferentBuildProtocolsAreRefused) {
  util::TempDir dir;
  auto r = temper_cmd({"judge", src("tasks/swi_glu"), src("tasks/swi_glu/reference.cpp"), "--reference",
                       src("tasks/swi_glu/reference.cpp"), "--cases", "1", "--reference-flags", "-O2"},
                      dir.path() / "r.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("flags differ"), std::string::npos) << r.output;
}

TEST(TimingE2E, CalibrationIsStoredAndUsed) {
  util::TempDir dir;
  auto cal = temper_cmd({"calibrate", src("tasks/swi_glu"), "--reference", src("tasks/swi_glu/reference.cpp"), "--cases",
                         "15", "--cap", "1"},
                        dir.path() / "cal.json");
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  std::string stored = cal.report["timing"]["calibration"];
  EXPECT_EQ(stored.rfind("stored: ", 0), 0u) << stored;

  auto r = temper_cmd({"judge", src("tasks/swi_glu"), src("tests/fixtures/swi_glu/correct_fast.cpp"), "--reference",
                       src("tasks/swi_glu/reference.cpp"), "--cases", "15", "--measure-jobs", "1", "--confirm-jobs", "0",
                       "--cap", "1"},
                      dir.path() / "r.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.report["cases"][0]["timing"]["calibrated"].get<bool>()) << r.report["cases"][0]["timing"].dump(2);
  EXPECT_EQ(r.report["timing"]["calibration"].get<std::string>().rfind("used", 0), 0u);

  // Under another protocol the calibration does not count.
  auto other = temper_cmd({"judge", src("tasks/swi_glu"), src("tests/fixtures/swi_glu/correct_fast.cpp"), "--reference",
                           src("tasks/swi_glu/reference.cpp"), "--cases", "15", "--measure-jobs", "1", "--confirm-jobs",
                           "0", "--cap", "1", "--cache", "warm"},
                          dir.path() / "o.json");
  ASSERT_EQ(other.exit_code, 0) << other.output;
  EXPECT_FALSE(other.report["cases"][0]["timing"]["calibrated"].get<bool>());
  EXPECT_NE(other.report["timing"]["calibration"].get<std::string>().find("cache_mode"), std::string::npos)
      << other.report["timing"].dump(2);
}

TEST(TimingE2E, ProbeTierTimesOneCase) {
  util::TempDir dir;
  auto r = temper_cmd({"judge", src("tasks/swi_glu"), src("tests/fixtures/swi_glu/correct_fast.cpp"), "--reference",
                       src("tasks/swi_glu/reference.cpp"), "--cases", "15,1", "--tier", "probe", "--cap", "1"},
                      dir.path() / "r.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.report["cases"][0].contains("timing"));
  EXPECT_FALSE(r.report["cases"][1].contains("timing"));
  EXPECT_EQ(r.report["timing"]["tier"], "probe");
  EXPECT_EQ(r.report["timing"]["confirmation_jobs"], 0);
  // Both arms in temper-worker: the default cold-cache step flushes the workers' own memory.
  EXPECT_EQ(r.report["timing"]["protocol"]["cold_step"], "evict") << r.report["timing"]["protocol"].dump(2);
}

TEST(TimingE2E, CannBenchScoreWhereTheTaskGivesAHardwareBound) {
  util::TempDir dir;
  fs::copy(kSource / "tasks/swi_glu", dir.path() / "t", fs::copy_options::recursive);
  {
    std::ofstream yaml(dir.path() / "t" / "temper.yaml", std::ios::app);
    yaml << "hardware_bound_us: {15: 20}\n";
  }
  auto r = temper_cmd({"judge", (dir.path() / "t").string(), src("tests/fixtures/swi_glu/double_work.cpp"), "--reference",
                       src("tasks/swi_glu/reference.cpp"), "--cases", "15", "--tier", "probe", "--cap", "1"},
                      dir.path() / "r.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& score = r.report["cases"][0]["timing"]["cann_bench_score"];
  ASSERT_TRUE(score.is_number()) << r.report["cases"][0]["timing"].dump(2);
  // Twice the reference's time scores well below parity's 0.5.
  EXPECT_LT(score.get<double>(), 0.45);
  EXPECT_GT(score.get<double>(), 0.0);
  EXPECT_EQ(r.report["timing"]["cann_bench_scored_cases"], 1);
}

} // namespace timing_e2e_test
