// Small helpers the judge's phases share: time stamps, seeds, parallel loops, and which golden
// builds a task's tolerance standards need.
#pragma once

#include "build/compiler.h"
#include "core/task.h"
#include "judge/golden.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace temper::judge {

std::string utc_now();        // "2026-12-02T18:00:00Z"
uint64_t random_seed();       // 64 bits from std::random_device
int job_count(int requested); // requested, or one per core when <= 0

// Whether any output's standard compares against the same-precision (low-precision) golden.
bool needs_low_precision(const core::Task& task, const std::vector<GoldenOutput>& outputs);
// Whether every comparison of these outputs needs it (flashattention); cann-bench needs it only
// for an output that fails its first stage (core::Comparison::wants_lowp), so it is computed then.
bool always_needs_low_precision(const core::Task& task, const std::vector<GoldenOutput>& outputs);

// What a report's `context` block says about the job that made it.
struct JobFacts {
  std::string temper_version;
  const build::CompilerSpec* compiler = nullptr;
  const build::CompilerIdentity* compiler_id = nullptr;
  bool specialized = false;
  uint64_t job_seed = 0; // only its public id is reported
  int trials = 0;
  const core::Task* task = nullptr;
  std::chrono::milliseconds call_timeout{0};
  std::filesystem::path candidate;
  std::string candidate_sha;
};

nlohmann::json job_context(const JobFacts& f);

// Runs fn(i) for i in [0, n) on up to `jobs` threads (the caller's thread included).
template <typename Fn>
void parallel_for(size_t n, int jobs, Fn fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(jobs, static_cast<int>(n)); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

} // namespace temper::judge
