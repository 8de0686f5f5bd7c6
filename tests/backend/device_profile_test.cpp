// The judge's side of a device-timed call (backend/device_profile): the runner's private export
// directory, reading one call's export and deleting it, and refusing paths outside that
// directory (never read, never deleted).
#include "backend/device_profile.h"

#include "util/fs.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>

namespace device_profile_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const std::string kHeader = "Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num\n";

// A call's export the way torch_npu's trace handler lays it out.
fs::path write_export(const fs::path& call_dir, const std::string& rows) {
  fs::path out = call_dir / "host_123_1700000000000_ascend_pt" / "ASCEND_PROFILER_OUTPUT";
  fs::create_directories(out);
  std::ofstream(out / "kernel_details.csv") << kHeader << rows;
  return out;
}

} // namespace

TEST(DeviceProfile, RootIsAPrivateDirectoryRemovedWithItsOwner) {
  fs::path path;
  {
    auto root = backend::ProfileRoot::create();
    ASSERT_TRUE(root) << root.error().message;
    path = root->path();
    EXPECT_TRUE(fs::is_directory(path));
    // torch_npu's trace handler takes letters, digits and underscores in a path.
    for (char ch : path.filename().string()) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') << path;
    write_export(path / "call_000001", "0,k,PyPTO,AI_CORE,1,1,0,1\n");
    backend::ProfileRoot moved = std::move(*root);
    EXPECT_TRUE(root->path().empty());
    EXPECT_EQ(moved.path(), path);
    EXPECT_TRUE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(DeviceProfile, ReadsOneCallsExportAndDeletesIt) {
  auto root = backend::ProfileRoot::create();
  ASSERT_TRUE(root) << root.error().message;
  fs::path call = root->path() / "call_000001";
  write_export(call, "0,kernel_a,PyPTO,AI_VECTOR_CORE,1.0,7.12,0,48\n0,PyPTO_scheduler,AICPU,AI_CPU,1.0,30.0,0,1\n");
  auto t = backend::take_call_profile(root->path(), call.string());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_DOUBLE_EQ(t->elapsed_us, 7.12);
  EXPECT_FALSE(fs::exists(call));
  EXPECT_TRUE(fs::exists(root->path()));

  // Malformed: the parser's message, and the export is gone all the same.
  fs::path bad = root->path() / "call_000002";
  write_export(bad, "0,kernel_a,PyPTO,AI_VECTOR_CORE,1.0,n/a,0,48\n");
  auto b = backend::take_call_profile(root->path(), bad.string());
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("'Duration(us)' is 'n/a', not a duration"), std::string::npos) << b.error().message;
  EXPECT_FALSE(fs::exists(bad));

  // A directory with no export in it, and none at all.
  fs::path empty = root->path() / "call_000003";
  fs::create_directories(empty);
  auto e = backend::take_call_profile(root->path(), empty.string());
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("no profiler export under"), std::string::npos) << e.error().message;
  EXPECT_FALSE(fs::exists(empty));
  auto gone = backend::take_call_profile(root->path(), (root->path() / "call_000004").string());
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("the profiler wrote nothing"), std::string::npos) << gone.error().message;
  auto unnamed = backend::take_call_profile(root->path(), "");
  ASSERT_FALSE(unnamed);
  EXPECT_NE(unnamed.error().message.find("named no profiler output"), std::string::npos);
}

TEST(DeviceProfile, PathsOutsideTheRootAreRefusedAndLeftAlone) {
  util::TempDir outside("temper-device-profile-outside");
  write_export(outside.path() / "victim", "0,k,PyPTO,AI_CORE,1,1,0,1\n");
  auto root = backend::ProfileRoot::create();
  ASSERT_TRUE(root) << root.error().message;
  fs::create_directory_symlink(outside.path() / "victim", root->path() / "link");
  for (const std::string& reported :
       {(outside.path() / "victim").string(), root->path().string(), root->path().string() + "/", (root->path() / "..").string(),
        (root->path() / "../" / root->path().filename()).string(), (root->path() / "link").string(), std::string("call_000001"),
        std::string("/")}) {
    auto t = backend::take_call_profile(root->path(), reported);
    ASSERT_FALSE(t) << reported;
    EXPECT_NE(t.error().message.find("not inside its profile directory"), std::string::npos) << reported << ": " << t.error().message;
  }
  EXPECT_TRUE(fs::exists(outside.path() / "victim"));
  EXPECT_TRUE(fs::exists(root->path()));
}

} // namespace device_profile_test
