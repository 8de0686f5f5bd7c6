// Runs build/temper profile and temper judge --profile on the SwiGLU traversal fixtures
// (tests/fixtures/profile): the strided traversal shows several times the L1 data misses of the
// blocked one under the cache simulation, hardware counters without a PMU are "unsupported",
// and mechanism expectations come out passed, failed or unverifiable as they should.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace profile_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct CliRun {
  int exit_code = -1;
  std::string output;
  nlohmann::json json;
};

CliRun temper_run(std::vector<std::string> args, const fs::path& json) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = std::chrono::seconds(600);
  auto r = util::default_process_runner().run(cmd);
  CliRun out;
  out.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  out.output = r.output;
  if (auto text = util::read_file(json)) out.json = nlohmann::json::parse(*text);
  return out;
}

std::string fixture(const char* name) { return (kSource / "tests/fixtures/profile" / name).string(); }

bool is_unsupported(const nlohmann::json& v) { return v.is_string() && v.get<std::string>().rfind("unsupported: ", 0) == 0; }

} // namespace

TEST(ProfileE2E, StridedTraversalMissesL1MoreAndJudgeChecksTheMechanism) {
  if (util::find_program("valgrind").empty()) GTEST_SKIP() << "valgrind is not installed";
  util::TempDir dir("temper-profile-e2e");
  // Case 13 is float32 [11, 13, 16, 67] split on dim 2: 150K elements, quick under valgrind.
  fs::path prof = dir.path() / "profile.json";
  CliRun p = temper_run({"profile", (kSource / "tasks/swi_glu").string(), fixture("swiglu_strided.cpp"), "--case", "13",
                      "--reference", fixture("swiglu_blocked.cpp"), "--with", "cachegrind", "--calls", "3", "--json",
                      prof.string(), "--quiet", "--expect", "cg.D1mr change >= 200%", "--expect", "cg.Ir change <= 50%"},
                     prof);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const auto& cand = p.json["metrics"]["candidate"]["values"];
  const auto& ref = p.json["metrics"]["baseline"]["values"];
  ASSERT_TRUE(cand["cg.D1mr"].is_number()) << cand.dump(1);
  ASSERT_TRUE(ref["cg.D1mr"].is_number()) << ref.dump(1);
  EXPECT_GT(cand["cg.D1mr"].get<double>(), 4 * ref["cg.D1mr"].get<double>()) << p.output;
  EXPECT_GT(ref["cg.Ir"].get<double>(), 150000); // at least an instruction per element
  EXPECT_GT(cand["time.median_us"].get<double>(), 0);
  EXPECT_GT(cand["static.code_bytes"].get<double>(), 0);
  EXPECT_TRUE(cand["compile.seconds"].is_number());
  EXPECT_TRUE(is_unsupported(cand["cuda.registers"]));
  // No PMU in this VM: unsupported with the reason, never 0. Where there is one, a count.
  EXPECT_TRUE(is_unsupported(cand["hw.cycles"]) || cand["hw.cycles"].get<double>() > 0) << cand["hw.cycles"];
  EXPECT_TRUE(is_unsupported(cand["sw.task_clock_ms"]) || cand["sw.task_clock_ms"].get<double>() > 0);
  EXPECT_EQ(p.json["metrics"]["expectations"][0]["outcome"], "passed");
  EXPECT_NE(p.output.find("cg.D1mr"), std::string::npos);

  // The judge: blocked against the strided profile as the baseline (a "previous candidate").
  fs::path rep = dir.path() / "judge.json";
  CliRun j = temper_run({"judge", (kSource / "tasks/swi_glu").string(), fixture("swiglu_blocked.cpp"), "--cases", "13",
                      "--profile", "13", "--with", "cachegrind", "--calls", "3", "--baseline-report", prof.string(), "--json",
                      rep.string(), "--quiet", "--expect", "cg.D1mr change <= -30%", "--expect", "static.vec512_ops >= 0",
                      "--expect", "hw.l1d_misses change <= -30%", "--expect", "cg.Ir change <= -90%"},
                     rep);
  ASSERT_FALSE(j.json.is_null()) << j.output;
  EXPECT_EQ(j.exit_code, 1) << j.output; // the case passes; two expectations do not
  const auto& c = j.json["cases"][0];
  EXPECT_EQ(c["status"], "PASSED");
  const auto& ex = c["metrics"]["expectations"];
  ASSERT_EQ(ex.size(), 4u) << c["metrics"].dump(1);
  EXPECT_EQ(ex[0]["outcome"], "passed") << ex[0].dump();
  EXPECT_LT(ex[0]["change_pct"].get<double>(), -30);
  EXPECT_EQ(ex[1]["outcome"], "passed");
  bool pmu = !is_unsupported(c["metrics"]["candidate"]["values"]["hw.l1d_misses"]);
  if (!pmu) {
    EXPECT_EQ(ex[2]["outcome"], "unverifiable") << ex[2].dump();
  }
  EXPECT_EQ(ex[3]["outcome"], "failed") << ex[3].dump();
  EXPECT_EQ(c["metrics"]["mechanism"]["verdict"], "not_confirmed");
  EXPECT_NE(c["metrics"]["baseline_source"].get<std::string>().find("baseline report"), std::string::npos);
  EXPECT_NE(j.output.find("mechanism expectations"), std::string::npos) << j.output;
}

