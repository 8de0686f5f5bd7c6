// Input generation: deterministic, independent of thread count, special ranges, values in range.
#include "core/inputs.h"

#include <gtest/gtest.h>

#include <temper/half.h>

#include <cmath>
#include <cstring>
#include <set>

namespace temper::core::inputs_test {
namespace {

TensorDecl f16_decl(const std::string& name) {
  TensorDecl t;
  t.name = name;
  t.dtypes = {Dtype::F16};
  return t;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = HUGE_VAL;

HostTensor make(Dtype d, Shape shape, ValueRange r, uint64_t seed) {
  HostTensor t(TensorSpec{"x", d, std::move(shape)});
  fill_input(t, r, seed);
  return t;
}

bool same_bytes(const HostTensor& a, const HostTensor& b, size_t bytes) {
  return std::memcmp(a.buffer.data(), b.buffer.data(), bytes) == 0;
}

TEST(DeriveSeed, DeterministicAndSensitiveToEveryField) {
  const uint64_t s = derive_seed(42, 7, 1, 0);
  EXPECT_EQ(s, derive_seed(42, 7, 1, 0));
  std::set<uint64_t> seen{s, derive_seed(43, 7, 1, 0), derive_seed(42, 8, 1, 0), derive_seed(42, 7, 2, 0),
                          derive_seed(42, 7, 1, 1), derive_seed(42, 1, 7, 0), derive_seed(42, 7, 0, 1),
                          derive_seed(0, 0, 0, 0)};
  EXPECT_EQ(seen.size(), 8u);
}

TEST(SeedId, ShortStableHexThatHidesTheSeed) {
  std::string id = seed_id(0x1234abcd5678ef90ULL);
  EXPECT_EQ(id.size(), 12u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(id, seed_id(0x1234abcd5678ef90ULL));
  EXPECT_NE(id, seed_id(0x1234abcd5678ef91ULL));
  EXPECT_EQ(std::string("1234abcd5678ef90").find(id.substr(0, 6)), std::string::npos);
}

TEST(FillInput, SameSeedSameValuesOtherSeedOtherValues) {
  for (Dtype d : {Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::I32}) {
    HostTensor a = make(d, {33, 17}, {-2, 3}, 99);
    HostTensor b = make(d, {33, 17}, {-2, 3}, 99);
    HostTensor c = make(d, {33, 17}, {-2, 3}, 100);
    EXPECT_TRUE(same_bytes(a, b, a.spec.bytes())) << dtype_name(d);
    EXPECT_FALSE(same_bytes(a, c, a.spec.bytes())) << dtype_name(d);
  }
}

// Element i depends only on (seed, i): a large tensor filled by several threads, a medium one split
// differently, and a small one filled serially agree on every common element.
TEST(FillInput, IndependentOfThreadCountAndTensorSize) {
  const ValueRange r{-1, 1};
  HostTensor big = make(Dtype::F16, {3 * 1000 * 1000 + 7}, r, 5);
  HostTensor mid = make(Dtype::F16, {1500 * 1000 + 3}, r, 5);
  HostTensor small = make(Dtype::F16, {1000}, r, 5);
  EXPECT_TRUE(same_bytes(big, mid, mid.spec.bytes()));
  EXPECT_TRUE(same_bytes(big, small, small.spec.bytes()));
  HostTensor big_inf = make(Dtype::F32, {2 * 1000 * 1000 + 1}, {-kInf, kInf}, 6);
  HostTensor small_inf = make(Dtype::F32, {4096}, {-kInf, kInf}, 6);
  EXPECT_TRUE(same_bytes(big_inf, small_inf, small_inf.spec.bytes()));
}

TEST(FillInput, AllNanAndZeroRanges) {
  for (Dtype d : {Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::F64}) {
    HostTensor n = make(d, {100}, {kNaN, kNaN}, 1);
    HostTensor z = make(d, {100}, {0, 0}, 1);
    for (size_t i = 0; i < 100; ++i) {
      ASSERT_TRUE(std::isnan(n.at(i))) << dtype_name(d);
      ASSERT_EQ(z.at(i), 0.0) << dtype_name(d);
      ASSERT_FALSE(std::signbit(z.at(i)));
    }
  }
  HostTensor ni = make(Dtype::I32, {10}, {kNaN, kNaN}, 1); // integers have no NaN: zeros
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(ni.at(i), 0.0);
}

struct InfStats {
  int64_t pos_inf = 0, neg_inf = 0, finite = 0, nan = 0;
  double min = HUGE_VAL, max = -HUGE_VAL;
  int64_t small = 0; // |v| < 1
};

InfStats inf_stats(const HostTensor& t) {
  InfStats s;
  for (int64_t i = 0; i < t.spec.numel(); ++i) {
    double v = t.at(static_cast<size_t>(i));
    if (std::isnan(v)) ++s.nan;
    else if (v == HUGE_VAL) ++s.pos_inf;
    else if (v == -HUGE_VAL) ++s.neg_inf;
    else {
      ++s.finite;
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      s.small += std::fabs(v) < 1;
    }
  }
  return s;
}

TEST(FillInput, InfiniteRangesMixInfinitiesWithFiniteValues) {
  const int64_t n = 80000; // 1/8 inf: 10000 expected, sd ~94
  for (Dtype d : {Dtype::F16, Dtype::BF16, Dtype::F32}) {
    InfStats s = inf_stats(make(d, {n}, {-kInf, kInf}, 11));
    EXPECT_EQ(s.nan, 0);
    EXPECT_NEAR(static_cast<double>(s.pos_inf + s.neg_inf), n / 8.0, 600) << dtype_name(d);
    EXPECT_NEAR(static_cast<double>(s.pos_inf), n / 16.0, 450) << dtype_name(d);
    EXPECT_GE(s.min, -1e4 * (1 + 0x1p-8));
    EXPECT_LE(s.max, 1e4 * (1 + 0x1p-8));
    EXPECT_LT(s.min, -1000);
    EXPECT_GT(s.max, 1000);
    EXPECT_GT(s.small, n / 8) << "magnitudes should span small values too";

    InfStats pos = inf_stats(make(d, {n}, {0, kInf}, 12));
    EXPECT_EQ(pos.neg_inf, 0);
    EXPECT_NEAR(static_cast<double>(pos.pos_inf), n / 8.0, 600);
    EXPECT_GE(pos.min, 0.0);

    InfStats neg = inf_stats(make(d, {n}, {-kInf, -5}, 13));
    EXPECT_EQ(neg.pos_inf, 0);
    EXPECT_GT(neg.neg_inf, 0);
    EXPECT_LE(neg.max, -5 * (1 - 0x1p-8));
  }
  // A finite bound beyond the usual cap still yields values on the right side of it.
  InfStats far = inf_stats(make(Dtype::F32, {1000}, {1e5, kInf}, 14));
  EXPECT_GE(far.min, 1e5);
  EXPECT_EQ(far.neg_inf, 0);
  InfStats all = inf_stats(make(Dtype::F16, {50}, {-kInf, -kInf}, 15));
  EXPECT_EQ(all.neg_inf, 50);
}

TEST(FillInput, UniformValuesStayInRangeAndAreRoundedToTheDtype) {
  const int64_t n = 200000;
  struct R {
    Dtype d;
    double lo, hi, slack; // slack: half an ulp relative to the bound
  };
  for (R r : {R{Dtype::F32, -3, 6, 0x1p-24}, R{Dtype::F16, -0.1, 0.1, 0x1p-11}, R{Dtype::BF16, -50, 100, 0x1p-8},
              R{Dtype::F64, 1e-3, 2e-3, 0}, R{Dtype::F16, -65504, 65504, 0}}) {
    HostTensor t = make(r.d, {n}, {r.lo, r.hi}, 21);
    double sum = 0, mn = HUGE_VAL, mx = -HUGE_VAL;
    for (int64_t i = 0; i < n; ++i) {
      double v = t.at(static_cast<size_t>(i));
      ASSERT_TRUE(std::isfinite(v));
      ASSERT_GE(v, r.lo - std::fabs(r.lo) * r.slack) << dtype_name(r.d);
      ASSERT_LE(v, r.hi + std::fabs(r.hi) * r.slack) << dtype_name(r.d);
      sum += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    double width = r.hi - r.lo;
    EXPECT_NEAR(sum / n, (r.lo + r.hi) / 2, width * 0.01) << dtype_name(r.d);
    EXPECT_LT(mn, r.lo + width * 0.001);
    EXPECT_GT(mx, r.hi - width * 0.001);
  }
  // fp16 storage holds exactly what store_double produced: the value of a valid fp16 pattern.
  HostTensor h = make(Dtype::F16, {1000}, {-1, 1}, 22);
  const auto* bits = reinterpret_cast<const uint16_t*>(h.buffer.data());
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<double>(temper_f16_to_f32(bits[i])), h.at(i));
  // A range wider than fp16 is clipped to its finite values rather than producing inf.
  InfStats wide = inf_stats(make(Dtype::F16, {10000}, {-1e6, 1e6}, 23));
  EXPECT_EQ(wide.finite, 10000);
}

// The AVX-512 path draws the scalar path's values bit for bit: every dtype it takes, ranges from
// tiny to each dtype's largest, sizes with tails and with a block per thread.
TEST(FillInput, TheVectorPathGivesTheScalarPathsBytes) {
  if (!vector_fill_available()) GTEST_SKIP() << "this CPU has no AVX-512 F/DQ/BW/VL with F16C: only the scalar path runs";
  const ValueRange ranges[] = {{-1, 1}, {-10, 10}, {-3, 6}, {-0.1, 0.1}, {0, 1e-6}, {-65504, 65504}, {-3.4e38, 3.4e38}, {5, 7}};
  for (Dtype d : {Dtype::F64, Dtype::F32, Dtype::F16, Dtype::BF16}) {
    for (const ValueRange& r : ranges) {
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{13}, int64_t{4099}, int64_t{(1 << 20) + 333}}) {
        allow_vector_fill(true);
        HostTensor vec = make(d, {n}, r, 0x5eed + static_cast<uint64_t>(n));
        allow_vector_fill(false);
        HostTensor scalar = make(d, {n}, r, 0x5eed + static_cast<uint64_t>(n));
        allow_vector_fill(true);
        ASSERT_TRUE(same_bytes(vec, scalar, vec.spec.bytes()))
            << dtype_name(d) << " [" << r.lo << ", " << r.hi << "], " << n << " elements";
      }
    }
  }
}

TEST(FillInput, IntegersAreUniformOverTheClippedRange) {
  HostTensor a = make(Dtype::I32, {20000}, {-5, 5}, 31);
  std::set<double> seen;
  for (size_t i = 0; i < 20000; ++i) seen.insert(a.at(i));
  EXPECT_EQ(seen.size(), 11u);
  EXPECT_EQ(*seen.begin(), -5.0);
  EXPECT_EQ(*seen.rbegin(), 5.0);

  HostTensor b = make(Dtype::I8, {100000}, {-1000, 1000}, 32);
  std::set<double> b_seen;
  for (size_t i = 0; i < 100000; ++i) b_seen.insert(b.at(i));
  EXPECT_EQ(b_seen.size(), 256u);

  HostTensor u = make(Dtype::U8, {1000}, {-10, 10.5}, 33);
  HostTensor flag = make(Dtype::Bool, {1000}, {-1, 1}, 34);
  int ones = 0;
  for (size_t i = 0; i < 1000; ++i) {
    ASSERT_GE(u.at(i), 0.0);
    ASSERT_LE(u.at(i), 10.0);
    ASSERT_TRUE(flag.at(i) == 0.0 || flag.at(i) == 1.0);
    ones += flag.at(i) == 1.0;
  }
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);

