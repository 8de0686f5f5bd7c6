// `tuner`: a built-in Student that tunes the knobs a kernel declares, through the harness only
// (probe and submit, as any agent), never the judge directly. Per turn: pick the kernel
// (src/starter/*.cpp, else the newest accepted one), build the space (declared knobs narrowed by
// milestone.json's `knobs`, filtered by the kernel's constraints), probe a joint set of variants
// on the contract case (all of them when they fit a probe, else a seeded random sample), then
// successive halving (keep the better half, measure it on twice as many of the gate's cases)
// until one is left or the cases run out, and submit the winner with a fixed-knob block in front
// (src/tuned.cpp); a rejected winner gives way to the runner-up once. Every measurement goes
// through a cache (tuner_cache.h), so a rerun measures nothing twice. docs/campaigns.md, "The
// tuner Student".
#pragma once

#include "agent/agent.h"
#include "agent/harness_protocol.h"
#include "util/clock.h"
#include "util/error.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace temper::campaign {

struct TunerOptions {
  size_t max_variants = 256;        // variants of the first round (at most judge::kMaxProbeVariants)
  uint64_t seed = 1;                // the random sample of a large space
  double submit_share = 0.25;       // share of the time budget kept for the submissions
  double budget_s = 0;              // 0: the milestone's budget left (harness status)
  std::filesystem::path cache_dir;  // empty: util::cache_root()/tuner
  std::string target;               // empty: the kb layer's fingerprint id of this machine
};

// "tuner" or "tuner:KEY=VALUE,...", keys max-variants, seed, submit-share, budget (seconds).
Expected<TunerOptions> parse_tuner_spec(const std::string& spec);

// One harness request and its answer. The agent sends it over the turn's socket; tests pass a
// function.
using HarnessFn = std::function<Expected<agent::HarnessResponse>(const agent::HarnessRequest&)>;

class TunerStudent final : public agent::Agent {
public:
  TunerStudent(std::filesystem::path task_dir, TunerOptions options);
  std::string name() const override { return "tuner"; }
  Expected<agent::TurnResult> run_turn(const agent::TurnRequest& request) override;

  // Tests: requests go to `fn` instead of the turn's harness socket.
  void set_harness(HarnessFn fn) { m_harness = std::move(fn); }
  // Tests: the clock that measures the turn's own time (default: steady).
  void set_clock(util::Clock* clock) { m_clock = clock; }

private:
  std::filesystem::path m_task_dir;
  TunerOptions m_options;
  HarnessFn m_harness;
  util::Clock* m_clock = nullptr;
  util::SteadyClock m_steady;
};

} // namespace temper::campaign