TEST(ProfileE2E, MalformedExpectationsAreUsageErrors) {
  util::TempDir dir("temper-profile-e2e");
  fs::path rep = dir.path() / "r.json";
  CliRun unknown = temper_run({"judge", (kSource / "tasks/swi_glu").string(), fixture("swiglu_blocked.cpp"), "--cases", "13",
                            "--expect", "cg.D1mx change <= -30%", "--quiet"},
                           rep);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("did you mean cg.D1mr"), std::string::npos) << unknown.output;
  CliRun malformed = temper_run({"profile", (kSource / "tasks/swi_glu").string(), fixture("swiglu_blocked.cpp"), "--case", "13",
                              "--expect", "cg.D1mr change <= -30", "--quiet"},
                             rep);
  EXPECT_EQ(malformed.exit_code, 2) << malformed.output;
  EXPECT_NE(malformed.output.find("write -30%"), std::string::npos) << malformed.output;
}

TEST(ProfileE2E, PrebuiltArtifactReferenceAndNoBaselineMakeRelativeUnverifiable) {
  util::TempDir dir("temper-profile-e2e");
  // Build the blocked kernel by hand and pass the shared object as the reference.
  fs::path so = dir.path() / "blocked.so";
  util::Command cc;
  cc.argv = {"g++", "-std=c++20", "-O2", "-shared", "-fPIC", "-I", (kSource / "include").string(), fixture("swiglu_blocked.cpp"),
             "-o", so.string()};
  ASSERT_TRUE(util::default_process_runner().run(cc).ok());
  fs::path out = dir.path() / "p.json";
  CliRun p = temper_run({"profile", (kSource / "tasks/swi_glu").string(), fixture("swiglu_blocked.cpp"), "--case", "13",
                      "--reference", so.string(), "--calls", "2", "--json", out.string(), "--quiet", "--expect",
                      "static.instructions change <= 1000%"},
                     out);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const auto& base = p.json["metrics"]["baseline"]["values"];
  EXPECT_TRUE(is_unsupported(base["compile.seconds"])) << base.dump(1); // prebuilt: not known
  EXPECT_GT(base["static.instructions"].get<double>(), 0);
  EXPECT_TRUE(is_unsupported(base["cg.D1mr"])); // not asked for

  CliRun none = temper_run({"profile", (kSource / "tasks/swi_glu").string(), fixture("swiglu_blocked.cpp"), "--case", "13",
                         "--calls", "2", "--json", out.string(), "--quiet", "--expect", "time.median_us change <= -10%"},
                        out);
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_EQ(none.json["metrics"]["expectations"][0]["outcome"], "unverifiable");
}

TEST(ProfileE2E, CrashingKernelMakesRunTimeMetricsUnsupported) {
  util::TempDir dir("temper-profile-e2e");
  fs::path out = dir.path() / "p.json";
  std::vector<std::string> args = {"profile", (kSource / "tasks/swi_glu").string(),
                                   (kSource / "tests/fixtures/swi_glu/crash.cpp").string(), "--case", "13", "--calls", "2",
                                   "--json", out.string(), "--quiet", "--expect", "time.median_us < 1e9"};
  bool valgrind = !util::find_program("valgrind").empty();
  if (valgrind) {
    args.push_back("--with");
    args.push_back("cachegrind");
  }
  CliRun p = temper_run(args, out);
  EXPECT_EQ(p.exit_code, 1) << p.output; // the expectation is unverifiable
  const auto& v = p.json["metrics"]["candidate"]["values"];
  ASSERT_TRUE(is_unsupported(v["time.median_us"])) << v.dump(1);
  EXPECT_NE(v["time.median_us"].get<std::string>().find("the kernel failed"), std::string::npos) << v["time.median_us"];
  EXPECT_TRUE(is_unsupported(v["sw.task_clock_ms"]));
  EXPECT_GT(v["static.instructions"].get<double>(), 0); // static analysis does not need a run
  if (valgrind) {
    EXPECT_TRUE(is_unsupported(v["cg.D1mr"])) << v["cg.D1mr"];
  }
  EXPECT_EQ(p.json["metrics"]["expectations"][0]["outcome"], "unverifiable");
}

} // namespace profile_e2e_test
