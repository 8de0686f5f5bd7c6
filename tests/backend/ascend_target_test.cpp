// Ascend target classes and fingerprints (backend/ascend_target): SoC names to classes, the
// runner's JSON, and the clean "unsupported" answer where there is no NPU.
#include "backend/ascend_target.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace ascend_target_test {

using namespace temper;

TEST(AscendTarget, SocVersionsMapToTheirCoreClass) {
  EXPECT_EQ(backend::ascend_target_class("Ascend910B1"), "ascend-a2a3-c220");
  EXPECT_EQ(backend::ascend_target_class("Ascend910B4"), "ascend-a2a3-c220");
  EXPECT_EQ(backend::ascend_target_class("Ascend910_9382"), "ascend-a2a3-c220"); // A3
  EXPECT_EQ(backend::ascend_target_class("Ascend910C4"), "ascend-a2a3-c220");
  EXPECT_EQ(backend::ascend_target_class("Ascend950PR_9589"), "ascend-950-c310");
  EXPECT_EQ(backend::ascend_target_class("Ascend950DT_9581"), "ascend-950-c310");
  EXPECT_EQ(backend::ascend_target_class("Ascend310P3"), "ascend-unknown-ascend310p3");
  EXPECT_EQ(backend::ascend_target_class(""), "ascend-unknown-soc");
}

TEST(AscendTarget, FingerprintFromRunnerJson) {
  auto f = backend::ascend_fingerprint_from_json(
      {{"soc_version", "Ascend910B2"}, {"cube_cores", 24}, {"vector_cores", 48}, {"memory_gib", 64}, {"cann_version", "9.0.0"}});
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->target_class(), "ascend-a2a3-c220");
  EXPECT_EQ(f->id().size(), 16u);
  auto g = *f;
  g.cann_version = "9.1.0";
  EXPECT_NE(g.id(), f->id()); // a toolchain change is another fingerprint of the same class
  EXPECT_EQ(g.target_class(), f->target_class());
}

TEST(AscendTarget, UnsupportedAndMalformedAnswersAreErrors) {
  auto u = backend::ascend_fingerprint_from_json({{"unsupported", "torch_npu is not importable here"}});
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().message.rfind("unsupported: torch_npu", 0), 0u) << u.error().message;
  EXPECT_FALSE(backend::ascend_fingerprint_from_json({{"cube_cores", 24}}));
  EXPECT_FALSE(backend::ascend_fingerprint_from_json(nlohmann::json::array()));
}

TEST(AscendTarget, ProbeOnAMachineWithoutNpuSaysUnsupported) {
  if (std::system("python3 -c 'import torch_npu' >/dev/null 2>&1") == 0) GTEST_SKIP() << "torch_npu is installed here";
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 here";
  auto f = backend::probe_ascend_target("python3", std::string(TEMPER_SOURCE_DIR) + "/runners/pypto/temper_pypto_runner.py",
                                        util::default_process_runner());
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message.rfind("unsupported: torch_npu is not importable", 0), 0u) << f.error().message;
}

} // namespace ascend_target_test
