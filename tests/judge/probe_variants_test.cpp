// Explicit probe variants (judge::check_variants): checked against the knobs the candidate
// declares and its constraints on the case, completed with defaults, in the order given.
#include "judge/probe.h"

#include <gtest/gtest.h>

namespace temper::judge::probe_variants_test {
namespace {

constexpr const char* kSource =
    "// temper: knob TILE = 64 in {32, 64, 128}\n"
    "// temper: knob UNROLL = 2 in {1, 2, 4}\n"
    "// temper: knob-constraint TILE * UNROLL <= 256\n"
    "// temper: knob-constraint TILE <= in0.shape[-1]\n";

core::ExprScope scope(double last_dim) {
  core::ExprScope s;
  s.lists["in0.shape"] = {8, last_dim};
  return s;
}

TEST(ProbeVariants, CompletesWithDefaultsAndKeepsTheOrder) {
  auto v = check_variants({{{"UNROLL", "4"}}, {{"TILE", "128"}, {"UNROLL", "1"}}}, kSource, scope(1024));
  ASSERT_TRUE(v.has_value()) << v.error().message;
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0], (std::vector<build::Define>{{"TILE", "64"}, {"UNROLL", "4"}}));
  EXPECT_EQ((*v)[1], (std::vector<build::Define>{{"TILE", "128"}, {"UNROLL", "1"}}));
}

TEST(ProbeVariants, RejectsWhatTheKernelDoesNotAllow) {
  auto error_of = [](std::vector<build::KnobValues> vs, const char* source, double last) {
    auto r = check_variants(vs, source, scope(last));
    return r ? std::string() : r.error().message;
  };
  EXPECT_NE(error_of({{{"TILE", "48"}}}, kSource, 1024).find("not one of its values"), std::string::npos);
  EXPECT_NE(error_of({{{"BLOCK", "1"}}}, kSource, 1024).find("not a knob"), std::string::npos);
  EXPECT_NE(error_of({{{"TILE", "128"}, {"UNROLL", "4"}}}, kSource, 1024).find("knob-constraint"), std::string::npos);
  EXPECT_NE(error_of({{{"TILE", "128"}}}, kSource, 100).find("knob-constraint"), std::string::npos); // the case's shape
  EXPECT_NE(error_of({{{"UNROLL", "2"}}, {{"TILE", "64"}}}, kSource, 1024).find("twice"), std::string::npos);
  EXPECT_NE(error_of({}, kSource, 1024).find("no variant"), std::string::npos);
  EXPECT_NE(error_of({{{"A", "1"}}}, "int x;\n", 1024).find("declares no knobs"), std::string::npos);
  std::vector<build::KnobValues> many(kMaxProbeVariants + 1, build::KnobValues{{"UNROLL", "1"}});
  EXPECT_NE(error_of(many, kSource, 1024).find("at most"), std::string::npos);
}

} // namespace
} // namespace temper::judge::probe_variants_test
