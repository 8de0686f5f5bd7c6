// temper-profile-driver: loads one kernel artifact and calls it exactly once, on tensors in a
// file the judge wrote, so that a tool which runs the whole process (valgrind's cache simulator)
// can observe the call. The call happens inside temper_profiled_call, the function the
// simulator's collection is switched on for, so the driver's own setup is not counted.
//
//   temper-profile-driver LOAD_FILE ARENA_FILE
//
// LOAD_FILE holds one LOAD frame of backend/protocol.h (the same descriptors a worker gets);
// ARENA_FILE the arena's bytes, inputs restored and outputs poisoned. It maps ARENA_FILE
// privately, so nothing is written back. Exit status: 0 when the kernel returned 0, 3 when it
// returned non-zero, 2 for a usage or setup problem.
//
// The driver has no sandbox of its own (valgrind cannot run a seccomp-filtered guest): the judge
// runs it only on candidates that passed the boundary checks, inside bubblewrap where available.
#include "backend/protocol.h"
#include "worker/worker_io.h"

#include <temper/kernel.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace proto = temper::backend::protocol;

namespace {

int usage_error(const std::string& what) {
  std::fprintf(stderr, "temper-profile-driver: %s\n", what.c_str());
  return 2;
}

bool read_whole(const char* path, std::string& out) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  bool ok = std::ferror(f) == 0;
  std::fclose(f);
  return ok;
}

bool make_tensor(const proto::TensorDesc& d, unsigned char* base, uint64_t size, temper_tensor& t) {
  if (d.shape.size() > TEMPER_MAX_RANK || d.strides.size() != d.shape.size()) return false;
  if (d.offset > size || d.bytes > size - d.offset) return false;
  t = temper_tensor{};
  t.data = base + d.offset;
  t.dtype = d.dtype;
  t.rank = static_cast<int32_t>(d.shape.size());
  for (size_t k = 0; k < d.shape.size(); ++k) {
    t.shape[k] = d.shape[k];
    t.strides[k] = d.strides[k];
  }
  return true;
}

std::string g_error;
extern "C" void driver_set_error(const char* message) { g_error = message ? message : ""; }

} // namespace

// Not static and never inlined: valgrind switches collection on when this function is entered.
extern "C" __attribute__((noinline, visibility("default"))) int temper_profiled_call(temper_kernel_fn fn, const temper_args* args) {
  int rc = fn(args);
  asm volatile("" ::: "memory");
  return rc;
}

int main(int argc, char** argv) {
  if (argc != 3) return usage_error("usage: temper-profile-driver LOAD_FILE ARENA_FILE");
  std::string frame;
  if (!read_whole(argv[1], frame)) return usage_error(std::string("cannot read ") + argv[1]);
  proto::Frame f;
  if (proto::take_frame(frame, f) != proto::FrameStatus::Complete || f.type != proto::MsgType::Load) {
    return usage_error("the load file does not hold a LOAD frame");
  }
  auto cmd = proto::decode_load(f.payload);
  if (!cmd) return usage_error("malformed LOAD frame");
  if (cmd->input_sets < 1 || cmd->inputs.size() % static_cast<size_t>(cmd->input_sets) != 0) {
    return usage_error("inputs do not form whole input sets");
  }

  int fd = ::open(argv[2], O_RDONLY | O_CLOEXEC);
  if (fd < 0) return usage_error(std::string("cannot open ") + argv[2] + ": " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < cmd->arena_size || cmd->arena_size == 0) {
    return usage_error("the arena file is smaller than the LOAD command says");
  }
  void* base = ::mmap(nullptr, cmd->arena_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) return usage_error(std::string("cannot map the arena: ") + std::strerror(errno));
  auto* b = static_cast<unsigned char*>(base);

  size_t per_set = cmd->inputs.size() / static_cast<size_t>(cmd->input_sets);
  if (std::string bad = temper::worker::io::check_input_groups(*cmd, per_set); !bad.empty()) return usage_error(bad);
  std::vector<temper_tensor> inputs(per_set), outputs(cmd->outputs.size());
  for (size_t i = 0; i < per_set; ++i) {
    if (!make_tensor(cmd->inputs[i], b, cmd->arena_size, inputs[i])) return usage_error("invalid input descriptor");
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!make_tensor(cmd->outputs[i], b, cmd->arena_size, outputs[i])) return usage_error("invalid output descriptor");
  }
  std::vector<temper_attr> attrs = temper::worker::io::kernel_attrs(*cmd);

  void* handle = ::dlopen(cmd->artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    return usage_error(std::string("cannot load the artifact: ") + (e ? e : cmd->artifact.c_str()));
  }
  void* sym = ::dlsym(handle, "temper_kernel");
  if (sym == nullptr) return usage_error("the artifact does not export temper_kernel");

  temper::worker::io::InputView view;
  view.resize(per_set, cmd->input_groups);
  view.arrange(inputs.data(), cmd->input_groups);
  int32_t abi = temper::worker::io::kernel_abi_version(handle);
  if (abi < 2 && !cmd->input_groups.empty()) return usage_error("the kernel was built for kernel ABI version 1, which cannot take this case's inputs");
  temper_args args{};
  args.abi_version = abi;
  args.num_inputs = static_cast<int32_t>(view.inputs.size());
  args.inputs = view.inputs.data();
  args.input_lists = view.lists.data();
  args.num_outputs = static_cast<int32_t>(outputs.size());
  args.outputs = outputs.data();
  args.num_attrs = static_cast<int32_t>(attrs.size());
  args.attrs = attrs.data();
  args.num_threads = cmd->num_threads;
  args.set_error = driver_set_error;
  int rc = temper_profiled_call(reinterpret_cast<temper_kernel_fn>(sym), &args);
  if (rc != 0) {
    std::fprintf(stderr, "temper-profile-driver: the kernel returned %d%s%s\n", rc, g_error.empty() ? "" : ": ", g_error.c_str());
    return 3;
  }
  return 0;
}
