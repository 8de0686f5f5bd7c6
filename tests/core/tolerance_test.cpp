// Tolerance standards on hand-computed examples: each rule passes at its threshold and fails just
// past it. Candidate values are chosen exactly representable in the output dtype.
#include "core/tolerance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace temper::core::tolerance_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = HUGE_VAL;

struct Case {
  Dtype dtype = Dtype::F16;
  Shape shape;
  std::vector<double> got, golden;
  std::optional<std::vector<double>> lowp;
};

Comparison run(const ToleranceSpec& spec, const Case& c) {
  OutputView v{c.dtype, c.shape, c.got.data(), c.golden.data(), c.lowp ? c.lowp->data() : nullptr};
  return compare_output(spec, v);
}

ToleranceSpec standard(std::string name) {
  ToleranceSpec s;
  s.standard = std::move(name);
  return s;
}
const ToleranceSpec kCann = standard("cann-bench");

// n elements of `fill`, golden and candidate alike.
Case uniform(Dtype d, int64_t n, double fill) {
  Case c;
  c.dtype = d;
  c.shape = {n};
  c.got.assign(static_cast<size_t>(n), fill);
  c.golden.assign(static_cast<size_t>(n), fill);
  return c;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// --- cann-bench: the normal region (MARE < 10*T, MERE < T) --------------------------------------

struct DtypeT {
  Dtype dtype;
  double t;
};

class CannMare : public ::testing::TestWithParam<DtypeT> {};

// One element off by k*T on golden 1: rel = k*T/(1+1e-7), so k = 10 is just below 10*T and passes,
// k = 11 fails. The other 99 elements are exact, keeping MERE far below T.
TEST_P(CannMare, PassesAtTenTFailsAbove) {
  auto [dtype, t] = GetParam();
  Case c = uniform(dtype, 100, 1.0);
  c.got[7] = 1.0 + 10 * t;
  Comparison ok = run(kCann, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_DOUBLE_EQ(ok.details["threshold"].get<double>(), t);
  EXPECT_EQ(ok.mismatches, 0);

  c.got[7] = 1.0 + 11 * t;
  Comparison bad = run(kCann, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(contains(bad.reason, "MARE")) << bad.reason;
  EXPECT_TRUE(contains(bad.reason, std::string(dtype_name(dtype)))) << bad.reason;
  EXPECT_EQ(bad.mismatches, 1);
  ASSERT_EQ(bad.first.size(), 1u);
  EXPECT_EQ(bad.first[0].flat, 7);
  EXPECT_DOUBLE_EQ(bad.first[0].got, 1.0 + 11 * t);
  EXPECT_NEAR(bad.max_rel, 11 * t, 11 * t * 1e-6); // the 1e-7 in the denominator
  EXPECT_DOUBLE_EQ(bad.max_abs, 11 * t);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CannMare,
                         ::testing::Values(DtypeT{Dtype::F16, 0x1p-10}, DtypeT{Dtype::BF16, 0x1p-7},
                                           DtypeT{Dtype::F32, 0x1p-13}, DtypeT{Dtype::F64, 0x1p-13}));

TEST(CannBench, MareFailureIsForgivenWhenTheSamePrecisionReferenceAlsoFails) {
  // fp32 deep reduction: the reference has 2 normal-region errors above 10*T, the candidate may have 4.
  const double t = 0x1p-13;
  Case c = uniform(Dtype::F32, 100, 1.0);
  c.lowp = c.golden;
  (*c.lowp)[0] = (*c.lowp)[1] = 1.0 + 12 * t;
  for (int i : {10, 11, 12, 13}) c.got[static_cast<size_t>(i)] = 1.0 + 12 * t;
  Comparison ok = run(kCann, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_EQ(ok.details["normal_error_count"], 4);
  EXPECT_EQ(ok.details["normal_cpu_error_count"], 2);
  EXPECT_EQ(ok.mismatches, 4); // tolerated, but still counted

  c.got[14] = 1.0 + 12 * t;
  Comparison bad = run(kCann, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(contains(bad.reason, "MARE")) << bad.reason;

  // A clean reference gives no allowance at all.
  c.lowp = c.golden;
  c.got = c.golden;
  c.got[3] = 1.0 + 12 * t;
  EXPECT_FALSE(run(kCann, c).passed);
}

TEST(CannBench, TheSamePrecisionRunIsWantedOnlyPastTheFirstStage) {
  // A passing output never reads the same-precision run; one that reaches the regions stage
  // without it says so, and the caller's second comparison with it gives the verdict.
  const double t = 0x1p-13;
  Case c = uniform(Dtype::F32, 100, 1.0);
  Comparison clean = run(kCann, c);
  EXPECT_TRUE(clean.passed);
  EXPECT_FALSE(clean.wants_lowp);

  for (int i : {10, 11, 12, 13}) c.got[static_cast<size_t>(i)] = 1.0 + 12 * t;
  Comparison without = run(kCann, c);
  EXPECT_EQ(without.details["stage"], "regions");
  EXPECT_TRUE(without.wants_lowp);
  EXPECT_FALSE(without.passed);
  c.lowp = c.golden;
  (*c.lowp)[0] = (*c.lowp)[1] = 1.0 + 12 * t;
  Comparison with = run(kCann, c);
  EXPECT_FALSE(with.wants_lowp);
  EXPECT_TRUE(with.passed) << with.reason;
}

TEST(CannBench, MereMustStayBelowT) {
  // All elements at exactly T relative error (rel = T/(1+1e-7) < T): passes.
  const double t = 0x1p-10;
  Case c = uniform(Dtype::F16, 10, 1.0);
  for (auto& g : c.got) g = 1.0 + t;
  Comparison ok = run(kCann, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_NEAR(ok.mean_rel, t, 1e-9);

  // 6 of 10 at 2T: MERE = 1.2 T, every element below 10*T. compare.py's second stage would let this
  // through; temper keeps the design's MERE rule for the normal region.
  c.got.assign(10, 1.0);
  for (int i = 0; i < 6; ++i) c.got[static_cast<size_t>(i)] = 1.0 + 2 * t;
  Comparison bad = run(kCann, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(contains(bad.reason, "MERE")) << bad.reason;
  EXPECT_TRUE(bad.details["official_passed"].get<bool>());
  EXPECT_NEAR(bad.details["mere"].get<double>(), 1.2 * t, 1e-9);

  // Unless the same-precision reference is as bad (within 2x).
  c.lowp = c.got;
  EXPECT_TRUE(run(kCann, c).passed);
}

// --- cann-bench: small values ---------------------------------------------------------------------

struct SmallCase {
  Dtype dtype;
  double golden; // inside the small-value region
  double wrong;  // |wrong - golden| above the small-value error, rel above 10*T
};

class CannSmallValues : public ::testing::TestWithParam<SmallCase> {};

TEST_P(CannSmallValues, AtMostTwiceTheReferenceErrorCount) {
  auto p = GetParam();
  Case c = uniform(p.dtype, 64, 1.0);
  for (int i = 0; i < 8; ++i) c.got[static_cast<size_t>(i)] = c.golden[static_cast<size_t>(i)] = p.golden;
  // No reference: its count is 0, so max(0, 1) = 1 and two errors are allowed.
  c.got[0] = c.got[1] = p.wrong;
  Comparison ok = run(kCann, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_EQ(ok.details["small_value_error_count"], 2);
  EXPECT_EQ(ok.details["small_value_total_count"], 8);

  c.got[2] = p.wrong;
  Comparison bad = run(kCann, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(contains(bad.reason, "small-value errors 3")) << bad.reason;
  EXPECT_EQ(bad.mismatches, 3);
  EXPECT_FALSE(bad.details["small_value_passed"].get<bool>());

  // A reference with 2 errors allows 4.
  c.lowp = c.golden;
  (*c.lowp)[5] = (*c.lowp)[6] = p.wrong;
  c.got[3] = p.wrong;
  Comparison ok4 = run(kCann, c);
  EXPECT_TRUE(ok4.passed) << ok4.reason;
  EXPECT_EQ(ok4.details["small_value_cpu_error_count"], 2);
  c.got[4] = p.wrong;
  EXPECT_FALSE(run(kCann, c).passed);
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, CannSmallValues,
    ::testing::Values(SmallCase{Dtype::F16, 0x1p-14, 0x1p-14 + 0x1p-15},   // svt 2^-11, sve 2^-16
                      SmallCase{Dtype::BF16, 0x1p-9, 0x1p-9 + 0x1p-12},     // svt 2^-8, sve 2^-16
                      SmallCase{Dtype::F32, 0x1p-20, 0x1p-20 + 0x1p-29}));  // svt 2^-14, sve 2^-30

TEST(CannBench, SmallValueDifferencesBelowTheErrorThresholdAreNotCounted) {
  // fp16: golden 2^-14, candidate one ulp (2^-24) off: |diff| < 2^-16 though rel is 2^-10... plus one
  // element far off to push the comparison into the region stage.
  Case c = uniform(Dtype::F16, 16, 0x1p-14);
  for (auto& g : c.got) g = 0x1p-14 + 0x1p-24;
  c.got[0] = 0x1p-14 + 0x1p-15;
  Comparison r = run(kCann, c);
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_EQ(r.details["small_value_error_count"], 1);
}

// --- cann-bench: cancellation ---------------------------------------------------------------------

struct CancelCase {
  Dtype dtype;
  double golden; // small-value threshold <= |golden| < cancel boundary
};

class CannCancellation : public ::testing::TestWithParam<CancelCase> {};

TEST_P(CannCancellation, ZerosWhereTheGoldenIsNearTheBoundary) {
  auto p = GetParam();
  Case c = uniform(p.dtype, 32, 1.0);
  for (int i = 0; i < 6; ++i) c.got[static_cast<size_t>(i)] = c.golden[static_cast<size_t>(i)] = p.golden;
  c.got[0] = c.got[1] = 0.0;
  Comparison ok = run(kCann, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_EQ(ok.details["cancel_error_count"], 2);
  EXPECT_EQ(ok.details["cancel_total_count"], 6); // exact small outputs are in the region too

  c.got[2] = 0.0;
  Comparison bad = run(kCann, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(contains(bad.reason, "cancellation errors 3")) << bad.reason;

  // The same-precision reference cancelled too (design doc §9.2: NPU=0, CPU=0 passes).
  c.lowp = c.golden;
  (*c.lowp)[0] = (*c.lowp)[1] = 0.0;
  EXPECT_TRUE(run(kCann, c).passed);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CannCancellation,
                         ::testing::Values(CancelCase{Dtype::F16, 0x1p-7},   // [2^-11, 2^-5)
                                           CancelCase{Dtype::BF16, 0x1p-5},  // [2^-8, 2^-3)
                                           CancelCase{Dtype::F32, 0x1p-10})); // [2^-14, 2^-8)

TEST(CannBench, LargeGoldenCancelledToZeroFails) {
  // Design doc §9.2: golden 0.1, candidate 0 is not a cancellation case (0.1 > 2^-8 for fp32).
  Case c = uniform(Dtype::F32, 4, 1.0);
  c.golden[1] = 0.1;
  c.got[1] = 0.0;
  Comparison r = run(kCann, c);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.details["cancel_total_count"], 0);
  EXPECT_EQ(r.details["normal_error_count"], 1);
}

// --- cann-bench: NaN, inf, integers, T override -----------------------------------------------------

TEST(CannBench, NanPositionsMustMatch) {
  Case c = uniform(Dtype::F16, 6, 2.0);
  c.got[4] = c.golden[4] = kNaN;
  EXPECT_TRUE(run(kCann, c).passed);

  c.got[4] = 2.0; // golden NaN, candidate finite
  Comparison r1 = run(kCann, c);
  EXPECT_FALSE(r1.passed);
  EXPECT_TRUE(contains(r1.reason, "NaN positions")) << r1.reason;

  c.got[4] = kNaN;
  c.got[1] = kNaN; // candidate NaN, golden finite
  Comparison r2 = run(kCann, c);
  EXPECT_FALSE(r2.passed);
  EXPECT_EQ(r2.mismatches, 1);
  ASSERT_FALSE(r2.first.empty());
  EXPECT_EQ(r2.first[0].flat, 1);
}

TEST(CannBench, OneSidedInfinityIsReplacedByTheDtypeMax) {
  Case c = uniform(Dtype::F16, 4, 1.0);
  c.golden[0] = 65504.0;
  c.got[0] = kInf; // saturated candidate: compared as 65504
  Comparison r = run(kCann, c);
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_EQ(r.details["replaced_inf_count"], 1);

  c.golden[0] = 70000.0; // the golden itself overflows fp16 (golden is truncated to the dtype first)
  c.got[0] = 65504.0;
  EXPECT_TRUE(run(kCann, c).passed);

  c.golden[0] = -60000.0;
  c.got[0] = -kInf; // compared as -65504: rel 0.0917 > 10*T
  Comparison bad = run(kCann, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_NEAR(bad.details["mare"].get<double>(), 5504.0 / 60000.0, 1e-6);

  // bf16 uses its own max (0x7f7f).
  Case b = uniform(Dtype::BF16, 2, 1.0);
  b.golden[1] = 0x1.fep127;
  b.got[1] = kInf;
  EXPECT_TRUE(run(kCann, b).passed);
}

TEST(CannBench, SameSignInfinitiesMatchOppositeSignsFail) {
  Case c = uniform(Dtype::F32, 3, 1.0);
  c.got[2] = c.golden[2] = -kInf;
  Comparison ok = run(kCann, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_EQ(ok.details["valid_count"], 2);

  c.got[2] = kInf;
  Comparison bad = run(kCann, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(contains(bad.reason, "opposite sign")) << bad.reason;
}

TEST(CannBench, IntegersMustMatchExactly) {
  Case c = uniform(Dtype::I32, 5, 7.0);
  EXPECT_TRUE(run(kCann, c).passed);
  c.got[3] = 8.0;
  Comparison r = run(kCann, c);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.details["rule"], "exact");
}

TEST(CannBench, RtolOverridesTAndZeroMeansBitExact) {
  ToleranceSpec loose = kCann;
  loose.rtol = 0.01; // proto.yaml precision_thresholds
  Case c = uniform(Dtype::F16, 100, 1.0);
  c.got[0] = 1.0 + 0x1p-4; // rel 0.0625 < 10 * 0.01
  EXPECT_FALSE(run(kCann, c).passed);
  EXPECT_TRUE(run(loose, c).passed);

  ToleranceSpec exact = kCann;
  exact.rtol = 0.0;
  Case e = uniform(Dtype::F16, 3, 1.0);
  EXPECT_TRUE(run(exact, e).passed);
  e.got[1] = 1.0 + 0x1p-10;
  EXPECT_FALSE(run(exact, e).passed);
}

TEST(CannBench, StatisticsAndGoldenRounding) {
  Case c;
  c.dtype = Dtype::F64;
  c.shape = {2};
  c.golden = {1.0, 2.0};
  c.got = {1.5, 2.0};
  Comparison r = run(kCann, c);
  EXPECT_FALSE(r.passed);
  EXPECT_DOUBLE_EQ(r.max_abs, 0.5);
  EXPECT_NEAR(r.max_rel, 0.5, 1e-6);
  EXPECT_NEAR(r.mean_rel, 0.25, 1e-6);
  EXPECT_EQ(r.numel, 2);
  EXPECT_EQ(r.standard, "cann-bench");

  // The golden is truncated to fp16 before comparing: 0.1 becomes 0.0999755859375 exactly.
  Case h = uniform(Dtype::F16, 1, 0.1);
  h.got[0] = 0.0999755859375;
  Comparison hr = run(kCann, h);
  EXPECT_TRUE(hr.passed);
  EXPECT_EQ(hr.max_abs, 0.0);
}

// --- first mismatches, empty tensors, validation ----------------------------------------------------

TEST(Comparison, FirstMismatchesAreUnravelledInRowMajorOrder) {
  Case c = uniform(Dtype::F32, 24, 1.0);
  c.shape = {2, 3, 4};
  for (int i : {17, 5, 23}) c.got[static_cast<size_t>(i)] = 3.0;
  Comparison r = run(kCann, c);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 3);
  ASSERT_EQ(r.first.size(), 3u);
  EXPECT_EQ(r.first[0].flat, 5);
  EXPECT_EQ(r.first[0].index, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(r.first[1].index, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(r.first[2].index, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r.first[0].expected, 1.0);
  EXPECT_TRUE(contains(r.reason, "[0, 1, 1]")) << r.reason;
}

TEST(Comparison, AtMostEightFirstMismatches) {
  Case c = uniform(Dtype::F32, 20, 1.0);
  for (auto& g : c.got) g = 2.0;
  Comparison r = run(standard("exact"), c);
  EXPECT_EQ(r.mismatches, 20);
  EXPECT_EQ(r.first.size(), 8u);
  EXPECT_EQ(r.first[7].flat, 7);
}

// Large outputs are compared in blocks on several threads; counts, order and figures must not
// depend on that.
TEST(Comparison, LargeOutputsMergeBlocksInRowMajorOrder) {
  const int64_t n = 700001; // three blocks of 2^18 elements
  Case c = uniform(Dtype::F32, n, 1.0);
  for (int64_t i : {int64_t{699999}, int64_t{5}, int64_t{300001}}) c.got[static_cast<size_t>(i)] = 2.0;
  for (int64_t i = 1000; i < n; i += 1000) c.got[static_cast<size_t>(i)] = 1.0 + 0x1p-20;
  Comparison r = run(kCann, c);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 3);
  ASSERT_EQ(r.first.size(), 3u);
  EXPECT_EQ(r.first[0].flat, 5);
  EXPECT_EQ(r.first[1].flat, 300001);
  EXPECT_EQ(r.first[2].flat, 699999);
  EXPECT_DOUBLE_EQ(r.max_abs, 1.0);
  double expect_mean = (3 * 1.0 / (1 + 1e-7) + 700 * 0x1p-20 / (1 + 1e-7)) / static_cast<double>(n);
  EXPECT_NEAR(r.mean_rel, expect_mean, 1e-15);

  Comparison fib = run(standard("flashinfer-bench"), c);
  EXPECT_EQ(fib.mismatches, 3);
  EXPECT_EQ(fib.first.at(1).flat, 300001);
  c.got[650000] = kNaN;
  Comparison fib_nan = run(standard("flashinfer-bench"), c);
  EXPECT_EQ(fib_nan.mismatches, 1);
  EXPECT_EQ(fib_nan.first.at(0).index, (std::vector<int64_t>{650000}));
}

TEST(Comparison, EmptyTensorsPassUnderEveryStandard) {
  for (const char* s : {"cann-bench", "flashinfer-bench", "flashattention", "exact"}) {
    Case c;
    c.dtype = Dtype::F16;
    c.shape = {0, 4};
    Comparison r = run(standard(s), c);
    EXPECT_TRUE(r.passed) << s << ": " << r.reason;
    EXPECT_EQ(r.numel, 0);
    EXPECT_EQ(r.mismatches, 0);
  }
}

TEST(Comparison, ValidateTolerance) {
  EXPECT_EQ(validate_tolerance(kCann), "");
  EXPECT_TRUE(contains(validate_tolerance(standard("allclose")), "unknown tolerance standard"));
  ToleranceSpec s = standard("flashinfer-bench");
  s.atol = -1;
  EXPECT_TRUE(contains(validate_tolerance(s), "atol"));
  s.atol = 0.0;
  EXPECT_EQ(validate_tolerance(s), "");
  s.rtol = kNaN;
  EXPECT_TRUE(contains(validate_tolerance(s), "rtol"));
  s.rtol.reset();
  s.matched_ratio = 0.0;
  EXPECT_TRUE(contains(validate_tolerance(s), "matched_ratio"));
  s.matched_ratio = 1.5;
  EXPECT_FALSE(validate_tolerance(s).empty());
  s.matched_ratio = 1.0;
  EXPECT_EQ(validate_tolerance(s), "");
  ToleranceSpec f = standard("flashattention");
  f.factor = 0.0;
  EXPECT_TRUE(contains(validate_tolerance(f), "factor"));
  f.factor = 3.0;
  EXPECT_EQ(validate_tolerance(f), "");

  // compare_output refuses an invalid spec rather than guessing.
  Case c = uniform(Dtype::F32, 2, 1.0);
  Comparison r = run(standard("allclose"), c);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(contains(r.reason, "unknown tolerance standard"));
}

// --- flashinfer-bench ---------------------------------------------------------------------------------

const ToleranceSpec kFib = standard("flashinfer-bench");

TEST(FlashinferBench, AnyNonFiniteCandidateValueFails) {
  Case c = uniform(Dtype::F32, 4, 1.0);
  c.got[2] = kNaN;
  Comparison r = run(kFib, c);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(contains(r.reason, "1 NaN")) << r.reason;
  EXPECT_EQ(r.details["nan_count"], 1);
  EXPECT_EQ(r.first.at(0).flat, 2);

  c.got[2] = 1.0;
  c.got[3] = -kInf;
  c.golden[3] = -kInf; // even where the golden is the same infinity
  Comparison r2 = run(kFib, c);
  EXPECT_FALSE(r2.passed);
  EXPECT_EQ(r2.details["inf_count"], 1);
}

TEST(FlashinferBench, AnElementFailsOnlyWhenBothToleranceAreExceeded) {
  Case c = uniform(Dtype::F32, 3, 0.0);
  c.golden = {100.0, 0.001, 1.0};
  c.got = {100.5, 0.005, 1.0}; // abs 0.5 but rel 0.005; rel 4 but abs 0.004
  Comparison ok = run(kFib, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_DOUBLE_EQ(ok.details["matched_ratio"].get<double>(), 1.0);
  EXPECT_NEAR(ok.max_abs, 0.5, 1e-5);
  EXPECT_NEAR(ok.max_rel, 4.0, 1e-4);

  c.got[2] = static_cast<float>(1.02); // abs 0.02 and rel 0.02
  Comparison bad = run(kFib, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.mismatches, 1);
  EXPECT_TRUE(contains(bad.reason, "matched ratio")) << bad.reason;

  ToleranceSpec wide = kFib;
  wide.atol = 0.05;
  EXPECT_TRUE(run(wide, c).passed);
}

TEST(FlashinferBench, RequiredMatchedRatio) {
  Case c = uniform(Dtype::F32, 100, 1.0);
  for (int i = 0; i < 5; ++i) c.got[static_cast<size_t>(i)] = 2.0;
  EXPECT_FALSE(run(kFib, c).passed); // default ratio 1.0
  ToleranceSpec moe = kFib;
  moe.matched_ratio = 0.95;
  Comparison ok = run(moe, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_NEAR(ok.details["matched_ratio"].get<double>(), 0.95, 1e-12);
  c.got[5] = 2.0;
  Comparison bad = run(moe, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.details["failing_count"], 6);
}

// --- flashattention -----------------------------------------------------------------------------------

const ToleranceSpec kFa = standard("flashattention");

TEST(FlashAttention, NeedsTheLowPrecisionReference) {
  Case c = uniform(Dtype::BF16, 4, 1.0);
  Comparison r = run(kFa, c);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(contains(r.reason, "low-precision reference")) << r.reason;
}

TEST(FlashAttention, TwiceTheReferenceErrorPlusRoundingAllowance) {
  // bf16 around 1: 1 + 0.3 -> 1.296875, - 0.3 -> 0.99609375, so fwd_atol = 2 * 2^-8 = 2^-7.
  // Reference error 2^-7, bound = 2 * 2^-7 + 2^-7 = 3 * 2^-7.
  Case c = uniform(Dtype::BF16, 8, 1.0);
  c.lowp = c.golden;
  (*c.lowp)[6] = 1.0 + 0x1p-7;
  c.got[2] = 1.0 + 3 * 0x1p-7;
  Comparison ok = run(kFa, c);
  EXPECT_TRUE(ok.passed) << ok.reason;
  EXPECT_DOUBLE_EQ(ok.details["atol"].get<double>(), 0x1p-7);
  EXPECT_DOUBLE_EQ(ok.details["lowp_max_abs_error"].get<double>(), 0x1p-7);
  EXPECT_DOUBLE_EQ(ok.details["bound"].get<double>(), 3 * 0x1p-7);

  c.got[2] = 1.0 + 4 * 0x1p-7;
  Comparison bad = run(kFa, c);
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(contains(bad.reason, "max abs error")) << bad.reason;
  EXPECT_EQ(bad.mismatches, 1);
  EXPECT_EQ(bad.first.at(0).flat, 2);

  ToleranceSpec f3 = kFa;
  f3.factor = 3.0; // 3 * 2^-7 + 2^-7 = 4 * 2^-7
  EXPECT_TRUE(run(f3, c).passed);

  ToleranceSpec fa2 = kFa;
  fa2.atol = 0.0; // FA2's test has no additive term
  c.got[2] = 1.0 + 3 * 0x1p-7;
  EXPECT_FALSE(run(fa2, c).passed);
  c.got[2] = 1.0 + 2 * 0x1p-7;
  EXPECT_TRUE(run(fa2, c).passed);
}

TEST(FlashAttention, NanInTheCandidateFails) {
  Case c = uniform(Dtype::F16, 4, 0.5);
  c.lowp = c.golden;
  (*c.lowp)[0] = 0.5 + 0x1p-8;
  c.got[3] = kNaN;
  Comparison r = run(kFa, c);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.first.at(0).flat, 3);
  // A reference that overflowed somewhere does not open the bound to infinity.
  c.got[3] = 0.5;
  c.got[1] = 3.0;
  (*c.lowp)[2] = kInf;
  Comparison r2 = run(kFa, c);
  EXPECT_FALSE(r2.passed);
  EXPECT_EQ(r2.details["lowp_nonfinite_count"], 1);
}

// --- exact ----------------------------------------------------------------------------------------------

TEST(Exact, BitwiseEqualityAfterRoundingTheGolden) {
  const ToleranceSpec ex = standard("exact");
  Case c = uniform(Dtype::F32, 4, 0.1); // golden 0.1 rounds to the float nearest 0.1
  for (auto& g : c.got) g = static_cast<float>(0.1);
  c.got[3] = c.golden[3] = kNaN;
  EXPECT_TRUE(run(ex, c).passed);

  c.got[1] = std::nextafter(static_cast<float>(0.1), 1.0f);
  Comparison r = run(ex, c);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_TRUE(contains(r.reason, "1 of 4")) << r.reason;

  Case z = uniform(Dtype::F16, 1, 0.0);
  z.got[0] = -0.0;
  EXPECT_FALSE(run(ex, z).passed); // -0 and +0 differ bitwise
}

// --- cann-bench: the operator's own precision_thresholds ------------------------------------------

TEST(CannBench, PerDtypeThresholdsFromProtoReplaceTheTable) {
  // float32, every element 0.2% off: fails the table's T = 2^-13, passes an operator's T = 0.005.
  Case c = uniform(Dtype::F32, 64, 1.0);
  for (auto& v : c.got) v = 1.002;
  EXPECT_FALSE(run(kCann, c).passed);
  ToleranceSpec own = kCann;
  own.thresholds = {{Dtype::F32, 0.005}, {Dtype::F16, 0.01}};
  Comparison r = run(own, c);
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_EQ(r.details["threshold"], 0.005);
  // A threshold for another dtype leaves this one's at the table's value.
  ToleranceSpec other = kCann;
  other.thresholds = {{Dtype::F16, 0.01}};
  EXPECT_FALSE(run(other, c).passed);
  // rtol in temper.yaml still wins.
  own.rtol = 1e-4;
  EXPECT_FALSE(run(own, c).passed);
}

TEST(CannBench, IntegerThresholdIsAnAbsoluteDifference) {
  // compare.py's integer path: |a - g| <= T; int8 with T = 1 forgives rounding off by one.
  Case c = uniform(Dtype::I8, 8, 10);
  c.got[3] = 11;
  c.got[5] = 9;
  EXPECT_FALSE(run(kCann, c).passed); // the table's T for integers is 0: exact
  ToleranceSpec own = kCann;
  own.thresholds = {{Dtype::I8, 1}};
  Comparison r = run(own, c);
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_EQ(r.details["rule"], "integer_abs");
  c.got[6] = 12;
  r = run(own, c);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_TRUE(contains(r.reason, "by more than 1")) << r.reason;
}

} // namespace
} // namespace temper::core::tolerance_test
