// The bundle file (include/temper/bundle.h): version 1 for plain tensors, version 2 with tensor
// lists and absent optional inputs, as goldens (C++ and Python) read and write it.
#include "util/fs.h"

#include <temper/bundle.h>
#include <temper/golden.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

namespace golden_bundle_test {

namespace {

temper_bundle::Tensor tensor(const std::string& name, std::vector<int64_t> shape, unsigned char fill) {
  temper_bundle::Tensor t;
  t.name = name;
  t.dtype = "uint8";
  t.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.bytes.assign(static_cast<size_t>(n), fill);
  return t;
}

std::string header_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.substr(0, text.find("end\n") + 4);
}

TEST(Bundle, PlainTensorsStayVersionOne) {
  temper::util::TempDir dir;
  std::string path = (dir.path() / "b").string();
  temper_bundle::Bundle b;
  b.tensors = {tensor("x", {2, 3}, 7), tensor("w", {3}, 9)};
  ASSERT_EQ(temper_bundle::write_bundle(path, b), "");
  EXPECT_EQ(header_of(path), "TEMPER-BUNDLE 1\ntensor x uint8 2 2 3 0 6\ntensor w uint8 1 3 64 3\nend\n");
  temper_bundle::Bundle back;
  ASSERT_EQ(temper_bundle::read_bundle(path, back), "");
  EXPECT_TRUE(back.groups.empty());
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[1].bytes, std::vector<unsigned char>(3, 9));
}

TEST(Bundle, ListsAndAbsentInputsTravelAsVersionTwoGroups) {
  temper::util::TempDir dir;
  std::string path = (dir.path() / "b").string();
  temper_bundle::Bundle b;
  b.tensors = {tensor("x[0]", {2}, 1), tensor("x[1]", {4}, 2), tensor("s", {1}, 3)};
  b.groups = {{"x", "list", 0, 2}, {"s", "tensor", 2, 1}, {"bias", "absent", 3, 0}, {"none", "list", 3, 0}};
  ASSERT_EQ(temper_bundle::write_bundle(path, b), "");
  EXPECT_EQ(header_of(path), "TEMPER-BUNDLE 2\nlist x 2\ntensor x[0] uint8 1 2 0 2\ntensor x[1] uint8 1 4 64 4\n"
                             "tensor s uint8 1 1 128 1\nabsent bias\nlist none 0\nend\n");
  temper_bundle::Bundle back;
  ASSERT_EQ(temper_bundle::read_bundle(path, back), "");
  ASSERT_EQ(back.groups.size(), 4u);
  EXPECT_EQ(back.groups[0].kind, "list");
  EXPECT_EQ(back.groups[0].count, 2u);
  EXPECT_EQ(back.groups[1].name, "s");
  EXPECT_EQ(back.groups[1].first, 2u);
  EXPECT_EQ(back.groups[2].kind, "absent");
  EXPECT_EQ(back.groups[3].count, 0u);
  ASSERT_EQ(back.tensors.size(), 3u);
  EXPECT_EQ(back.tensors[1].bytes, std::vector<unsigned char>(4, 2));

  // A golden sees the same grouping.
  temper_golden::Context ctx;
  ctx.groups = back.groups;
  for (const auto& t : back.tensors) ctx.inputs.push_back(temper_golden::Array{t.name, t.dtype, t.shape, {}});
  EXPECT_TRUE(ctx.has_input("x"));
  EXPECT_FALSE(ctx.has_input("bias"));
  ASSERT_EQ(ctx.input_list("x").size(), 2u);
  EXPECT_EQ(ctx.input_list("x")[1]->name, "x[1]");
  EXPECT_EQ(ctx.input_list("s").size(), 1u);
  EXPECT_TRUE(ctx.input_list("bias").empty());
}

// In place (a golden server's output over its last one): the file ends where the new bundle ends,
// and reads back as the new bundle, whether it grew or shrank; a file not there yet is made.
TEST(Bundle, WrittenInPlaceOverALargerOrSmallerOneReadsBackAsWritten) {
  temper::util::TempDir dir;
  std::string path = (dir.path() / "b").string();
  temper_bundle::Bundle large, small;
  large.tensors = {tensor("x", {1000}, 5)};
  small.tensors = {tensor("y", {3}, 6)};
  ASSERT_EQ(temper_bundle::write_bundle(path, large, true), "");
  const auto large_size = std::filesystem::file_size(path);
  for (const auto* b : {&small, &large, &small}) {
    ASSERT_EQ(temper_bundle::write_bundle(path, *b, true), "");
    temper_bundle::Bundle back;
    ASSERT_EQ(temper_bundle::read_bundle(path, back), "");
    ASSERT_EQ(back.tensors.size(), 1u);
    EXPECT_EQ(back.tensors[0].name, b->tensors[0].name);
    EXPECT_EQ(back.tensors[0].bytes, b->tensors[0].bytes);
  }
  EXPECT_LT(std::filesystem::file_size(path), large_size);
  ASSERT_EQ(temper_bundle::write_bundle(path, large), "");
  EXPECT_EQ(std::filesystem::file_size(path), large_size);
}

TEST(Bundle, MalformedGroupsAreRefused) {
  temper::util::TempDir dir;
  std::string path = (dir.path() / "b").string();
  temper_bundle::Bundle b;
  b.tensors = {tensor("x[0]", {2}, 1)};
  b.groups = {{"x", "list", 0, 2}};
  EXPECT_NE(temper_bundle::write_bundle(path, b), "");
  std::ofstream(path, std::ios::binary) << "TEMPER-BUNDLE 2\nlist x 2\ntensor x[0] uint8 1 2 0 2\nend\n";
  temper_bundle::Bundle back;
  EXPECT_NE(temper_bundle::read_bundle(path, back).find("fewer element lines"), std::string::npos);
  std::ofstream(path, std::ios::binary) << "TEMPER-BUNDLE 1\nabsent x\nend\n";
  EXPECT_NE(temper_bundle::read_bundle(path, back).find("unexpected header line"), std::string::npos);
}

} // namespace

} // namespace golden_bundle_test
