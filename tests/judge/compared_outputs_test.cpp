// ComparedOutputs: a comparison is reused only for the same case, inputs and output bytes.
#include "judge/output_check.h"

#include "core/inputs.h"
#include "core/task_loader.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace temper::judge::compared_outputs_test {
namespace {

const std::filesystem::path kSource = TEMPER_SOURCE_DIR;

TEST(ComparedOutputs, AKeyIsTheCaseTheInputsAndEveryOutputByte) {
  auto task = core::load_task(kSource / "tasks/swi_glu");
  ASSERT_TRUE(task) << task.error().message;
  const core::Case& c1 = task->cases.at(0);
  const core::Case& c2 = task->cases.at(1);
  const auto inputs = core::generate_inputs(task->op, c1, 7, 0);
  const auto other_inputs = core::generate_inputs(task->op, c1, 7, 1);
  std::vector<unsigned char> out(4096, 0x11);
  const std::string key = ComparedOutputs::key(task->op, c1, inputs, out);
  EXPECT_EQ(key, ComparedOutputs::key(task->op, c1, inputs, out));
  EXPECT_NE(key, ComparedOutputs::key(task->op, c1, other_inputs, out));
  EXPECT_NE(key, ComparedOutputs::key(task->op, c2, inputs, out));
  auto last_byte = out;
  last_byte.back() ^= 1;
  EXPECT_NE(key, ComparedOutputs::key(task->op, c1, inputs, last_byte));
  auto longer = out;
  longer.push_back(0x11);
  EXPECT_NE(key, ComparedOutputs::key(task->op, c1, inputs, longer));

  ComparedOutputs memo;
  EXPECT_FALSE(memo.find(key));
  OutputCheck check;
  check.name = "output";
  check.cmp.passed = false;
  check.cmp.mismatches = 3;
  check.cmp.reason = "3 of 1024 elements differ";
  memo.insert(key, {check});
  auto found = memo.find(key);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found->front().name, "output");
  EXPECT_FALSE(found->front().cmp.passed);
  EXPECT_EQ(found->front().cmp.mismatches, 3);
  EXPECT_EQ(found->front().cmp.reason, "3 of 1024 elements differ");
  EXPECT_FALSE(memo.find(ComparedOutputs::key(task->op, c1, inputs, last_byte)));
  EXPECT_EQ(memo.hits(), 1);
}

} // namespace
} // namespace temper::judge::compared_outputs_test
