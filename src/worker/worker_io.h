// The worker end of backend/protocol.h's channels, for temper-cuda-worker: blocking frame I/O on
// the fixed fds, stray-fd cleanup and the watchdog that ends the worker when the judge is gone.
// (temper-worker keeps its own copies in worker_main.cpp; both follow the same rules.)
#pragma once

#include "backend/protocol.h"

#include <string>

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
bool start_watchdog();

// The standard preamble: checks the protocol fds are open, disables core dumps, closes stray
// fds, line-buffers stdout and announces READY.
void start_conversation(const char* name);

} // namespace temper::worker::io
