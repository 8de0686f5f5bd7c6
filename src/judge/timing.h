// Paired timing of a candidate against a reference for one case, in fresh worker processes:
// both arms get the same inputs (a rotated pool of input sets), the same CPU set and thread
// count, and the same cold-cache step before every sample; the schedule and statistics are
// paired.h's. Timed outputs of the candidate are fingerprinted, and any output not seen
// before is rechecked against the golden, so computing differently while timed is caught; the
// reference's are fingerprinted too, so that both arms get the same work between calls.
#pragma once

#include "judge/status.h"
#include "judge/golden.h"
#include "judge/paired.h"
#include "judge/stats.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace temper::judge {

// Everything that shapes a measurement. Recorded in every report; two measurements are
// comparable only when these fields agree.
struct MeasurementProtocol {
  std::string cache_mode = "cold"; // cold: write flush_bytes before every sample; warm: nothing
  size_t flush_bytes = 0;          // default: 2x the last-level cache, 256 MiB when unknown
  int threads = 1;
  // Both workers, and the judge's thread while it measures, run on these CPUs. Empty: the
  // judge picks (make_timing_config): one CPU when threads == 1 (default_timing_cpus), else
  // every CPU temper may use. On one CPU the arms see the same core's caches and the
  // judge's restore of the inputs happens where the cold-cache step then evicts it.
  std::vector<int> cpus;
  // What kernel_seconds measures, in the worker around exactly the call:
  //   monotonic   CLOCK_MONOTONIC: wall time, including time other processes held the CPU;
  //   thread_cpu  CLOCK_THREAD_CPUTIME_ID: the calling thread's CPU time, without it
  //               (single-threaded kernels only: other threads' time would be missed).
  // Empty: the judge picks (make_timing_config): thread_cpu for one thread, else monotonic.
  // The round-trip cross-check always uses the monotonic time; the cap charges this clock.
  std::string clock;
  int min_input_sets = 4;
  size_t pool_cap_bytes = size_t{1} << 30; // per arm
  StopRule rule;
  std::string compiler;            // program and version
  std::vector<std::string> flags;

  nlohmann::json to_json() const;
};

// The first field in which two recorded protocols differ ("flags: [...] vs [...]"), or none.
std::optional<std::string> protocol_difference(const nlohmann::json& a, const nlohmann::json& b);

// The default flush size for this machine.
size_t default_flush_bytes();

// The default CPU set for a measurement with `threads` threads: for one thread, the last CPU
// this process may run on (CPU 0 takes most interrupts on the machines we use); otherwise
// empty (every CPU).
std::vector<int> default_timing_cpus(int threads);

// The clock names MeasurementProtocol::clock accepts, and the default for `threads`.
inline constexpr std::string_view kClockMonotonic = "monotonic";
inline constexpr std::string_view kClockThreadCpu = "thread_cpu";
std::string default_timing_clock(int threads);
Status validate_clock(const std::string& clock, int threads);

struct TimingConfig {
  MeasurementProtocol protocol;
  CrossCheck cross_check;
  std::filesystem::path worker_exe;
  std::vector<std::string> worker_args; // a runner script and its flags (the pypto backend)
  std::vector<std::string> worker_env;  // added to the worker's fixed environment (WorkerOptions)
  bool device_profiles = false;         // WorkerOptions::device_profiles (pypto --time device)
  std::chrono::milliseconds call_timeout{60'000};
  size_t memory_limit_bytes = size_t{4} << 30;
  double noise_floor = kDefaultNoiseFloor;
  // Fingerprint the reference's outputs after each timed call as the candidate's are, so both
  // arms get the same work between calls. Off only to measure what that costs (bench/).
  bool symmetric_arms = true;
};

struct CaseTiming {
  PairedResult paired;
  Verdict verdict = Verdict::Ambiguous;
  double delta = kDefaultNoiseFloor; // the noise threshold used
  int input_sets = 0;
  uint64_t seed = 0;                 // this job's seed (its id is reported, not the seed)
  int rechecks = 0;                  // candidate outputs compared with the golden while timed
  int fingerprint_changes = 0;       // timed outputs whose bytes differed from the set's first
  int reference_fingerprint_changes = 0; // the same count for the reference's outputs
  bool behaviour_differs = false;    // a timed output failed its recheck
  std::string cheat_reason_code;     // with behaviour_differs: stale_output or deferred_work when the recheck saw which
  std::string message;               // why the measurement did not complete, if it did not
  CaseStatus failure_status = CaseStatus::Passed; // the candidate's status when its arm failed
  std::string failure_reason_code;                // with REJECTED_CHEAT: why (forbidden_syscall)
};

// One measurement job for one case. `job_seed` picks the inputs (the correctness job's seed
// reuses its cached goldens); `calibrated_noise` is the case's A/A noise if calibrated.
// `reference_first_start` starts the reference worker first (confirmation jobs reverse it).
// Errors are harness problems, including a reference that fails.
Expected<CaseTiming> time_case(const core::Task& task, const core::Case& c,
                               const std::filesystem::path& reference_artifact,
                               const std::filesystem::path& candidate_artifact, GoldenRunner& golden,
                               const TimingConfig& config, uint64_t job_seed,
                               std::optional<double> calibrated_noise, bool reference_first_start = true);

// A case's timing over every job of a tier: measurement jobs, then confirmation jobs in fresh
// processes with new seeds and the reverse order.
struct TimingJob {
  bool confirmation = false;
  std::string seed_id;
  CaseTiming result;
};

struct CaseTimingSummary {
  std::vector<TimingJob> jobs;
  Verdict verdict = Verdict::Ambiguous; // merged over jobs (stats.h merge_confirmation)
  bool confirmed = false;
  std::string reason;                   // why the merge came out as it did
  double speedup = 1;                   // exp(mean of the jobs' median log-ratios)
  double speedup_lo = 0;                // the widest of the jobs' intervals
  double speedup_hi = 0;
  double delta = kDefaultNoiseFloor;
  bool calibrated = false;              // delta came from a stored A/A calibration
  std::optional<double> cann_bench_score; // when the case has a hardware bound
  std::optional<double> hardware_bound_us; // temper.yaml's, else the roofline's from the cost model
  std::string bound_source;                // "temper.yaml", or the roofline's source and limiter
  std::optional<double> roofline_fraction; // bound / candidate median: 1 = at the hardware bound
  // AMBIGUOUS only: the cap per arm that would likely decide the case, towards `decide_towards`
  // (stats.h project_decision on each job, the largest); infinite when the estimate sits on the
  // noise threshold; unset when the jobs point different ways or nothing was measured.
  std::optional<double> decide_cap_s;
  Verdict decide_towards = Verdict::Ambiguous;
  double decide_sample_factor = 0; // the samples that cap takes, relative to this measurement's
};

// How many input sets a case's pool gets under the protocol's memory cap.
int input_set_count(const MeasurementProtocol& p, size_t bytes_per_set);

} // namespace temper::judge
