// Mechanism expectations: what a plan predicts about a candidate besides "faster". Absolute ones
// compare a metric with a number (`static.vec512_ops > 0`, `cuda.registers <= 128`); relative
// ones compare the change against a baseline, the reference or the previous accepted candidate,
// in percent (`cg.D1mr change <= -30%`, `time.median_us change <= -10%`).
//
//   expectation := METRIC OP NUMBER | METRIC "change" OP NUMBER "%"
//   OP          := "<" | "<=" | ">" | ">=" | "==" | "!="
//
// A metric this machine cannot measure, or a relative expectation without a baseline, is
// UNVERIFIABLE, which does not pass.
#pragma once

#include "judge/profile/metrics.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge::profile {

enum class CompareOp { Less, LessEqual, Greater, GreaterEqual, Equal, NotEqual };

std::string_view op_text(CompareOp op);

struct Expectation {
  std::string text;       // as written, trimmed
  std::string metric;     // a registered metric
  bool relative = false;  // "change ... %": percent change against the baseline
  CompareOp op = CompareOp::Less;
  double threshold = 0;   // the number, or the percentage for relative expectations
};

// Parses one expectation. Errors say what is wrong and how to write it: an unknown metric (with
// the closest registered name), a missing or unknown operator, a number that is not one, a
// relative expectation without %, or trailing text.
Expected<Expectation> parse_expectation(std::string_view text);

enum class ExpectationOutcome { Passed, Failed, Unverifiable };

std::string_view outcome_name(ExpectationOutcome o); // "passed", "failed", "unverifiable"

struct ExpectationResult {
  Expectation expectation;
  ExpectationOutcome outcome = ExpectationOutcome::Unverifiable;
  std::optional<double> measured;   // the candidate's value
  std::optional<double> baseline;   // the baseline's value (relative expectations)
  std::optional<double> change_pct; // 100 * (measured - baseline) / baseline
  std::string detail;               // one line: the comparison made, or why it could not be

  bool passed() const { return outcome == ExpectationOutcome::Passed; }
  nlohmann::json to_json() const;
};

// Evaluates one expectation on the candidate's metrics, against the baseline's for relative ones.
ExpectationResult evaluate(const Expectation& e, const MetricSet& candidate, const MetricSet* baseline);

// The judge's reading of a set of results next to the timing verdict: "confirmed" (all passed),
// "not_confirmed" (one failed or is unverifiable), and when the candidate is faster but a
// predicted mechanism did not happen, "faster_without_predicted_mechanism".
struct MechanismVerdict {
  std::string code;    // confirmed | not_confirmed | faster_without_predicted_mechanism | none
  std::string message; // one line for people
};

// `faster`: the candidate was judged faster (nullopt: not timed).
MechanismVerdict mechanism_verdict(const std::vector<ExpectationResult>& results, std::optional<bool> faster);

} // namespace temper::judge::profile
