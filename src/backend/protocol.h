// The wire format between the judge (temper) and a temper-worker process. Header-only and
// standard-library-only: the worker includes it too and links nothing of temper.
//
// Channels (fd numbers in the worker, fixed by the judge at spawn time):
//   kCmdFd   judge -> worker commands (a unix stream socket, so the judge can send with
//            MSG_NOSIGNAL and never dies of SIGPIPE when the worker is gone)
//   kReplyFd worker -> judge replies (a pipe)
//   kArenaFd the shared arena memfd (its number is also sent in LOAD)
// stdin is /dev/null; stdout and stderr belong to the kernel and are only diagnostics.
//
// Framing: u32 length, then that many bytes: a u8 message type and its payload. Integers and
// doubles are in host byte order (both ends run on one machine); a string or list is a u32
// count followed by its bytes or elements.
//
// Conversation: the worker announces itself with READY (its protocol version) as soon as it has
// set itself up, before reading anything, so a worker that dies before READY is temper's problem
// (a broken install), not the kernel's. The judge sends LOAD once (it need not wait for READY
// first) and gets LOADED or LOAD_FAILED; then any number of RUN, each answered by one DONE; then
// EXIT (or it closes the socket), which ends the worker without a reply.
//
// The worker sandboxes itself while loading, before any code of the artifact runs (see
// docs/security.md). A forbidden system call, at any point after that, is answered by one
// SANDBOX_VIOLATION frame naming it, written from the worker's SIGSYS handler in place of the
// reply the judge was waiting for; the worker then exits. LOADED carries a one-line description
// of the sandbox that was installed (it says so when a part was unavailable on this kernel).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace temper::backend::protocol {

// 2: the sandbox (SANDBOX_VIOLATION, LOADED's description). 3: DONE carries the calling thread's
// CPU time too. A judge refuses a worker of another version, so it can never drive a stale
// worker that does not sandbox itself.
inline constexpr uint32_t kVersion = 3;
inline constexpr uint32_t kMaxFrame = 16u << 20; // a bigger length means a corrupt stream
inline constexpr int kCmdFd = 3;
inline constexpr int kReplyFd = 4;
inline constexpr int kArenaFd = 5;

enum class MsgType : uint8_t {
  Load = 1,
  Run = 2,
  Exit = 3,
  Flush = 4,
  Ready = 10,
  Loaded = 11,
  LoadFailed = 12,
  Done = 13,
  Flushed = 14,
  SandboxViolation = 15,
  BoundaryViolation = 16,
  RunInfo = 17, // optional, just before DONE: how the call was timed (the PyPTO runner sends it)
};

// One tensor as the kernel sees it: a strided view at `offset` bytes into the arena.
struct TensorDesc {
  int32_t dtype = 0; // a temper_dtype
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; // in elements, one per dimension
  uint64_t offset = 0;          // bytes from the arena start
  uint64_t bytes = 0;           // extent, checked by the worker against the arena size
};

