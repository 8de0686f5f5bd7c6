// Device time of an Ascend kernel from the profiler's CSV exports, the way CANN-Bench reads it:
// torch_npu's kernel_details.csv (`Duration(us)`), msprof's op_summary_*.csv or msprof op's
// OpBasicInfo.csv (`Task Duration(us)`). Columns are found by header name, since their set and
// order change with the CANN version and the profiler level. The harness's cache-clean kernel
// runs before every timed step, so its rows delimit steps; within a step each kernel's durations
// are summed, per kernel the median over steps is taken, and the elapsed time is the sum of those
// medians (cann-bench src/kernel_eval/base/perf_strategy.py, KernelDetailsStrategy).
#pragma once

#include "util/error.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::backend {

enum class ProfileFormat {
  KernelDetails, // torch_npu profiler: Name, Accelerator Core, Duration(us), ...
  OpSummary,     // msprof: Op Name, Task Type, Task Duration(us), ...
  OpBasicInfo,   // msprof op: Op Name, Op Type, Task Duration(us), ... (one row per launch)
};

std::string_view profile_format_name(ProfileFormat f);

struct DeviceTimeOptions {
  // Substrings that mark the harness's kernels (the profiler may show mangled names).
  std::vector<std::string> delimiter_tokens{"CannBenchCacheClean"};
  std::vector<std::string> warmup_tokens{"CannBenchWarmup"};
  // Task types counted as kernels where the file has a task-type column (cann-bench KERNEL_TYPES);
  // other rows (AI_CPU, KERNEL_AICPU, HCCL, ...) are not device compute of the candidate.
  std::vector<std::string> kernel_types{"AI_CORE",        "AIV_SQE",      "AI_VECTOR_CORE", "MIX_AIC",
                                        "MIX_AIV",        "KERNEL_AIVEC", "KERNEL_AICORE",  "KERNEL_MIX_AIC",
                                        "KERNEL_MIX_AIV"};
  std::optional<int> expected_steps; // set: a different number of steps is an error
  // The export holds exactly one timed call (temper's runner profiles each sample on its own):
  // without delimiters or Step Id, all counted rows are that one step, instead of an error.
  bool whole_file_is_one_step = false;
};

struct KernelTime {
  std::string name;
  double median_us = 0;  // median over steps of the per-step sum of this kernel's durations
  int launches = 0;      // rows counted, over all steps
};

struct DeviceTime {
  ProfileFormat format = ProfileFormat::KernelDetails;
  std::string duration_column;
  std::string step_rule;          // how steps were told apart: "cache-clean delimiters", "Step Id", "one row per launch"
  int delimiters = 0;             // cache-clean rows seen
  std::vector<double> step_us;    // each step's total over the counted kernels
  std::vector<KernelTime> kernels; // in order of first appearance
  double elapsed_us = 0;          // sum of the per-kernel medians (CANN-Bench's figure)
  double median_step_us = 0;      // median of step_us
  int skipped_rows = 0;           // rows of other task types, warm-up kernels, before the first step
};

// Parses one CSV export. Errors name what is missing or malformed ("no duration column: ...",
// "line 7: 'Duration(us)' is 'abc', not a number"), never crash.
Expected<DeviceTime> parse_device_time(std::string_view csv_text, const DeviceTimeOptions& options = {});
Expected<DeviceTime> read_device_time(const std::filesystem::path& csv_file, const DeviceTimeOptions& options = {});

// The export to read in a profiler output directory: kernel_details.csv, else op_summary_*.csv,
// else OpBasicInfo.csv, searched recursively; an error says what was looked for.
Expected<std::filesystem::path> find_profile_csv(const std::filesystem::path& dir);

} // namespace temper::backend
