#include "judge/paired.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

namespace temper::judge {

namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();
constexpr int kMinRoundsForVerdict = 3; // fewer than this in the cap is TOO_SLOW (pygpubench)
constexpr int kMinLivesForInterval = 3; // estimate_from_lives: Student's t needs 3 lives
constexpr int kMaxRounds = 1 << 16;

StopRule sanitized(StopRule r) {
  // Content ids (paired.h) stay unique: rounds, and so lives, below 2^16; 2^8 calls per renewal.
  r.min_samples = std::clamp(r.min_samples, 1, kMaxRounds);
  r.max_samples = std::clamp(r.max_samples, r.min_samples, kMaxRounds);
  r.check_every_rounds = std::max(r.check_every_rounds, 1);
  r.warmup_min_calls = std::max(r.warmup_min_calls, 0);
  r.warmup_max_calls = std::clamp(r.warmup_max_calls, r.warmup_min_calls, kContentWarmupBase);
  r.warmup_min_calls = std::min(r.warmup_min_calls, r.warmup_max_calls);
  r.life_warmup_calls = std::clamp(r.life_warmup_calls, 0, 1 << 8);
  if (!(r.cap_s > 0)) r.cap_s = 0; // NaN or negative: nothing fits, the result says TOO_SLOW
  if (!(r.overhead_allowance_s >= 0)) r.overhead_allowance_s = 0;
  if (!(r.wall_limit_factor >= 1)) r.wall_limit_factor = 1;
  if (!(r.decided_band >= 0) || !std::isfinite(r.decided_band)) r.decided_band = 0;
  if (!(r.decided_confidence > 0 && r.decided_confidence < 1)) {
    r.decided_band = 0;
    r.behind_below.reset();
  }
  if (r.behind_below && !std::isfinite(*r.behind_below)) r.behind_below.reset();
  return r;
}

struct ArmState {
  TimedArm& arm;
  ArmResult& out;
  Arm which;
  double cheapest_charge = kUnlimited; // what the cap prediction assumes the next call costs
  double cheapest_wall = kUnlimited;   // the same on the wall limit
};

struct Call {
  TimedSample sample;
  double call_seconds = 0;
  double kernel_wall_seconds = 0;
  double charged_seconds = 0;
};

double wall_kernel_time(const TimedSample& s) {
  return s.kernel_wall_seconds ? *s.kernel_wall_seconds : s.kernel_seconds;
}

// One timed call. Charges the arm the kernel's measured time (the protocol's clock) plus at
// most the allowance of what the call cost around it; a failed call is charged in full (it
// ends the measurement anyway).
Expected<Call> timed_call(ArmState& a, CallContent call, util::Clock& clock, double allowance) {
  const double start = clock.now();
  Expected<TimedSample> s = a.arm.sample(call);
  const double spent = std::max(clock.now() - start, 0.0);
  double charged = spent;
  double wall_kernel = 0;
  if (s && s->ok) {
    wall_kernel = wall_kernel_time(*s);
    // A time outside [0, spent] (a lying or broken worker) cannot lower the charge below the
    // allowance's bound.
    const double k = std::isfinite(s->kernel_seconds) ? std::clamp(s->kernel_seconds, 0.0, spent) : spent;
    charged = k + std::min(spent - k, allowance);
  }
  // The wall limit bounds what the arm's calls cost, not the judge's rechecks of their outputs
  // (a full golden comparison of a 128 MiB output takes seconds, once per input set).
  const double judge = s && std::isfinite(s->judge_seconds) ? std::clamp(s->judge_seconds, 0.0, spent) : 0.0;
  a.out.spent_seconds += charged;
  a.out.wall_seconds += spent - judge;
  a.cheapest_charge = std::min(a.cheapest_charge, charged);
  a.cheapest_wall = std::min(a.cheapest_wall, spent - judge);
  if (!s) return fail("harness: {}", s.error().message);
  if (!s->ok) return fail("{}", s->message.empty() ? "the kernel call failed" : s->message);
  return Call{std::move(*s), spent, wall_kernel, charged};
}

void fail_arm(PairedResult& r, const ArmState& a, const Error& e) {
  r.status = PairedStatus::ArmFailed;
  r.stop_reason = StopReason::ArmFailed;
  r.failed_arm = a.which;
  r.failure_message = e.message;
}

// Per-round log-ratios (NaN where a time has no ratio) and each round's life.
std::vector<double> log_ratios(const PairedResult& r) {
  const size_t n = std::min(r.reference.samples.size(), r.candidate.samples.size());
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const double a = r.reference.samples[i].kernel_seconds, b = r.candidate.samples[i].kernel_seconds;
    out[i] = (a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b)) ? std::log(a / b) : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

std::vector<int> lives_of(const ArmResult& a) {
  std::vector<int> v;
  v.reserve(a.samples.size());
  for (const RecordedSample& s : a.samples) v.push_back(s.life);
  return v;
}

std::vector<double> kernel_times(const ArmResult& a) {
  std::vector<double> v;
  v.reserve(a.samples.size());
  for (const RecordedSample& s : a.samples) v.push_back(s.kernel_seconds);
  return v;
}

// Samples are flagged once the reference's typical gap is known, i.e. after the loop.
void cross_check_arms(PairedResult& r, const CrossCheck& check) {
  double overhead = std::numeric_limits<double>::quiet_NaN();
  if (check.overhead_s) {
    overhead = *check.overhead_s;
  } else {
    std::vector<double> gaps;
    for (const RecordedSample& s : r.reference.samples)
      if (check_sample(s.kernel_wall_seconds, s.round_trip_seconds, check, kUnlimited) == SampleFlag::None)
        gaps.push_back(s.round_trip_seconds - s.kernel_wall_seconds);
    if (!gaps.empty()) overhead = median_of(gaps);
  }
  r.gap_overhead_s = overhead;
  for (ArmResult* a : {&r.reference, &r.candidate}) {
    for (RecordedSample& s : a->samples) {
      s.flag = check_sample(s.kernel_wall_seconds, s.round_trip_seconds, check, overhead);
      // The statistic's own clock must be sane too (a thread CPU time cannot be negative).
      if (s.flag == SampleFlag::None && (!std::isfinite(s.kernel_seconds) || s.kernel_seconds < 0))
        s.flag = SampleFlag::InvalidTime;
      switch (s.flag) {
      case SampleFlag::None: break;
      case SampleFlag::InvalidTime: ++a->invalid_time; break;
      case SampleFlag::ExceedsRoundTrip: ++a->exceeds_round_trip; break;
      case SampleFlag::UnexplainedGap: ++a->unexplained_gap; break;
      }
      if (s.flag != SampleFlag::None) ++r.suspicious_samples;
    }
  }
}

} // namespace

