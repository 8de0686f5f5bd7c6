// The pypto backend end to end: build/temper judge --backend pypto drives temper's PyPTO runner
// (runners/pypto) through the worker protocol. PyPTO itself needs torch and, for values, an
// NPU; here the candidates are written against the stand-in `pypto` (tests/fixtures/pypto/
// standin), so the runner, the protocol, correctness, SIM's simulated time, paired timing and
// device time (from the stand-in torch_npu profiler's export) are all exercised. A run on the
// real package happens when TEMPER_PYPTO_PYTHON names a Python with pypto installed
// (docs/pypto.md); otherwise that test is skipped.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>

namespace pypto_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";
const fs::path kFixtures = kSource / "tests/fixtures/pypto";

struct PyptoRun {
  int exit_code = -1;
  std::string output;
  nlohmann::json report;
  std::map<int64_t, nlohmann::json> by_case;
  std::string status(int64_t id) const {
    auto it = by_case.find(id);
    return it == by_case.end() ? "<missing>" : it->second.value("status", "<none>");
  }
};

bool have_python3() { return std::system("python3 -c 'import mmap, struct' >/dev/null 2>&1") == 0; }

PyptoRun judge(const fs::path& candidate, const std::string& mode, std::vector<std::string> extra = {},
          const fs::path& task = kFixtures / "swi_glu_small", std::vector<std::pair<std::string, std::string>> env = {}) {
  util::TempDir dir("temper-pypto-e2e");
  fs::path json = dir.path() / "report.json";
  util::Command cmd;
  cmd.argv = {kBinary.string(), "judge", task.string(), candidate.string(), "--backend", "pypto", "--pypto-mode", mode,
              "--json", json.string(), "--quiet"};
  // The stand-in candidates are standard-library Python: pin Debian's python3, whatever
  // TEMPER_PYPTO_PYTHON says (a real-PyPTO Python hands them torch tensors in sim mode).
  if (env.empty()) cmd.argv.insert(cmd.argv.end(), {"--pypto-python", "python3"});
  cmd.argv.insert(cmd.argv.end(), extra.begin(), extra.end());
  cmd.env_set = env.empty() ? std::vector<std::pair<std::string, std::string>>{{"PYTHONPATH", (kFixtures / "standin").string()}} : env;
  cmd.timeout = std::chrono::seconds(300);
  auto r = util::default_process_runner().run(cmd);
  PyptoRun out;
  out.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  out.output = r.output;
  if (auto text = util::read_file(json)) {
    out.report = nlohmann::json::parse(*text);
    for (const auto& c : out.report["cases"]) out.by_case[c["case_id"].get<int64_t>()] = c;
  }
  return out;
}

} // namespace

TEST(PyptoE2E, StandInCandidateIsJudgedCorrectOnEveryCase) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  PyptoRun r = judge(kFixtures / "swi_glu_standin.py", "plain");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int64_t id : {1, 2, 3}) {
    EXPECT_EQ(r.status(id), "PASSED") << "case " << id << "\n" << r.output;
    EXPECT_EQ(r.by_case[id]["time_kind"], "host");
    EXPECT_GT(r.by_case[id]["kernel_seconds"].get<double>(), 0.0);
    EXPECT_GE(r.by_case[id]["compile"]["jit_seconds"].get<double>(), 0.0);
  }
  EXPECT_EQ(r.report["context"]["backend"]["name"], "pypto");
  EXPECT_EQ(r.report["context"]["backend"]["entry"], "swi_glu"); // from the schema
  EXPECT_EQ(r.report["context"]["backend"]["mode"], "plain");
}

