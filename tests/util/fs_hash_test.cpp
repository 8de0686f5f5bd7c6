#include "util/fs.h"
#include "util/hash.h"
#include "util/mapped_file.h"

#include <gtest/gtest.h>

namespace fs_hash_test {

using namespace temper::util;

TEST(Fs, AtomicWriteThenRead) {
  TempDir dir;
  auto p = dir.path() / "a" / "b.txt";
  ASSERT_TRUE(write_file_atomic(p, "content"));
  auto got = read_file(p);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "content");
  ASSERT_TRUE(write_file_atomic(p, "new"));
  EXPECT_EQ(*read_file(p), "new");
  // No temporary file is left beside it.
  int n = 0;
  for (auto& e : fs::directory_iterator(p.parent_path())) n += e.is_regular_file();
  EXPECT_EQ(n, 1);
}

TEST(MappedFile, MapsTheBytesAndOutlivesTheFileAndItsReplacement) {
  TempDir dir;
  auto p = dir.path() / "values.bin";
  ASSERT_TRUE(write_file_atomic(p, "golden bytes"));
  auto m = MappedFile::open(p);
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ((*m)->size(), 12u);
  // Replaced by a rename (how temper publishes) and then removed: the mapping keeps its bytes.
  ASSERT_TRUE(write_file_atomic(p, "other bytes!"));
  fs::remove(p);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*m)->data()), (*m)->size()), "golden bytes");

  ASSERT_TRUE(write_file_atomic(p, ""));
  auto empty = MappedFile::open(p);
  ASSERT_TRUE(empty);
  EXPECT_EQ((*empty)->size(), 0u);
  auto missing = MappedFile::open(dir.path() / "missing.bin");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("missing.bin"), std::string::npos);
}

TEST(Fs, ReadMissingFileSaysWhich) {
  auto got = read_file("/nonexistent/x.yaml");
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("/nonexistent/x.yaml"), std::string::npos);
}

TEST(Fs, TempDirIsRemoved) {
  fs::path p;
  {
    TempDir d;
    p = d.path();
    EXPECT_TRUE(fs::is_directory(p));
  }
  EXPECT_FALSE(fs::exists(p));
}

TEST(Hash, FieldsAreLengthPrefixed) {
  Hasher a, b;
  a.add("ab").add("c");
  b.add("a").add("bc");
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_EQ(hash_hex("x"), hash_hex("x"));
  EXPECT_EQ(hash_hex("x").size(), 32u);
}

} // namespace fs_hash_test
