#include "backend/worker.h"

#include "util/unique_fd.h"

#include "backend/device_profile.h"
#include "backend/forkserver.h"
#include "backend/protocol.h"
#include "util/process_cpu.h"

#include <algorithm>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>


namespace temper::backend {

namespace proto = protocol;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string_view call_outcome_name(CallOutcome o) {
  switch (o) {
  case CallOutcome::Ok:
    return "ok";
  case CallOutcome::KernelError:
    return "kernel_error";
  case CallOutcome::Crashed:
    return "crashed";
  case CallOutcome::TimedOut:
    return "timed_out";
  case CallOutcome::HarnessError:
    return "harness_error";
  case CallOutcome::SandboxViolation:
    return "sandbox_violation";
  }
  return "?";
}

namespace {

constexpr size_t kTailBytes = 64 << 10;        // output_tail() keeps this much
constexpr size_t kMessageTailBytes = 2 << 10;  // of which this much goes into crash messages
constexpr auto kLoadGrace = 10s;  // on top of call_timeout: process start, dlopen, constructors
constexpr auto kDeathGrace = 2s;  // reply channel closed: how long the process gets to finish dying
constexpr auto kExitGrace = 1s;   // ~Worker: how long EXIT gets before SIGKILL
constexpr auto kPollTick = 50ms;  // liveness checks when pidfd_open is unavailable

using util::UniqueFd;

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev ? fmt::format("killed by SIG{} ({})", abbrev, ::strsignal(sig))
                  : fmt::format("killed by signal {}", sig);
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended with wait status {:#x}", status);
}

int poll_ms(Clock::time_point deadline, std::optional<std::chrono::milliseconds> cap) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() < 0) left = 0ms;
  if (cap && left > *cap) left = *cap;
  return static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
}

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

CallResult make_result(CallOutcome outcome, std::string message) {
  CallResult r;
  r.outcome = outcome;
  r.message = std::move(message);
  return r;
}

int32_t attr_kind(core::AttrKind k) {
  switch (k) {
  case core::AttrKind::Int:
    return TEMPER_ATTR_INT;
  case core::AttrKind::Float:
    return TEMPER_ATTR_FLOAT;
  case core::AttrKind::Bool:
    return TEMPER_ATTR_BOOL;
  case core::AttrKind::String:
    return TEMPER_ATTR_STRING;
  case core::AttrKind::IntList:
    return TEMPER_ATTR_INT_LIST;
  case core::AttrKind::FloatList:
    return TEMPER_ATTR_FLOAT_LIST;
  }
  return TEMPER_ATTR_INT;
}

proto::TensorDesc tensor_desc(const core::TensorSpec& t, size_t offset) {
  proto::TensorDesc d;
  d.dtype = static_cast<int32_t>(t.dtype);
  d.shape = t.shape;
  d.strides = core::row_major_strides(t.shape);
  d.offset = offset;
  d.bytes = t.bytes();
  return d;
}

