// How many threads a kernel may use: a count, or "all" (every CPU this process may run on, by
// its affinity mask, so a job started under taskset or a Slurm allocation gets what it was
// given). One parser for temper.yaml's `threads:` and the `--threads` flags.
#pragma once

#include "util/error.h"

#include <string_view>

namespace temper::core {

inline constexpr int kMaxThreads = 4096;

// The CPUs this process may run on (sched_getaffinity); at least 1.
int usable_cpus();

// "all" -> usable_cpus(); "N" -> N in [1, kMaxThreads]. The error says what is accepted.
Expected<int> parse_thread_count(std::string_view text);

} // namespace temper::core
