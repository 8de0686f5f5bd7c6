// CPU time of another process, read by its parent: the judge measures what a worker's threads
// do between and during its calls (docs/security.md, "work outside the call").
#pragma once

#include <optional>
#include <sys/types.h>

namespace temper::util {

// All threads of process `pid`, in seconds (its CPU-time clock); none when it cannot be read.
std::optional<double> process_cpu_seconds(pid_t pid);

// Thread `tid` of process `pid`, in seconds (/proc/PID/task/TID/schedstat); none when unreadable.
std::optional<double> thread_cpu_seconds(pid_t pid, pid_t tid);

// Threads of process `pid` now (/proc/PID/stat); 0 when unreadable.
int thread_count(pid_t pid);

} // namespace temper::util
