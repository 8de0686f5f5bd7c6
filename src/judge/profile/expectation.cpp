#include "judge/profile/expectation.h"
#include "util/text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace temper::judge::profile {

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_'; }

std::optional<CompareOp> take_op(std::string_view& s) {
  struct {
    std::string_view text;
    CompareOp op;
  } const kOps[] = {{"<=", CompareOp::LessEqual}, {">=", CompareOp::GreaterEqual}, {"==", CompareOp::Equal},
                    {"!=", CompareOp::NotEqual},  {"<", CompareOp::Less},          {">", CompareOp::Greater}};
  for (const auto& o : kOps) {
    if (s.substr(0, o.text.size()) == o.text) {
      s.remove_prefix(o.text.size());
      return o.op;
    }
  }
  return std::nullopt;
}

bool holds(double v, CompareOp op, double t) {
  switch (op) {
  case CompareOp::Less: return v < t;
  case CompareOp::LessEqual: return v <= t;
  case CompareOp::Greater: return v > t;
  case CompareOp::GreaterEqual: return v >= t;
  case CompareOp::Equal: return v == t;
  case CompareOp::NotEqual: return v != t;
  }
  return false;
}

std::string num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

constexpr std::string_view kSyntax = "write METRIC OP NUMBER or METRIC change OP NUMBER%, e.g. \"static.vec512_ops > 0\" "
                                     "or \"cg.D1mr change <= -30%\"";

} // namespace

std::string_view op_text(CompareOp op) {
  switch (op) {
  case CompareOp::Less: return "<";
  case CompareOp::LessEqual: return "<=";
  case CompareOp::Greater: return ">";
  case CompareOp::GreaterEqual: return ">=";
  case CompareOp::Equal: return "==";
  case CompareOp::NotEqual: return "!=";
  }
  return "?";
}

std::string_view outcome_name(ExpectationOutcome o) {
  switch (o) {
  case ExpectationOutcome::Passed: return "passed";
  case ExpectationOutcome::Failed: return "failed";
  case ExpectationOutcome::Unverifiable: return "unverifiable";
  }
  return "unverifiable";
}

Expected<Expectation> parse_expectation(std::string_view text) {
  Expectation e;
  std::string_view s = util::trim(text);
  e.text = std::string(s);
  if (s.empty()) return fail("empty expectation; {}", kSyntax);

  size_t n = 0;
  while (n < s.size() && is_name_char(s[n])) ++n;
  if (n == 0) return fail("expectation '{}' does not start with a metric name; {}", e.text, kSyntax);
  e.metric = std::string(s.substr(0, n));
  if (!find_metric(e.metric)) {
    std::string near = closest_metric(e.metric);
    return fail("unknown metric '{}' in expectation '{}'{}; docs/metrics.md lists the metrics", e.metric, e.text,
                near.empty() ? "" : fmt::format(" (did you mean {}?)", near));
  }
  s = util::trim(s.substr(n));

  if (s.substr(0, 6) == "change" && (s.size() == 6 || !is_name_char(s[6]))) {
    e.relative = true;
    s = util::trim(s.substr(6));
  }
  auto op = take_op(s);
  if (!op) {
    return fail("expectation '{}' has no comparison after the metric (one of < <= > >= == !=); {}", e.text, kSyntax);
  }
  e.op = *op;
  s = util::trim(s);
  if (s.empty()) return fail("expectation '{}' has no number after '{}'; {}", e.text, op_text(e.op), kSyntax);

  std::string rest(s);
  char* end = nullptr;
  errno = 0;
  e.threshold = std::strtod(rest.c_str(), &end);
  if (end == rest.c_str() || errno == ERANGE || !std::isfinite(e.threshold)) {
    return fail("expectation '{}': '{}' is not a number; {}", e.text, rest, kSyntax);
  }
  std::string_view tail = util::trim(std::string_view(end));
  bool percent = !tail.empty() && tail.front() == '%';
  if (percent) tail = util::trim(tail.substr(1));
  if (!tail.empty()) return fail("expectation '{}' has unexpected text '{}' after the number; {}", e.text, tail, kSyntax);
  if (e.relative && !percent) {
    return fail("expectation '{}' is relative ('change'), so its number is a percentage: write {}%", e.text, num(e.threshold));
  }
  if (!e.relative && percent) {
    return fail("expectation '{}' has a percentage but no 'change': write '{} change {} {}%' for a change against the baseline",
                e.text, e.metric, op_text(e.op), num(e.threshold));
  }
  return e;
}

