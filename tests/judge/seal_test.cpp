// Sealing a reference into a store: the manifest, per-case artifacts, the vault, lookups, and
// the refusals (an existing name, a bad name, a source that does not compile). Builds with the
// real compiler through the test cache, so the second run of the suite is all cache hits.
#include "judge/seal.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <fstream>

namespace seal_test {

using namespace temper;
using namespace temper::judge;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;

SealOptions options(const util::TempDir& dir, const std::string& name, const fs::path& source) {
  SealOptions o;
  o.task_dir = kSource / "tasks/swi_glu";
  o.source = source;
  o.name = name;
  o.store = dir.path() / "store";
  return o;
}

} // namespace

TEST(Seal, BuildsEveryCaseMovesTheSourceAndFindsItByName) {
  util::TempDir dir("temper-seal");
  const fs::path src = dir.path() / "ref.cpp";
  fs::copy_file(kSource / "tasks/swi_glu/reference.cpp", src);
  auto ref = seal(options(dir, "ref-1", src), util::default_process_runner());
  ASSERT_TRUE(ref) << ref.error().message;
  EXPECT_FALSE(fs::exists(src)); // moved into the vault
  EXPECT_TRUE(fs::exists(ref->dir / "vault" / "ref.cpp"));
  EXPECT_EQ(ref->case_artifacts.size(), 20u);
  EXPECT_EQ(ref->task, "SwiGlu");
  EXPECT_FALSE(ref->content_hash.empty());

  auto found = find_sealed(dir.path() / "store", "ref-1");
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->content_hash, ref->content_hash);
  EXPECT_EQ(found->flags, ref->flags);
  auto artifact = sealed_artifact(*found, 7);
  ASSERT_TRUE(artifact) << artifact.error().message;
  EXPECT_TRUE(fs::is_regular_file(*artifact));
  EXPECT_FALSE(sealed_artifact(*found, 999));
  auto exports = sealed_exports(*found);
  ASSERT_TRUE(exports);
  EXPECT_FALSE(exports->count("temper_kernel")); // the entry point is not a helper

  auto all = list_sealed(dir.path() / "store");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(all->front().name, "ref-1");

  // The same name again is refused, and the second source stays where it was.
  const fs::path again = dir.path() / "again.cpp";
  fs::copy_file(kSource / "tasks/swi_glu/reference.cpp", again);
  EXPECT_FALSE(seal(options(dir, "ref-1", again), util::default_process_runner()));
  EXPECT_TRUE(fs::exists(again));

  auto missing = find_sealed(dir.path() / "store", "nope");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("ref-1"), std::string::npos) << missing.error().message;
}

TEST(Seal, RefusesBadNamesAndSourcesThatDoNotCompile) {
  util::TempDir dir("temper-seal");
  const fs::path src = dir.path() / "broken.cpp";
  std::ofstream(src) << "this is not C++\n";
  for (const char* bad : {"", ".hidden", "a/b", "x y"}) {
    EXPECT_FALSE(valid_sealed_name(bad)) << bad;
    EXPECT_FALSE(seal(options(dir, bad, src), util::default_process_runner())) << bad;
  }
  auto r = seal(options(dir, "broken", src), util::default_process_runner());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("does not compile"), std::string::npos) << r.error().message;
  EXPECT_TRUE(fs::exists(src)); // nothing was sealed, nothing moved
  EXPECT_FALSE(fs::exists(dir.path() / "store" / "broken"));
}

} // namespace seal_test
