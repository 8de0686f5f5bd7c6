// A whole campaign with the scripted Student and the fake judge (tests/campaign/campaign_fakes.h):
// two rounds with a correctness failure, a probe, rejections, an escalation, revisions, a
// promotion (2.2x) and a round without one, then the final report. Milliseconds to run.
#pragma once

#include <filesystem>

namespace temper::report::testing {

// Runs it under `root` and returns the campaign directory.
std::filesystem::path run_scripted_campaign(const std::filesystem::path& root);

} // namespace temper::report::testing
