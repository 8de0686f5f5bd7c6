// Paired timing of a candidate against a reference for one case, in fresh worker processes:
// both arms get the same inputs, the same CPU set and thread count, and the same cold-cache step
// before every sample; the schedule and statistics are paired.h's.
//
// Fresh values for every call: a call computes on values generated for its step of the job
// (paired.h CallContent), which no earlier call of the job saw, so remembering outputs gains
// nothing. Every timed output of both arms is hashed. After the measurement a secret random
// sample of the candidate's timed calls is run again, untimed, on the same values: each must
// give the same bytes as when it was timed and pass the golden, computed then (docs/security.md).
// The arm not being timed is frozen (SIGSTOP) and the CPU time a worker's other threads spend
// outside its calls is measured: above a small allowance it is REJECTED_CHEAT work_outside_call.
#pragma once

#include "judge/status.h"
#include "judge/golden.h"
#include "judge/paired.h"
#include "judge/stats.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace temper::backend {
class Forkserver;
}

namespace temper::judge {

// Everything that shapes a measurement. Recorded in every report; two measurements are
// comparable only when these fields agree.
struct MeasurementProtocol {
  std::string cache_mode = "cold"; // cold: write flush_bytes before every sample; warm: nothing
  size_t flush_bytes = 0;          // default: 2x the last-level cache, 256 MiB when unknown
  // How a cold sample is made cold:
  //   evict   the worker flushes every line of its own resident memory from every cache level
  //           (worker/evict.h): the cost follows what the kernel holds, not the cache size;
  //   buffer  the worker writes flush_bytes of its own buffer (the PyTorch arm, CUDA's L2, PyPTO).
  // Empty: the judge picks (make_timing_config, run_judge): evict when both arms are temper-worker.
  std::string cold_step;
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
  int min_input_sets = 4;              // arena slots: the input addresses rotate over a job
  // Per arm: fewer sets where they would not fit. Every life maps and fills a new arena, which
  // on a VM costs about 0.5 s per GiB of fresh pages; inputs far beyond the last-level cache gain
  // nothing from rotating addresses (a call streams them from memory wherever they are), so a
  // case of 256 MiB of inputs takes one set, not four (docs/benchmarks.md, lever 16).
  size_t pool_cap_bytes = size_t{256} << 20;
  // fresh: every call computes on values no earlier call of the job saw; pool: on min_input_sets
  // sets of values in turn (the protocol before fresh values, kept for bench/timing_protocol).
  std::string content = "fresh";
  // Where fresh values are made: host (generated on the host and written into the arm's memory
  // before each call) or device (CUDA: each element from one of two host draws on the GPU,
  // backend/device_content.h). Recorded only when not host, so CPU protocols read as before.
  std::string content_maker = "host";
  // frozen: the worker not being timed is stopped; running: both run throughout (bench only).
  std::string idle_arm = "frozen";
  // The sampled check of timed outputs catches a kernel that is wrong on at least
  // check_fraction of its timed calls with probability check_confidence. Not part of the
  // recorded protocol (it changes no time); each job reports its sample size.
  double check_fraction = 0.05;
  double check_confidence = 0.99;
  // Stop a job once its verdict is settled (StopRule::decided_band, set per case to the
  // noise threshold's band): large speedups stop after the minimum lives instead of at the cap.
  // Off where the estimate itself is what is wanted narrow (the probe tier ranks variants by it).
  bool stop_when_decided = true;
  StopRule rule;
  std::string compiler;            // program and version
  std::vector<std::string> flags;

