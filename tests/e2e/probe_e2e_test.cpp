// Runs build/temper probe on the bundled SwiGLU task with a kernel whose knobs make it slow or
// wrong (tests/fixtures/swi_glu/knobbed.cpp): the ranking, the statuses of the broken variants,
// the report, the race (a variant clearly behind stops unchecked), and the usage errors of a
// malformed grid.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

namespace probe_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct ProbeRun {
  int exit_code = -1;
  std::string output; // stdout and stderr
  nlohmann::json report;
  std::map<std::string, nlohmann::json> by_label;
};

ProbeRun probe(std::vector<std::string> extra, const fs::path& json = {}) {
  util::Command cmd;
  cmd.argv = {kBinary.string(), "probe", (kSource / "tasks/swi_glu").string(),
              (kSource / "tests/fixtures/swi_glu/knobbed.cpp").string()};
  cmd.argv.insert(cmd.argv.end(), extra.begin(), extra.end());
  if (!json.empty()) cmd.argv.insert(cmd.argv.end(), {"--json", json.string()});
  cmd.timeout = std::chrono::seconds(300);
  auto r = util::default_process_runner().run(cmd);
  ProbeRun out;
  out.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  out.output = r.output;
  if (!json.empty()) {
    if (auto text = util::read_file(json)) {
      out.report = nlohmann::json::parse(*text);
      for (const auto& v : out.report["variants"]) out.by_label[v["label"].get<std::string>()] = v;
    }
  }
  return out;
}

} // namespace

TEST(ProbeE2E, RanksVariantsAndListsBrokenOnesLast) {
  util::TempDir dir("temper-probe-e2e");
  auto r = probe({"--case", "1", "--grid", "SLOW=0,1", "--grid", "BROKEN=0,1", "--reference",
                  (kSource / "tasks/swi_glu/reference.cpp").string(), "--cap", "1"},
                 dir.path() / "probe.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.report["variants"].size(), 4u) << r.output;
  EXPECT_EQ(r.report["schema_version"], 2);
  EXPECT_EQ(r.report["kind"], "temper.probe.report");
  EXPECT_TRUE(r.report["context"].contains("host"));
  EXPECT_TRUE(r.report["context"].contains("job_seed_id"));
  EXPECT_EQ(r.report["context"]["case"]["case_id"], 1);
  EXPECT_EQ(r.report["protocol"]["cap_s"], 1.0);
  EXPECT_EQ(r.report["protocol"]["cache_mode"], "cold");
  EXPECT_EQ(r.report["summary"]["timed"], 2);

  const auto& fast = r.by_label["SLOW=0,BROKEN=0"];
  const auto& slow = r.by_label["SLOW=1,BROKEN=0"];
  EXPECT_EQ(fast["knobs"]["SLOW"], "0");
  EXPECT_EQ(fast["status"], "PASSED") << fast.dump(2);
  EXPECT_EQ(slow["status"], "PASSED") << slow.dump(2);
  EXPECT_EQ(fast["rank"], 1) << r.output;
  EXPECT_EQ(slow["rank"], 2) << r.output;
  ASSERT_TRUE(slow["timing"].is_object()) << slow.dump(2);
  EXPECT_LT(slow["timing"]["speedup"].get<double>(), 0.8) << slow["timing"].dump(2);
  EXPECT_GT(fast["timing"]["speedup"].get<double>(), slow["timing"]["speedup"].get<double>());
  EXPECT_GT(slow["timing"]["candidate"]["median_s"].get<double>(), fast["timing"]["candidate"]["median_s"].get<double>());
  EXPECT_GE(slow["timing"]["rounds"].get<int>(), 6) << slow["timing"].dump(2);
  EXPECT_EQ(fast["timing"]["seed_id"], slow["timing"]["seed_id"]); // the same inputs for every variant
  // The race: SLOW=1 (about 0.5x) is timed after SLOW=0 (about 1x) and is clearly behind it, so
  // its timed outputs are not checked and it gets no verdict; the best is checked.
  EXPECT_TRUE(r.report["timing"]["race"].get<bool>());
  EXPECT_EQ(r.report["summary"]["behind"], 1) << r.output;
  EXPECT_TRUE(fast["timing"]["checked"].get<bool>()) << fast["timing"].dump(2);
  // Checked: its outputs are the reference's bytes (the fixture computes what the reference does).
  EXPECT_GT(fast["timing"]["rechecks"].get<int>() + fast["timing"]["proved_by_reference"].get<int>(), 0) << fast["timing"].dump(2);
  EXPECT_FALSE(slow["timing"]["checked"].get<bool>()) << slow["timing"].dump(2);
  EXPECT_EQ(slow["timing"]["rechecks"], 0) << slow["timing"].dump(2);
  EXPECT_EQ(slow["timing"]["verdict"], "AMBIGUOUS") << slow["timing"].dump(2);
  EXPECT_NE(r.output.find("marked 'behind'"), std::string::npos) << r.output;

  for (const char* label : {"SLOW=0,BROKEN=1", "SLOW=1,BROKEN=1"}) {
    const auto& v = r.by_label[label];
    EXPECT_EQ(v["status"], "INCORRECT_NUMERICAL") << label << "\n" << r.output;
    EXPECT_TRUE(v["rank"].is_null()) << v.dump(2);
    EXPECT_TRUE(v["timing"].is_null()) << v.dump(2);
  }
  // Ranked variants first, failing ones at the bottom, in the table as in the report.
  EXPECT_EQ(r.report["variants"][0]["label"], "SLOW=0,BROKEN=0");
  EXPECT_EQ(r.report["variants"][1]["label"], "SLOW=1,BROKEN=0");
  auto fast_row = r.output.find("   1  SLOW=0,BROKEN=0");
  auto slow_row = r.output.find("   2  SLOW=1,BROKEN=0");
  auto broken_row = r.output.find("   -  SLOW=0,BROKEN=1");
  ASSERT_NE(fast_row, std::string::npos) << r.output;
  ASSERT_NE(slow_row, std::string::npos) << r.output;
  ASSERT_NE(broken_row, std::string::npos) << r.output;
  EXPECT_LT(fast_row, slow_row);
  EXPECT_LT(slow_row, broken_row);
  // The variants compute on the same trial inputs, and the two broken ones, like the two honest
  // ones, give the same bytes: a variant checked after its twin reuses its comparisons.
  int reused = 0;
  for (const auto& [label, v] : r.by_label) reused += v["correctness"]["comparisons_reused"].get<int>();
  EXPECT_GE(reused, 1) << r.report["variants"].dump(2);
  // Progress on stderr: both variants in one job, against one run of the reference.
  EXPECT_NE(r.output.find("timing variants 1-2/2 in one job"), std::string::npos) << r.output;
  EXPECT_GE(r.report["timing"]["variants_per_job"].get<int>(), 2) << r.report["timing"].dump();
}

TEST(ProbeE2E, MalformedGridIsAUsageError) {
  auto no_eq = probe({"--case", "1", "--grid", "TILE"});
  EXPECT_EQ(no_eq.exit_code, 2) << no_eq.output;
  EXPECT_NE(no_eq.output.find("--grid TILE: expected NAME=v1,v2"), std::string::npos) << no_eq.output;

  auto empty_value = probe({"--case", "1", "--grid", "TILE=32,,64"});
  EXPECT_EQ(empty_value.exit_code, 2) << empty_value.output;
  EXPECT_NE(empty_value.output.find("--grid TILE=32,,64: expected NAME=v1,v2 (an empty value)"), std::string::npos)
      << empty_value.output;

  auto bad_name = probe({"--case", "1", "--grid", "2X=1,2"});
  EXPECT_EQ(bad_name.exit_code, 2) << bad_name.output;
  EXPECT_NE(bad_name.output.find("not a macro name"), std::string::npos) << bad_name.output;

  auto twice = probe({"--case", "1", "--grid", "SLOW=0", "--grid", "SLOW=1"});
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("knob SLOW is given by two --grid options"), std::string::npos) << twice.output;
}

