// Valgrind's cache simulation of exactly one kernel call (the cg.* metrics, opt-in because a
// simulated call is 50-100 times slower than a real one). temper-profile-driver makes the call
// inside temper_profiled_call and valgrind collects only while that function runs.
//
// The tool is callgrind with --cache-sim=yes: valgrind 3.19's cachegrind cannot restrict its
// counts to one function, and its whole-process totals would add the dynamic loader's work to
// the kernel's. Both tools share the same cache simulator and output format ("events:" and
// "summary:"/"totals:" lines), which parse_cache_sim_output reads.
//
// Caches are fixed, not the host's, so the counts depend on the code and inputs only:
// I1 and D1 32 KiB 8-way, LL 8 MiB 16-way, 64-byte lines.
#pragma once

#include "judge/profile/metrics.h"
#include "util/error.h"
#include "util/process.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge::profile {

inline constexpr std::string_view kCacheConfig = "I1=32768,8,64 D1=32768,8,64 LL=8388608,16,64";

// Event totals by valgrind's names (Ir, Dr, Dw, I1mr, D1mr, D1mw, ILmr, DLmr, DLmw).
using CacheSimTotals = std::map<std::string, uint64_t>;

// Reads the totals of a cachegrind or callgrind output file ("events:" names, then the
// "totals:" line, else the "summary:" line). Errors name what is missing.
Expected<CacheSimTotals> parse_cache_sim_output(std::string_view text);

// cg.Ir, cg.Dr, cg.Dw, cg.D1mr, cg.D1mw, cg.LLmr (ILmr + DLmr), cg.LLmw (DLmw).
void add_cache_sim_metrics(const CacheSimTotals& totals, MetricSet& out);

struct CacheSimRequest {
  std::filesystem::path driver_exe;  // temper-profile-driver
  std::filesystem::path load_file;   // one encoded LOAD frame
  std::filesystem::path arena_file;  // the arena's bytes
  std::filesystem::path work_dir;    // where valgrind writes its output
  std::chrono::seconds timeout{600};
};

struct CacheSimRun {
  CacheSimTotals totals;
  std::vector<std::string> command;
  bool sandboxed = false; // ran inside bubblewrap
};

// Runs the driver under valgrind. Errors: valgrind missing, the kernel failing or crashing
// under it, no output; the caller reports them as unsupported cg.* metrics.
Expected<CacheSimRun> run_cache_simulation(const CacheSimRequest& request, util::ProcessRunner& runner);

} // namespace temper::judge::profile
