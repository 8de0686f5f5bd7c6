// The judge coordinator: loads the task, builds candidate and golden through the compile cache,
// computes every golden output before any candidate code is loaded, then checks each selected
// case in its own worker process and assembles the report.
#pragma once

#include "build/compiler.h"
#include "judge/case_result.h"
#include "judge/seal.h"
#include "judge/profile/profile_phase.h"
#include "judge/pypto_backend.h"
#include "judge/roofline.h"
#include "judge/output_check.h"
#include "judge/timing.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace temper::judge {

// Paired timing against a reference (the timing half of the judge).
struct TimingOptions {
  std::filesystem::path reference;           // reference kernel source (unused when `sealed` or `torch_reference` is set)
  // The reference arm is the task's PyTorch function (reference.torch in temper.yaml, else its
  // golden.py) in the case's dtype, in the golden runner serving the worker protocol.
  bool torch_reference = false;
  // PyTorch's threads: -1, the kernel's (the task's threads); 0, PyTorch's own default (what a
  // user who sets nothing gets: its arm runs without OMP_NUM_THREADS, and the job on every CPU);
  // N, that many.
  int torch_threads = -1;
  std::optional<SealedRef> sealed;           // a sealed reference: its artifacts, never its source
  std::vector<std::string> reference_flags;  // empty: the candidate's flags
  std::string tier = "gate";                 // probe: one case, short; gate: all selected cases
  int measure_jobs = 3;                      // gate: independent measurement jobs
  int confirm_jobs = 3;                      // gate: confirmation jobs (fresh processes, new seeds, reversed order)
  MeasurementProtocol protocol;              // compiler and flags are filled in by the judge
  double noise_floor = kDefaultNoiseFloor;
  bool use_calibration = true;               // use a stored A/A calibration for this protocol
  bool calibrate = false;                    // time the reference against itself and store the noise
  // Certified peaks (from the knowledge base): a case without hardware_bound_us in temper.yaml
  // gets its bound from the task's cost model, for the CANN-Bench score and "fraction of roofline".
  std::optional<Roofline> roofline;
  // Where timed calls' fresh inputs are made (MeasurementProtocol::content_maker): empty means
  // device on the cuda backend with a GPU, host elsewhere; "device" elsewhere is an error.
  std::string content_maker;
  // Outputs proved by earlier judgements of the same process (a campaign's), which this one's
  // sampled checks may rely on and add to (TimingConfig::proved); unset: this judgement's own.
  std::shared_ptr<ProvedOutputs> proved;
  // Also time the candidate against the task's PyTorch function at each of these thread counts
  // (torch_threads' values), in the same jobs as the reference where the protocol is the same
  // (every arm then takes the buffer cold step), else in jobs of their own: the correctness
  // phase and the candidate's calls and sampled checks are paid once (JudgeReport::also).
  std::vector<int> also_torch_threads;
};

struct JudgeOptions {
  std::filesystem::path task_dir;
  std::filesystem::path candidate;
  std::vector<int64_t> case_ids;         // empty: every case of the task
  build::CompilerSpec compiler;
  std::optional<uint64_t> seed;          // the secret job seed; default: this machine's secret
  bool fresh_seed = false;               // draw a new random job seed
  int jobs = 0;                          // parallel compiles, goldens and cases; 0: one per core
  std::chrono::milliseconds call_timeout{60'000};
  size_t memory_limit_bytes = size_t{4} << 30;
  std::optional<int> trials;             // overrides the task's trials (at least 3)
  std::optional<int> threads;            // overrides the task's threads (`--threads N|all`)
  std::filesystem::path worker_exe;      // default: the backend's worker beside the running binary
  std::string backend = "cpu";           // cpu | cuda | pypto (judge/kernel_backend.h); cuda: `compiler` is nvcc
  std::string cuda_arch;                 // cuda: empty means the device's architecture, else sm_90
  bool progress = true;                  // progress lines on stderr
  std::string temper_version = "dev";
  std::optional<TimingOptions> timing;   // set: also time against the reference
  std::optional<SealedRef> sealed_candidate; // set: judge this sealed reference's artifacts instead of `candidate`
  std::optional<profile::ProfilePhaseOptions> profile; // set: metrics and mechanism expectations
  PyptoOptions pypto;                    // with backend pypto
  // Comparisons made by earlier judgements of the same task in this process (a campaign's),
  // which this one's correctness trials may rely on and add to (CorrectnessConfig::compared).
  std::shared_ptr<ComparedOutputs> compared;
};

struct JudgeReport {
  nlohmann::json context;         // host, compiler, flags, versions, job seed id, task, candidate
  std::vector<CaseResult> cases;  // in the order selected
  double wall_seconds = 0;
  double compile_seconds = 0;     // summed compile time of the candidate builds not from cache
  double golden_compile_seconds = 0;
  nlohmann::json timing_overall;  // aggregate over timed cases and the protocol; null without timing
  // The same judgement against further references (TimingOptions::also_torch_threads), in order:
  // each a report of its own (the same correctness results, its own timing and context), or why
  // that reference could not be timed.
  struct Also {
    int torch_threads = 0;
    std::filesystem::path torch_function; // the task's PyTorch function it timed
    std::shared_ptr<JudgeReport> report;  // null when `error` says why
    std::string error;
  };
  std::vector<Also> also;

  bool all_passed() const;
};

// Runs a correctness judgement. Errors are usage and harness problems (bad task, unknown case,
// missing candidate file, golden failure), each with a message saying what to fix.
Expected<JudgeReport> run_judge(const JudgeOptions& options, util::ProcessRunner& runner);

// This machine's persistent secret seed (created on first use under the cache root, mode 0600),
// so repeated judgements reuse cached goldens while inputs stay unknown to candidates.
uint64_t machine_secret_seed();

// The temper-worker binary next to the running executable, or $TEMPER_WORKER.
std::filesystem::path default_worker_exe();

} // namespace temper::judge