TEST(ProbeE2E, OversizedGridUnknownCaseAndMissingFilesAreUsageErrors) {
  std::string values;
  for (int v = 0; v < 17; ++v) values += (v ? "," : "") + std::to_string(v);
  auto big = probe({"--case", "1", "--grid", "A=" + values, "--grid", "B=" + values});
  EXPECT_EQ(big.exit_code, 2) << big.output;
  EXPECT_NE(big.output.find("the grid has 289 variants (17 x 17); a probe takes at most 256"), std::string::npos) << big.output;

  auto unknown = probe({"--case", "999", "--grid", "SLOW=0,1"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("has no case 999"), std::string::npos) << unknown.output;

  auto missing = probe({"--case", "1", "--grid", "SLOW=0,1", "--reference", "/nonexistent/ref.cpp"});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("reference /nonexistent/ref.cpp is not a file"), std::string::npos) << missing.output;
}

TEST(ProbeE2E, NoCorrectVariantExitsOne) {
  util::TempDir dir("temper-probe-e2e");
  auto r = probe({"--case", "1", "--grid", "BROKEN=1", "--grid", "SLOW=0,1", "--quiet"}, dir.path() / "probe.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.report["summary"]["timed"], 0) << r.output;
  EXPECT_TRUE(r.report["summary"]["best"].is_null());
  for (const auto& v : r.report["variants"]) EXPECT_EQ(v["status"], "INCORRECT_NUMERICAL") << v.dump(2);
}

} // namespace probe_e2e_test
