#include "build/knobs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace knobs_test {

using namespace temper;
using namespace temper::build;

TEST(Knobs, ParsesDeclarationsAndConstraints) {
  const std::string src = R"(// A kernel.
// temper: knob TILE = 64 in {32, 64, 128}
//   temper:   knob UNROLL=2 in {1,2,4}
// temper: knob-constraint TILE * UNROLL <= 256
#ifndef TILE
#define TILE 64
#endif
)";
  auto space = parse_knobs(src);
  ASSERT_TRUE(space) << space.error().message;
  ASSERT_EQ(space->knobs.size(), 2u);
  EXPECT_EQ(space->knobs[0].name, "TILE");
  EXPECT_EQ(space->knobs[0].default_value, "64");
  EXPECT_EQ(space->knobs[0].line, 2);
  EXPECT_EQ(space->knobs[1].values, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(space->size(), 9u);
  EXPECT_EQ(knob_label(space->defaults()), "TILE=64,UNROLL=2");

  auto all = space->enumerate();
  ASSERT_EQ(all.size(), 9u);
  EXPECT_EQ(knob_label(all.front()), "TILE=32,UNROLL=1");
  EXPECT_EQ(knob_label(all[1]), "TILE=32,UNROLL=2"); // the last knob varies fastest
  int valid = 0;
  for (const auto& v : all) {
    auto ok = satisfies(*space, v, nullptr);
    ASSERT_TRUE(ok) << ok.error().message;
    valid += *ok ? 1 : 0;
  }
  EXPECT_EQ(valid, 8); // 128 * 4 > 256
  EXPECT_EQ(knob_defines({{"TILE", "32"}}), (std::vector<Define>{{"TILE", "32"}}));
}

TEST(Knobs, NoDeclarationsIsAnEmptySpaceWithOneVariant) {
  auto space = parse_knobs("int main() { return 0; }\n// temper: specialize\n");
  ASSERT_TRUE(space);
  EXPECT_TRUE(space->empty());
  EXPECT_EQ(space->enumerate().size(), 1u);
}

TEST(Knobs, ErrorsNameTheLineAndTheProblem) {
  auto expect_error = [](const std::string& src, const std::string& part) {
    auto space = parse_knobs(src);
    ASSERT_FALSE(space) << "accepted: " << src;
    EXPECT_NE(space.error().message.find(part), std::string::npos) << space.error().message;
  };
  expect_error("// temper: knob TILE = 48 in {32, 64}", "line 1: knob TILE: default 48 is not one of its values {32, 64}");
  expect_error("\n// temper: knob TILE 64 in {32, 64}", "line 2: no '='");
  expect_error("// temper: knob TILE = 64 in 32, 64", "values must be in braces");
  expect_error("// temper: knob TILE = 64 in {32, 64, 32}", "listed twice");
  expect_error("// temper: knob TILE = 64 in {64 -DEVIL}", "is not a number or a name");
  expect_error("// temper: knob 9X = 1 in {1}", "not a macro name");
  expect_error("// temper: knob A = 1 in {1}\n// temper: knob A = 1 in {1}", "line 2: knob A is already declared on line 1");
  expect_error("// temper: knob A = 1 in {1}\n// temper: knob-constraint A * B < 3", "names B, which is not a declared knob");
  expect_error("// temper: knob A = 1 in {1}\n// temper: knob-constraint A * < 3", "line 2: knob-constraint:");
}

TEST(Knobs, ConstraintsMayReadTheCase) {
  auto space = parse_knobs("// temper: knob TILE = 64 in {64, 4096}\n// temper: knob-constraint TILE <= in0.shape[-1]\n");
  ASSERT_TRUE(space) << space.error().message;
  core::ExprScope scope;
  scope.lists["in0.shape"] = {8, 1024};
  EXPECT_TRUE(*satisfies(*space, {{"TILE", "64"}}, &scope));
  EXPECT_FALSE(*satisfies(*space, {{"TILE", "4096"}}, &scope));
  auto no_case = satisfies(*space, {{"TILE", "64"}}, nullptr);
  EXPECT_FALSE(no_case); // the constraint needs the case
}

TEST(Knobs, ValidateValues) {
  auto space = parse_knobs("// temper: knob TILE = 64 in {32, 64}\n");
  ASSERT_TRUE(space);
  EXPECT_TRUE(validate_values(*space, {{"TILE", "32"}}));
  EXPECT_FALSE(validate_values(*space, {{"TILE", "16"}}));
  EXPECT_FALSE(validate_values(*space, {{"UNROLL", "2"}}));
}

TEST(Knobs, BundledGqaKernelsDeclareTheirKnobs) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"blocked.cpp", {"BLOCK_M", "BLOCK_KV", "DECODE_MAX_S", "QK_KEYS", "PV_ROWS", "PAR_MIN_MFLOP"}},
      {"rowwise.cpp", {"KEY_UNROLL", "PV_VECS"}},
  };
  for (const auto& [file, names] : expected) {
    std::ifstream in(std::string(TEMPER_SOURCE_DIR) + "/tasks/gqa/kernels/" + file);
    ASSERT_TRUE(in) << file;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto space = parse_knobs(text);
    ASSERT_TRUE(space) << file << ": " << space.error().message;
    ASSERT_EQ(space->knobs.size(), names.size()) << file;
    for (const auto& n : names) EXPECT_NE(space->find(n), nullptr) << file << ": " << n;
    auto ok = satisfies(*space, space->defaults(), nullptr);
    ASSERT_TRUE(ok) << file << ": " << ok.error().message;
    EXPECT_TRUE(*ok) << file;
  }
}

TEST(Knobs, BundledSwiGluKernelDeclaresItsKnobs) {
  std::ifstream in(std::string(TEMPER_SOURCE_DIR) + "/tasks/swi_glu/kernels/rows.cpp");
  ASSERT_TRUE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto space = parse_knobs(text);
  ASSERT_TRUE(space) << space.error().message;
  EXPECT_NE(space->find("UNROLL"), nullptr);
  EXPECT_NE(space->find("NT_STORES"), nullptr);
}

} // namespace knobs_test
