// What the HTML report shows of a judge report, read from its JSON (kind temper.judge.report,
// any schema version so far): per case the status, errors, speedup with interval and verdict,
// the roofline bound against the achieved time, both arms' timing samples and the first
// mismatches. Reading the JSON rather than the judge's structs lets `temper report` render a
// report written earlier, on another machine.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace temper::report {

struct Mismatch {
  std::string output;
  std::string index; // "[3, 17]"
  std::string got, expected;
};

struct CaseView {
  int64_t id = 0;
  std::string status;       // PASSED, INCORRECT_NUMERICAL, ...
  std::string reason_code;  // for REJECTED_CHEAT and timed_behaviour_differs
  std::string message;
  std::string dtype;        // "bf16", or "fp32,fp16" when inputs differ
  std::string shape;        // "[4, 1024]"
  std::optional<double> max_abs, max_rel;
  double kernel_seconds = 0;
  // Timing against the reference (absent without --reference or when the case failed).
  std::optional<double> speedup, speedup_lo, speedup_hi;
  std::string verdict;      // FASTER, SLOWER, SAME, AMBIGUOUS
  bool confirmed = false;
  std::optional<double> bound_s;    // the hardware lower bound
  std::optional<double> achieved_s; // the candidate's median time in the first measurement job
  std::optional<double> roofline_fraction;
  std::string limiter;              // "memory", "compute", "given in temper.yaml", ...
  std::vector<double> reference_samples, candidate_samples; // seconds, every job
  std::vector<Mismatch> mismatches;
};

struct JudgeView {
  nlohmann::json context;   // as the report has it
  nlohmann::json timing;    // the report's overall timing block (null when untimed)
  std::vector<CaseView> cases;
  int passed = 0;
  bool timed() const { return !timing.is_null(); }
};

// Errors: not a judge report (another kind, or no cases array).
Expected<JudgeView> read_judge_view(const nlohmann::json& report);

// "memory" from "roofline (limiter: memory; hw_kb ...)"; "given in temper.yaml"; else the text.
std::string limiter_from_source(const std::string& source);

} // namespace temper::report
