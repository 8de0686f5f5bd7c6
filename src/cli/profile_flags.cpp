#include "cli/profile_flags.h"

#include "judge/profile/profile_job.h"
#include "judge/profile/profile_phase.h"
#include "util/fs.h"

#include <nlohmann/json.hpp>

namespace temper::cli {

void add_profile_options(CLI::App* cmd, ProfileArgs& a) {
  cmd->add_option("--with", a.with, "Opt-in collectors: cachegrind (valgrind's cache simulation of one call; slow)");
  cmd->add_option("--expect", a.expect,
                  "A mechanism expectation, e.g. \"static.vec512_ops > 0\" or \"cg.D1mr change <= -30%\" (repeatable; docs/metrics.md)");
  cmd->add_option("--baseline-report", a.baseline_report,
                  "Baseline for relative expectations: the metrics of a previous judge --profile or profile report (default: the reference)");
  cmd->add_option("--calls", a.calls, "Cold calls profiled for time.* and the counters")->capture_default_str()->check(CLI::PositiveNumber);
}

Expected<ParsedProfileArgs> parse_profile_args(const ProfileArgs& a) {
  ParsedProfileArgs p;
  for (const auto& w : a.with) {
    if (w == "cachegrind") p.cachegrind = true;
    else return fail("--with {}: unknown collector (known: cachegrind)", w);
  }
  if (a.calls < 1 || a.calls > 10000) return fail("--calls {}: give 1 to 10000", a.calls);
  for (const auto& text : a.expect) {
    TEMPER_TRY_ASSIGN(auto e, judge::profile::parse_expectation(text));
    p.expectations.push_back(std::move(e));
  }
  if (!a.baseline_report.empty()) {
    // A profile report holds one case; a judge report many.
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(a.baseline_report));
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded() && j.value("kind", "") == "temper.profile.report") {
      auto set = judge::profile::MetricSet::from_json(j["metrics"]["candidate"]);
      if (!set) return fail("--baseline-report {}: {}", a.baseline_report, set.error().message);
      p.baseline[j["case_id"].get<int64_t>()] = std::move(*set);
    } else {
      TEMPER_TRY_ASSIGN(p.baseline, judge::profile::load_baseline_report(a.baseline_report));
    }
  }
  return p;
}

} // namespace temper::cli
