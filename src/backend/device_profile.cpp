#include "backend/device_profile.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace temper::backend {

namespace fs = std::filesystem;

Expected<ProfileRoot> ProfileRoot::create() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) return fail("no temporary directory for profiler exports: {}", ec.message());
  std::string tmpl = (base / "temper_npu_prof_XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return fail("mkdtemp {}: {}", tmpl, std::strerror(errno));
  return ProfileRoot(fs::path(tmpl));
}

ProfileRoot::ProfileRoot(ProfileRoot&& other) noexcept : m_path(std::move(other.m_path)) { other.m_path.clear(); }

ProfileRoot& ProfileRoot::operator=(ProfileRoot&& other) noexcept {
  if (this != &other) {
    remove();
    m_path = std::move(other.m_path);
    other.m_path.clear();
  }
  return *this;
}

ProfileRoot::~ProfileRoot() { remove(); }

void ProfileRoot::remove() {
  if (m_path.empty()) return;
  std::error_code ec;
  fs::remove_all(m_path, ec);
  m_path.clear();
}

DeviceTimeOptions per_call_profile_options() {
  DeviceTimeOptions o;
  o.delimiter_tokens.clear();
  o.warmup_tokens.clear();
  o.whole_file_is_one_step = true;
  o.expected_steps = 1;
  return o;
}

namespace {

// Whether `inner` lies below `outer` (both canonical), not equal to it.
bool strictly_inside(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue; // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return i != inner.end() && !i->empty();
}

} // namespace

Expected<DeviceTime> take_call_profile(const fs::path& root, const std::string& reported) {
  if (reported.empty()) return fail("the runner named no profiler output for a device-timed call");
  std::error_code ec;
  const fs::path canon_root = fs::canonical(root, ec);
  if (ec) return fail("the profile directory {} is gone: {}", root.string(), ec.message());
  const fs::path dir(reported);
  fs::path canon = dir.is_absolute() ? fs::weakly_canonical(dir, ec) : fs::path{};
  if (ec || canon.empty() || !strictly_inside(canon, canon_root)) {
    return fail("the runner named '{}' for the call's profile, which is not inside its profile directory {}", reported,
                root.string());
  }
  // Read or not, the export goes: a sample's files must not pile up over a measurement.
  struct Remove {
    fs::path path;
    ~Remove() {
      std::error_code e;
      fs::remove_all(path, e);
    }
  } remove{canon};
  if (!fs::is_directory(canon, ec)) return fail("no profiler output at {}: the profiler wrote nothing for the call", reported);
  TEMPER_TRY_ASSIGN(fs::path csv, find_profile_csv(canon));
  return read_device_time(csv, per_call_profile_options());
}

} // namespace temper::backend
