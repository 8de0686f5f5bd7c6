#include "worker/worker_io.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace temper::worker::io {

namespace proto = backend::protocol;

namespace {

constexpr size_t kMaxErrorBytes = 4096;

// Static, so that a kernel's set_error never allocates (it may run on any of its threads).
char g_error[kMaxErrorBytes];
size_t g_error_len = 0;

bool read_exact(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// If the judge dies (crash, SIGKILL, Ctrl-C on temper) while a kernel hangs, nothing would
// ever stop this process: a tiny thread watches the command socket and ends the process when
// the judge's end goes away. It only polls; it never reads, so commands stay with main().
// temper-worker starts it after the sandbox, so that it is confined like every other thread
// (before that, main() blocks only in reads of the command socket, which end when the judge
// does).
void* watchdog(void*) {
  for (;;) {
    pollfd p{proto::kCmdFd, POLLRDHUP, 0};
    int rc = ::poll(&p, 1, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) ::_exit(0);
  }
}

} // namespace

void die(const char* name, const char* what) {
  std::fprintf(stderr, "%s: %s\n", name, what);
  std::fflush(nullptr);
  ::_exit(2);
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) ::_exit(0); // the judge is gone: nobody is left to report to
    p += put;
    n -= static_cast<size_t>(put);
  }
}

proto::Frame read_frame(int fd, const char* name) {
  char len[4];
  if (!read_exact(fd, len, 4)) ::_exit(0);
  uint32_t n = 0;
  std::memcpy(&n, len, 4);
  if (n < 1 || n > proto::kMaxFrame) die(name, "corrupt command stream");
  std::string body(n, '\0');
  if (!read_exact(fd, body.data(), n)) ::_exit(0);
  proto::Frame f;
  f.type = static_cast<proto::MsgType>(static_cast<uint8_t>(body[0]));
  f.payload = body.substr(1);
  return f;
}

// Keeps the kernel from seeing the judge's files.
void close_inherited_fds() {
  constexpr int kFirst = proto::kArenaFd + 1;
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, kFirst, ~0U, 0) == 0) return;
#endif
  long max = ::sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (int fd = kFirst; fd < max; ++fd) ::close(fd);
}

bool start_watchdog() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  bool started = pthread_create(&t, &attr, watchdog, nullptr) == 0;
  pthread_attr_destroy(&attr);
  return started;
}

void start_conversation(const char* name) {
  if (::fcntl(proto::kCmdFd, F_GETFD) < 0 || ::fcntl(proto::kReplyFd, F_GETFD) < 0) {
    die(name, "command and reply fds are not open (the worker is started by temper)");
  }
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core); // a crashing kernel must not leave gigabytes of core behind
  close_inherited_fds();
  // stdout is a pipe, so stdio would buffer it fully and lose a crashing kernel's last lines:
  // those are exactly the diagnostics worth keeping.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  write_all(proto::kReplyFd, proto::encode_ready());
}

std::string load_failed(bool harness, const std::string& message) {
  return proto::encode(proto::LoadFailedReply{harness, message});
}

std::string check_load(const proto::LoadCommand& c) {
  if (c.version != proto::kVersion) {
    return "protocol version mismatch: judge " + std::to_string(c.version) + ", worker " + std::to_string(proto::kVersion);
  }
  if (c.input_sets < 1 || c.inputs.size() % static_cast<size_t>(c.input_sets) != 0) return "inputs do not form whole input sets";
  if (c.arena_size == 0 || c.arena_size > SIZE_MAX) return "invalid arena size";
  return "";
}

std::vector<temper_attr> kernel_attrs(const proto::LoadCommand& c) {
  std::vector<temper_attr> out;
  for (const auto& a : c.attrs) {
    temper_attr t{};
    t.name = a.name.c_str();
    t.kind = a.kind;
    t.i = a.i;
    t.f = a.f;
    t.s = a.s.c_str();
    t.ints = a.ints.data();
    t.floats = a.floats.data();
    t.count = a.kind == TEMPER_ATTR_FLOAT_LIST ? static_cast<int64_t>(a.floats.size()) : static_cast<int64_t>(a.ints.size());
    out.push_back(t);
  }
  return out;
}

