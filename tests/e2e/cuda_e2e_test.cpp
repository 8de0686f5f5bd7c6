// The real temper binary with --backend cuda. Where nvcc exists the candidate is built and
// checked statically; without a GPU every case that got that far is UNSUPPORTED with the
// reason, and the report still carries ptxas's resources. With a GPU the same run passes.
#include "backend/cuda_device.h"
#include "build/cuda_compiler.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cuda_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct CudaRun {
  int exit_code = -1;
  std::string output;
  nlohmann::json report;
};

CudaRun judge_cuda(const std::string& candidate, std::vector<std::string> extra = {}) {
  util::TempDir dir("temper-cuda-e2e");
  fs::path json = dir.path() / "report.json";
  util::Command cmd;
  cmd.argv = {kBinary.string(), "judge", (kSource / "tasks/swi_glu").string(), (kSource / candidate).string(),
              "--backend", "cuda", "--cases", "1", "--json", json.string(), "--quiet"};
  cmd.argv.insert(cmd.argv.end(), extra.begin(), extra.end());
  cmd.timeout = std::chrono::seconds(600);
  auto r = util::default_process_runner().run(cmd);
  CudaRun out;
  out.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  out.output = r.output;
  if (auto text = util::read_file(json)) out.report = nlohmann::json::parse(*text, nullptr, false);
  return out;
}

bool have_gpu() {
  auto d = backend::probe_cuda_device(fs::path(TEMPER_BINARY_DIR) / "temper-cuda-worker", util::default_process_runner());
  return d && d->supported;
}

} // namespace

TEST(CudaE2E, JudgesACudaKernelOrSaysWhyItCannot) {
  if (build::find_nvcc().empty()) GTEST_SKIP() << "nvcc not found: no CUDA toolkit here";
  CudaRun r = judge_cuda("tests/fixtures/cuda/swi_glu_tiled.cu");
  ASSERT_TRUE(r.report.is_object()) << r.output;
  const auto& c = r.report["cases"][0];
  EXPECT_EQ(r.report["context"]["backend"]["name"], "cuda");
  // ptxas's resources, with or without a GPU.
  const auto& metrics = c["compile"]["resources"]["metrics"];
  EXPECT_GT(metrics.value("cuda.registers", 0.0), 0) << c.dump(2);
  EXPECT_EQ(metrics.value("cuda.spill_bytes", -1.0), 0) << c.dump(2);
  if (have_gpu()) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(c.value("status", ""), "PASSED") << c.dump(2);
  } else {
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(c.value("status", ""), "UNSUPPORTED") << c.dump(2);
    EXPECT_NE(c.value("message", "").find("no GPU"), std::string::npos) << c.dump(2);
    EXPECT_EQ(r.report["context"]["backend"]["device"]["supported"], false);
  }
}

// The CUDA campaign's starter (tasks/swi_glu/kernels/rows.cu, plans/cuda/) at its default knobs:
// it builds with nvcc, spills nothing and crosses no boundary; on a GPU it passes.
TEST(CudaE2E, TheCampaignStarterBuildsAndPassesTheStaticChecks) {
  if (build::find_nvcc().empty()) GTEST_SKIP() << "nvcc not found: no CUDA toolkit here";
  CudaRun r = judge_cuda("tasks/swi_glu/kernels/rows.cu");
  ASSERT_TRUE(r.report.is_object()) << r.output;
  const auto& c = r.report["cases"][0];
  const auto& metrics = c["compile"]["resources"]["metrics"];
  EXPECT_GT(metrics.value("cuda.registers", 0.0), 0) << c.dump(2);
  EXPECT_EQ(metrics.value("cuda.spill_bytes", -1.0), 0) << c.dump(2);
  EXPECT_EQ(c.value("status", ""), have_gpu() ? "PASSED" : "UNSUPPORTED") << c.dump(2);
}

TEST(CudaE2E, AKernelThatCreatesItsOwnStreamIsRejectedBeforeItRuns) {
  if (build::find_nvcc().empty()) GTEST_SKIP() << "nvcc not found: no CUDA toolkit here";
  CudaRun r = judge_cuda("tests/fixtures/cuda/creates_stream.cu");
  ASSERT_TRUE(r.report.is_object()) << r.output;
  const auto& c = r.report["cases"][0];
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(c.value("status", ""), "REJECTED_CHEAT") << c.dump(2);
  EXPECT_EQ(c.value("reason_code", ""), "forbidden_import") << c.dump(2);
  EXPECT_NE(c.value("message", "").find("cudaStreamCreateWithFlags"), std::string::npos) << c.dump(2);
}

TEST(CudaE2E, AnUnknownArchitectureIsAUsageError) {
  if (build::find_nvcc().empty()) GTEST_SKIP() << "nvcc not found: no CUDA toolkit here";
  CudaRun r = judge_cuda("tests/fixtures/cuda/swi_glu_tiled.cu", {"--cuda-arch", "hopper"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--cuda-arch"), std::string::npos) << r.output;
}

// On a GPU: the naive and the tiled kernel timed against each other (one short probe-tier job).
TEST(CudaE2E, PairedTimingOnTheGpu) {
  if (build::find_nvcc().empty()) GTEST_SKIP() << "nvcc not found: no CUDA toolkit here";
  if (!have_gpu()) GTEST_SKIP() << "no GPU here (temper-cuda-worker --probe says so)";
  CudaRun r = judge_cuda("tests/fixtures/cuda/swi_glu_tiled.cu",
                     {"--reference", (kSource / "tests/fixtures/cuda/swi_glu_naive.cu").string(), "--tier", "probe", "--cap", "2"});
  ASSERT_TRUE(r.report.is_object()) << r.output;
  const auto& c = r.report["cases"][0];
  EXPECT_EQ(c.value("status", ""), "PASSED") << c.dump(2);
  ASSERT_TRUE(c.contains("timing")) << c.dump(2);
  EXPECT_EQ(r.report["timing"]["protocol"]["clock"].get<std::string>().rfind("cudaEventElapsedTime", 0), 0u)
      << r.report["timing"].dump(2);
}

} // namespace cuda_e2e_test