  nlohmann::json to_json() const;
};

// The first field in which two recorded protocols differ ("flags: [...] vs [...]"), or none.
std::optional<std::string> protocol_difference(const nlohmann::json& a, const nlohmann::json& b);

// The default flush size for this machine.
size_t default_flush_bytes();
// "" (the judge picks), "evict" or "buffer"; anything else is an error that names the choices.
Status validate_cold_step(const std::string& step);

// The default CPU set for a measurement with `threads` threads: for one thread, the last CPU
// this process may run on (CPU 0 takes most interrupts on the machines we use); otherwise
// empty (every CPU).
std::vector<int> default_timing_cpus(int threads);

// The clock names MeasurementProtocol::clock accepts, and the default for `threads`.
inline constexpr std::string_view kClockMonotonic = "monotonic";
inline constexpr std::string_view kClockThreadCpu = "thread_cpu";
std::string default_timing_clock(int threads);
Status validate_clock(const std::string& clock, int threads);

// Timed outputs already proved against the golden, as (the case, the call's values, by the
// hash of their bytes or by the key they are generated from, and the hash of its output bytes):
// a later call of the same case whose values and output bytes are the same is proved by that,
// without a golden of its own. Every job that uses the same job seed computes on the same values
// (a probe's variants; in a campaign, every judgement, all on the machine's secret seed), and
// kernels that differ only in how they move data give the same bytes, so one proof serves them
// all. Thread-safe.
class ProvedOutputs {
public:
  bool contains(uint64_t case_key, uint64_t values, uint64_t outputs_hash) const {
    std::lock_guard lock(m_mu);
    return m_proved.count({case_key, values, outputs_hash}) > 0;
  }
  void insert(uint64_t case_key, uint64_t values, uint64_t outputs_hash) {
    std::lock_guard lock(m_mu);
    m_proved.insert({case_key, values, outputs_hash});
  }

private:
  mutable std::mutex m_mu;
  std::set<std::tuple<uint64_t, uint64_t, uint64_t>> m_proved;
};

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
  // Hash the reference's outputs after each timed call as the candidate's are, so both arms get
  // the same work between calls. Off only to measure what that costs (bench/).
  bool symmetric_arms = true;
  // CPU time of the candidate's other threads outside its calls (and, on the thread_cpu clock,
  // during them) above work_outside_allowance makes the case REJECTED_CHEAT work_outside_call.
  // Off for runners whose runtimes keep busy threads of their own (CUDA, PyPTO): measured and
  // reported there, not judged.
  bool judge_work_outside_call = true;
  // The reference arm's own worker command when it is not the candidate's (the PyTorch
  // reference: an interpreter and the golden runner); empty: the same worker for both arms.
  std::vector<std::string> reference_command;
  // Set: the reference arm's workers are forked from this server, which has done the runner's
  // slow start once (backend/forkserver.h); shared by every case, job and life of a judgement.
  std::shared_ptr<backend::Forkserver> reference_forkserver;
  // The reference arm's thread count when it is not the protocol's (the PyTorch arm at its own
  // default: 0, so its environment sets no OMP_NUM_THREADS).
  std::optional<int> reference_threads;
  // The compiled device-content library (protocol.content_maker "device"): timed calls make
  // their inputs on the device and hash their outputs there (backend::DeviceCall).
  std::filesystem::path device_content;
  // A probe's race (judge/probe.h): the lower end of the best speedup a checked variant of the
  // same probe showed against the same reference; 0: no race. A job whose stricter interval
  // falls wholly below it stops early (StopReason::Behind), and a job whose interval ends below
  // it has its timed outputs left unchecked (CaseTiming::check_skipped): a variant clearly
  // behind another decides nothing, so proving its outputs buys nothing, and it gets no verdict.
  double race_behind = 0;
  // The race within a shared job (time_case_shared): its candidates are checked fastest first,
  // and one whose interval lies below the lower end of a checked one's is left unchecked, as if
  // it had been timed after it in a job of its own.
  bool race = false;
  // Set: outputs proved by earlier jobs count for this one (and this one's proofs for later
  // ones). Unset: each job proves its own.
  std::shared_ptr<ProvedOutputs> proved;
};

// Whether a measured job's interval lies wholly below `race_behind` (> 0).
bool behind_in_race(const PairedResult& paired, double race_behind);

// The probe tier ranks variants and decides nothing: every kernel it picks is judged again at a
// gate. Its sampled check catches a kernel wrong on 20% of its timed calls (21 re-runs), the
// gate's on 5% (90), both with 99%.
inline constexpr double kProbeCheckFraction = 0.20;

// How many of a job's recorded calls (its rounds' calls) the sampled check runs again: the
// smallest n with (1 - fraction)^n <= 1 - confidence (90 for 5% and 99%), or every call when
// there are fewer.
int check_sample_size(double fraction, double confidence);
// The same guarantee for a job of `recorded` calls of which `unproven` are not already proved
// correct (byte for byte a checked output, or the reference's, on the same values): a kernel
// wrong on at least ceil(fraction * recorded) calls is wrong on that many unproven ones, and a
// sample of n drawn without replacement from the unproven misses them all with probability
// C(unproven - wrong, n) / C(unproven, n). The smallest n that makes it <= 1 - confidence: 0
// when the unproven calls are fewer than the wrong ones would be, at most the infinite-population
// size above (a 100-round job needs 60, not 90).
int check_sample_size(double fraction, double confidence, int recorded, int unproven);

// The CPU time a worker's other threads may spend outside its calls before it counts as work:
// 2 ms plus 2% of the arm's kernel time (scheduling, a runtime's housekeeping); the judge adds
// twice what the reference's threads spent per call in the same job (the harness's own share).
double work_outside_allowance(double kernel_seconds_total);
// The harness's own CPU time outside a call, per call, where the reference arm cannot measure it
// (a reference in another runner): the worker's threads woken by the stop and continue around
// every call of the other arm.
inline constexpr double kHarnessOutsideCallPerCall = 1e-4;