nlohmann::json ExpectationResult::to_json() const {
  auto opt = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"expectation", expectation.text},
          {"metric", expectation.metric},
          {"kind", expectation.relative ? "relative" : "absolute"},
          {"outcome", outcome_name(outcome)},
          {"measured", opt(measured)},
          {"baseline", opt(baseline)},
          {"change_pct", opt(change_pct)},
          {"detail", detail}};
}

ExpectationResult evaluate(const Expectation& e, const MetricSet& candidate, const MetricSet* baseline) {
  ExpectationResult r;
  r.expectation = e;
  const MetricValue* c = candidate.find(e.metric);
  if (!c) {
    r.detail = fmt::format("{} was not measured for the candidate", e.metric);
    return r;
  }
  if (!c->supported()) {
    r.detail = fmt::format("{} cannot be measured here: {}", e.metric, c->reason);
    return r;
  }
  r.measured = c->number;
  if (!e.relative) {
    bool ok = holds(*c->number, e.op, e.threshold);
    r.outcome = ok ? ExpectationOutcome::Passed : ExpectationOutcome::Failed;
    r.detail = fmt::format("{} = {}, expected {} {}", e.metric, num(*c->number), op_text(e.op), num(e.threshold));
    return r;
  }
  const MetricValue* b = baseline ? baseline->find(e.metric) : nullptr;
  if (!baseline) {
    r.detail = "a relative expectation needs a baseline (the reference, or a previous candidate's metrics); none was given";
    return r;
  }
  if (!b || !b->supported()) {
    r.detail = fmt::format("{} of the baseline is unknown: {}", e.metric, b ? b->reason : "not measured");
    return r;
  }
  r.baseline = b->number;
  if (*b->number == 0) {
    if (*c->number != 0) {
      r.detail = fmt::format("{} is 0 in the baseline and {} in the candidate: a relative change is undefined", e.metric,
                             num(*c->number));
      return r;
    }
    r.change_pct = 0;
  } else {
    r.change_pct = 100.0 * (*c->number - *b->number) / std::fabs(*b->number);
  }
  bool ok = holds(*r.change_pct, e.op, e.threshold);
  r.outcome = ok ? ExpectationOutcome::Passed : ExpectationOutcome::Failed;
  r.detail = fmt::format("{}: {} -> {} ({:+.1f}%), expected change {} {}%", e.metric, num(*b->number), num(*c->number),
                         *r.change_pct, op_text(e.op), num(e.threshold));
  return r;
}

MechanismVerdict mechanism_verdict(const std::vector<ExpectationResult>& results, std::optional<bool> faster) {
  if (results.empty()) return {"none", "no expectations"};
  std::vector<std::string> missed;
  for (const auto& r : results) {
    if (!r.passed()) missed.push_back(fmt::format("{} [{}: {}]", r.expectation.text, outcome_name(r.outcome), r.detail));
  }
  if (missed.empty()) {
    return {"confirmed", fmt::format("all {} predicted mechanism(s) happened", results.size())};
  }
  std::string list = fmt::format("{}", fmt::join(missed, "; "));
  if (faster.value_or(false)) {
    return {"faster_without_predicted_mechanism",
            fmt::format("faster, but the predicted mechanism did not happen: {}", list)};
  }
  return {"not_confirmed", fmt::format("{} of {} expectation(s) not met: {}", missed.size(), results.size(), list)};
}

} // namespace temper::judge::profile
