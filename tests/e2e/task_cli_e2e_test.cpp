// The real binary's `task show` and `task check` on bundled and broken tasks.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace task_cli_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

util::ProcessResult temper_cli(std::vector<std::string> args) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = std::chrono::seconds(60);
  return util::default_process_runner().run(cmd);
}

} // namespace

TEST(TaskCliE2E, ShowPrintsOperatorAndCases) {
  auto r = temper_cli({"task", "show", (kSource / "tasks/swi_glu").string()});
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_NE(r.output.find("SwiGlu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1000003"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cann-bench"), std::string::npos) << r.output;

  auto j = temper_cli({"task", "show", (kSource / "tasks/gqa").string(), "--json"});
  ASSERT_TRUE(j.ok()) << j.output;
  auto doc = nlohmann::json::parse(j.output.substr(j.output.find('{')));
  EXPECT_EQ(doc["schema_version"], 1);
}

TEST(TaskCliE2E, CheckPassesBundledTasks) {
  for (const char* t : {"tasks/swi_glu", "tasks/gqa"}) {
    auto r = temper_cli({"task", "check", (kSource / t).string()});
    EXPECT_TRUE(r.ok()) << t << "\n" << r.output;
    EXPECT_NE(r.output.find("ok: 20 cases"), std::string::npos) << r.output;
  }
}

TEST(TaskCliE2E, CheckReportsProblemsWithFileAndLineAndExitsOne) {
  util::TempDir dir;
  fs::copy(kSource / "tasks/swi_glu", dir.path() / "t", fs::copy_options::recursive);
  fs::remove(dir.path() / "t" / "cases.csv");
  // Break one case: an unknown dtype on the line that names it.
  std::string text = *util::read_file(dir.path() / "t" / "cases.yaml");
  auto pos = text.find("float32");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 7, "float8x");
  std::ofstream(dir.path() / "t" / "cases.yaml") << text;
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));

  auto r = temper_cli({"task", "check", (dir.path() / "t").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cases.yaml:" + std::to_string(line) + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("float8x"), std::string::npos) << r.output;
}

TEST(TaskCliE2E, NotATaskExitsTwo) {
  util::TempDir dir;
  auto r = temper_cli({"task", "check", dir.path().string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("proto.yaml"), std::string::npos) << r.output;
  auto s = temper_cli({"task", "show", dir.path().string()});
  EXPECT_EQ(s.exit_code, 2) << s.output;
}

TEST(TaskCliE2E, ReadsTheOfficialCannBenchTasks) {
  fs::path shared = kSource / ".." / "shared" / "cann-bench" / "tasks";
  if (!fs::exists(shared)) GTEST_SKIP() << "../shared/cann-bench is not present";
  for (const char* t : {"level1/swi_glu", "level1/exp", "level2/rms_norm", "level2/softmax", "level4/gqa"}) {
    auto r = temper_cli({"task", "check", (shared / t).string()});
    EXPECT_TRUE(r.ok()) << t << "\n" << r.output;
  }
}

// Tensor lists, optional inputs, per-input ranges, text attrs, precision thresholds, index
// outputs: the official format's harder corners, through the real binary.
TEST(TaskCliE2E, ChecksOfficialTasksWithListsOptionalInputsAndThresholds) {
  fs::path shared = kSource / ".." / "shared" / "cann-bench" / "tasks";
  if (!fs::exists(shared)) GTEST_SKIP() << "../shared/cann-bench is not present";
  for (const char* t : {"level1/foreach_norm", "level4/gru", "level3/quant_matmul", "level2/apply_adam_w", "level2/arg_max"}) {
    auto r = temper_cli({"task", "check", (shared / t).string()});
    EXPECT_TRUE(r.ok()) << t << "\n" << r.output;
    EXPECT_NE(r.output.find("golden: golden.py"), std::string::npos) << r.output;
  }
  auto show = temper_cli({"task", "show", (shared / "level4/gru").string()});
  EXPECT_TRUE(show.ok()) << show.output;
  EXPECT_NE(show.output.find("h0: float32, float16, bfloat16 (optional)"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("operator thresholds: float32 0.05"), std::string::npos) << show.output;
  EXPECT_NE(show.output.find("[10, 4, 64] {[96, 64]} {[96, 32]} {[96]} {[96]} -"), std::string::npos) << show.output;
}

TEST(TaskCliE2E, VersionAndHelp) {
  auto v = temper_cli({"--version"});
  EXPECT_TRUE(v.ok()) << v.output;
  auto h = temper_cli({"--help"});
  EXPECT_TRUE(h.ok());
  EXPECT_NE(h.output.find("judge"), std::string::npos);
  auto bad = temper_cli({"judge"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

TEST(PlanCliE2E, CheckValidatesShippedPlansAndListsProblemsWithTheirPaths) {
  auto r = temper_cli({"plan", "check", (kSource / "tasks/swi_glu").string()});
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_NE(r.output.find("ok: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("01-specialized-rows.json: 7 decisions, 4 milestones"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("02-general-blocks.json: 3 decisions, 3 milestones"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cuda/01-vector-rows.json: 7 decisions, 3 milestones"), std::string::npos) << r.output;

  util::TempDir dir;
  auto plan = nlohmann::json::parse(*util::read_file(kSource / "tasks/swi_glu/plans/01-specialized-rows.json"));
  plan["milestones"][1]["knobs"]["UNROLL"] = {1, 8};
  plan["milestones"][2]["starter"] = "reference.cpp";
  std::ofstream(dir.path() / "bad.json") << plan.dump();
  auto bad = temper_cli({"plan", "check", (kSource / "tasks/swi_glu").string(), (dir.path() / "bad.json").string()});
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("/milestones/1/knobs/UNROLL/1: 8 is not a declared value of knob UNROLL"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("/milestones/2/starter: 'reference.cpp' is a reference or golden source"), std::string::npos) << bad.output;
}

} // namespace task_cli_e2e_test