TEST(PyptoE2E, WrongRaisingAndMissingWrappersGetTheirStatuses) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  PyptoRun wrong = judge(kFixtures / "swi_glu_standin_wrong.py", "plain", {"--cases", "1"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_EQ(wrong.status(1), "INCORRECT_NUMERICAL") << wrong.output;

  PyptoRun raises = judge(kFixtures / "swi_glu_standin_raises.py", "plain", {"--cases", "1"});
  EXPECT_EQ(raises.status(1), "RUNTIME_ERROR") << raises.output;
  EXPECT_NE(raises.by_case[1].value("message", "").find("no kernel class for this input"), std::string::npos) << raises.output;

  PyptoRun missing = judge(kFixtures / "swi_glu_standin_no_entry.py", "plain", {"--cases", "1"});
  EXPECT_EQ(missing.status(1), "RUNTIME_ERROR") << missing.output;
  EXPECT_NE(missing.by_case[1].value("message", "").find("defines no host wrapper 'swi_glu'"), std::string::npos)
      << missing.output;
}

TEST(PyptoE2E, SimModeReportsSimulatedTimeAndLeavesCorrectnessUnchecked) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  if (std::system("python3 -c 'import torch' >/dev/null 2>&1") == 0) GTEST_SKIP() << "python3 has torch: sim mode would hand the stand-in torch tensors";
  PyptoRun r = judge(kFixtures / "swi_glu_standin.py", "sim", {"--cases", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.output; // nothing was shown correct
  EXPECT_EQ(r.status(1), "UNCHECKED") << r.output;
  EXPECT_EQ(r.by_case[1]["time_kind"], "simulated");
  // The stand-in's report: 1000 + 512/8 cycles (case 1 has 8 x 64 inputs) at the A2A3 clock.
  EXPECT_NEAR(r.by_case[1]["kernel_seconds"].get<double>(), 1064 / 1.85e9, 1e-9) << r.output;
  EXPECT_EQ(r.report["context"]["backend"]["time_kind"], "simulated");
  EXPECT_NE(r.output.find("(simulated)"), std::string::npos) << r.output;
}

TEST(PyptoE2E, PairedTimingRunsAgainstAPyptoReference) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  PyptoRun r = judge(kFixtures / "swi_glu_standin.py", "plain",
                {"--cases", "1", "--reference", (kFixtures / "swi_glu_standin.py").string(), "--tier", "probe", "--cap", "0.5",
                 "--min-time", "0.05", "--warmup", "0.05", "--cache", "warm"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.by_case[1].contains("timing")) << r.output;
  EXPECT_FALSE(r.report["timing"].is_null());
  EXPECT_NE(r.report["timing"]["protocol"]["compiler"].get<std::string>().find("pypto runner"), std::string::npos);
}

// Device time (--pypto-time device): the runner profiles each timed call with torch_npu's
// profiler, here the stand-in (standin/torch_npu), whose kernel_details.csv gives each kernel
// 2 us + 0.01 us per input element on the vector cores plus a 30 us AI_CPU scheduler row that
// must not count. The judge reads and deletes each export; kernel_seconds is the export's time.
TEST(PyptoE2E, DeviceTimeIsTheProfilersKernelTime) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  util::TempDir tmp("temper-pypto-tmp");
  PyptoRun r = judge(kFixtures / "swi_glu_standin.py", "plain", {"--pypto-time", "device", "--pypto-python", "python3"},
                     kFixtures / "swi_glu_small", {{"PYTHONPATH", (kFixtures / "standin").string()}, {"TMPDIR", tmp.path().string()}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::map<int64_t, int> elements{{1, 8 * 64}, {2, 6 * 34}, {3, 3 * 5 * 22}};
  for (const auto& [id, n] : elements) {
    EXPECT_EQ(r.status(id), "PASSED") << "case " << id << "\n" << r.output;
    EXPECT_EQ(r.by_case[id]["time_kind"], "device");
    EXPECT_NEAR(r.by_case[id]["kernel_seconds"].get<double>(), (2.0 + 0.01 * n) * 1e-6, 1e-12) << "case " << id;
    EXPECT_GT(r.by_case[id]["host_wall_seconds"].get<double>(), 0.0) << "case " << id;
  }
  EXPECT_EQ(r.report["context"]["backend"]["time_kind"], "device");
  EXPECT_NE(r.output.find("(device)"), std::string::npos) << r.output;
  // Every export was deleted once read, and each runner's profile directory with its worker.
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    EXPECT_NE(e.path().filename().string().rfind("temper_npu_prof_", 0), 0u) << "left behind: " << e.path();
  }
}

// Paired timing on device time: a candidate that sleeps 30 ms on the host before the same
// kernel is SAME on device time (every sample is the profile's 7.12 us) and SLOWER on host time.
TEST(PyptoE2E, PairedTimingComparesDeviceTimes) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  const std::vector<std::string> timing = {"--cases", "1", "--reference", (kFixtures / "swi_glu_standin.py").string(),
                                           "--tier", "probe", "--cap", "1", "--min-time", "0", "--warmup", "0.01",
                                           "--lives", "0", "--cache", "warm"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), timing.begin(), timing.end());
    return extra;
  };
  PyptoRun device = judge(kFixtures / "swi_glu_standin_host_busy.py", "plain", with({"--pypto-time", "device"}));
  ASSERT_TRUE(device.by_case[1].contains("timing")) << device.output;
  const auto& t = device.by_case[1]["timing"];
  EXPECT_EQ(t["verdict"], "SAME") << device.output;
  ASSERT_FALSE(t["jobs"].empty());
  const auto& job = t["jobs"][0];
  ASSERT_FALSE(job["candidate"]["samples"].empty());
  for (const auto& arm : {"reference", "candidate"}) {
    for (const auto& s : job[arm]["samples"]) EXPECT_NEAR(s.get<double>(), 7.12e-6, 1e-12) << arm;
  }
  // The sleep is in the host wall times recorded beside the device times.
  ASSERT_TRUE(job["candidate"].contains("host_wall_samples")) << job.dump();
  for (const auto& s : job["candidate"]["host_wall_samples"]) EXPECT_GT(s.get<double>(), 0.025);
  EXPECT_NE(device.report["timing"]["protocol"]["clock"].get<std::string>().find("NPU profiler"), std::string::npos);

  PyptoRun host = judge(kFixtures / "swi_glu_standin_host_busy.py", "plain", with({"--pypto-time", "host"}));
  ASSERT_TRUE(host.by_case[1].contains("timing")) << host.output;
  EXPECT_EQ(host.by_case[1]["timing"]["verdict"], "SLOWER") << host.output;
  EXPECT_EQ(host.by_case[1]["time_kind"], "host");
}

