// A campaign's history as one ordered list of events, for the HTML report's timeline: every
// attempt (probe, correctness submission, gate), revision and promotion, with the best
// verified speedup over the starting reference after each. Read-only, from the attempts'
// intent.json/result.json and the ledger.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace temper::campaign {

// {"schema_version": 1, "kind": "temper.campaign.timeline", "events": [{"seq", "time", "round",
// "kind" (probe | submission | gate | escalation | revision | promotion), "label", "outcome"
// (accepted, rejected, probe, promoted, not promoted, ...), "speedup" (the event's own, or
// null), "best_speedup" (over R0 after the event, null before any)}]}. Events sort by round,
// attempts by number, each revision after the attempt its record names (after_attempt; older
// records: by time), the round's promotion last.
Expected<nlohmann::json> campaign_timeline(const std::filesystem::path& dir);

} // namespace temper::campaign
