// Runs build/temper judge on the bundled SwiGLU task with correct and deliberately broken
// kernels (tests/fixtures/swi_glu) and checks that each fails exactly where it should, with the
// right status. Cases are a reduced set: the largest shapes run in bench/, not here.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

namespace judge_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct JudgeRun {
  int exit_code = -1;
  std::string output;
  nlohmann::json report;
  std::map<int64_t, nlohmann::json> by_case;

  std::string status(int64_t id) const {
    auto it = by_case.find(id);
    return it == by_case.end() ? "<missing>" : it->second.value("status", "<none>");
  }
};

JudgeRun judge(const std::string& task, const std::string& candidate, const std::string& cases,
               std::vector<std::string> extra = {}) {
  util::TempDir dir("temper-e2e");
  fs::path json = dir.path() / "report.json";
  util::Command cmd;
  cmd.argv = {kBinary.string(), "judge", (kSource / task).string(), (kSource / candidate).string(),
              "--json", json.string(), "--quiet"};
  if (!cases.empty()) {
    cmd.argv.push_back("--cases");
    cmd.argv.push_back(cases);
  }
  cmd.argv.insert(cmd.argv.end(), extra.begin(), extra.end());
  cmd.timeout = std::chrono::seconds(300);
  auto r = util::default_process_runner().run(cmd);
  JudgeRun out;
  out.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  out.output = r.output;
  if (auto text = util::read_file(json)) {
    out.report = nlohmann::json::parse(*text);
    for (const auto& c : out.report["cases"]) out.by_case[c["case_id"].get<int64_t>()] = c;
  }
  return out;
}

} // namespace

TEST(JudgeE2E, CorrectCandidatePassesEveryCase) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/correct_fast.cpp", "1,6,9,12,13,14");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int64_t id : {1, 6, 9, 12, 13, 14}) EXPECT_EQ(r.status(id), "PASSED") << "case " << id << "\n" << r.output;
  // The report is self-describing.
  EXPECT_EQ(r.report["schema_version"], 2);
  EXPECT_TRUE(r.report["context"].contains("host"));
  EXPECT_TRUE(r.report["context"].contains("compiler"));
  EXPECT_TRUE(r.report["context"].contains("job_seed_id"));
  EXPECT_TRUE(r.report["context"]["flags"].is_array());
  EXPECT_TRUE(r.report["summary"]["all_passed"].get<bool>());
  EXPECT_GE(r.by_case[1]["trials"].get<int>(), 3);
}

// A task in the official format with a tensor-list input and an optional input that cases 2
// and 3 leave out (tests/fixtures/list_sum): the golden gets them through a version 2 bundle,
// the kernel through input_lists; the operator's precision_thresholds set T.
TEST(JudgeE2E, TensorListsAndAbsentInputsReachGoldenAndKernel) {
  auto ok = judge("tests/fixtures/list_sum", "tests/fixtures/list_sum/correct.cpp", "");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  for (int64_t id : {1, 2, 3}) EXPECT_EQ(ok.status(id), "PASSED") << "case " << id << "\n" << ok.output;

  auto wrong = judge("tests/fixtures/list_sum", "tests/fixtures/list_sum/ignores_bias.cpp", "");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_EQ(wrong.status(1), "INCORRECT_NUMERICAL") << wrong.output; // the only case with a bias
  EXPECT_EQ(wrong.status(2), "PASSED") << wrong.output;
  EXPECT_EQ(wrong.status(3), "PASSED") << wrong.output;
  EXPECT_NE(wrong.output.find("T = 0.001"), std::string::npos) << wrong.output;
}