// What the judge saw of one arm's worker besides its kernel times.
struct ArmActivity {
  double outside_call_cpu_seconds = 0; // other threads' CPU time between calls (and during them
                                       // on the thread_cpu clock, which does not see it)
  int max_threads = 0;                 // the most threads the worker had after a call
  int timed_calls = 0;                 // every timed call, warm-ups included
};

struct CaseTiming {
  PairedResult paired;
  Verdict verdict = Verdict::Ambiguous;
  double delta = kDefaultNoiseFloor; // the noise threshold used
  int input_sets = 0;                // arena slots
  uint64_t seed = 0;                 // this job's seed (its id is reported, not the seed)
  std::string content;               // MeasurementProtocol::content of this job
  int rechecks = 0;                  // timed calls run again and compared with the golden
  int check_target = 0;              // the sample size check_sample_size asked for, of the unproven calls
  int proved_by_identity = 0;        // recorded calls whose inputs and outputs equal a checked call's
                                     // (of this job, or of an earlier one sharing TimingConfig::proved)
  int proved_by_reference = 0;       // recorded calls whose output is the reference's on the same values
  double check_seconds = 0;          // the sampled check: re-runs and goldens
  double golden_seconds = 0;         // of which the goldens
  double content_seconds = 0;        // generating the calls' values (both arms share them)
  ArmActivity reference_activity;
  ArmActivity candidate_activity;
  bool behaviour_differs = false;    // a sampled timed call failed its check
  std::string cheat_reason_code;     // with behaviour_differs: stale_output or deferred_work when the check saw which
  bool work_outside_call = false;    // the candidate's threads worked outside its calls beyond this job's allowance
  double outside_allowance_seconds = 0; // that allowance (0: not judged); the case is judged on its jobs' sum
  bool unprovable = false;           // nondeterministic: timed outputs cannot be proved, no verdict
  bool check_skipped = false;        // behind a probe's race (TimingConfig::race_behind): outputs
                                     // not checked, speedup kept for ranking, no verdict
  std::string warning;               // the reference's threads did (trusted: reported, not judged)
  std::string message;               // why the measurement did not complete, if it did not
  CaseStatus failure_status = CaseStatus::Passed; // the candidate's status when its arm failed
  std::string failure_reason_code;                // with REJECTED_CHEAT: why (forbidden_syscall)
  std::string reference_worker;                   // the reference worker's LOADED description
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

// One measurement job for one case with several candidates against one reference
// (paired.h measure_shared): each candidate on its own worker and arena, the reference's calls
// shared. Each result is what time_case would give the candidate, over the rounds it took part
// in; the reference's activity is the job's. Errors are the harness's, a reference that fails
// included; a candidate that does not load or fails has it in its own result.
Expected<std::vector<CaseTiming>> time_case_shared(const core::Task& task, const core::Case& c,
                                                   const std::filesystem::path& reference_artifact,
                                                   std::span<const std::filesystem::path> candidate_artifacts,
                                                   GoldenRunner& golden, const TimingConfig& config, uint64_t job_seed,
                                                   std::optional<double> calibrated_noise, bool reference_first_start = true);

// A reference arm of a timing job: its artifact, and its own worker where it is not the
// candidate's (TimingConfig::reference_command and what goes with it).
struct ReferenceArm {
  std::filesystem::path artifact;
  std::vector<std::string> command;
  std::shared_ptr<backend::Forkserver> forkserver;
  std::optional<int> threads;
};

// One measurement job for one case with one candidate against several references (paired.h
// measure_shared, the candidate shared): the final report's starting reference and PyTorch
// columns in one job, the candidate's calls, cold steps and sampled check paid once. Each
// result is what time_case would give the candidate against that reference, over the rounds
// that reference took part in; `calibrated_noise` per reference (or none). A reference that
// does not load or fails while timed has its error in its own result; the other results stand.
// Errors are the harness's. All arms share the protocol of `config` (its reference_* fields
// are unused: each reference brings its own).
Expected<std::vector<Expected<CaseTiming>>> time_case_against(const core::Task& task, const core::Case& c,
                                                              const std::filesystem::path& candidate_artifact,
                                                              std::span<const ReferenceArm> refs, GoldenRunner& golden,
                                                              const TimingConfig& config, uint64_t job_seed,
                                                              std::span<const std::optional<double>> calibrated_noise,
                                                              bool reference_first_start = true);

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
