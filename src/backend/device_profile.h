// Device time of one call that a runner profiled (runners/pypto with --time device): the runner
// wraps the timed call in torch_npu's profiler, writing the export into a directory of its own
// under the profile root the judge created for it, and names that directory in RUN_INFO; the
// judge reads the kernel time from it (device_time.h) and deletes it. The parsing stays in C++
// so the runner stays small, and a missing or malformed export is the call's failure, never
// temper's.
#pragma once

#include "backend/device_time.h"
#include "util/error.h"

#include <filesystem>
#include <string>
#include <utility>

namespace temper::backend {

// A private directory for one runner's profiler exports, removed with everything in it when
// the object dies. Its name has only letters, digits and underscores, the characters
// torch_npu's tensorboard_trace_handler accepts in a path.
class ProfileRoot {
public:
  static Expected<ProfileRoot> create();
  ProfileRoot() = default;
  ProfileRoot(ProfileRoot&& other) noexcept;
  ProfileRoot& operator=(ProfileRoot&& other) noexcept;
  ProfileRoot(const ProfileRoot&) = delete;
  ProfileRoot& operator=(const ProfileRoot&) = delete;
  ~ProfileRoot();
  const std::filesystem::path& path() const { return m_path; }

private:
  explicit ProfileRoot(std::filesystem::path path) : m_path(std::move(path)) {}
  void remove();
  std::filesystem::path m_path;
};

// How a per-call export is read: one call per file, and no harness kernels, since temper's
// runner launches none (a candidate kernel named like CANN-Bench's cache-clean or warm-up
// kernels is counted like any other, so the name cannot hide work).
DeviceTimeOptions per_call_profile_options();

// The device time in the export under `reported`, which must be a directory strictly inside
// `root` (anything else is refused and left alone); the directory is deleted whether or not it
// could be read. Errors name the problem ("no profiler export under ...", the parser's message).
Expected<DeviceTime> take_call_profile(const std::filesystem::path& root, const std::string& reported);

} // namespace temper::backend