Status validate_stop_rule(const StopRule& rule) {
  if (rule.min_samples < 1) return fail("min_samples must be at least 1, not {}", rule.min_samples);
  if (rule.max_samples < rule.min_samples)
    return fail("max_samples ({}) is below min_samples ({})", rule.max_samples, rule.min_samples);
  if (!(rule.cap_s > 0)) return fail("the cap must be a positive number of seconds");
  if (!(rule.min_time_s >= 0)) return fail("min_time_s must not be negative");
  if (!(rule.target_half_width > 0)) return fail("the target half-width must be positive");
  if (!(rule.warmup_s >= 0) || rule.warmup_min_calls < 0)
    return fail("the warmup must not be negative");
  if (rule.check_every_rounds < 1) return fail("check_every_rounds must be at least 1");
  if (!(rule.ci.confidence > 0 && rule.ci.confidence < 1))
    return fail("the confidence level must lie strictly between 0 and 1");
  if (!(rule.decided_band >= 0) || !std::isfinite(rule.decided_band))
    return fail("the decided band must be a finite number >= 0");
  // Both rules that look at the stricter interval need its level to be stricter.
  if ((rule.decided_band > 0 || rule.behind_below) &&
      !(rule.decided_confidence >= rule.ci.confidence && rule.decided_confidence < 1))
    return fail("the decided confidence must lie between the interval's level and 1");
  if (rule.behind_below && !std::isfinite(*rule.behind_below)) return fail("the race's threshold must be a finite log speedup");
  return {};
}

