// The real binary's `temper target` and `temper kb` commands that do not time anything.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kb_cli_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct CliRun {
  int exit_code = -1;
  std::string output;
};

CliRun temper_cmd(std::vector<std::string> args, std::chrono::seconds timeout = std::chrono::seconds(60)) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = timeout;
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

// A machine whose class has no roofline entries: bootstrap derives them from another class's
// probes, files them in the user's knowledge base and certifies them here with the real judge.
TEST(KbCliE2E, BootstrapDerivesAndCertifiesAProbeForThisClass) {
  CliRun target = temper_cmd({"target", "--json"});
  ASSERT_EQ(target.exit_code, 0) << target.output;
  const auto here = nlohmann::json::parse(target.output);
  const std::string cls = here["target_class"], fingerprint = here["fingerprint"];
  const std::string arch = cls.substr(0, cls.find('-'));
  const std::string tier = cls.substr(cls.rfind('-') + 1);
  const std::string source_class = arch + "-zen1-" + tier; // a class no test machine is

  // The FMA probe this machine can run: its own class's, else the AVX-512 one of Zen 5.
  const std::string microarch = cls.substr(arch.size() + 1, cls.rfind('-') - arch.size() - 1);
  fs::path probe = kSource / "hw_kb" / cls / (microarch + "-fma-peak-1t");
  if (!fs::exists(probe)) {
    if (tier != "avx512") GTEST_SKIP() << "no FMA probe in hw_kb/ that runs on " << cls;
    probe = kSource / "hw_kb" / "x86_64-zen5-avx512" / "fma-peak-1t";
  }

  util::TempDir dir;
  const fs::path repo = dir.path() / "repo", user = dir.path() / "user";
  const fs::path src = repo / source_class / "zen1-fma-peak-1t";
  fs::create_directories(src.parent_path());
  fs::copy(probe, src, fs::copy_options::recursive);
  std::string yaml = *util::read_file(src / "entry.yaml");
  for (auto [key, value] : {std::pair<std::string, std::string>{"\nid: ", "zen1-fma-peak-1t"}, {"\ntarget: ", source_class}}) {
    auto at = yaml.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    yaml.replace(at + key.size(), yaml.find('\n', at + 1) - at - key.size(), value);
  }
  ASSERT_TRUE(util::write_file_atomic(src / "entry.yaml", yaml));

  CliRun plan = temper_cmd({"kb", "--kb", repo.string(), "bootstrap", "--from", source_class, "--into", user.string(), "--plan"});
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  const std::string id = microarch + "-fma-peak-1t";
  EXPECT_NE(plan.output.find("derive   " + id), std::string::npos) << plan.output;
  EXPECT_FALSE(fs::exists(user)) << "--plan filed something";

  CliRun run = temper_cmd({"kb", "--kb", repo.string(), "bootstrap", "--from", source_class, "--into", user.string(), "--cap", "0.3", "-q"},
                           std::chrono::seconds(300));
  const fs::path filed = user / cls / id / "entry.yaml";
  ASSERT_TRUE(fs::exists(filed)) << run.output;
  const std::string entry = *util::read_file(filed);
  EXPECT_NE(entry.find("target: " + cls), std::string::npos) << entry;
  EXPECT_NE(entry.find("fingerprint: \"" + fingerprint + "\""), std::string::npos) << run.output << entry;
  EXPECT_NE(run.output.find("roofline here, 1 thread"), std::string::npos) << run.output;
  EXPECT_EQ(*util::read_file(src / "entry.yaml"), yaml) << "the source knowledge base was changed";

  // Run again: the entry is in place (certified here, or left proposed on a noisy machine and
  // certified in place), so nothing is derived twice.
  CliRun again = temper_cmd({"kb", "--kb", repo.string(), "bootstrap", "--from", source_class, "--into", user.string(), "--plan"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("derive "), std::string::npos) << again.output;
}

} // namespace kb_cli_e2e_test