  HostTensor big = make(Dtype::I64, {1000}, {-kInf, kInf}, 35); // capped so fp64 golden stays exact
  for (size_t i = 0; i < 1000; ++i) ASSERT_LE(std::fabs(big.at(i)), 0x1p53);

  HostTensor none = make(Dtype::I32, {10}, {2.2, 2.7}, 36); // no integer inside: the nearest
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(none.at(i), 2.0);
}

TEST(GenerateInputs, OneTensorPerInputWithDerivedSeeds) {
  Operator op;
  op.name = "Add";
  op.inputs = {f16_decl("x"), f16_decl("y")};
  op.outputs = {f16_decl("z")};
  Case c;
  c.id = 3;
  c.input_shapes = {{4, 5}, {4, 5}};
  c.dtypes = {Dtype::F16, Dtype::F16};
  c.ranges = {{-2, 2}, {-2, 2}};

  auto t0 = generate_inputs(op, c, 77, 0);
  ASSERT_EQ(t0.size(), 2u);
  EXPECT_EQ(t0[0].spec.name, "x");
  EXPECT_EQ(t0[1].spec.name, "y");
  EXPECT_EQ(t0[1].spec.shape, (Shape{4, 5}));
  EXPECT_EQ(t0[0].spec.dtype, Dtype::F16);
  const size_t bytes = t0[0].spec.bytes();

  HostTensor expect = make(Dtype::F16, {4, 5}, c.ranges[1], derive_seed(77, 3, 0, 1));
  EXPECT_TRUE(same_bytes(t0[1], expect, bytes));
  EXPECT_FALSE(same_bytes(t0[0], t0[1], bytes)); // inputs differ from each other

  auto again = generate_inputs(op, c, 77, 0);
  EXPECT_TRUE(same_bytes(t0[0], again[0], bytes));
  auto trial1 = generate_inputs(op, c, 77, 1);
  EXPECT_FALSE(same_bytes(t0[0], trial1[0], bytes));
  auto job2 = generate_inputs(op, c, 78, 0);
  EXPECT_FALSE(same_bytes(t0[0], job2[0], bytes));
  c.id = 4;
  auto case4 = generate_inputs(op, c, 77, 0);
  EXPECT_FALSE(same_bytes(t0[0], case4[0], bytes));
}

} // namespace
} // namespace temper::core::inputs_test