double cap_for_verdict(const StopRule& rule, double call_seconds) {
  const StopRule r = sanitized(rule);
  const double charge = std::max(call_seconds, 0.0) + r.overhead_allowance_s;
  if (!(charge > 0) || !std::isfinite(charge)) return 0;
  // Warm-up: until warmup_min_calls calls and warmup_s spent, at most warmup_max_calls.
  const double by_time = std::ceil(r.warmup_s / charge);
  const int warmup = std::min(r.warmup_max_calls, std::max(r.warmup_min_calls, static_cast<int>(std::min(by_time, 1e9))));
  // With lives, the interval needs 3 of them: at this cap a life holds one round, so the
  // second and third rounds each come after a renewal and its warm-up calls.
  const int renewals = r.target_lives > 0 ? 2 * std::max(r.life_warmup_calls, 0) : 0;
  return (warmup + kMinRoundsForVerdict + renewals) * charge;
}

SampleFlag check_sample(double kernel_seconds, double round_trip_seconds,
                        const CrossCheck& check, double overhead_s) {
  if (!std::isfinite(kernel_seconds) || kernel_seconds < 0 || !std::isfinite(round_trip_seconds) ||
      round_trip_seconds <= 0)
    return SampleFlag::InvalidTime;
  if (kernel_seconds > round_trip_seconds + check.tolerance_s) return SampleFlag::ExceedsRoundTrip;
  if (std::isfinite(overhead_s) && overhead_s >= 0 &&
      round_trip_seconds - kernel_seconds > check.gap_factor * overhead_s + check.gap_slack_s)
    return SampleFlag::UnexplainedGap;
  return SampleFlag::None;
}

std::string_view sample_flag_name(SampleFlag f) {
  switch (f) {
  case SampleFlag::None: return "none";
  case SampleFlag::InvalidTime: return "invalid_time";
  case SampleFlag::ExceedsRoundTrip: return "exceeds_round_trip";
  case SampleFlag::UnexplainedGap: return "unexplained_gap";
  }
  return "none";
}

std::string_view arm_name(Arm a) { return a == Arm::Reference ? "reference" : "candidate"; }

std::string_view paired_status_name(PairedStatus s) {
  switch (s) {
  case PairedStatus::Measured: return "MEASURED";
  case PairedStatus::TooSlow: return "TOO_SLOW";
  case PairedStatus::ArmFailed: return "ARM_FAILED";
  }
  return "MEASURED";
}

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
  case StopReason::CiTarget: return "ci_target";
  case StopReason::Decided: return "decided";
  case StopReason::Cap: return "cap";
  case StopReason::Behind: return "behind";
  case StopReason::WallLimit: return "wall_limit";
  case StopReason::MaxSamples: return "max_samples";
  case StopReason::TooSlow: return "too_slow";
  case StopReason::ArmFailed: return "arm_failed";
  }
  return "ci_target";
}

