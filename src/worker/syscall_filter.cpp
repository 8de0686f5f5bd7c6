#include "worker/syscall_filter.h"

#include "backend/protocol.h"

#include <seccomp.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <initializer_list>
#include <sched.h>
#include <unistd.h>
#include <utility>

namespace proto = temper::backend::protocol;

namespace temper::worker {

namespace {

constexpr int kSysSeccomp = 1; // si_code of a seccomp trap (asm-generic/siginfo.h)
constexpr int kViolationExitStatus = 128 + SIGSYS;
constexpr int kFrameTableSize = 1024; // above every syscall number of every architecture

// --- the SIGSYS handler -----------------------------------------------------------------------
// Everything it reads is prepared before the filter is loaded; it only writes and exits, both
// async-signal-safe and both allowed by the filter.

std::array<std::string, kFrameTableSize> g_frames; // by syscall number: that call's violation frame
uint32_t g_native_arch = 0;
int g_reply_fd = -1;

void write_all(const char* p, size_t n) {
  while (n > 0) {
    ssize_t put = ::write(g_reply_fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return;
    p += put;
    n -= static_cast<size_t>(put);
  }
}

// A violation frame for a call without a prepared one ("non-native system call 11"), built
// without allocating: u32 length, u8 type, u32 name length, name, i32 number.
size_t unlisted_frame(char* buf, const char* prefix, int32_t nr) {
  char digits[12];
  size_t nd = 0;
  uint32_t v = nr < 0 ? 0U - static_cast<uint32_t>(nr) : static_cast<uint32_t>(nr);
  do {
    digits[nd++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (nr < 0) digits[nd++] = '-';
  size_t np = std::strlen(prefix);
  uint32_t name_len = static_cast<uint32_t>(np + nd);
  uint32_t body = 1 + 4 + name_len + 4;
  char* p = buf;
  std::memcpy(p, &body, 4);
  p += 4;
  *p++ = static_cast<char>(proto::MsgType::SandboxViolation);
  std::memcpy(p, &name_len, 4);
  p += 4;
  std::memcpy(p, prefix, np);
  p += np;
  while (nd > 0) *p++ = digits[--nd];
  std::memcpy(p, &nr, 4);
  p += 4;
  return static_cast<size_t>(p - buf);
}

extern "C" void on_sigsys(int, siginfo_t* info, void*) {
  // Only a seccomp trap is a violation; a SIGSYS the kernel raised itself is its own crash.
  if (info->si_code == kSysSeccomp) {
    int nr = info->si_syscall;
    bool native = info->si_arch == g_native_arch;
    if (native && nr >= 0 && nr < kFrameTableSize && !g_frames[static_cast<size_t>(nr)].empty()) {
      const std::string& f = g_frames[static_cast<size_t>(nr)];
      write_all(f.data(), f.size());
    } else {
      char buf[128];
      write_all(buf, unlisted_frame(buf, native ? "system call " : "non-native system call ", nr));
    }
  }
  ::_exit(kViolationExitStatus);
}

// --- building the filter ----------------------------------------------------------------------

scmp_arg_cmp arg(unsigned index, scmp_compare op, uint64_t a, uint64_t b = 0) { return scmp_arg_cmp{index, op, a, b}; }

// `index` & mask == bits, looking at the low 32 bits only: the kernel reads an int argument
// from the low half of the register, so a full 64-bit compare could be dodged with high bits.
scmp_arg_cmp int_has(unsigned index, uint64_t bits) { return arg(index, SCMP_CMP_MASKED_EQ, bits, bits); }
scmp_arg_cmp int_is(unsigned index, uint32_t value) { return arg(index, SCMP_CMP_MASKED_EQ, 0xFFFFFFFFULL, value); }
// Any difference in all 64 bits: stricter than the kernel's int view, which is the safe side.
scmp_arg_cmp not_equal(unsigned index, uint64_t value) { return arg(index, SCMP_CMP_NE, value); }

// Numbers of calls newer than this libseccomp knows, where the build targets x86-64.
int fallback_number([[maybe_unused]] const char* name) {
#if defined(__x86_64__)
  static constexpr std::pair<const char*, int> kNewer[] = {
      {"setxattrat", 463}, {"removexattrat", 466}, {"open_tree_attr", 467}, {"file_setattr", 469}};
  for (const auto& [n, nr] : kNewer) {
    if (std::strcmp(n, name) == 0) return nr;
  }
#endif
  return -1;
}

class DenyList {
public:
  explicit DenyList(scmp_filter_ctx ctx) : m_ctx(ctx) {}

  // Traps `name` when every condition holds (always, without conditions). Several calls with
  // the same name add alternatives. `what` qualifies the name in the verdict.
  void trap(const char* name, const char* what = nullptr, std::initializer_list<scmp_arg_cmp> when = {}) {
    int nr = number(name);
    if (nr < 0) return;
    if (!add(SCMP_ACT_TRAP, nr, name, when)) return;
    std::string& frame = g_frames[static_cast<size_t>(nr)];
    if (frame.empty()) {
      ++m_trapped;
      std::string text = what ? std::string(name) + " (" + what + ")" : std::string(name);
      frame = proto::encode(proto::SandboxViolationReply{text, nr});
    }
  }

  // Answers `name` with `err` instead of trapping: for calls whose callers fall back to one the
  // filter can judge (glibc's clone3 -> clone).
  void refuse(const char* name, int err) {
    int nr = number(name);
    if (nr >= 0 && add(SCMP_ACT_ERRNO(static_cast<uint32_t>(err)), nr, name, {})) ++m_refused;
  }

  const std::string& error() const { return m_error; }
  int trapped() const { return m_trapped; }
  int refused() const { return m_refused; }

private:
  // The call's number here, or -1 when this architecture has no such call.
  int number(const char* name) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) nr = fallback_number(name);
    if (nr >= kFrameTableSize) {
      fail(name, "has a number beyond the violation table");
      return -1;
    }
    return nr;
  }

  bool add(uint32_t action, int nr, const char* name, std::initializer_list<scmp_arg_cmp> when) {
    if (!m_error.empty()) return false;
    int rc = seccomp_rule_add_array(m_ctx, action, nr, static_cast<unsigned>(when.size()), when.begin());
    if (rc != 0) {
      fail(name, std::strerror(-rc));
      return false;
    }
    return true;
  }

  void fail(const char* name, const std::string& why) {
    if (m_error.empty()) m_error = std::string("seccomp rule for ") + name + ": " + why;
  }

  scmp_filter_ctx m_ctx;
  std::string m_error;
  int m_trapped = 0;
  int m_refused = 0;
};

void add_rules(DenyList& d, int pid) {
  const uint64_t self = static_cast<uint64_t>(pid);

  // New processes and programs. A thread is a clone with CLONE_THREAD (which implies a shared
  // address space); anything else, or any new namespace, is a process. glibc tries clone3
  // first, whose flags live in memory seccomp cannot read: ENOSYS sends it back to clone.
  const char* process = "a new process or namespace";
  d.trap("clone", process, {arg(0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)});
  for (uint64_t ns :
       {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET}) {
    d.trap("clone", process, {int_has(0, ns)});
  }
  for (const char* name : {"fork", "vfork", "execve", "execveat"}) d.trap(name);
  d.refuse("clone3", ENOSYS);

  // Other processes: debugging, reading or writing their memory, their fds, signalling them.
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
                           "process_mrelease", "kcmp", "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "tkill"}) {
    d.trap(name);
  }
  const char* other = "to another process";
  d.trap("kill", other, {not_equal(0, self)});
  d.trap("tgkill", other, {not_equal(0, self)});
  d.trap("rt_sigqueueinfo", other, {not_equal(0, self)});
  d.trap("rt_tgsigqueueinfo", other, {not_equal(0, self)});
  d.trap("migrate_pages", "another process's memory", {not_equal(0, 0)});
  d.trap("move_pages", "another process's memory", {not_equal(0, 0)});

  // System V IPC and POSIX message queues: objects that outlive the worker and that other
  // processes hold (an id is a guessable number, and the worker may run as root).
  for (const char* name : {"shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
                           "msgrcv", "msgctl", "mq_open", "mq_unlink"}) {
    d.trap(name);
  }

  // The handler that names violations stays ours.
  d.trap("rt_sigaction", "replacing the SIGSYS handler", {int_is(0, SIGSYS), not_equal(1, 0)});

  // The network, and the judge's end of the command socket.
  for (const char* name : {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto",
                           "sendmsg", "sendmmsg", "recvfrom", "recvmsg", "recvmmsg"}) {
    d.trap(name);
  }

  // Writing to the file system. Opens for reading are Landlock's to allow or refuse.
  const char* writing = "for writing";
  for (int flag : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC}) {
    d.trap("open", writing, {int_has(1, static_cast<uint64_t>(flag))});
    d.trap("openat", writing, {int_has(2, static_cast<uint64_t>(flag))});
  }
  d.refuse("openat2", ENOSYS); // its flags live in memory: callers fall back to openat
  for (const char* name : {"creat", "truncate", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir",
                           "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat", "mknod", "mknodat", "chmod",
                           "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime",
                           "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
                           "removexattr", "lremovexattr", "fremovexattr", "removexattrat", "file_setattr",
                           "name_to_handle_at", "open_by_handle_at", "fanotify_init"}) {
    d.trap(name);
  }

