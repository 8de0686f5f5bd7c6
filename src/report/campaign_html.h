// The HTML report of a campaign: where it stands, the timeline of attempts, probes, gates,
// revisions and promotions with the best verified speedup over time, the costs by category,
// the rounds, and, once the campaign is done, its final judgement (the final kernel against
// the starting reference) with the judge report's charts.
#pragma once

#include "util/error.h"

#include <filesystem>
#include <string>

namespace temper::report {

// Errors: `dir` is not a campaign directory, or its ledger cannot be read.
Expected<std::string> campaign_report_html(const std::filesystem::path& dir);

} // namespace temper::report