// An export the judge cannot use is the candidate's RUNTIME_ERROR, with the reason: malformed,
// missing, or holding no kernel (the candidate computed on the host). On host time the same
// candidates pass, so the verdict comes from the export.
TEST(PyptoE2E, AnUnusableExportIsARuntimeError) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"swi_glu_standin_bad_profile.py", "'Duration(us)' is 'n/a', not a duration"},
      {"swi_glu_standin_no_profile.py", "no profiler export under"},
      {"swi_glu_standin_host_only.py", "ran nothing on the NPU's cores"}};
  for (const auto& [candidate, why] : expected) {
    PyptoRun r = judge(kFixtures / candidate, "plain", {"--cases", "1", "--pypto-time", "device"});
    EXPECT_EQ(r.exit_code, 1) << candidate << "\n" << r.output;
    EXPECT_EQ(r.status(1), "RUNTIME_ERROR") << candidate << "\n" << r.output;
    const std::string message = r.by_case[1].value("message", "");
    EXPECT_NE(message.find("device time: "), std::string::npos) << candidate << ": " << message;
    EXPECT_NE(message.find(why), std::string::npos) << candidate << ": " << message;
    PyptoRun on_host = judge(kFixtures / candidate, "plain", {"--cases", "1", "--pypto-time", "host"});
    EXPECT_EQ(on_host.status(1), "PASSED") << candidate << "\n" << on_host.output;
  }
}

// Without a torch_npu to profile with, device time is temper's setup problem (exit 2), not the
// candidate's verdict.
TEST(PyptoE2E, DeviceTimeWithoutTorchNpuIsASetupError) {
  if (!have_python3()) GTEST_SKIP() << "no python3 here";
  if (std::system("python3 -c 'import torch_npu' >/dev/null 2>&1") == 0) GTEST_SKIP() << "python3 has torch_npu";
  util::TempDir empty("temper-pypto-nopath");
  PyptoRun r = judge(kFixtures / "swi_glu_standin.py", "plain", {"--cases", "1", "--pypto-time", "device", "--pypto-python", "python3"},
                     kFixtures / "swi_glu_small", {{"PYTHONPATH", empty.path().string()}});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("device time needs torch_npu's profiler"), std::string::npos) << r.output;
}

TEST(PyptoE2E, SimModeTakesNoPyptoTime) {
  PyptoRun r = judge(kFixtures / "swi_glu_standin.py", "sim", {"--pypto-time", "device"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--pypto-time applies to npu and plain"), std::string::npos) << r.output;
}

TEST(PyptoE2E, UnknownInterpreterIsAUsageError) {
  PyptoRun r = judge(kFixtures / "swi_glu_standin.py", "plain", {"--pypto-python", "/nonexistent/python"},
                     kFixtures / "swi_glu_small", {{"PYTHONPATH", (kFixtures / "standin").string()}});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("TEMPER_PYPTO_PYTHON"), std::string::npos) << r.output;
}

// The real PyPTO package in RunMode.SIM (CPU cost model, no CANN): the candidate compiles and
// is simulated; SIM computes no outputs, so the case is UNCHECKED with a simulated time.
TEST(PyptoE2E, RealPyptoSimulatesTheExampleKernel) {
  const char* py = std::getenv("TEMPER_PYPTO_PYTHON");
  if (!py || !*py) GTEST_SKIP() << "TEMPER_PYPTO_PYTHON is not set (a Python with pypto and torch; docs/pypto.md)";
  PyptoRun r = judge(kSource / "examples/pypto/swi_glu.py", "sim", {"--cases", "1", "--trials", "3", "--timeout", "600"},
                kFixtures / "swi_glu_small", {{"TEMPER_PYPTO_PYTHON", py}});
  EXPECT_EQ(r.status(1), "UNCHECKED") << r.output;
  EXPECT_EQ(r.by_case[1]["time_kind"], "simulated");
  EXPECT_GT(r.by_case[1]["kernel_seconds"].get<double>(), 0.0) << r.output;
}

} // namespace pypto_e2e_test
