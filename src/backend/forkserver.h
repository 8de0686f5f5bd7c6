// Workers forked from a server that has done a runner's slow start once. The PyTorch reference
// arm's runner imports torch (2-3 s on a 2-core machine) before it can answer LOAD, and a timing
// job starts a new worker for every life of every job of every case: through a forkserver the
// import happens once per judgement instead (docs/timing.md, "Worker lives").
//
// The forked worker is temper's own child, not the server's: temper is a child subreaper while
// a forkserver exists, and the server forks each worker through an intermediate process that
// exits at once, so the worker is reparented to temper. It is therefore waited for, frozen,
// measured and killed exactly like a worker temper spawned itself (backend/worker.cpp).
#pragma once

#include "util/error.h"
#include "util/process.h"

#include <chrono>

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace temper::backend {

class Forkserver {
public:
  Forkserver();
  ~Forkserver(); // ends the server; workers already forked are not affected
  Forkserver(const Forkserver&) = delete;
  Forkserver& operator=(const Forkserver&) = delete;

  // A new worker forked from a server started (or restarted) as `argv` + "--forkserver" with
  // the environment `env` ("NAME=value"), `exe` being the program to run: its stdin /dev/null,
  // its stdout and stderr `out_fd`, its fds 3, 4 and 5 `cmd_fd`, `reply_fd` and `arena_fd`, in a
  // process group of its own. An error when the server cannot start, answer or fork: the caller
  // then starts the worker itself, and a server that failed is not tried again for that command.
  Expected<pid_t> spawn(const std::string& exe, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                        int out_fd, int cmd_fd, int reply_fd, int arena_fd);

  int servers_started() const; // how often a server was started (one per distinct command)
  int workers_forked() const;  // workers forked so far

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// One run of a process forked from `server`, to completion, as util::ProcessRunner runs a
// command: `input` on its fd 3 (then end of file), stdin /dev/null, stdout and stderr captured,
// a wall-clock limit after which its process group is killed. An error when the server cannot
// fork it (the caller then runs the command itself).
Expected<util::ProcessResult> run_forked(Forkserver& server, const std::string& exe, const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env, const std::string& input,
                                         std::chrono::milliseconds timeout, size_t max_output_bytes = 4 << 20);

} // namespace temper::backend
