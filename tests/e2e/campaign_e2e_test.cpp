// Runs build/temper run / resume / status on the bundled SwiGLU task: usage errors, a campaign
// stopped by an agent that cannot start (its state saved and resumable), status as text and
// JSON. Whole campaigns with scripted agents are in tests/campaign/.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace campaign_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

util::ProcessResult temper_cli(std::vector<std::string> args) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = std::chrono::seconds(120);
  return util::default_process_runner().run(cmd);
}

} // namespace

TEST(CampaignE2E, UsageErrorsSayWhatToFix) {
  util::TempDir tmp("temper-campaign-e2e");
  auto r = temper_cli({"run", (kSource / "tasks/swi_glu").string(), "--student", "x", "--budget", "wall=soon", "--dir", (tmp.path() / "c").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("'soon' is not a duration"), std::string::npos) << r.output;
  r = temper_cli({"run", (kSource / "tasks/swi_glu").string(), "--student", "x", "--budget", "tokens=5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown key 'tokens'"), std::string::npos) << r.output;
  r = temper_cli({"status", tmp.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("is not a campaign directory"), std::string::npos) << r.output;
  r = temper_cli({"resume", (tmp.path() / "none").string()});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CampaignE2E, StoppedCampaignIsSavedAndReportsItsStatus) {
  util::TempDir tmp("temper-campaign-e2e");
  const fs::path dir = tmp.path() / "c";
  // A Student spec no driver knows: the campaign is created, then stops before any turn.
  auto r = temper_cli({"run", (kSource / "tasks/swi_glu").string(), "--student", "no-such-driver", "--dir", dir.string(),
                       "--cases", "1,2", "--budget", "wall=2h", "--budget", "cost=5", "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("temper resume"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(dir / "campaign.json"));
  EXPECT_TRUE(fs::exists(dir / "ledger.sqlite"));
  // The starting reference, sealed into the campaign's store; the task keeps its source.
  EXPECT_TRUE(fs::exists(dir / "refs" / "R0" / "manifest.json"));
  EXPECT_TRUE(fs::exists(dir / "refs" / "R0" / "vault" / "reference.cpp"));
  EXPECT_TRUE(fs::exists(kSource / "tasks" / "swi_glu" / "reference.cpp"));
  r = temper_cli({"status", dir.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto st = nlohmann::json::parse(r.output);
  EXPECT_EQ(st["kind"], "temper.campaign.status");
  EXPECT_EQ(st["round"], 1);
  EXPECT_EQ(st["phase"], "plan");
  EXPECT_EQ(st["reference"], "R0");
  EXPECT_DOUBLE_EQ(st["budget"]["wall_s"].get<double>(), 7200);
  EXPECT_DOUBLE_EQ(st["budget"]["cost_left_usd"].get<double>(), 5);
  EXPECT_TRUE(st["best_verified_speedup"].is_null());
  r = temper_cli({"status", dir.string()});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("round 1 of 1, phase plan, reference R0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("best verified speedup: none yet"), std::string::npos) << r.output;
  // Resume hits the same problem and says so; the state is unchanged.
  r = temper_cli({"resume", dir.string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("no-such-driver"), std::string::npos) << r.output;
}

} // namespace campaign_e2e_test
