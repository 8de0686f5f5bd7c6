// The real binary's `temper target` and `temper kb` commands that do not time anything.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct CliRun {
  int exit_code = -1;
  std::string output;
};

CliRun temper_cmd(std::vector<std::string> args) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = std::chrono::seconds(60);
  auto r = util::default_process_runner().run(cmd);
  return {r.outcome == util::Outcome::Exited ? r.exit_code : -1, r.output};
}

} // namespace

TEST(KbCliE2E, TargetPrintsClassAndFingerprint) {
  CliRun r = temper_cmd({"target", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["kind"], "temper.target");
  EXPECT_EQ(j["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_FALSE(j["target_class"].get<std::string>().empty());
  CliRun text = temper_cmd({"target"});
  EXPECT_NE(text.output.find("target class  " + j["target_class"].get<std::string>()), std::string::npos) << text.output;
}

TEST(KbCliE2E, ListShowExportOnTheRepositoryKb) {
  const std::string kb = (kSource / "hw_kb").string();
  CliRun list = temper_cmd({"kb", "--kb", kb, "list", "--target", "x86_64-zen5-avx512"});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("bw-triad-1t"), std::string::npos) << list.output;
  EXPECT_EQ(list.output.find("ascend"), std::string::npos) << list.output;
  CliRun json = temper_cmd({"kb", "--kb", kb, "list", "--json", "--status", "proposed"});
  ASSERT_EQ(json.exit_code, 0) << json.output;
  for (const auto& e : nlohmann::json::parse(json.output)["entries"]) EXPECT_EQ(e["effective_status"], "proposed");
  CliRun show = temper_cmd({"kb", "--kb", kb, "show", "fma-accumulators-4-vs-12"});
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("b over a, speedup in [1.5, inf)"), std::string::npos) << show.output;
  EXPECT_EQ(temper_cmd({"kb", "--kb", kb, "show", "no-such-entry"}).exit_code, 2);
  EXPECT_EQ(temper_cmd({"kb", "--kb", kb, "list", "--status", "golden"}).exit_code, 2);
  CliRun exp = temper_cmd({"kb", "--kb", kb, "export", "--target", "x86_64-zen5-avx512"});
  ASSERT_EQ(exp.exit_code, 0) << exp.output;
  EXPECT_NE(exp.output.find("# Hardware knowledge: x86_64-zen5-avx512"), std::string::npos);
}

TEST(KbCliE2E, ProposeReportsSchemaErrorsWithFileAndLine) {
  util::TempDir dir;
  fs::path src = dir.path() / "bad";
  fs::create_directories(src);
  ASSERT_TRUE(util::write_file_atomic(src / "entry.yaml", "schema_version: 1\nid: bad\ntitle: x\nprobe: {kind: guess}\n"));
  CliRun r = temper_cmd({"kb", "--kb", (dir.path() / "kb").string(), "propose", src.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find((src / "entry.yaml").string() + ":4: probe.kind must be paired, measure or metric, not 'guess'"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("missing 'target'"), std::string::npos) << r.output;
}
