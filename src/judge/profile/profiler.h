// Profiling one kernel artifact on one case: the entry point the judge, `temper profile` and
// `temper ref profile` share. It runs the artifact in a fresh sandboxed worker for a few cold
// calls (time.*, sw.*, hw.* around each call), disassembles it (static.*), reports its build
// (compile.*, with the compiler's vectorization remarks when the source is known) and, opt-in,
// simulates one call's caches under valgrind (cg.*). Every registered metric it cannot measure
// is "unsupported: reason".
#pragma once

#include "build/compiler.h"
#include "core/task.h"
#include "judge/golden.h"
#include "judge/profile/metrics.h"
#include "util/error.h"
#include "util/process.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace temper::judge::profile {

struct ProfileOptions {
  bool cachegrind = false;            // --with cachegrind
  int calls = 10;                     // timed calls (cold caches) for time.* and the counters
  std::filesystem::path worker_exe;   // empty: temper-worker beside the running binary
  std::filesystem::path driver_exe;   // empty: temper-profile-driver beside the worker
  std::chrono::milliseconds call_timeout{60'000};
  size_t memory_limit_bytes = size_t{4} << 30;
  size_t flush_bytes = 0;             // cold-cache buffer written before each call; 0: the timing default
  int threads = 0;                    // 0: the task's
  std::chrono::seconds cache_sim_timeout{600};
  uint64_t job_seed = 0;              // picks the inputs (trial 0 of this seed)
};

// What to profile. A sealed or prebuilt artifact has no source request: its compile time and
// remarks are then unsupported, everything else is measured the same way.
struct ProfileTarget {
  std::filesystem::path artifact;
  std::optional<double> compile_seconds;
  std::optional<build::CompileRequest> source; // the request that built it, for the remarks compile
  build::CompilerSpec compiler;
};

// Profiles `target` on case `c`. Errors are harness problems (the golden, the arena, the worker
// binary); whatever the kernel does (fail, crash) makes the run-time metrics unsupported with
// the reason.
Expected<MetricSet> profile_artifact(const ProfileTarget& target, const core::Task& task, const core::Case& c,
                                     GoldenRunner& golden, const ProfileOptions& options, util::ProcessRunner& runner);

} // namespace temper::judge::profile
