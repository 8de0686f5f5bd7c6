// When the Student is stuck and the Teacher must revise: N consecutive submissions not
// accepted, a plateau (the last K probes and submissions with speedups within the noise band of
// each other), an escalation, or the milestone's budget spent. Pure functions of the state.
#pragma once

#include "campaign/campaign_state.h"
#include "campaign/plan.h"

#include <optional>
#include <string>

namespace temper::campaign {

struct Stagnation {
  std::string trigger; // rejections | plateau | escalation | budget
  std::string detail;  // one line for the Teacher and the ledger
};

// Checks the triggers other than escalation (which the harness raises directly) against the
// current milestone's counters. nullopt: keep going.
std::optional<Stagnation> check_stagnation(const CampaignState& s, const Triggers& t, const Milestone& m);

} // namespace temper::campaign