Expected<proto::LoadCommand> load_command(const WorkerOptions& options, const SharedArena& arena) {
  const ArenaLayout& layout = arena.layout();
  proto::LoadCommand c;
  std::error_code ec;
  fs::path artifact = fs::absolute(options.artifact, ec);
  c.artifact = (ec ? options.artifact : artifact).string();
  c.arena_fd = proto::kArenaFd;
  c.arena_size = arena.size();
  c.memory_limit = options.memory_limit_bytes;
  c.num_threads = options.threads;
  c.input_sets = layout.input_sets;
  for (int s = 0; s < layout.input_sets; ++s) {
    for (size_t k = 0; k < layout.inputs.size(); ++k) c.inputs.push_back(tensor_desc(layout.inputs[k], arena.input_offset(s, k)));
  }
  for (size_t k = 0; k < layout.outputs.size(); ++k) c.outputs.push_back(tensor_desc(layout.outputs[k], arena.output_offset(k)));
  for (const auto* list : {&c.inputs, &c.outputs}) {
    for (const auto& t : *list) {
      if (t.shape.size() > TEMPER_MAX_RANK) return fail("a tensor of rank {} exceeds the ABI's {}", t.shape.size(), TEMPER_MAX_RANK);
    }
  }
  for (const auto& [name, value] : options.attrs) {
    proto::AttrDesc a;
    a.name = name;
    a.kind = attr_kind(value.kind);
    a.i = value.i;
    a.f = value.f;
    a.s = value.s;
    a.ints = value.ints;
    a.floats = value.floats;
    c.attrs.push_back(std::move(a));
  }
  c.flush_bytes = options.flush_bytes;
  if (options.evict_cold) c.cold_step = proto::kColdEvict;
  c.cpus = options.cpus;
  c.device_content = options.device_content.string();
  bool plain = std::all_of(options.input_slots.begin(), options.input_slots.end(),
                           [](const core::InputSlot& s) { return s.kind == core::InputKind::Tensor; });
  if (!plain) {
    for (const auto& s : options.input_slots) {
      if (s.first + s.count > layout.inputs.size()) return fail("an input slot lies beyond the case's {} tensors", layout.inputs.size());
      c.input_groups.push_back(proto::InputGroupDesc{static_cast<int32_t>(s.kind), static_cast<int32_t>(s.first),
                                                     static_cast<int32_t>(s.count)});
    }
  }
  return c;
}

} // namespace

Expected<std::string> encoded_load_command(const WorkerOptions& options, const SharedArena& arena) {
  TEMPER_TRY_ASSIGN(proto::LoadCommand c, load_command(options, arena));
  return proto::encode(c);
}

struct Worker::Impl {
  pid_t pid = -1;
  bool reaped = false;
  int wait_status = 0;
  UniqueFd cmd;    // our end of the command socket (non-blocking)
  UniqueFd reply;  // read end of the reply pipe (non-blocking)
  UniqueFd out;    // read end of the worker's stdout+stderr (non-blocking)
  UniqueFd pidfd;  // readable once the worker exits; invalid where pidfd_open is missing
  bool reply_eof = false;
  std::string reply_buf;
  std::string tail;
  uint64_t output_bytes = 0;
  int input_sets = 1;
  std::chrono::milliseconds call_timeout{};
  std::optional<CallResult> dead; // once set, every run() returns it
  std::string sandbox;            // LOADED's description of the worker's sandbox
  ProfileRoot profile_root;       // WorkerOptions::device_profiles: the runner's export directory
  bool frozen = false;            // stopped by freeze() until the next command

  ~Impl() { shutdown(); } // the profile root goes after the runner has ended

  void append_output(const char* p, size_t n) {
    output_bytes += n;
    if (n >= kTailBytes) {
      tail.assign(p + n - kTailBytes, kTailBytes);
      return;
    }
    tail.append(p, n);
    // Trimmed in batches so that appending stays amortized O(1).
    if (tail.size() > 2 * kTailBytes) tail.erase(0, tail.size() - kTailBytes);
  }