TEST(JudgeE2E, ReferenceKernelPasses) {
  auto r = judge("tasks/swi_glu", "tasks/swi_glu/reference.cpp", "1,6,12");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

TEST(JudgeE2E, WrongOnlyWhenSplittingAxisZero) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/wrong_axis0.cpp", "1,6,9");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.status(1), "PASSED") << r.output;
  EXPECT_EQ(r.status(6), "INCORRECT_NUMERICAL") << r.output;
  EXPECT_EQ(r.status(9), "PASSED") << r.output;
  ASSERT_TRUE(r.by_case[6].contains("first_mismatches"));
  auto m = r.by_case[6]["first_mismatches"][0];
  EXPECT_TRUE(m.contains("index"));
  EXPECT_TRUE(m.contains("got"));
  EXPECT_TRUE(m.contains("expected"));
}

TEST(JudgeE2E, WrongOnlyOnTheInfCase) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/wrong_inf.cpp", "1,12,13");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.status(1), "PASSED") << r.output;
  EXPECT_EQ(r.status(12), "INCORRECT_NUMERICAL") << r.output;
  EXPECT_EQ(r.status(13), "PASSED") << r.output;
}

TEST(JudgeE2E, WrongOnlyOnTailElements) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/wrong_tail.cpp", "1,9");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.status(1), "PASSED") << r.output;
  EXPECT_EQ(r.status(9), "INCORRECT_NUMERICAL") << r.output;
}

TEST(JudgeE2E, NeverWritingTheOutputFails) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/no_write.cpp", "1,13,14");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.status(1), "INCORRECT_NUMERICAL") << r.output;
  // Even where the right answer is all zeros: the poisoned output is NaN, not zero.
  EXPECT_EQ(r.status(14), "INCORRECT_NUMERICAL") << r.output;
  // And where it is all NaN: some trials poison with a finite pattern.
  EXPECT_EQ(r.status(13), "INCORRECT_NUMERICAL") << r.output;
}

TEST(JudgeE2E, CrashIsAStatusNotACrashOfTemper) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/crash.cpp", "1,6");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.status(1), "CRASHED") << r.output;
  EXPECT_EQ(r.status(6), "CRASHED") << r.output;
  EXPECT_NE(r.by_case[1].value("message", "").find("SIGSEGV"), std::string::npos) << r.by_case[1].dump(2);
}

TEST(JudgeE2E, HangIsATimeout) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/hang.cpp", "1", {"--timeout", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.status(1), "TIMEOUT") << r.output;
}

TEST(JudgeE2E, WritingInputsIsRejected) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/writes_input.cpp", "1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.status(1), "REJECTED_CHEAT") << r.output;
  EXPECT_EQ(r.by_case[1].value("reason_code", ""), "writes_inputs");
}

TEST(JudgeE2E, ErrorReturnAndMissingSymbolAreRuntimeErrors) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/error_return.cpp", "1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.status(1), "RUNTIME_ERROR") << r.output;
  auto m = judge("tasks/swi_glu", "tests/fixtures/swi_glu/missing_symbol.cpp", "1");
  EXPECT_EQ(m.status(1), "RUNTIME_ERROR") << m.output;
  EXPECT_NE(m.by_case[1].value("message", "").find("temper_kernel"), std::string::npos) << m.by_case[1].dump(2);
}

TEST(JudgeE2E, CompileErrorCarriesDiagnostics) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/compile_error.cpp", "1,6");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.status(1), "COMPILE_ERROR") << r.output;
  EXPECT_EQ(r.status(6), "COMPILE_ERROR") << r.output;
  EXPECT_NE(r.by_case[1]["compile"].value("diagnostics", "").find("error"), std::string::npos);
}

TEST(JudgeE2E, NondeterminismIsReported) {
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/nondeterministic.cpp", "1");
  EXPECT_EQ(r.status(1), "PASSED") << r.output;
  EXPECT_TRUE(r.by_case[1].value("nondeterministic", false)) << r.by_case[1].dump(2);
}

