// The timing flags shared by the subcommands that time a kernel against a reference (judge,
// calibrate, probe): one definition, so the same flag means the same thing everywhere.
#pragma once

#include "judge/judge.h"
#include "kb/target.h"
#include "judge/roofline.h"
#include "util/error.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>

#include <string>
#include <vector>

namespace temper::cli {

struct TimingArgs {
  std::string reference;
  std::string reference_flags;
  std::string tier = "gate";
  int measure_jobs = 3;
  int confirm_jobs = 3;
  double cap_s = 15;
  double target_pct = 0.5;
  int min_samples = 10;
  int lives = 12; // target worker lives per job; 0: one life
  double min_time_s = 0.5;
  double warmup_s = 0.025;
  std::string cache_mode = "cold";
  double flush_mb = 0;
  std::string cold_step;
  std::string cpus;
  std::string clock; // empty: the judge's default
  double noise_floor_pct = 1.0;
  bool no_calibration = false;
  bool until_target = false; // keep measuring after the verdict is settled
  std::string content_maker; // empty: the backend's default
  std::string threads;       // empty: temper.yaml's threads; N or all
  std::string torch_threads; // --reference torch: empty, the kernel's; N; default (PyTorch's own)
  std::string also_torch;    // PyTorch arms beside the reference, in its jobs: "1,default"
};

// Which flags a subcommand offers: WithTiers adds --tier, --measure-jobs and --confirm-jobs
// (judge, calibrate); SingleJob leaves them out (probe runs one job by definition).
enum class TimingFlagSet { WithTiers, SingleJob };

// Adds the timing flags to `cmd`, bound to `a` (its current values are the defaults shown).
void add_timing_options(CLI::App* cmd, TimingArgs& a, TimingFlagSet set = TimingFlagSet::WithTiers);

// Timing options from the flags; an error names the flag to fix.
Expected<judge::TimingOptions> timing_options(const TimingArgs& a, bool calibrate);

// This machine's certified peaks at the task's thread count from the knowledge base at `kb`
// (empty: the default roots), for each case's roofline bound; none when the task has no cost
// model or the knowledge base no certified figure for this target.
// `threads` overrides the task's thread count (--threads).
// `target`: another target than this host's CPU (a GPU's, kb/gpu_target.h).
std::optional<judge::Roofline> task_roofline(const std::filesystem::path& task_dir, const std::vector<std::filesystem::path>& kb_roots,
                                             std::optional<int> threads = std::nullopt, const kb::TargetFingerprint* target = nullptr);

// --backend cuda on a command with --compiler and --flags: nvcc unless --compiler names
// another, and nvcc's own default flags (-O3) unless --flags gave some.
void cuda_compiler_defaults(const CLI::App& cmd, bool flags_given, build::CompilerSpec& compiler);

// The knowledge base's target for the GPU the cuda backend finds here (its nvcc's runtime,
// $TEMPER_CUDA_DRIVER): error when there is no nvcc or no GPU, saying why.
Expected<kb::TargetFingerprint> cuda_kb_target();

// --threads N|all: none when not given (the task's own), else the count; the error names the flag.
Expected<std::optional<int>> threads_flag(const std::string& text);

// "-O3 -march=native" -> {"-O3", "-march=native"}.
std::vector<std::string> split_flags(const std::string& text);

} // namespace temper::cli
