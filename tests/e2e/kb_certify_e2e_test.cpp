// One real certification through the judge: a copy of the cheapest seed entry (4 against 12 FMA
// accumulators, warm cache, a short cap), certified by the real binary, with its evidence
// written back into entry.yaml.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kb_certify_e2e_test {

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
  cmd.timeout = std::chrono::seconds(300);
  auto r = util::default_process_runner().run(cmd);
  return {r.outcome == util::Outcome::Exited ? r.exit_code : -1, r.output};
}

void replace_in(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = *util::read_file(file);
  auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  ASSERT_TRUE(util::write_file_atomic(file, text));
}

} // namespace

TEST(KbCertifyE2E, CheapEntryIsCertifiedWithEvidence) {
  CliRun target = temper_cmd({"target", "--json"});
  ASSERT_EQ(target.exit_code, 0) << target.output;
  auto t = nlohmann::json::parse(target.output);
  const auto flags = t["flags"].get<std::vector<std::string>>();
  if (std::find(flags.begin(), flags.end(), "avx512f") == flags.end()) GTEST_SKIP() << "the probe's kernels need AVX-512F";
  const std::string cls = t["target_class"], fingerprint = t["fingerprint"];

  util::TempDir dir;
  const fs::path entry = dir.path() / cls / "fma-accumulators-4-vs-12";
  fs::create_directories(entry.parent_path());
  fs::copy(kSource / "hw_kb" / "x86_64-zen5-avx512" / "fma-accumulators-4-vs-12", entry, fs::copy_options::recursive);
  replace_in(entry / "entry.yaml", "target: x86_64-zen5-avx512", "target: " + cls);
  replace_in(entry / "entry.yaml", "cap_s: 2", "cap_s: 0.6");
  replace_in(entry / "probe" / "cases.yaml", "iters: 250000", "iters: 40000"); // about 1 ms per call
  // Whatever the seed's evidence says, start as proposed.
  std::string yaml = *util::read_file(entry / "entry.yaml");
  yaml = yaml.substr(0, yaml.find("\nstatus:") + 1) + "status: proposed\nevidence: []\n";
  ASSERT_TRUE(util::write_file_atomic(entry / "entry.yaml", yaml));

  // The claim (12 accumulators run at least 1.5x faster than 4) is Zen 5's, whose 512-bit FMA
  // pipes need more chains in flight; Zen 4 runs 512-bit FMAs at half rate, 4 chains already
  // fill it, and the probe rightly refutes the claim there. Either way the outcome is the
  // probe's, recorded with evidence on this fingerprint.
  // Other classes (Intel's server cores have two full-width FMA pipes) may go either way: there
  // the outcome must agree with its own evidence.
  CliRun r = temper_cmd({"kb", "--kb", dir.path().string(), "certify", "fma-accumulators-4-vs-12", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const bool known = cls == "x86_64-zen5-avx512" || cls == "x86_64-zen4-avx512";
  if (!known && r.output.find("1 left proposed") != std::string::npos) {
    // Undecided: the interval straddles the claimed 1.5x, and the entry stays proposed.
    CliRun show = temper_cmd({"kb", "--kb", dir.path().string(), "show", "fma-accumulators-4-vs-12", "--json"});
    ASSERT_EQ(show.exit_code, 0) << show.output;
    auto j = nlohmann::json::parse(show.output);
    EXPECT_EQ(j["status"], "proposed") << j.dump(2);
    ASSERT_EQ(j["evidence"].size(), 1u);
    EXPECT_EQ(j["evidence"][0]["outcome"], "ambiguous");
    EXPECT_LT(j["evidence"][0]["figures"]["lo"].get<double>(), 1.5);
    EXPECT_GE(j["evidence"][0]["figures"]["hi"].get<double>(), 1.5);
    return;
  }
  const bool claim_holds_here = known ? cls == "x86_64-zen5-avx512" : r.output.find("1 certified") != std::string::npos;
  const std::string outcome = claim_holds_here ? "certified" : "refuted";
  EXPECT_NE(r.output.find("1 " + outcome), std::string::npos) << r.output;

  CliRun show = temper_cmd({"kb", "--kb", dir.path().string(), "show", "fma-accumulators-4-vs-12", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.output;
  auto j = nlohmann::json::parse(show.output);
  EXPECT_EQ(j["status"], outcome) << j.dump(2);
  EXPECT_EQ(j["effective_status"], outcome);
  ASSERT_EQ(j["evidence"].size(), 1u);
  const auto& ev = j["evidence"][0];
  EXPECT_EQ(ev["fingerprint"], fingerprint);
  EXPECT_EQ(ev["outcome"], outcome);
  EXPECT_EQ(ev["report_hash"].get<std::string>().size(), 32u);
  if (claim_holds_here) {
    EXPECT_GE(ev["figures"]["lo"].get<double>(), 1.5) << ev.dump(2);
  } else {
    EXPECT_LT(ev["figures"]["hi"].get<double>(), 1.5) << ev.dump(2);
  }
}

TEST(KbCertifyE2E, JudgeTakesTheCaseBoundFromCertifiedFigures) {
  CliRun target = temper_cmd({"target", "--json"});
  ASSERT_EQ(target.exit_code, 0) << target.output;
  auto t = nlohmann::json::parse(target.output);
  const std::string cls = t["target_class"], fingerprint = t["fingerprint"];

  // A knowledge base with one certified bandwidth figure (20 GB/s, one thread) on this fingerprint.
  util::TempDir dir;
  const fs::path entry = dir.path() / "kb" / cls / "bw-triad-1t";
  fs::create_directories(entry.parent_path());
  fs::copy(kSource / "hw_kb" / "x86_64-zen5-avx512" / "bw-triad-1t", entry, fs::copy_options::recursive);
  replace_in(entry / "entry.yaml", "target: x86_64-zen5-avx512", "target: " + cls);
  std::string yaml = *util::read_file(entry / "entry.yaml");
  yaml = yaml.substr(0, yaml.find("\nstatus:") + 1) + "status: certified\nevidence:\n- date: \"2026-12-02T00:00:00Z\"\n  fingerprint: \"" +
         fingerprint + "\"\n  target: \"" + cls + "\"\n  outcome: certified\n  figures: {value: 20, lo: 19, hi: 21, unit: \"GB/s\"}\n" +
         "  reason: \"test\"\n  report_hash: \"0\"\n";
  ASSERT_TRUE(util::write_file_atomic(entry / "entry.yaml", yaml));

  const fs::path json = dir.path() / "r.json";
  CliRun r = temper_cmd({"judge", (kSource / "tasks/swi_glu").string(), (kSource / "tasks/swi_glu/reference.cpp").string(), "--reference",
                         (kSource / "tasks/swi_glu/reference.cpp").string(), "--cases", "1", "--measure-jobs", "1", "--confirm-jobs", "0",
                         "--cap", "1", "--kb", (dir.path() / "kb").string(), "--json", json.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto report = nlohmann::json::parse(*util::read_file(json));
  const auto& timing = report["cases"][0]["timing"];
  // Case 1: [1024, 2048] float16, cost bytes = in0.bytes * 3 / 2 = 6 MiB; at 20 GB/s: 314.6 us.
  EXPECT_NEAR(timing["hardware_bound_us"].get<double>(), 1024.0 * 2048 * 2 * 1.5 / 20e9 * 1e6, 0.01) << timing.dump(2);
  EXPECT_NE(timing["hardware_bound_source"].get<std::string>().find("roofline (limiter: memory"), std::string::npos);
  EXPECT_GT(timing["roofline_fraction"].get<double>(), 0);
  EXPECT_TRUE(timing["cann_bench_score"].is_number()) << timing.dump(2);
  EXPECT_DOUBLE_EQ(report["timing"]["roofline"]["bytes_per_s"].get<double>(), 20e9);
  EXPECT_NE(r.output.find("% of roofline"), std::string::npos);

  // A probe's timed variants carry their fraction of the same roofline (what a tuner and a
  // roofline gate read).
  const fs::path probe_json = dir.path() / "p.json";
  CliRun p = temper_cmd({"probe", (kSource / "tasks/swi_glu").string(), (kSource / "tests/fixtures/swi_glu/knobbed.cpp").string(), "--case",
                         "1", "--grid", "SLOW=0", "--reference", (kSource / "tasks/swi_glu/reference.cpp").string(), "--cap", "1",
                         "--kb", (dir.path() / "kb").string(), "--json", probe_json.string(), "--quiet"});
  ASSERT_EQ(p.exit_code, 0) << p.output;
  auto probe = nlohmann::json::parse(*util::read_file(probe_json));
  ASSERT_EQ(probe["variants"].size(), 1u);
  EXPECT_GT(probe["variants"][0]["timing"]["roofline_fraction"].get<double>(), 0) << probe["variants"][0].dump(2);
}

// A metric probe certified for real: a copy of first-touch-4k-faults at half the size (a 32 MiB
// temporary, still above glibc's largest mmap threshold, so every call maps fresh pages), its
// page faults counted by the judge's profiler; then the same probe on a hardware counter, which
// a machine without a PMU (a VM) cannot measure: the entry stays proposed with the reason.
TEST(KbCertifyE2E, MetricEntryIsCertifiedFromPageFaults) {
  CliRun target = temper_cmd({"target", "--json"});
  ASSERT_EQ(target.exit_code, 0) << target.output;
  auto t = nlohmann::json::parse(target.output);
  const std::string cls = t["target_class"], fingerprint = t["fingerprint"];

  util::TempDir dir;
  const std::string id = "first-touch-4k-faults";
  const fs::path entry = dir.path() / cls / id;
  fs::create_directories(entry.parent_path());
  fs::copy(kSource / "hw_kb" / "x86_64-zen5-avx512" / id, entry, fs::copy_options::recursive);
  replace_in(entry / "entry.yaml", "target: x86_64-zen5-avx512", "target: " + cls);
  replace_in(entry / "probe" / "cases.yaml", "[16777216]", "[8388608]");
  replace_in(entry / "entry.yaml", "calls: 20", "calls: 10");
  replace_in(entry / "entry.yaml", "expect: {min: 15500, max: 17500}", "expect: {min: 7700, max: 8800}");
  std::string yaml = *util::read_file(entry / "entry.yaml");
  yaml = yaml.substr(0, yaml.find("\nstatus:") + 1) + "status: proposed\nevidence: []\n";
  ASSERT_TRUE(util::write_file_atomic(entry / "entry.yaml", yaml));

  CliRun r = temper_cmd({"kb", "--kb", dir.path().string(), "certify", id, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 certified"), std::string::npos) << r.output;
  CliRun show = temper_cmd({"kb", "--kb", dir.path().string(), "show", id, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.output;
  auto j = nlohmann::json::parse(show.output);
  EXPECT_EQ(j["status"], "certified") << j.dump(2);
  ASSERT_EQ(j["evidence"].size(), 1u);
  const auto& ev = j["evidence"][0];
  EXPECT_EQ(ev["fingerprint"], fingerprint);
  EXPECT_EQ(ev["figures"]["name"], "sw.page_faults");
  EXPECT_EQ(ev["figures"]["calls"], 20); // 10 per job, measurement and confirmation
  EXPECT_NEAR(ev["figures"]["value"].get<double>(), 8193, 300) << ev.dump(2);
  EXPECT_EQ(ev["report_hash"].get<std::string>().size(), 32u);

  replace_in(entry / "entry.yaml", "name: sw.page_faults, expect: {min: 7700, max: 8800}", "name: hw.cycles, expect: {min: 1}");
  CliRun hw = temper_cmd({"kb", "--kb", dir.path().string(), "certify", id, "--quiet"});
  ASSERT_EQ(hw.exit_code, 0) << hw.output;
  j = nlohmann::json::parse(temper_cmd({"kb", "--kb", dir.path().string(), "show", id, "--json"}).output);
  ASSERT_EQ(j["evidence"].size(), 2u);
  const auto& cycles = j["evidence"][1];
  if (cycles["outcome"] == "ambiguous") {
    // No hardware counters here: not measurable, so neither confirmed nor refuted.
    EXPECT_EQ(j["status"], "proposed");
    EXPECT_EQ(cycles["reason"].get<std::string>().rfind("unsupported here: hw.cycles", 0), 0u) << cycles.dump(2);
    EXPECT_NE(cycles["figures"]["unsupported"].get<std::string>().find("perf_event_open"), std::string::npos) << cycles.dump(2);
  } else {
    EXPECT_EQ(cycles["outcome"], "certified") << cycles.dump(2);
    EXPECT_GT(cycles["figures"]["lo"].get<double>(), 1);
  }
}

} // namespace kb_certify_e2e_test
