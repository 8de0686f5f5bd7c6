// Device time from profiler CSVs (backend/device_time): both header variants (kernel_details's
// Duration(us), op_summary's and OpBasicInfo's Task Duration(us)), steps told apart by
// cache-clean kernels, Step Id or one row per launch, and clear errors for files that cannot
// be read as a profile. Fixtures: tests/fixtures/pypto/*.csv.
#include "backend/device_time.h"

#include <gtest/gtest.h>

namespace device_time_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(TEMPER_SOURCE_DIR) / "tests/fixtures/pypto";

backend::DeviceTime read_ok(const std::string& name, const backend::DeviceTimeOptions& o = {}) {
  auto t = backend::read_device_time(kFixtures / name, o);
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
  return t ? *t : backend::DeviceTime{};
}

std::string read_error(const std::string& name, const backend::DeviceTimeOptions& o = {}) {
  auto t = backend::read_device_time(kFixtures / name, o);
  EXPECT_FALSE(t.has_value()) << name << " parsed";
  return t ? "" : t.error().message;
}

} // namespace

TEST(DeviceTime, KernelDetailsSumsPerStepBetweenCacheCleansAndTakesMedians) {
  backend::DeviceTime t = read_ok("kernel_details_delimited.csv");
  EXPECT_EQ(t.format, backend::ProfileFormat::KernelDetails);
  EXPECT_EQ(t.duration_column, "Duration(us)");
  EXPECT_EQ(t.step_rule, "cache-clean delimiters");
  EXPECT_EQ(t.delimiters, 3);
  ASSERT_EQ(t.step_us.size(), 3u);
  EXPECT_DOUBLE_EQ(t.step_us[0], 12.0); // 10 + 2; the AICPU row does not count
  EXPECT_DOUBLE_EQ(t.step_us[1], 13.0);
  EXPECT_DOUBLE_EQ(t.step_us[2], 14.0);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].name, "swi_glu_kernel_0");
  EXPECT_DOUBLE_EQ(t.kernels[0].median_us, 11.0);
  EXPECT_DOUBLE_EQ(t.kernels[1].median_us, 2.0);
  EXPECT_DOUBLE_EQ(t.elapsed_us, 13.0);
  EXPECT_DOUBLE_EQ(t.median_step_us, 13.0);
  EXPECT_EQ(t.skipped_rows, 3); // the warm-up kernel, a launch before the first step, the AICPU row
}

TEST(DeviceTime, OpSummaryUsesTaskDurationAndTaskType) {
  backend::DeviceTime t = read_ok("op_summary_20261202.csv");
  EXPECT_EQ(t.format, backend::ProfileFormat::OpSummary);
  EXPECT_EQ(t.duration_column, "Task Duration(us)");
  EXPECT_EQ(t.delimiters, 2); // matched by substring in the mangled name
  ASSERT_EQ(t.step_us.size(), 2u);
  EXPECT_DOUBLE_EQ(t.elapsed_us, 21.0); // median of 20.5 and 21.5
  EXPECT_EQ(t.skipped_rows, 1);         // the AI_CPU copy, whose duration is N/A
}

TEST(DeviceTime, OpBasicInfoCountsEachLaunchAsAStep) {
  backend::DeviceTime t = read_ok("OpBasicInfo.csv");
  EXPECT_EQ(t.format, backend::ProfileFormat::OpBasicInfo);
  EXPECT_EQ(t.step_rule, "one row per launch");
  EXPECT_EQ(t.step_us.size(), 3u);
  EXPECT_DOUBLE_EQ(t.elapsed_us, 15.5);
}

TEST(DeviceTime, StepIdGroupsWhenThereAreNoDelimiters) {
  backend::DeviceTime t = read_ok("kernel_details_step_id.csv");
  EXPECT_EQ(t.step_rule, "Step Id");
  ASSERT_EQ(t.step_us.size(), 3u);
  EXPECT_DOUBLE_EQ(t.step_us[0], 10.0);
  EXPECT_DOUBLE_EQ(t.elapsed_us, 10.0);
  EXPECT_EQ(t.kernels[0].launches, 4);
}

TEST(DeviceTime, ExpectedStepCountIsChecked) {
  backend::DeviceTimeOptions o;
  o.expected_steps = 5;
  EXPECT_NE(read_error("kernel_details_delimited.csv", o).find("expected 5 timed steps, found 3"), std::string::npos);
}

