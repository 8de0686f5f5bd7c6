// The profiling flags shared by `temper profile` and `temper judge`: --with cachegrind, --expect
// (repeatable), --baseline-report, --calls; parsed once into the judge's profile types.
#pragma once

#include "judge/profile/expectation.h"
#include "judge/profile/metrics.h"
#include "util/error.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace temper::cli {

struct ProfileArgs {
  std::vector<std::string> with;     // collectors to add: "cachegrind"
  std::vector<std::string> expect;   // expectation texts
  std::string baseline_report;       // a previous judge or profile report
  int calls = 10;
};

void add_profile_options(CLI::App* cmd, ProfileArgs& a);

struct ParsedProfileArgs {
  bool cachegrind = false;
  std::vector<judge::profile::Expectation> expectations;
  std::map<int64_t, judge::profile::MetricSet> baseline; // per case, from --baseline-report
};

// Errors name the flag and what to write instead.
Expected<ParsedProfileArgs> parse_profile_args(const ProfileArgs& a);

} // namespace temper::cli
