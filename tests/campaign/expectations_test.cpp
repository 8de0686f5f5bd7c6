// The campaign's mechanism check with the real profiler: a milestone's expectations on a
// candidate, against the sealed reference for relative ones. Static and timing metrics decide
// here; hardware counters are "unsupported" where the machine has none (never a pass), prose is
// "unsupported" with the grammar, and a submission whose cases all failed is not profiled.
#include "campaign/expectations.h"
#include "campaign/judge_service.h"
#include "campaign_fakes.h"
#include "util/process.h"

#include <gtest/gtest.h>

namespace temper::campaign::expectations_test {
namespace {

using namespace testing;

TEST(ProfilingExpectationEvaluatorTest, DecidesWhatThisMachineCanMeasureAndSaysWhyNot) {
  util::TempDir tmp("temper-campaign-expect");
  const fs::path task = make_task(tmp.path(), {});
  JudgeSettings settings;
  settings.jobs = 2;
  SealedReferenceStore refs(tmp.path() / "refs", task, compiler_spec(settings), util::default_process_runner(), 2);
  auto r0 = refs.seal(task / "reference.cpp", "R0", "starting reference");
  ASSERT_TRUE(r0.has_value()) << r0.error().message;
  // The candidate: the reference's own code in the Student's file, so the relative expectation
  // against the sealed artifact has a known answer (the same build: no change).
  const fs::path candidate = tmp.path() / "kernel.cpp";
  std::ofstream(candidate) << *util::read_file(task / "reference.cpp");

  ProfilingExpectationEvaluator evaluator(settings, util::default_process_runner());
  evaluator.set_worker_exe(fs::path(TEMPER_BINARY_DIR) / "temper-worker");
  ExpectationRequest req;
  req.expectations = {"static.instructions > 0", "static.instructions < 1", "static.instructions change == 0%",
                      "time.median_us > 0", "hw.cycles > 0", "vector instructions dominate the inner loop"};
  req.report = {{"cases", {{{"case_id", 13}, {"status", "PASSED"}}}}};
  req.candidate = candidate;
  req.task_dir = task;
  req.reference = *r0;
  auto out = evaluator.evaluate(req);
  ASSERT_EQ(out.size(), req.expectations.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].expectation, req.expectations[i]);
  EXPECT_EQ(out[0].status, "passed") << out[0].detail;
  EXPECT_NE(out[0].detail.find("case 13"), std::string::npos) << out[0].detail;
  EXPECT_EQ(out[1].status, "failed") << out[1].detail;
  EXPECT_EQ(out[2].status, "passed") << out[2].detail;
  EXPECT_EQ(out[3].status, "passed") << out[3].detail;
  // Hardware counters: measured where a PMU is exposed, otherwise unsupported with the reason.
  if (out[4].status == "unsupported") {
    EXPECT_NE(out[4].detail.find("cannot be measured here"), std::string::npos) << out[4].detail;
  } else {
    EXPECT_EQ(out[4].status, "passed") << out[4].detail;
  }
  EXPECT_EQ(out[5].status, "unsupported");
  EXPECT_NE(out[5].detail.find("not a metric expectation"), std::string::npos) << out[5].detail;

  // Nothing passed: nothing is profiled, and every metric expectation says so.
  req.report = {{"cases", {{{"case_id", 13}, {"status", "INCORRECT_NUMERICAL"}}}}};
  req.expectations = {"static.instructions > 0"};
  out = evaluator.evaluate(req);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, "unsupported");
  EXPECT_NE(out[0].detail.find("no case of the submission passed"), std::string::npos) << out[0].detail;
  // A relative expectation without a baseline is not a pass either.
  req.report = {{"cases", {{{"case_id", 13}, {"status", "PASSED"}}}}};
  req.expectations = {"static.instructions change == 0%"};
  req.reference.reset();
  out = evaluator.evaluate(req);
  EXPECT_EQ(out[0].status, "unsupported");
}

} // namespace
} // namespace temper::campaign::expectations_test