TEST(JudgeE2E, UsageErrorsExitTwoWithAMessage) {
  auto unknown_case = judge("tasks/swi_glu", "tasks/swi_glu/reference.cpp", "99");
  EXPECT_EQ(unknown_case.exit_code, 2);
  EXPECT_NE(unknown_case.output.find("no case 99"), std::string::npos) << unknown_case.output;

  auto missing = judge("tasks/swi_glu", "tests/fixtures/swi_glu/does_not_exist.cpp", "1");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("does_not_exist.cpp"), std::string::npos) << missing.output;

  auto not_a_task = judge("tests", "tasks/swi_glu/reference.cpp", "1");
  EXPECT_EQ(not_a_task.exit_code, 2) << not_a_task.output;

  // A number out of range is a usage error that names its flag, before anything runs (a
  // negative timeout once turned every case into TIMEOUT).
  for (auto [flag, value] : {std::pair{"--timeout", "-1"}, std::pair{"--cap", "0"}, std::pair{"--jobs", "-2"},
                             std::pair{"--confirm-jobs", "-1"}, std::pair{"--noise-floor", "-0.5"},
                             std::pair{"--cold-step", "sometimes"}}) {
    auto bad = judge("tasks/swi_glu", "tasks/swi_glu/reference.cpp", "1", {flag, value});
    EXPECT_EQ(bad.exit_code, 2) << flag << " " << value << "\n" << bad.output;
    EXPECT_NE(bad.output.find(flag), std::string::npos) << bad.output;
  }
}

TEST(JudgeE2E, ClangBuildsTheCandidateToo) {
  if (util::find_program("clang++").empty()) GTEST_SKIP() << "clang++ is not installed";
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/correct_fast.cpp", "1,6", {"--compiler", "clang++"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.report["context"]["compiler"]["program"], "clang++");
}

TEST(JudgeE2E, GqaReferencePassesSmallCases) {
  // Prefill causal, MQA and MHA degenerate shapes, explicit scale: the small GQA cases.
  auto r = judge("tasks/gqa", "tasks/gqa/reference.cpp", "1,18,19,20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int64_t id : {1, 18, 19, 20}) EXPECT_EQ(r.status(id), "PASSED") << "case " << id;
  EXPECT_EQ(r.report["context"]["task"]["tolerance"], "flashattention");
}

TEST(JudgeE2E, GqaKernelsPassSmallCases) {
  // The kernels the GQA plans start from, at their default knobs, on the small cases (whose
  // goldens the reference test above shares); the blocked kernel also with DECODE_MAX_S above
  // every S, so its decode path (all heads live, K/V streamed in memory order) runs on them too.
  struct Variant {
    const char* kernel;
    std::vector<std::string> extra;
  };
  const std::vector<Variant> variants = {
      {"tasks/gqa/kernels/blocked.cpp", {}},
      {"tasks/gqa/kernels/blocked.cpp", {"--flags", "-O3 -march=native -DDECODE_MAX_S=1024"}},
      {"tasks/gqa/kernels/rowwise.cpp", {}},
  };
  for (const auto& v : variants) {
    auto r = judge("tasks/gqa", v.kernel, "1,18,19,20", v.extra);
    ASSERT_EQ(r.exit_code, 0) << v.kernel << "\n" << r.output;
    for (int64_t id : {1, 18, 19, 20}) EXPECT_EQ(r.status(id), "PASSED") << v.kernel << " case " << id;
  }
}

TEST(JudgeE2E, SpecializedKernelIsBuiltPerCase) {
  // Case 15: float32, last-axis split; case 1: float16, which this kernel refuses.
  auto r = judge("tasks/swi_glu", "tests/fixtures/swi_glu/specialized.cpp", "15,1");
  EXPECT_TRUE(r.report["context"]["specialized_per_case"].get<bool>()) << r.output;
  EXPECT_EQ(r.status(15), "PASSED") << r.output;
  EXPECT_EQ(r.status(1), "RUNTIME_ERROR") << r.output;
  EXPECT_NE(r.by_case[1].value("message", "").find("float32 last-axis"), std::string::npos);
}

} // namespace judge_e2e_test