  // Memory RLIMIT_AS does not see: a memfd's pages count only once mapped, so writes to one
  // could fill the machine's memory.
  for (const char* name : {"memfd_create", "memfd_secret"}) d.trap(name);

  // io_uring performs opens, sockets and more without passing through this filter.
  for (const char* name : {"io_uring_setup", "io_uring_enter", "io_uring_register"}) d.trap(name);

  // The machine: mounts, namespaces, modules, clocks, devices, kernel interfaces. The worker
  // may run as root, where each of these would work.
  for (const char* name :
       {"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
        "open_tree", "open_tree_attr", "mount_setattr", "setns", "unshare", "swapon", "swapoff", "reboot", "kexec_load",
        "kexec_file_load", "init_module", "finit_module", "delete_module", "acct", "quotactl", "quotactl_fd", "bpf",
        "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "iopl", "ioperm", "modify_ldt", "syslog",
        "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "vhangup",
        "uselib"}) {
    d.trap(name);
  }

  // Fairness of the measurement: a candidate may not raise its own priority or scheduling
  // class, nor lift the limits the worker set (RLIMIT_AS), nor touch another process's.
  for (const char* name : {"setpriority", "sched_setscheduler", "sched_setparam", "sched_setattr", "ioprio_set",
                           "setrlimit"}) {
    d.trap(name);
  }
  d.trap("prlimit64", "setting a limit, or another process's", {not_equal(2, 0)});
  d.trap("prlimit64", "setting a limit, or another process's", {not_equal(0, 0)});
}

} // namespace