PairedResult measure_paired(TimedArm& ref, TimedArm& cand, util::Clock& clock,
                            const StopRule& rule_in, uint64_t seed, int input_sets,
                            const CrossCheck& cross_check) {
  const StopRule rule = sanitized(rule_in);
  input_sets = std::max(input_sets, 1);
  PairedResult r;
  ArmState arms[2] = {{ref, r.reference, Arm::Reference}, {cand, r.candidate, Arm::Candidate}};
  std::mt19937_64 rng(seed); // raw engine bits only: identical sequences on every std library
  CiOptions ci = rule.ci;
  ci.seed = seed ^ 0x9e3779b97f4a7c15ULL; // the bootstrap's stream, apart from the order's
  const double t0 = clock.now();

  // The decided and behind rules may look before the width rule's minimums (StopRule).
  const bool early_rules = rule.decided_band > 0 || rule.behind_below.has_value();
  const int first_check = !early_rules ? rule.min_samples
                          : rule.decided_min_samples > 0 ? std::min(rule.decided_min_samples, rule.min_samples)
                                                         : rule.min_samples;
  const bool early_without_time = early_rules && !rule.decided_waits_for_min_time;

  int life = 0;
  auto estimate_at = [&](const CiOptions& options) {
    if (life == 0) return estimate_paired(kernel_times(r.reference), kernel_times(r.candidate), options);
    return estimate_from_lives(log_ratios(r), lives_of(r.reference), options);
  };
  auto estimate = [&]() { return estimate_at(ci); };
  CiOptions decided_ci = ci;
  decided_ci.confidence = rule.decided_confidence;
  auto decided = [&]() {
    if (!(rule.decided_band > 0)) return false;
    const PairedEstimate d = estimate_at(decided_ci);
    return d.ci_determined && (d.log_lo > rule.decided_band || d.log_hi < -rule.decided_band);
  };
  auto behind = [&]() {
    if (!rule.behind_below) return false;
    const PairedEstimate d = estimate_at(decided_ci);
    return d.ci_determined && d.log_hi < *rule.behind_below;
  };
  auto finish = [&]() -> PairedResult {
    r.reference.stats = summarize(kernel_times(r.reference));
    r.candidate.stats = summarize(kernel_times(r.candidate));
    r.estimate = estimate();
    r.lives = life + 1;
    cross_check_arms(r, cross_check);
    r.wall_seconds = clock.now() - t0;
    return std::move(r);
  };

  // Warmup: alternate the arms, so both warm up under the same conditions.
  auto needs_warmup = [&](const ArmState& a) {
    return a.out.warmup_calls < rule.warmup_max_calls &&
           (a.out.warmup_calls < rule.warmup_min_calls || a.out.spent_seconds < rule.warmup_s);
  };
  for (int i = 0; needs_warmup(arms[0]) || needs_warmup(arms[1]); ++i) {
    for (int j = 0; j < 2; ++j) {
      ArmState& a = arms[(i + j) % 2];
      if (!needs_warmup(a)) continue;
      auto c = timed_call(a, {i % input_sets, kContentWarmupBase + i}, clock, rule.overhead_allowance_s);
      ++a.out.warmup_calls;
      if (!c) {
        fail_arm(r, a, c.error());
        return finish();
      }
    }
  }

  // Lives: rounds per life from what the warmup says a call costs.
  const bool renewing = rule.target_lives > 0 && ref.renewable() && cand.renewable();
  if (renewing) {
    // Whole mirrored blocks (an even count) sized so that the cap holds about target_lives
    // lives; but one round per life when the calls are so slow that lives of two rounds and
    // their warm-ups would not reach the 3 lives an interval needs (it is then over single
    // rounds, each from its own processes).
    const double per_round = std::max(arms[0].cheapest_charge, arms[1].cheapest_charge);
    const double predicted = per_round > 0 && std::isfinite(per_round) ? std::min(rule.cap_s / per_round, double(rule.max_samples))
                                                                       : double(rule.max_samples);
    int rounds = static_cast<int>(predicted / rule.target_lives);
    rounds = std::clamp(rounds, 2, std::max(2, rule.max_life_rounds));
    r.life_rounds = rounds - rounds % 2;
    const double spent = std::max(arms[0].out.spent_seconds, arms[1].out.spent_seconds);
    const double left = per_round > 0 && std::isfinite(per_round) ? (rule.cap_s - spent) / per_round : predicted;
    if (left < kMinLivesForInterval * (2 + std::max(rule.life_warmup_calls, 0))) r.life_rounds = 1;
  }

  double kernel_total[2] = {0, 0};
  int last_check = -1;
  bool ref_first = true;
  bool second_look = false; // the one extra warm-up call before a refusal at round 0
  int second_looks = 0;
  for (;;) {
    if (r.rounds >= rule.max_samples) {
      r.stop_reason = StopReason::MaxSamples;
      break;
    }
    const bool renew_now = renewing && r.rounds > 0 && r.rounds % r.life_rounds == 0 && r.rounds / r.life_rounds > life;
    // Stop before a round the cap cannot hold; refuse early when 3 rounds cannot fit at all.
    // The calls still needed include the warm-ups of the renewals among those rounds.
    const int rounds_needed = std::max(kMinRoundsForVerdict - r.rounds, 1);
    int renewals_ahead = 0;
    for (int k = r.rounds; renewing && k < r.rounds + rounds_needed; ++k) renewals_ahead += k > 0 && k % r.life_rounds == 0;
    bool stop = false;
    bool first_call_only = r.rounds == 0 && !second_look; // every stopping arm has one call, which might mislead
    bool stopping[2] = {false, false};
    for (int k = 0; k < 2; ++k) {
      const ArmState& a = arms[k];
      const int still_needed = rounds_needed + renewals_ahead * rule.life_warmup_calls;
      const double per_call = std::isfinite(a.cheapest_charge) ? a.cheapest_charge : 0;
      const double per_call_wall = std::isfinite(a.cheapest_wall) ? a.cheapest_wall : 0;
      const bool cap = a.out.spent_seconds + still_needed * per_call > rule.cap_s;
      const bool wall = a.out.wall_seconds + still_needed * per_call_wall > rule.wall_limit_factor * rule.cap_s;
      if (cap || wall) {
        // Worth a second look only when the arm would fit at half the cost of its one call.
        const bool fits_at_half = a.out.spent_seconds + still_needed * per_call / 2 <= rule.cap_s &&
                                  a.out.wall_seconds + still_needed * per_call_wall / 2 <= rule.wall_limit_factor * rule.cap_s;
        if (a.out.warmup_calls != 1 || !fits_at_half) first_call_only = false;
        stopping[k] = true;
        stop = true;
        r.stop_reason = r.rounds < kMinRoundsForVerdict ? StopReason::TooSlow
                        : cap                           ? StopReason::Cap
                                                        : StopReason::WallLimit;
      }
    }
    // A prediction from one call is a prediction from a worker's first call, which may pay for
    // what later calls do not (0.70 s instead of 0.49 s for SwiGLU case 5's reference; a 4 s
    // round trip on a candidate's first call): before refusing on it, when the refusal is
    // marginal, the arms with one call make one more unrecorded call, and the check runs again
    // on the cheaper of the two.
    if (stop && first_call_only) {
      second_look = true;
      const int look = second_looks++;
      for (int k = 0; k < 2; ++k) {
        if (!stopping[k]) continue;
        ArmState& a = arms[k];
        auto c = timed_call(a, {1 % input_sets, kContentSecondLookBase + look}, clock, rule.overhead_allowance_s);
        ++a.out.warmup_calls;
        if (!c) {
          fail_arm(r, a, c.error());
          return finish();
        }
      }
      r.stop_reason = StopReason::CiTarget; // undecided again
      continue;
    }
    if (stop) break;

    if (renew_now) {
      // Both arms together, in a random order, then a short unrecorded warmup of each.
      const int first = static_cast<int>(rng() >> 63);
      for (int j = 0; j < 2; ++j) {
        ArmState& a = arms[(first + j) % 2];
        const double t = clock.now();
        Status st = a.arm.renew();
        a.out.renew_seconds += std::max(clock.now() - t, 0.0);
        ++a.out.renewals;
        if (!st) {
          fail_arm(r, a, Error{"harness: renewing the worker: " + st.error().message});
          return finish();
        }
      }
      ++life;
      for (int i = 0; i < rule.life_warmup_calls; ++i) {
        for (int j = 0; j < 2; ++j) {
          ArmState& a = arms[(first + j) % 2];
          auto c = timed_call(a, {(r.rounds + i) % input_sets, kContentLifeWarmupBase + life * (1 << 8) + i}, clock,
                              rule.overhead_allowance_s);
          ++a.out.warmup_calls;
          if (!c) {
            fail_arm(r, a, c.error());
            return finish();
          }
        }
      }
    }

    // Mirrored blocks: the first round of a block draws the order, the second reverses it.
    ref_first = (r.rounds % 2 == 0) ? (rng() >> 63) != 0 : !ref_first;
    const int set = r.rounds % input_sets;
    Call calls[2];
    for (int pos = 0; pos < 2; ++pos) {
      const int which = (pos == 0) == ref_first ? 0 : 1;
      auto c = timed_call(arms[which], {set, r.rounds}, clock, rule.overhead_allowance_s);
      if (!c) {
        fail_arm(r, arms[which], c.error());
        return finish(); // the incomplete round is not recorded
      }
      calls[which] = std::move(*c);
    }
    for (int which = 0; which < 2; ++which) {
      RecordedSample s;
      s.round = r.rounds;
      s.life = life;
      s.position = (which == 0) == ref_first ? 0 : 1;
      s.input_set = set;
      s.kernel_seconds = calls[which].sample.kernel_seconds;
      s.round_trip_seconds = calls[which].sample.round_trip_seconds;
      s.call_seconds = calls[which].call_seconds;
      s.kernel_wall_seconds = calls[which].kernel_wall_seconds;
      s.charged_seconds = calls[which].charged_seconds;
      arms[which].out.samples.push_back(s);
      if (std::isfinite(s.kernel_seconds) && s.kernel_seconds > 0)
        kernel_total[which] += s.kernel_seconds;
    }
    r.reference.kernel_seconds_total = kernel_total[0];
    r.candidate.kernel_seconds_total = kernel_total[1];
    r.reference_first += ref_first ? 1 : 0;
    ++r.rounds;

    // The stop rule, at block boundaries so that order stays balanced.
    if (r.rounds % 2 != 0) continue;
    if (r.rounds < first_check) continue;
    const bool enough_samples = r.rounds >= rule.min_samples;
    const bool enough_time =
        std::max(kernel_total[0], kernel_total[1]) >= rule.min_time_s || r.rounds >= rule.max_samples;
    if (!enough_time && !early_without_time) continue;
    if (last_check >= 0 && r.rounds - last_check < rule.check_every_rounds) continue;
    // The width rule waits for min_lives; the decided rule only for the 3 lives an interval
    // needs, since its stricter interval already pays for having few (Student's t at 2 degrees
    // of freedom and 99.9% is 31.6).
    const int lives_now = renewing ? usable_lives(log_ratios(r), lives_of(r.reference)) : 0;
    if (renewing && lives_now < kMinLivesForInterval) continue;
    last_check = r.rounds;
    if (enough_samples && enough_time && (!renewing || lives_now >= std::max(rule.min_lives, kMinLivesForInterval))) {
      const PairedEstimate e = estimate();
      if (e.ci_determined && e.half_width <= rule.target_half_width) {
        r.stop_reason = StopReason::CiTarget;
        break;
      }
    }
    if (decided()) {
      r.stop_reason = StopReason::Decided;
      break;
    }
    if (behind()) {
      r.stop_reason = StopReason::Behind;
      break;
    }
  }
  if (r.stop_reason == StopReason::TooSlow) r.status = PairedStatus::TooSlow;
  return finish();
}

bool gap_excess(const PairedResult& r) {
  return r.candidate.unexplained_gap > 2 * r.reference.unexplained_gap + 2;
}

Verdict paired_verdict(const PairedResult& r, double delta) {
  if (r.status != PairedStatus::Measured) return Verdict::Ambiguous;
  return decide_verdict(r.estimate, delta);
}

} // namespace temper::judge