// One attribute, with the fields of temper_attr that its kind uses.
struct AttrDesc {
  std::string name;
  int32_t kind = 0; // a temper_attr_kind
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

// How one declared input maps onto an input set's tensors (kernel ABI 2): a tensor, a tensor
// list, or an optional input left out. `first` and `count` index the set's tensors.
struct InputGroupDesc {
  int32_t kind = 0;  // 0 tensor, 1 list, 2 absent (core::InputKind's order)
  int32_t first = 0;
  int32_t count = 1;
};

struct LoadCommand {
  uint32_t version = kVersion;
  std::string artifact;             // path of the kernel's shared object
  int32_t arena_fd = kArenaFd;
  uint64_t arena_size = 0;
  uint64_t memory_limit = 0;        // address space allowed beyond the arena
  int32_t num_threads = 1;
  int32_t input_sets = 1;
  std::vector<TensorDesc> inputs;   // set-major: input_sets groups of the same inputs
  std::vector<TensorDesc> outputs;
  std::vector<AttrDesc> attrs;
  uint64_t flush_bytes = 0;         // cold-cache buffer the worker allocates now, written by FLUSH
  std::vector<int32_t> cpus;        // CPU affinity (both arms of a paired job get the same); empty: inherit
  // One per declared input when some input is a tensor list or absent; empty when every input is
  // one tensor (each tensor its own input). A trailing field sent only when non-empty: frames
  // without it decode as before, so runners that never see such a case need not know it.
  std::vector<InputGroupDesc> input_groups;
  // temper-cuda-worker only: the device-content library (docs/cuda.md, "Timed calls on the
  // device"), a shared object that mixes inputs and hashes outputs on the device. A trailing
  // field sent only when non-empty (input_groups, possibly empty, is then sent before it).
  std::string device_content;
  // The cold-cache step FLUSH performs: kColdBuffer writes the flush_bytes buffer; kColdEvict
  // flushes the worker's own resident memory line by line (worker/evict.h) and allocates no
  // buffer. A trailing field sent only when not kColdBuffer (the two fields before it are then
  // sent too, possibly empty): the runners, which only ever flush with a buffer, never see it.
  uint8_t cold_step = 0;
};

inline constexpr uint8_t kColdBuffer = 0;
inline constexpr uint8_t kColdEvict = 1;

// RunCommand::flags.
inline constexpr uint8_t kRunDeviceContent = 1; // inputs: set 0 and set 1 mixed element by element under content_seed
inline constexpr uint8_t kRunFetchOutputs = 2;  // with kRunDeviceContent: the outputs back into the arena after the call

struct RunCommand {
  int32_t set = 0;
  // Trailing fields, sent only when flags is non-zero: plain RUN frames decode as before.
  uint8_t flags = 0;
  uint64_t content_seed = 0;
};

struct LoadFailedReply {
  bool harness = false; // true: the worker's own setup failed (mmap, limits), not the artifact
  std::string message;
};

struct DoneReply {
  int32_t status = 0;    // the kernel's return value
  int64_t kernel_ns = 0; // CLOCK_MONOTONIC around exactly the kernel call
  // CLOCK_THREAD_CPUTIME_ID of the calling thread around the same call (just outside the
  // monotonic reads): the kernel's time without the time other processes held its CPU.
  int64_t cpu_ns = 0;
  std::string message;   // set_error text, empty if none
  // The outputs' hash computed where they live (a RUN with kRunDeviceContent): a trailing
  // field sent only then, so other workers' frames decode as before.
  bool has_outputs_hash = false;
  uint64_t outputs_hash = 0;
};

// What a runner that is not temper-worker adds about one call (runners/pypto): the kind of
// DONE's kernel time ("host": wall clock around the call; "simulated": a cost model's estimate;
// "device": the NPU profiler's, read by the judge from `profile_dir`, DONE carrying the host
// wall time), the seconds this call spent compiling (kept out of kernel_ns), the host wall time,
// and whether the outputs hold computed values (PyPTO's RunMode.SIM writes none). temper-worker
// never sends it. `profile_dir` is a trailing field sent only with "device": frames without it
// decode as before, so the protocol version is unchanged.
struct RunInfoReply {
  std::string time_kind;
  int64_t compile_ns = 0;
  int64_t wall_ns = 0;
  bool outputs_valid = true;
  std::string profile_dir; // the profiler's output for this call, inside the runner's --profile-root
};

// The kernel attempted a system call the sandbox forbids; the call did not happen.
struct SandboxViolationReply {
  std::string syscall; // its name, qualified where the filter looked at arguments: "openat (for writing)"
  int32_t number = -1; // its number on the worker's architecture; -1 if unknown
};

// A runtime boundary check of the worker caught the kernel (temper-cuda-worker: work still
// running after the timed window). Sent in place of DONE; the worker then exits. Workers that
// have no such check never send it, so the protocol version is unchanged.
struct BoundaryViolationReply {
  std::string reason_code; // REJECTED_CHEAT's reason, e.g. "work_outside_timed_window"
  std::string message;
};

// --- encoding ---------------------------------------------------------------------------------

class Writer {
public:
  explicit Writer(MsgType type) {
    m_buf.resize(4);
    u8(static_cast<uint8_t>(type));
  }
  template <typename T>
  void pod(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    m_buf.append(b, sizeof(T));
  }
  void u8(uint8_t v) { pod(v); }
  void i32(int32_t v) { pod(v); }
  void u32(uint32_t v) { pod(v); }
  void i64(int64_t v) { pod(v); }
  void u64(uint64_t v) { pod(v); }
  void f64(double v) { pod(v); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    m_buf.append(s.data(), s.size());
  }
  template <typename T>
  void list(const std::vector<T>& v) {
    u32(static_cast<uint32_t>(v.size()));
    for (const T& x : v) pod(x);
  }
  // The complete frame, length prefix filled in.
  std::string finish() {
    uint32_t n = static_cast<uint32_t>(m_buf.size() - 4);
    std::memcpy(m_buf.data(), &n, 4);
    return std::move(m_buf);
  }

private:
  std::string m_buf;
};

// Reads a payload; any overrun clears ok() and yields zeros from then on.
class Reader {
public:
  explicit Reader(std::string_view payload) : m_p(payload) {}
  bool ok() const { return m_ok; }
  bool at_end() const { return m_p.empty(); }
  template <typename T>
  T pod() {
    T v{};
    if (!m_ok || m_p.size() < sizeof(T)) {
      m_ok = false;
      return v;
    }
    std::memcpy(&v, m_p.data(), sizeof(T));
    m_p.remove_prefix(sizeof(T));
    return v;
  }
  uint8_t u8() { return pod<uint8_t>(); }
  int32_t i32() { return pod<int32_t>(); }
  uint32_t u32() { return pod<uint32_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  uint64_t u64() { return pod<uint64_t>(); }
  double f64() { return pod<double>(); }
  std::string str() {
    uint32_t n = u32();
    if (!m_ok || m_p.size() < n) {
      m_ok = false;
      return {};
    }
    std::string s(m_p.substr(0, n));
    m_p.remove_prefix(n);
    return s;
  }
  template <typename T>
  std::vector<T> list() {
    uint32_t n = u32();
    // Checked before allocating, so a corrupt count cannot ask for gigabytes.
    if (!m_ok || m_p.size() / sizeof(T) < n) {
      m_ok = false;
      return {};
    }
    std::vector<T> v(n);
    for (auto& x : v) x = pod<T>();
    return v;
  }
  // A count of records that each take at least `min_bytes`, bounded by what remains.
  uint32_t count(size_t min_bytes) {
    uint32_t n = u32();
    if (m_ok && m_p.size() / min_bytes < n) m_ok = false;
    return m_ok ? n : 0;
  }

private:
  std::string_view m_p;
  bool m_ok = true;
};

inline void put(Writer& w, const TensorDesc& t) {
  w.i32(t.dtype);
  w.list(t.shape);
  w.list(t.strides);
  w.u64(t.offset);
  w.u64(t.bytes);
}

inline TensorDesc get_tensor(Reader& r) {
  TensorDesc t;
  t.dtype = r.i32();
  t.shape = r.list<int64_t>();
  t.strides = r.list<int64_t>();
  t.offset = r.u64();
  t.bytes = r.u64();
  return t;
}

inline void put(Writer& w, const AttrDesc& a) {
  w.str(a.name);
  w.i32(a.kind);
  w.i64(a.i);
  w.f64(a.f);
  w.str(a.s);
  w.list(a.ints);
  w.list(a.floats);
}

inline AttrDesc get_attr(Reader& r) {
  AttrDesc a;
  a.name = r.str();
  a.kind = r.i32();
  a.i = r.i64();
  a.f = r.f64();
  a.s = r.str();
  a.ints = r.list<int64_t>();
  a.floats = r.list<double>();
  return a;
}

inline constexpr size_t kMinTensorBytes = 4 + 4 + 4 + 8 + 8;
inline constexpr size_t kMinAttrBytes = 4 + 4 + 8 + 8 + 4 + 4 + 4;

inline std::string encode(const LoadCommand& c) {
  Writer w(MsgType::Load);
  w.u32(c.version);
  w.str(c.artifact);
  w.i32(c.arena_fd);
  w.u64(c.arena_size);
  w.u64(c.memory_limit);
  w.i32(c.num_threads);
  w.i32(c.input_sets);
  w.u32(static_cast<uint32_t>(c.inputs.size()));
  for (const auto& t : c.inputs) put(w, t);
  w.u32(static_cast<uint32_t>(c.outputs.size()));
  for (const auto& t : c.outputs) put(w, t);
  w.u32(static_cast<uint32_t>(c.attrs.size()));
  for (const auto& a : c.attrs) put(w, a);
  w.u64(c.flush_bytes);
  w.list(c.cpus);
  const bool cold_step = c.cold_step != kColdBuffer;
  if (!c.input_groups.empty() || !c.device_content.empty() || cold_step) w.list(c.input_groups);
  if (!c.device_content.empty() || cold_step) w.str(c.device_content);
  if (cold_step) w.u8(c.cold_step);
  return w.finish();
}

inline std::string encode(const RunCommand& c) {
  Writer w(MsgType::Run);
  w.i32(c.set);
  if (c.flags != 0) {
    w.u8(c.flags);
    w.u64(c.content_seed);
  }
  return w.finish();
}

inline std::string encode_ready() {
  Writer w(MsgType::Ready);
  w.u32(kVersion);
  return w.finish();
}

inline std::string encode_exit() { return Writer(MsgType::Exit).finish(); }
inline std::string encode_flush() { return Writer(MsgType::Flush).finish(); }
inline std::string encode_flushed() { return Writer(MsgType::Flushed).finish(); }
inline std::string encode_loaded(std::string_view sandbox = {}) {
  Writer w(MsgType::Loaded);
  w.str(sandbox);
  return w.finish();
}

inline std::string encode(const SandboxViolationReply& r) {
  Writer w(MsgType::SandboxViolation);
  w.str(r.syscall);
  w.i32(r.number);
  return w.finish();
}

inline std::string encode(const BoundaryViolationReply& r) {
  Writer w(MsgType::BoundaryViolation);
  w.str(r.reason_code);
  w.str(r.message);
  return w.finish();
}

inline std::string encode(const LoadFailedReply& r) {
  Writer w(MsgType::LoadFailed);
  w.u8(r.harness ? 1 : 0);
  w.str(r.message);
  return w.finish();
}

inline std::string encode(const DoneReply& r) {
  Writer w(MsgType::Done);
  w.i32(r.status);
  w.i64(r.kernel_ns);
  w.i64(r.cpu_ns);
  w.str(r.message);
  if (r.has_outputs_hash) w.u64(r.outputs_hash);
  return w.finish();
}

// --- decoding: each takes the payload after the type byte; nullopt when malformed -------------

inline std::optional<LoadCommand> decode_load(std::string_view payload) {
  Reader r(payload);
  LoadCommand c;
  c.version = r.u32();
  c.artifact = r.str();
  c.arena_fd = r.i32();
  c.arena_size = r.u64();
  c.memory_limit = r.u64();
  c.num_threads = r.i32();
  c.input_sets = r.i32();
  for (uint32_t k = 0, n = r.count(kMinTensorBytes); k < n && r.ok(); ++k) c.inputs.push_back(get_tensor(r));
  for (uint32_t k = 0, n = r.count(kMinTensorBytes); k < n && r.ok(); ++k) c.outputs.push_back(get_tensor(r));
  for (uint32_t k = 0, n = r.count(kMinAttrBytes); k < n && r.ok(); ++k) c.attrs.push_back(get_attr(r));
  c.flush_bytes = r.u64();
  c.cpus = r.list<int32_t>();
  if (r.ok() && !r.at_end()) c.input_groups = r.list<InputGroupDesc>();
  if (r.ok() && !r.at_end()) c.device_content = r.str();
  if (r.ok() && !r.at_end()) c.cold_step = r.u8();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return c;
}

inline std::optional<uint32_t> decode_ready(std::string_view payload) {
  Reader r(payload);
  uint32_t version = r.u32();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return version;
}

inline std::optional<RunCommand> decode_run(std::string_view payload) {
  Reader r(payload);
  RunCommand c;
  c.set = r.i32();
  if (r.ok() && !r.at_end()) {
    c.flags = r.u8();
    c.content_seed = r.u64();
  }
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return c;
}

inline std::optional<LoadFailedReply> decode_load_failed(std::string_view payload) {
  Reader r(payload);
  LoadFailedReply f;
  f.harness = r.u8() != 0;
  f.message = r.str();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return f;
}

// LOADED's sandbox description.
inline std::optional<std::string> decode_loaded(std::string_view payload) {
  Reader r(payload);
  std::string sandbox = r.str();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return sandbox;
}

inline std::optional<SandboxViolationReply> decode_sandbox_violation(std::string_view payload) {
  Reader r(payload);
  SandboxViolationReply v;
  v.syscall = r.str();
  v.number = r.i32();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return v;
}

inline std::optional<BoundaryViolationReply> decode_boundary_violation(std::string_view payload) {
  Reader r(payload);
  BoundaryViolationReply v;
  v.reason_code = r.str();
  v.message = r.str();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return v;
}

inline std::string encode(const RunInfoReply& r) {
  Writer w(MsgType::RunInfo);
  w.str(r.time_kind);
  w.i64(r.compile_ns);
  w.i64(r.wall_ns);
  w.u8(r.outputs_valid ? 1 : 0);
  if (!r.profile_dir.empty()) w.str(r.profile_dir);
  return w.finish();
}

inline std::optional<RunInfoReply> decode_run_info(std::string_view payload) {
  Reader r(payload);
  RunInfoReply i;
  i.time_kind = r.str();
  i.compile_ns = r.i64();
  i.wall_ns = r.i64();
  i.outputs_valid = r.u8() != 0;
  if (r.ok() && !r.at_end()) i.profile_dir = r.str();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return i;
}

inline std::optional<DoneReply> decode_done(std::string_view payload) {
  Reader r(payload);
  DoneReply d;
  d.status = r.i32();
  d.kernel_ns = r.i64();
  d.cpu_ns = r.i64();
  d.message = r.str();
  if (r.ok() && !r.at_end()) {
    d.has_outputs_hash = true;
    d.outputs_hash = r.u64();
  }
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return d;
}

// --- framing ----------------------------------------------------------------------------------

struct Frame {
  MsgType type{};
  std::string payload; // after the type byte
};

enum class FrameStatus { Complete, Incomplete, Corrupt };

// Takes one frame off the front of `buffer` when it holds a complete one.
inline FrameStatus take_frame(std::string& buffer, Frame& out) {
  if (buffer.size() < 4) return FrameStatus::Incomplete;
  uint32_t n = 0;
  std::memcpy(&n, buffer.data(), 4);
  if (n < 1 || n > kMaxFrame) return FrameStatus::Corrupt;
  if (buffer.size() - 4 < n) return FrameStatus::Incomplete;
  out.type = static_cast<MsgType>(static_cast<uint8_t>(buffer[4]));
  out.payload.assign(buffer, 5, n - 1);
  buffer.erase(0, 4 + static_cast<size_t>(n));
  return FrameStatus::Complete;
}

} // namespace temper::backend::protocol
