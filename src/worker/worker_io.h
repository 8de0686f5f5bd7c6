// The worker end of backend/protocol.h's channels, shared by temper-worker and
// temper-cuda-worker: blocking frame I/O on the fixed fds, stray-fd cleanup, the standard
// preamble, the command loop, the watchdog that ends the worker when the judge is gone, the
// checks every LOAD passes, and the kernel ABI's call arguments and set_error message. Each
// worker brings only what its LOAD, RUN and FLUSH do with its memory and device.
//
// temper-worker runs under worker/sandbox.h (Landlock and a seccomp filter), so the order of
// calls matters there: start_conversation runs before the sandbox (it calls setrlimit, which
// the filter traps); start_watchdog runs after it (Landlock binds the calling thread and its
// later children only, and install_sandbox refuses a process with a second thread). Everything
// else here only reads, writes, polls, allocates memory and exits, which the filter allows.
#pragma once

#include "backend/protocol.h"

#include <temper/kernel.h>

#include <string>
#include <string_view>
#include <vector>

namespace temper::worker::io {

// Prints "NAME: WHAT" on stderr and exits with status 2 (a broken conversation, not a kernel's doing).
[[noreturn]] void die(const char* name, const char* what);

// Writes the whole frame to the reply fd; exits quietly when the judge is gone.
void write_all(int fd, const std::string& s);

// The next command; exits quietly on end of stream, dies on a corrupt length.
backend::protocol::Frame read_frame(int fd, const char* name);

// Closes every fd above the arena's: only stdio and the protocol fds survive.
void close_inherited_fds();

// A small thread that ends the process when the judge's end of the command socket goes away.
// False when the thread cannot be created. Under a sandbox, call it after the sandbox is on.
bool start_watchdog();

// The standard preamble: checks the protocol fds are open, disables core dumps, closes stray
// fds, line-buffers stdout and announces READY. Call it before any sandbox.
void start_conversation(const char* name);

// A LOAD_FAILED reply; `harness` when the judge or the worker is at fault, not the kernel.
std::string load_failed(bool harness, const std::string& message);

// The checks every LOAD passes before the worker maps or allocates anything: protocol
// version, whole input sets, an arena size this process can map. Empty when they hold, else
// the LOAD_FAILED message.
std::string check_load(const backend::protocol::LoadCommand& c);

// The LOAD's attributes as the kernel ABI's structs; they point into `c`, which outlives them.
std::vector<temper_attr> kernel_attrs(const backend::protocol::LoadCommand& c);

// What a worker does with each command; the conversation itself is serve()'s.
struct Handlers {
  std::string (*load)(std::string_view payload); // the reply frame: LOADED or LOAD_FAILED
  std::string (*run)(std::string_view payload);  // the reply frame: DONE (or another the worker defines)
  void (*flush)();                               // before FLUSHED is sent
};

// Answers commands until EXIT or the end of the stream: one LOAD, then RUN and FLUSH in any
// order. A second LOAD or an unknown command dies. Never returns.
[[noreturn]] void serve(const char* name, const Handlers& handlers);

// The kernel ABI's set_error callback (both ABIs): keeps the first 4096 bytes of the message
// for the DONE reply; nullptr clears it. It never allocates and makes no system call.
extern "C" void set_kernel_error(const char* message);

// Clears the message before a call.
void clear_kernel_error();

// The kernel ABI's arguments for one call over the per-call copies (a kernel may scribble on
// them), with set_kernel_error as its callback; clears the message. `lists` (ABI 2, one per
// input, or null for a plain case) and `abi_version` (the version the kernel was built for) go
// into the arguments as they are.
temper_args call_args(std::vector<temper_tensor>& inputs, std::vector<temper_tensor>& outputs, std::vector<temper_attr>& attrs,
                      int32_t num_threads, const temper_tensor_list* lists = nullptr,
                      int32_t abi_version = TEMPER_ABI_VERSION);

// The version of the kernel ABI an artifact was built for: its temper_kernel_abi symbol
// (kernel.h defines it since version 2), else 1.
int32_t kernel_abi_version(void* handle);

// The checks on LOAD's input groups (kernel ABI 2) against a set of `per_set` tensors: each
// group in range, the kinds known, the groups covering the tensors in order. Empty when fine.
std::string check_input_groups(const backend::protocol::LoadCommand& c, size_t per_set);

// One call's view of an input set (kernel ABI 2), sized once at LOAD so a call allocates
// nothing: the set's tensors (a per-call copy), then one descriptor and one list per declared
// input. Without input groups each tensor is its own input.
struct InputView {
  std::vector<temper_tensor> tensors;
  std::vector<temper_tensor> inputs;
  std::vector<temper_tensor_list> lists;

  void resize(size_t per_set, const std::vector<backend::protocol::InputGroupDesc>& groups);
  // Copies the set's pristine descriptors and groups them: a tensor input is its descriptor, a
  // list or an absent input a descriptor with no data (the list says which).
  void arrange(const temper_tensor* set, const std::vector<backend::protocol::InputGroupDesc>& groups);
};

// The message the last call set, empty when none.
std::string kernel_error();

} // namespace temper::worker::io