FilterResult install_syscall_filter(int reply_fd, int pid) {
  FilterResult r;
  g_reply_fd = reply_fd;
  g_native_arch = seccomp_arch_native();

  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) {
    r.error = "seccomp_init failed";
    return r;
  }
  struct Release {
    scmp_filter_ctx c;
    ~Release() { seccomp_release(c); }
  } release{ctx};

  // Calls of another ABI (int 0x80, x32) would bypass rules written for this one.
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); // a tree, not a chain
  if (rc != 0) {
    r.error = std::string("seccomp_attr_set: ") + std::strerror(-rc);
    return r;
  }

  DenyList deny(ctx);
  add_rules(deny, pid);
  if (!deny.error().empty()) {
    r.error = deny.error();
    return r;
  }
  r.trapped = deny.trapped();
  r.refused = deny.refused();

  // The handler before the filter: from then on nothing can replace it.
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSYS, &sa, nullptr) != 0) {
    r.error = std::string("sigaction(SIGSYS): ") + std::strerror(errno);
    return r;
  }
  sigset_t sys;
  sigemptyset(&sys);
  sigaddset(&sys, SIGSYS);
  ::pthread_sigmask(SIG_UNBLOCK, &sys, nullptr);

  rc = seccomp_load(ctx);
  if (rc != 0) r.error = std::string("seccomp_load: ") + std::strerror(-rc);
  return r;
}

} // namespace temper::worker
