// The official index rule (compare: false + index_gather) on hand-made rows with ties: any index
// of an equal element passes, an index of another value, out of range or fractional fails.
#include "core/index_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace temper::core::index_check_test {
namespace {

IndexGather gather_rule() { return IndexGather{"x", "dim", "y", "", ""}; }
IndexGather amax_rule() { return IndexGather{"input", "dim", "", "amax", "keepdim"}; }

// x is 2 x 4 with ties: row 0 has 5 at columns 1 and 3, row 1 has -2 at columns 0 and 2.
const std::vector<double> kX = {1, 5, 0, 5, -2, 3, -2, 3};

Comparison topk(const std::vector<double>& idx, const std::vector<double>& y, int64_t dim = 1) {
  IndexGatherView v{{2, 4}, kX.data(), dim, false, {2, 2}, idx.data(), y.data()};
  return check_index_gather(gather_rule(), v);
}

TEST(IndexCheck, TopKIndicesOfTiedValuesPassInEitherOrder) {
  // Top-2 of each row: (5, 5) and (3, 3); the tied indices in both orders.
  EXPECT_TRUE(topk({1, 3, 1, 3}, {5, 5, 3, 3}).passed);
  EXPECT_TRUE(topk({3, 1, 3, 1}, {5, 5, 3, 3}).passed);
  EXPECT_TRUE(topk({3, 1, 3, 1}, {5, 5, 3, 3}, -1).passed) << "a negative dim counts from the end";
}

TEST(IndexCheck, AnIndexOfAnotherValueOrOutOfRangeFails) {
  Comparison c = topk({1, 0, 1, 3}, {5, 5, 3, 3}); // x[0][0] is 1, not 5
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.mismatches, 1);
  ASSERT_EQ(c.first.size(), 1u);
  EXPECT_EQ(c.first[0].index, (std::vector<int64_t>{0, 1}));
  EXPECT_NE(c.reason.find("do not point to the value output 'y'"), std::string::npos) << c.reason;

  Comparison out = topk({1, 4, 1, -1}, {5, 5, 3, 3});
  EXPECT_EQ(out.mismatches, 2);
  EXPECT_EQ(out.details["out_of_range"], 2);
  EXPECT_FALSE(topk({1, 3, 1, 2.5}, {5, 5, 3, 3}).passed) << "a fractional index is not an index";
  EXPECT_FALSE(topk({1, 3, 1, std::numeric_limits<double>::quiet_NaN()}, {5, 5, 3, 3}).passed);
}

TEST(IndexCheck, ValuesThatDisagreeWithTheirIndicesFail) {
  // Indices right for the golden, but the candidate's own values output says otherwise.
  EXPECT_FALSE(topk({1, 3, 1, 3}, {5, 1, 3, 3}).passed);
}

TEST(IndexCheck, ArgmaxAgainstTheInputsMaximumWithAndWithoutKeepdim) {
  const std::vector<double> any_tie = {3, 1};  // row 0's max 5 at 1 or 3; row 1's max 3 at 1 or 3
  IndexGatherView v{{2, 4}, kX.data(), 1, false, {2}, any_tie.data(), nullptr};
  EXPECT_TRUE(check_index_gather(amax_rule(), v).passed);
  const std::vector<double> wrong = {3, 0};
  v.indices = wrong.data();
  Comparison c = check_index_gather(amax_rule(), v);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.reason.find("amax of 'input' along dim 1"), std::string::npos) << c.reason;
  // keepdim: the index output is [2, 1].
  v.keepdim = true;
  v.index_shape = {2, 1};
  v.indices = any_tie.data();
  EXPECT_TRUE(check_index_gather(amax_rule(), v).passed);
  // Along dim 0: column maxima of kX are 1, 5, 0, 5 at rows 0, 0, 0, 0 (and column 3's 5 only at row 0).
  const std::vector<double> down = {0, 0, 0, 0};
  IndexGatherView d{{2, 4}, kX.data(), 0, false, {4}, down.data(), nullptr};
  EXPECT_TRUE(check_index_gather(amax_rule(), d).passed);
}

TEST(IndexCheck, NanIsTheMaximumAsTorchHasIt) {
  const std::vector<double> x = {1, std::numeric_limits<double>::quiet_NaN(), 7};
  const std::vector<double> at_nan = {1}, at_max = {2};
  IndexGatherView v{{3}, x.data(), 0, false, {}, at_nan.data(), nullptr};
  EXPECT_TRUE(check_index_gather(amax_rule(), v).passed);
  v.indices = at_max.data();
  EXPECT_FALSE(check_index_gather(amax_rule(), v).passed);
}

TEST(IndexCheck, ShapesThatDoNotFitTheRuleAreSaid) {
  const std::vector<double> idx = {0, 0, 0};
  IndexGatherView v{{2, 4}, kX.data(), 1, false, {3}, idx.data(), nullptr};
  Comparison c = check_index_gather(amax_rule(), v);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.reason.find("does not index input"), std::string::npos) << c.reason;
  v.index_shape = {2};
  v.dim = 2;
  EXPECT_NE(check_index_gather(amax_rule(), v).reason.find("dim 2 is out of range"), std::string::npos);
}

} // namespace
} // namespace temper::core::index_check_test
