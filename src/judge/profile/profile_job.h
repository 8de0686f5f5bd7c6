// `temper profile TASK CANDIDATE --case N`: one case, the candidate profiled beside a baseline
// (a reference given as a source or a prebuilt artifact, or a previous candidate's metrics),
// and mechanism expectations evaluated against that baseline. The candidate passes the same
// boundary checks as in the judge before any of its code runs; correctness is the judge's job.
#pragma once

#include "build/compiler.h"
#include "judge/profile/case_profile.h"
#include "judge/profile/expectation.h"
#include "judge/profile/metrics.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace temper::judge::profile {

struct ProfileJobOptions {
  std::filesystem::path task_dir;
  std::filesystem::path candidate;      // a kernel source
  int64_t case_id = 0;
  build::CompilerSpec compiler;
  std::filesystem::path reference;      // a source (compiled like the candidate) or a prebuilt artifact (an ELF file); empty: none
  std::optional<MetricSet> baseline;    // replaces the reference as the baseline (a previous candidate's metrics)
  std::string baseline_label;           // how to name that baseline
  bool cachegrind = false;
  int calls = 10;
  std::vector<Expectation> expectations;
  std::optional<uint64_t> seed;         // default: this machine's secret seed
  std::filesystem::path worker_exe;     // default: beside the running binary
  std::chrono::milliseconds call_timeout{60'000};
  bool progress = true;
  std::string temper_version = "dev";
};

struct ProfileJobReport {
  nlohmann::json context;
  int64_t case_id = 0;
  bool ran = false;             // false: the candidate did not compile or was rejected
  std::string status;           // PROFILED, COMPILE_ERROR or REJECTED_CHEAT
  std::string message;          // why it did not run
  std::optional<MetricSet> reference; // the reference's metrics when one was profiled
  CaseProfile profile;          // candidate, baseline, expectations

  bool all_expectations_passed() const;
  nlohmann::json to_json() const; // kind temper.profile.report
};

// Whether `path` is an ELF file (a prebuilt artifact) rather than a source.
bool is_elf_file(const std::filesystem::path& path);

// Runs the job. Errors: usage and harness problems (unknown case, missing file, a reference
// that does not compile, the golden failing).
Expected<ProfileJobReport> run_profile_job(const ProfileJobOptions& options, util::ProcessRunner& runner);

} // namespace temper::judge::profile