  // Reads what the worker printed without blocking; bounded per call, so a kernel that prints
  // without end cannot starve the reply channel.
  void drain_output() {
    char buf[65536];
    for (int k = 0; k < 64 && out.valid(); ++k) {
      ssize_t n = ::read(out.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        append_output(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || errno != EAGAIN) out.reset(); // end of stream, or nothing more to learn
      return;
    }
  }

  std::string tail_view(size_t max) const {
    size_t have = std::min(tail.size(), max);
    return tail.substr(tail.size() - have);
  }

  void read_reply() {
    char buf[4096];
    while (reply.valid()) {
      ssize_t n = ::read(reply.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        reply_buf.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0 || errno != EAGAIN) {
        reply_eof = true;
        reply.reset();
      }
      return;
    }
  }

  // True once the worker has exited. WNOWAIT leaves it a zombie: its pid, and with it the
  // process group id, stay reserved until kill_and_reap() has signalled the group.
  bool exited_now() const {
    if (reaped) return true;
    siginfo_t si{};
    int rc;
    do {
      rc = ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 || si.si_pid == pid;
  }

  // Waits for the worker to exit on its own, draining its output meanwhile.
  bool wait_exit(Clock::time_point deadline) {
    for (;;) {
      if (exited_now()) return true;
      if (Clock::now() >= deadline) return false;
      pollfd fds[2];
      nfds_t n = 0;
      if (pidfd.valid()) fds[n++] = {pidfd.get(), POLLIN, 0};
      if (out.valid()) fds[n++] = {out.get(), POLLIN, 0};
      int ms = poll_ms(deadline, pidfd.valid() ? std::nullopt : std::optional(std::chrono::milliseconds(5)));
      if (::poll(fds, n, ms) < 0 && errno != EINTR) return exited_now();
      drain_output();
    }
  }

  // Kills the worker's process group (the worker and anything the kernel started in it) and
  // reaps the worker. Idempotent.
  int kill_and_reap() {
    if (reaped) return wait_status;
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL); // in case the kernel moved the worker to another group
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
    wait_status = status;
    pidfd.reset();
    // What the worker printed last is already in the pipe; a leftover that escaped the group
    // could hold the pipe open, so this is bounded.
    auto until = Clock::now() + 100ms;
    while (out.valid() && Clock::now() < until) {
      pollfd p{out.get(), POLLIN, 0};
      if (::poll(&p, 1, poll_ms(until, std::nullopt)) == 0) break;
      drain_output();
    }
    return status;
  }

  // Sends one frame whole. False when the worker is gone or does not take it by the deadline.
  bool send(const std::string& frame, Clock::time_point deadline) {
    size_t done = 0;
    while (done < frame.size()) {
      if (!cmd.valid()) return false;
      ssize_t n = ::send(cmd.get(), frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        if (Clock::now() >= deadline) return false;
        pollfd p{cmd.get(), POLLOUT, 0};
        ::poll(&p, 1, poll_ms(deadline, 10ms));
        drain_output();
        continue;
      }
      return false;
    }
    return true;
  }

  enum class Wait { Frame, Gone, TimedOut, Corrupt };

  // Waits for the next reply frame, draining output, noticing the worker's death even when a
  // process it left behind keeps the reply pipe open.
  Wait wait_frame(Clock::time_point deadline, proto::Frame& frame) {
    bool exited = false;
    for (;;) {
      switch (proto::take_frame(reply_buf, frame)) {
      case proto::FrameStatus::Complete:
        return Wait::Frame;
      case proto::FrameStatus::Corrupt:
        return Wait::Corrupt;
      case proto::FrameStatus::Incomplete:
        break;
      }
      if (reply_eof || exited) return Wait::Gone;
      if (Clock::now() >= deadline) return Wait::TimedOut;
      pollfd fds[3];
      nfds_t n = 0;
      fds[n++] = {reply.get(), POLLIN, 0};
      int out_at = -1;
      int pid_at = -1;
      if (out.valid()) {
        out_at = static_cast<int>(n);
        fds[n++] = {out.get(), POLLIN, 0};
      }
      if (pidfd.valid()) {
        pid_at = static_cast<int>(n);
        fds[n++] = {pidfd.get(), POLLIN, 0};
      }
      int rc = ::poll(fds, n, poll_ms(deadline, pidfd.valid() ? std::nullopt : std::optional(kPollTick)));
      if (rc < 0) {
        if (errno == EINTR) continue;
        return Wait::Gone;
      }
      if (rc == 0 && pidfd.valid()) continue; // the deadline, checked at the top
      if (out_at >= 0 && fds[out_at].revents != 0) drain_output();
      if (fds[0].revents != 0) read_reply();
      if ((pid_at >= 0 && fds[pid_at].revents != 0) || (pid_at < 0 && exited_now())) {
        read_reply(); // everything it wrote before dying is in the pipe now
        exited = true;
      }
    }
  }

  // The worker is gone (or must go): reaps it and records why, for this and every later call.
  CallResult die(CallOutcome outcome, std::string message) {
    kill_and_reap();
    return record_death(outcome, std::move(message));
  }

  // The reply channel ended `phase`: gives the process a moment to finish dying, then says how
  // it ended ("killed by SIGSEGV (Segmentation fault) during the call").
  CallResult die_gone(const char* phase) {
    bool exited = wait_exit(Clock::now() + kDeathGrace);
    // A kernel thread may have been stopped between commands: its report is in the pipe.
    read_reply();
    proto::Frame pending;
    if (proto::take_frame(reply_buf, pending) == proto::FrameStatus::Complete &&
        pending.type == proto::MsgType::SandboxViolation) {
      return violation(pending, phase);
    }
    int status = kill_and_reap();
    if (exited && WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
      // The sandbox trapped a call while SIGSYS was blocked (or its handler could not run):
      // the kernel then ends the process with SIGSYS, and the call is not named.
      return record_death(CallOutcome::SandboxViolation,
                          fmt::format("the sandbox stopped a forbidden system call {} ({}; the call was not named)",
                                      phase, describe_status(status)));
    }
    return record_death(CallOutcome::Crashed,
                        exited ? fmt::format("{} {}", describe_status(status), phase)
                               : fmt::format("closed its reply channel {} and was killed", phase));
  }

  // The worker reported a forbidden system call in place of the reply to the command `phase`
  // names; it ends itself right after, and is reaped here.
  CallResult violation(const proto::Frame& frame, const char* phase) {
    auto v = proto::decode_sandbox_violation(frame.payload);
    if (!v) return die(CallOutcome::Crashed, fmt::format("sent a malformed sandbox report {}", phase));
    CallResult r = die(CallOutcome::SandboxViolation,
                       fmt::format("the sandbox stopped a forbidden system call {}: {}", phase, v->syscall));
    r.violation = v->syscall;
    dead->violation = v->syscall;
    return r;
  }

  CallResult record_death(CallOutcome outcome, std::string message) {
    std::string last = tail_view(kMessageTailBytes);
    if (!last.empty()) {
      message += fmt::format("\n--- last output{} ---\n{}", output_bytes > last.size() ? " (truncated)" : "", last);
    }
    dead = make_result(outcome, std::move(message));
    return *dead;
  }

  // Sends `command` and waits for its reply; `phase` names the step in messages ("during the
  // call", "while loading"). On return either `frame` holds the reply or the result says why not.
  std::optional<CallResult> exchange(const std::string& command, std::chrono::milliseconds timeout,
                                     const char* phase, proto::Frame& frame) {
    auto deadline = Clock::now() + timeout;
    if (!send(command, deadline)) {
      if (Clock::now() >= deadline) return die(CallOutcome::TimedOut, fmt::format("timed out {}", phase));
      return die_gone("before the command was sent");
    }
    switch (wait_frame(deadline, frame)) {
    case Wait::Frame:
      return std::nullopt;
    case Wait::Gone:
      return die_gone(phase);
    case Wait::TimedOut:
      return die(CallOutcome::TimedOut,
                 fmt::format("timed out after {:.3f} s {}; the worker was killed",
                             std::chrono::duration<double>(timeout).count(), phase));
    case Wait::Corrupt:
      return die(CallOutcome::Crashed, fmt::format("corrupted the reply channel {}", phase));
    }
    return std::nullopt;
  }

  // Sends LOAD and waits for READY, then for the outcome of loading.
  CallResult load(const std::string& command, std::chrono::milliseconds timeout) {
    proto::Frame frame;
    if (auto failed = exchange(command, timeout, "while starting", frame)) {
      // Before READY nothing of the kernel has run: whatever happened is temper's problem.
      failed->outcome = CallOutcome::HarnessError;
      failed->message = "temper-worker failed to start: " + failed->message;
      dead = *failed;
      return *failed;
    }
    auto version = frame.type == proto::MsgType::Ready ? proto::decode_ready(frame.payload) : std::nullopt;
    if (!version || *version != proto::kVersion) {
      return die(CallOutcome::HarnessError, "temper-worker does not speak this protocol version (a stale build?)");
    }
    auto deadline = Clock::now() + timeout;
    switch (wait_frame(deadline, frame)) {
    case Wait::Frame:
      break;
    case Wait::Gone:
      return die_gone("while loading");
    case Wait::TimedOut:
      return die(CallOutcome::TimedOut, fmt::format("timed out after {:.3f} s while loading; the worker was killed",
                                                    std::chrono::duration<double>(timeout).count()));
    case Wait::Corrupt:
      return die(CallOutcome::Crashed, "corrupted the reply channel while loading");
    }
    if (frame.type == proto::MsgType::Loaded) {
      auto description = proto::decode_loaded(frame.payload);
      if (!description) return die(CallOutcome::Crashed, "sent a malformed reply while loading");
      sandbox = std::move(*description);
      return make_result(CallOutcome::Ok, "");
    }
    if (frame.type == proto::MsgType::SandboxViolation) return violation(frame, "while loading");
    std::optional<proto::LoadFailedReply> f;
    if (frame.type == proto::MsgType::LoadFailed) f = proto::decode_load_failed(frame.payload);
    if (!f) return die(CallOutcome::Crashed, "sent an unexpected reply while loading");
    dead = make_result(f->harness ? CallOutcome::HarnessError : CallOutcome::KernelError, f->message);
    return *dead;
  }

  // SIGSTOP reaches every thread; the stop is complete once the whole group has stopped, which
  // waitid reports (WNOWAIT: the report stays for nobody else to miss, and exit reaping is
  // unaffected). A worker that exits meanwhile ends the wait too.
  void freeze() {
    if (pid <= 0 || reaped || frozen || dead) return;
    if (::kill(pid, SIGSTOP) != 0) return;
    siginfo_t si{};
    while (::waitid(P_PID, static_cast<id_t>(pid), &si, WSTOPPED | WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    frozen = true;
  }

  void thaw() {
    if (!frozen) return;
    frozen = false;
    if (pid > 0 && !reaped) ::kill(pid, SIGCONT);
  }

  void shutdown() {
    if (pid <= 0 || reaped) return;
    thaw();
    send(proto::encode_exit(), Clock::now() + 100ms);
    cmd.reset(); // the worker's watchdog ends it on this even in the middle of a call
    wait_exit(Clock::now() + kExitGrace);
    kill_and_reap();
  }
};

Worker::Worker(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

Worker::~Worker() = default;

int Worker::pid() const { return m_impl->pid; }

void Worker::freeze() { m_impl->freeze(); }
void Worker::thaw() { m_impl->thaw(); }
bool Worker::frozen() const { return m_impl->frozen; }

std::optional<double> Worker::other_threads_cpu_seconds() const {
  const Impl& w = *m_impl;
  if (w.pid <= 0 || w.reaped) return std::nullopt;
  auto all = util::process_cpu_seconds(w.pid);
  auto main_thread = util::thread_cpu_seconds(w.pid, w.pid);
  if (!all || !main_thread) return std::nullopt;
  return std::max(*all - *main_thread, 0.0);
}

int Worker::thread_count() const {
  const Impl& w = *m_impl;
  return w.pid > 0 && !w.reaped ? util::thread_count(w.pid) : 0;
}

std::string Worker::sandbox() const { return m_impl->sandbox; }

std::string Worker::output_tail() const {
  m_impl->drain_output();
  return m_impl->tail_view(kTailBytes);
}

std::vector<std::string> worker_environment(int threads) {
  std::vector<std::string> env{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C", "HOME=/nonexistent"};
  if (threads > 0) env.push_back(fmt::format("OMP_NUM_THREADS={}", threads));
  return env;
}

std::pair<std::unique_ptr<Worker>, CallResult> Worker::start(const WorkerOptions& options, const SharedArena& arena) {
  auto started = Clock::now();
  auto harness = [](std::string message) {
    return std::pair<std::unique_ptr<Worker>, CallResult>{nullptr, make_result(CallOutcome::HarnessError, std::move(message))};
  };
  const std::string exe = options.worker_exe.string();
  if (exe.empty() || ::access(exe.c_str(), X_OK) != 0) {
    return harness(fmt::format("temper-worker is not executable at '{}': {}", exe, exe.empty() ? "no path given" : std::strerror(errno)));
  }
  if (arena.fd() < 0) return harness("the shared arena is not open");
  auto load = load_command(options, arena);
  if (!load) return harness(load.error().message);

  int cmd_pair[2];
  int reply_pipe[2];
  int out_pipe[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cmd_pair) != 0) return harness(fmt::format("socketpair: {}", std::strerror(errno)));
  UniqueFd cmd_ours(cmd_pair[0]);
  UniqueFd cmd_theirs(cmd_pair[1]);
  if (::pipe2(reply_pipe, O_CLOEXEC) != 0) return harness(fmt::format("pipe: {}", std::strerror(errno)));
  UniqueFd reply_ours(reply_pipe[0]);
  UniqueFd reply_theirs(reply_pipe[1]);
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return harness(fmt::format("pipe: {}", std::strerror(errno)));
  UniqueFd out_ours(out_pipe[0]);
  UniqueFd out_theirs(out_pipe[1]);

  // The child's fds are copied to numbers above the targets (0..5) first, so no dup2 of the
  // spawn can overwrite a source a later one still needs. All stay close-on-exec here: other
  // threads' children never inherit them; dup2 in the child clears the flag on the targets.
  auto high = [](int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 10)); };
  UniqueFd c_cmd = high(cmd_theirs.get());
  UniqueFd c_reply = high(reply_theirs.get());
  UniqueFd c_out = high(out_theirs.get());
  UniqueFd c_arena = high(arena.fd());
  if (!c_cmd.valid() || !c_reply.valid() || !c_out.valid() || !c_arena.valid()) {
    return harness(fmt::format("fcntl(F_DUPFD): {}", std::strerror(errno)));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, c_out.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, c_out.get(), 2);
  posix_spawn_file_actions_adddup2(&actions, c_cmd.get(), proto::kCmdFd);
  posix_spawn_file_actions_adddup2(&actions, c_reply.get(), proto::kReplyFd);
  posix_spawn_file_actions_adddup2(&actions, c_arena.get(), proto::kArenaFd);

  // Own process group (a timeout kills all the kernel started; Ctrl-C at the terminal reaches
  // temper, which decides), an empty signal mask and default dispositions (temper may ignore
  // SIGPIPE; the worker must die of it if temper goes away).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  // A fixed environment and arguments, the same for every worker of every role and phase: no
  // TEMPER_* variable, no path of the cache or the vault, nothing a kernel could use to tell
  // that it is judged, timed, or which arm it is (docs/security.md). OpenMP runtimes size their
  // pools from OMP_NUM_THREADS; a kernel gets the threads the task allows.
  std::vector<std::string> env_store = worker_environment(options.threads);
  for (const std::string& extra : options.worker_env) {
    std::string name = extra.substr(0, extra.find('=') + 1);
    if (name.size() < 2 || name.rfind("TEMPER_", 0) == 0) continue;
    std::erase_if(env_store, [&](const std::string& e) { return e.rfind(name, 0) == 0; });
    env_store.push_back(extra);
  }
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  // A runner (worker_args set: an interpreter and its script) keeps its own path as argv[0],
  // which Python needs to find its prefix; it is the same for every worker of a judgement.
  std::vector<std::string> args{options.worker_args.empty() ? std::string("temper-worker") : exe};
  args.insert(args.end(), options.worker_args.begin(), options.worker_args.end());
  ProfileRoot profile_root;
  if (options.device_profiles) {
    auto root = ProfileRoot::create();
    if (!root) return harness(root.error().message);
    profile_root = std::move(*root);
    args.push_back("--profile-root");
    args.push_back(profile_root.path().string());
  }
  args.push_back("--protocol");
  args.push_back(std::to_string(proto::kVersion));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = 0;
  Expected<pid_t> forked = fail("no forkserver");
  if (options.forkserver) {
    forked = options.forkserver->spawn(exe, args, env_store, c_out.get(), c_cmd.get(), c_reply.get(), c_arena.get());
  }
  if (forked) pid = *forked; // else started afresh: the load then reports what the server could not
  else rc = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return harness(fmt::format("cannot start {}: {}", exe, std::strerror(rc)));

  auto impl = std::make_unique<Impl>();
  impl->pid = pid;
  impl->profile_root = std::move(profile_root);
  impl->cmd = std::move(cmd_ours);
  impl->reply = std::move(reply_ours);
  impl->out = std::move(out_ours);
  impl->input_sets = arena.layout().input_sets;
  impl->call_timeout = options.call_timeout;
#ifdef SYS_pidfd_open
  impl->pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#endif
  // Closing our copies of the child's ends now makes EOF on the reply pipe mean "worker gone".
  cmd_theirs.reset();
  reply_theirs.reset();
  out_theirs.reset();
  c_cmd.reset();
  c_reply.reset();
  c_out.reset();
  c_arena.reset();
  std::unique_ptr<Worker> worker(new Worker(std::move(impl)));
  Impl& w = *worker->m_impl;
  if (!set_nonblocking(w.cmd.get()) || !set_nonblocking(w.reply.get()) || !set_nonblocking(w.out.get())) {
    return {std::move(worker), w.die(CallOutcome::HarnessError, fmt::format("fcntl(O_NONBLOCK): {}", std::strerror(errno)))};
  }

  CallResult result = w.load(proto::encode(*load), options.call_timeout + kLoadGrace);
  result.round_trip_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return {std::move(worker), result};
}

CallResult Worker::run(int set) { return run_command(set, 0, 0); }

CallResult Worker::run(int set, const DeviceCall& device) {
  return run_command(set, static_cast<uint8_t>(proto::kRunDeviceContent | (device.fetch_outputs ? proto::kRunFetchOutputs : 0)),
                     device.content_seed);
}

CallResult Worker::run_command(int set, uint8_t flags, uint64_t content_seed) {
  proto::RunCommand command{set};
  command.flags = flags;
  command.content_seed = content_seed;
  Impl& w = *m_impl;
  if (w.dead) return *w.dead;
  w.thaw();
  if (set < 0 || set >= w.input_sets) {
    return make_result(CallOutcome::HarnessError, fmt::format("input set {} out of range (the arena has {})", set, w.input_sets));
  }
  auto t0 = Clock::now();
  proto::Frame frame;
  if (auto failed = w.exchange(proto::encode(command), w.call_timeout, "during the call", frame)) {
    failed->round_trip_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return *failed;
  }
  auto t1 = Clock::now();
  if (frame.type == proto::MsgType::SandboxViolation) {
    CallResult v = w.violation(frame, "during the call");
    v.round_trip_seconds = std::chrono::duration<double>(t1 - t0).count();
    return v;
  }
  if (frame.type == proto::MsgType::BoundaryViolation) {
    auto b = proto::decode_boundary_violation(frame.payload);
    if (!b) return w.die(CallOutcome::Crashed, "sent a malformed boundary report during the call");
    CallResult v = w.die(CallOutcome::SandboxViolation, b->message);
    v.reason_code = b->reason_code;
    w.dead->reason_code = b->reason_code;
    v.round_trip_seconds = std::chrono::duration<double>(t1 - t0).count();
    return v;
  }
  std::optional<proto::RunInfoReply> info;
  if (frame.type == proto::MsgType::RunInfo) {
    info = proto::decode_run_info(frame.payload);
    if (!info) return w.die(CallOutcome::Crashed, "sent a malformed RUN_INFO during the call");
    switch (w.wait_frame(t0 + w.call_timeout, frame)) {
    case Impl::Wait::Frame: break;
    case Impl::Wait::Gone: return w.die_gone("during the call");
    case Impl::Wait::TimedOut: return w.die(CallOutcome::TimedOut, "timed out after RUN_INFO; the worker was killed");
    case Impl::Wait::Corrupt: return w.die(CallOutcome::Crashed, "corrupted the reply channel during the call");
    }
    t1 = Clock::now();
  }
  std::optional<proto::DoneReply> done;
  if (frame.type == proto::MsgType::Done) done = proto::decode_done(frame.payload);
  if (!done) return w.die(CallOutcome::Crashed, "sent a malformed reply during the call");

  CallResult r;
  r.kernel_status = done->status;
  r.kernel_seconds = static_cast<double>(done->kernel_ns) * 1e-9;
  r.cpu_seconds = static_cast<double>(done->cpu_ns) * 1e-9;
  r.round_trip_seconds = std::chrono::duration<double>(t1 - t0).count();
  if (done->has_outputs_hash) r.outputs_hash = done->outputs_hash;
  if (info) {
    r.time_kind = info->time_kind;
    r.compile_seconds = static_cast<double>(info->compile_ns) * 1e-9;
    r.wall_seconds = static_cast<double>(info->wall_ns) * 1e-9;
    r.outputs_valid = info->outputs_valid;
  }
  // A device-timed call: its kernel time is in the profiler's export, which is read (and
  // deleted) even when the call failed. An export that is missing or malformed fails the call.
  std::optional<std::string> profile_failure;
  if (info && (info->time_kind == "device" || !info->profile_dir.empty())) {
    Expected<DeviceTime> t = w.profile_root.path().empty()
                                 ? Expected<DeviceTime>(fail("the runner sent a device-timed call, but it was given no profile directory"))
                                 : take_call_profile(w.profile_root.path(), info->profile_dir);
    if (t) {
      r.kernel_seconds = t->elapsed_us * 1e-6;
      for (const KernelTime& k : t->kernels) r.device_kernels += k.launches;
    } else {
      profile_failure = "device time: " + t.error().message;
    }
  }
  if (done->status == 0 && profile_failure) {
    r.outcome = CallOutcome::KernelError;
    r.message = std::move(*profile_failure);
  } else if (done->status == 0) {
    r.outcome = CallOutcome::Ok;
    r.message = std::move(done->message);
  } else {
    r.outcome = CallOutcome::KernelError;
    r.message = done->message.empty() ? fmt::format("the kernel returned {} without a message", done->status)
                                      : std::move(done->message);
  }
  return r;
}

CallResult Worker::flush() {
  Impl& w = *m_impl;
  if (w.dead) return *w.dead;
  w.thaw();
  auto t0 = Clock::now();
  proto::Frame frame;
  if (auto failed = w.exchange(proto::encode_flush(), w.call_timeout, "while flushing the caches", frame)) {
    return *failed;
  }
  if (frame.type == proto::MsgType::SandboxViolation) return w.violation(frame, "while flushing the caches");
  if (frame.type != proto::MsgType::Flushed) return w.die(CallOutcome::Crashed, "sent a malformed reply to FLUSH");
  CallResult r;
  r.outcome = CallOutcome::Ok;
  r.round_trip_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

} // namespace temper::backend