TEST(DeviceTime, MissingDurationColumnNamesTheHeader) {
  std::string e = read_error("missing_duration.csv");
  EXPECT_NE(e.find("no duration column"), std::string::npos) << e;
  EXPECT_NE(e.find("Start Time(us)"), std::string::npos) << e; // lists what the header has
}

TEST(DeviceTime, MalformedFilesGiveLineNumbers) {
  EXPECT_NE(read_error("malformed_quote.csv").find("quoted field is not closed"), std::string::npos);
  std::string bad = read_error("bad_duration.csv");
  EXPECT_NE(bad.find("line 3"), std::string::npos) << bad;
  EXPECT_NE(bad.find("'ten'"), std::string::npos) << bad;
  EXPECT_NE(read_error("short_row.csv").find("line 3: 3 fields where the header has 6"), std::string::npos);
}

TEST(DeviceTime, HarnessWithoutCandidateIsAnError) {
  std::string e = read_error("harness_only.csv");
  EXPECT_NE(e.find("step 1 has no candidate kernel"), std::string::npos) << e;
}

TEST(DeviceTime, NoWayToTellStepsApartIsAnError) {
  EXPECT_NE(read_error("no_step_marks.csv").find("cannot tell the timed steps apart"), std::string::npos);
}

TEST(DeviceTime, EmptyTextAndEmptyHeaderAreErrors) {
  EXPECT_FALSE(backend::parse_device_time(""));
  auto t = backend::parse_device_time("Name,Duration(us)\n");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("no timed step"), std::string::npos) << t.error().message;
}

TEST(DeviceTime, FindsTheExportInAProfilerDirectory) {
  auto p = backend::find_profile_csv(kFixtures);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->filename(), "op_summary_20261202.csv"); // no kernel_details.csv there: op_summary next
  EXPECT_FALSE(backend::find_profile_csv(kFixtures / "standin"));
}

// One profiled call per export (temper's runner, --time device): all counted rows are one step,
// harness kernel names are not special, and an export without a counted kernel is an error.
TEST(DeviceTime, PerCallExportIsOneStepOfItsCountedKernels) {
  backend::DeviceTimeOptions o;
  o.delimiter_tokens.clear();
  o.warmup_tokens.clear();
  o.whole_file_is_one_step = true;
  o.expected_steps = 1;
  const std::string header = "Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num\n";
  auto t = backend::parse_device_time(header +
                                          "0,kernel_a,PyPTO,AI_VECTOR_CORE,1.0,7.5,0,48\n"
                                          "0,PyPTO_scheduler,AICPU,AI_CPU,1.0,30.0,0,1\n"
                                          "0,kernel_a,PyPTO,AI_VECTOR_CORE,9.0,2.5,0,48\n"
                                          "0,CannBenchCacheClean_fake,PyPTO,MIX_AIV,12.0,4.0,0,48\n",
                                      o);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->step_rule, "one call per file");
  EXPECT_EQ(t->delimiters, 0);
  ASSERT_EQ(t->step_us.size(), 1u);
  EXPECT_DOUBLE_EQ(t->elapsed_us, 14.0); // 7.5 + 2.5 + 4, not the AI_CPU row
  ASSERT_EQ(t->kernels.size(), 2u);
  EXPECT_EQ(t->kernels[0].launches, 2);
  EXPECT_EQ(t->skipped_rows, 1);

  auto none = backend::parse_device_time(header + "0,PyPTO_scheduler,AICPU,AI_CPU,1.0,30.0,0,1\n", o);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("ran nothing on the NPU's cores"), std::string::npos) << none.error().message;

  // Without the option such a file is refused: the steps cannot be told apart.
  auto strict = backend::parse_device_time(header + "0,kernel_a,PyPTO,AI_VECTOR_CORE,1.0,7.5,0,48\n");
  ASSERT_FALSE(strict);
  EXPECT_NE(strict.error().message.find("cannot tell the timed steps apart"), std::string::npos) << strict.error().message;

  // With Step Id, a second step in one call's export is an error.
  auto two = backend::parse_device_time("Step Id,Name,Accelerator Core,Duration(us)\n1,k,AI_CORE,1\n2,k,AI_CORE,1\n", o);
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("expected 1 timed steps, found 2"), std::string::npos) << two.error().message;
}

} // namespace device_time_test