void serve(const char* name, const Handlers& h) {
  bool loaded = false;
  for (;;) {
    proto::Frame f = read_frame(proto::kCmdFd, name);
    switch (f.type) {
    case proto::MsgType::Load:
      if (loaded) die(name, "second LOAD command");
      loaded = true;
      write_all(proto::kReplyFd, h.load(f.payload));
      break;
    case proto::MsgType::Run:
      write_all(proto::kReplyFd, h.run(f.payload));
      break;
    case proto::MsgType::Flush:
      h.flush();
      write_all(proto::kReplyFd, proto::encode_flushed());
      break;
    case proto::MsgType::Exit:
      // _exit, not exit: the artifact's static destructors are the kernel's code and do not
      // get to run (or hang) after the judge is done with it.
      std::fflush(nullptr);
      ::_exit(0);
    default:
      die(name, "unknown command");
    }
  }
}

extern "C" void set_kernel_error(const char* message) {
  if (message == nullptr) {
    g_error_len = 0;
    return;
  }
  size_t n = ::strnlen(message, kMaxErrorBytes);
  std::memcpy(g_error, message, n);
  g_error_len = n;
}

void clear_kernel_error() { g_error_len = 0; }

int32_t kernel_abi_version(void* handle) {
  ::dlerror();
  const void* sym = ::dlsym(handle, "temper_kernel_abi");
  if (sym == nullptr) return 1;
  int32_t v = 1;
  std::memcpy(&v, sym, sizeof v);
  return v >= 1 ? v : 1;
}

std::string check_input_groups(const proto::LoadCommand& c, size_t per_set) {
  size_t next = 0;
  for (const auto& g : c.input_groups) {
    if (g.kind < 0 || g.kind > 2) return "an input group of unknown kind";
    if (g.first < 0 || g.count < 0 || (g.kind == 0 && g.count != 1) || (g.kind == 2 && g.count != 0))
      return "a malformed input group";
    if (static_cast<size_t>(g.first) != next || static_cast<size_t>(g.first) + static_cast<size_t>(g.count) > per_set)
      return "input groups do not cover the input set's tensors in order";
    next += static_cast<size_t>(g.count);
  }
  if (!c.input_groups.empty() && next != per_set) return "input groups do not cover the input set's tensors";
  return "";
}

void InputView::resize(size_t per_set, const std::vector<proto::InputGroupDesc>& groups) {
  tensors.resize(per_set);
  size_t n = groups.empty() ? per_set : groups.size();
  inputs.resize(n);
  lists.resize(n);
}

void InputView::arrange(const temper_tensor* set, const std::vector<proto::InputGroupDesc>& groups) {
  std::copy(set, set + tensors.size(), tensors.begin());
  if (groups.empty()) {
    for (size_t k = 0; k < tensors.size(); ++k) {
      inputs[k] = tensors[k];
      lists[k] = temper_tensor_list{1, &inputs[k]};
    }
    return;
  }
  for (size_t k = 0; k < groups.size(); ++k) {
    const auto& g = groups[k];
    if (g.kind == 0) {
      inputs[k] = tensors[static_cast<size_t>(g.first)];
      lists[k] = temper_tensor_list{1, &inputs[k]};
    } else {
      inputs[k] = temper_tensor{};
      if (g.count > 0) inputs[k].dtype = tensors[static_cast<size_t>(g.first)].dtype;
      lists[k] = temper_tensor_list{g.count, g.count > 0 ? &tensors[static_cast<size_t>(g.first)] : nullptr};
    }
  }
}

temper_args call_args(std::vector<temper_tensor>& inputs, std::vector<temper_tensor>& outputs, std::vector<temper_attr>& attrs,
                      int32_t num_threads, const temper_tensor_list* lists, int32_t abi_version) {
  temper_args args{};
  args.abi_version = abi_version;
  args.input_lists = lists;
  args.num_inputs = static_cast<int32_t>(inputs.size());
  args.inputs = inputs.data();
  args.num_outputs = static_cast<int32_t>(outputs.size());
  args.outputs = outputs.data();
  args.num_attrs = static_cast<int32_t>(attrs.size());
  args.attrs = attrs.data();
  args.num_threads = num_threads;
  args.set_error = set_kernel_error;
  clear_kernel_error();
  return args;
}

std::string kernel_error() { return std::string(g_error, g_error_len); }

} // namespace temper::worker::io
