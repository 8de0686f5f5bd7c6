#include "worker/landlock.h"

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// Older libc headers lack the numbers; they are the same on every architecture that has them.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

namespace temper::worker {

namespace {

// From the kernel's include/uapi/linux/landlock.h.
constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr uint32_t kRestrictSelfTsync = 1U << 3; // ABI 8

using namespace landlock_access;
constexpr uint64_t kAbi1Fs = (1ULL << 13) - 1; // EXECUTE .. MAKE_SYM
constexpr uint64_t kNetBindTcp = 1ULL << 0;    // ABI 4
constexpr uint64_t kNetConnectTcp = 1ULL << 1; // ABI 4
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0; // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;             // ABI 6

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net; // ABI 4
  uint64_t scoped;             // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

// Every file-system right this ABI knows: what is handled and not granted is denied.
uint64_t handled_fs(int abi) {
  uint64_t v = kAbi1Fs;
  if (abi >= 2) v |= kRefer;
  if (abi >= 3) v |= kTruncate;
  if (abi >= 5) v |= kIoctlDev;
  return v;
}

// The size of the attribute structure this ABI reads: a kernel rejects fields it does not know.
size_t ruleset_attr_size(int abi) {
  if (abi >= 6) return sizeof(RulesetAttr);
  if (abi >= 4) return offsetof(RulesetAttr, scoped);
  return offsetof(RulesetAttr, handled_access_net);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

class Fd {
public:
  explicit Fd(int fd) : m_fd(fd) {}
  ~Fd() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }

private:
  int m_fd;
};

} // namespace

LandlockResult restrict_paths(const std::vector<LandlockRule>& rules, bool all_threads) {
  LandlockResult r;
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (abi < 1) {
    // ENOSYS: not built into this kernel; EOPNOTSUPP: built but not enabled at boot.
    r.unavailable = errno == EOPNOTSUPP ? "disabled on this kernel" : errno_text("not supported by this kernel");
    return r;
  }
  r.abi = static_cast<int>(abi);

  RulesetAttr attr{};
  attr.handled_access_fs = handled_fs(r.abi);
  if (r.abi >= 4) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  if (r.abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  Fd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, ruleset_attr_size(r.abi), 0U)));
  if (ruleset.get() < 0) {
    r.error = errno_text("landlock_create_ruleset");
    return r;
  }

  for (const LandlockRule& want : rules) {
    Fd fd(::open(want.path.c_str(), O_PATH | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue; // absent here (/lib32 on a pure 64-bit system)
      r.error = errno_text(("open " + want.path).c_str());
      return r;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      r.error = errno_text(("fstat " + want.path).c_str());
      return r;
    }
    // A rule on a file may only carry file rights; the kernel rejects rights its ABI lacks.
    PathBeneathAttr rule{};
    rule.allowed_access = want.access & (S_ISDIR(st.st_mode) ? ~uint64_t{0} : kFileRights) & attr.handled_access_fs;
    if (rule.allowed_access == 0) continue; // nothing this kernel can grant there
    rule.parent_fd = fd.get();
    if (::syscall(SYS_landlock_add_rule, ruleset.get(), kRulePathBeneath, &rule, 0U) != 0) {
      r.error = errno_text(("landlock_add_rule " + want.path).c_str());
      return r;
    }
    ++r.paths;
  }

  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    r.error = errno_text("prctl(PR_SET_NO_NEW_PRIVS)");
    return r;
  }
  // TSYNC is all or nothing; refused, this thread alone is bound, as before ABI 8.
  r.all_threads = all_threads && r.abi >= 8 && ::syscall(SYS_landlock_restrict_self, ruleset.get(), kRestrictSelfTsync) == 0;
  if (!r.all_threads && ::syscall(SYS_landlock_restrict_self, ruleset.get(), 0U) != 0) {
    r.error = errno_text("landlock_restrict_self");
    return r;
  }
  return r;
}

LandlockResult restrict_to_reading(const std::vector<std::string>& readable) {
  // EXECUTE only matters to execve, which temper-worker's seccomp filter denies anyway;
  // mmap(PROT_EXEC) of a library needs just READ_FILE.
  std::vector<LandlockRule> rules;
  rules.reserve(readable.size());
  for (const std::string& path : readable) rules.push_back({path, kReadFile | kReadDir});
  return restrict_paths(rules);
}

} // namespace temper::worker
