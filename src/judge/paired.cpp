#include "judge/paired.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
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

namespace {

// The arms of a round in a random order: for two arms one coin, as measure_paired always drew it.
std::vector<int> random_order(std::mt19937_64& rng, const std::vector<int>& arms) {
  std::vector<int> order = arms;
  if (order.size() == 2) {
    if ((rng() >> 63) == 0) std::swap(order[0], order[1]);
    return order;
  }
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(rng() % i)]);
  return order;
}

// A pair measured with the shared arm as its reference, as the pair with the shared arm as its
// candidate: the arms change places (their samples keep their positions in the rounds).
void turn_round(PairedResult& r) {
  std::swap(r.reference, r.candidate);
  r.reference_first = r.rounds - r.reference_first;
  if (r.failed_arm) r.failed_arm = *r.failed_arm == Arm::Reference ? Arm::Candidate : Arm::Reference;
}

// One candidate's side of a shared measurement.
struct Pairing {
  PairedResult result;
  bool active = true;
  double kernel_total = 0;
  int last_check = -1;
  int life_at_stop = 0;
  double stopped_at = 0;
  std::vector<int> positions; // per recorded round: this candidate's place in the round's order
};

} // namespace

std::vector<PairedResult> measure_shared(TimedArm& ref, std::span<TimedArm* const> cands, util::Clock& clock,
                                         const StopRule& rule_in, uint64_t seed, int input_sets,
                                         const CrossCheck& cross_check, SharedSide side) {
  StopRule rule = sanitized(rule_in);
  // The race ranks candidates against one reference; with the candidate shared there is nothing to rank.
  if (side == SharedSide::Candidate) rule.behind_below.reset();
  input_sets = std::max(input_sets, 1);
  const size_t n_cands = cands.size();
  std::vector<Pairing> pairs(n_cands);
  // The reference's calls serve every candidate: one record of them, cut per pair at the end.
  ArmResult ref_out;
  std::vector<int> ref_positions;
  std::vector<ArmState> arms;
  arms.reserve(n_cands + 1);
  arms.push_back({ref, ref_out, Arm::Reference});
  for (size_t k = 0; k < n_cands; ++k) arms.push_back({*cands[k], pairs[k].result.candidate, Arm::Candidate});
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
  int rounds = 0; // rounds of the job; an active candidate took part in every one
  double ref_kernel_total = 0;
  // The pair as measure_paired reports it: the reference's rounds that the candidate took part in.
  auto pair_view = [&](Pairing& p) -> PairedResult& {
    PairedResult& r = p.result;
    const size_t n = r.candidate.samples.size();
    r.reference = ref_out;
    r.reference.samples.assign(ref_out.samples.begin(), ref_out.samples.begin() + static_cast<std::ptrdiff_t>(n));
    r.reference.kernel_seconds_total = 0;
    r.reference_first = 0;
    for (size_t i = 0; i < n; ++i) {
      const bool ref_first = ref_positions[i] < p.positions[i];
      r.reference.samples[i].position = ref_first ? 0 : 1;
      r.candidate.samples[i].position = ref_first ? 1 : 0;
      r.reference_first += ref_first ? 1 : 0;
      const double t = r.reference.samples[i].kernel_seconds;
      if (std::isfinite(t) && t > 0) r.reference.kernel_seconds_total += t;
    }
    r.rounds = static_cast<int>(n);
    return r;
  };
  auto estimate_of = [](const PairedResult& r, const CiOptions& options, int lives) {
    if (lives == 0) return estimate_paired(kernel_times(r.reference), kernel_times(r.candidate), options);
    return estimate_from_lives(log_ratios(r), lives_of(r.reference), options);
  };
  CiOptions decided_ci = ci;
  decided_ci.confidence = rule.decided_confidence;
  // The rules that look at the stricter interval (one estimate serves both).
  auto strict_stop = [&](const PairedResult& view) -> std::optional<StopReason> {
    if (!(rule.decided_band > 0) && !rule.behind_below) return std::nullopt;
    const PairedEstimate d = estimate_of(view, decided_ci, life);
    if (!d.ci_determined) return std::nullopt;
    if (rule.decided_band > 0 && (d.log_lo > rule.decided_band || d.log_hi < -rule.decided_band)) return StopReason::Decided;
    if (rule.behind_below && d.log_hi < *rule.behind_below) return StopReason::Behind;
    return std::nullopt;
  };
  auto stop = [&](Pairing& p, StopReason why) {
    p.active = false;
    p.result.stop_reason = why;
    p.life_at_stop = life;
    p.stopped_at = clock.now();
  };
  auto fail_pair = [&](Pairing& p, Arm which, const Error& e) {
    p.result.status = PairedStatus::ArmFailed;
    p.result.failed_arm = which;
    p.result.failure_message = e.message;
    stop(p, StopReason::ArmFailed);
  };
  auto any_active = [&] { return std::any_of(pairs.begin(), pairs.end(), [](const Pairing& p) { return p.active; }); };
  auto finish = [&]() -> std::vector<PairedResult> {
    std::vector<PairedResult> out;
    out.reserve(n_cands);
    for (Pairing& p : pairs) {
      if (p.active) stop(p, p.result.stop_reason);
      PairedResult& r = pair_view(p);
      if (side == SharedSide::Candidate) turn_round(r);
      if (r.status == PairedStatus::Measured && r.stop_reason == StopReason::TooSlow) r.status = PairedStatus::TooSlow;
      r.reference.stats = summarize(kernel_times(r.reference));
      r.candidate.stats = summarize(kernel_times(r.candidate));
      r.estimate = estimate_of(r, ci, p.life_at_stop);
      r.lives = p.life_at_stop + 1;
      cross_check_arms(r, cross_check);
      r.wall_seconds = p.stopped_at - t0;
      out.push_back(std::move(r));
    }
    return out;
  };
  // A failed call: the reference's ends every pair still measuring, a candidate's only its own.
  auto fail_arm_at = [&](size_t a, const Error& e) {
    if (a == 0) {
      for (Pairing& p : pairs)
        if (p.active) fail_pair(p, Arm::Reference, e);
    } else {
      fail_pair(pairs[a - 1], Arm::Candidate, e);
    }
  };
  auto arm_active = [&](size_t a) { return a == 0 ? any_active() : pairs[a - 1].active; };

  // Warmup: alternate the arms, so all warm up under the same conditions.
  auto needs_warmup = [&](size_t a) {
    const ArmState& s = arms[a];
    return arm_active(a) && s.out.warmup_calls < rule.warmup_max_calls &&
           (s.out.warmup_calls < rule.warmup_min_calls || s.out.spent_seconds < rule.warmup_s);
  };
  auto any_needs_warmup = [&] {
    for (size_t a = 0; a < arms.size(); ++a)
      if (needs_warmup(a)) return true;
    return false;
  };
  for (int i = 0; any_needs_warmup(); ++i) {
    for (size_t j = 0; j < arms.size(); ++j) {
      const size_t a = (static_cast<size_t>(i) + j) % arms.size();
      if (!needs_warmup(a)) continue;
      auto c = timed_call(arms[a], {i % input_sets, kContentWarmupBase + i}, clock, rule.overhead_allowance_s);
      ++arms[a].out.warmup_calls;
      if (!c) {
        fail_arm_at(a, c.error());
        if (a == 0) return finish();
      }
    }
  }
  if (!any_active()) return finish();

  // Lives: rounds per life from what the warmup says a call costs.
  bool renewing = rule.target_lives > 0 && ref.renewable();
  for (TimedArm* c : cands) renewing = renewing && c->renewable();
  int life_rounds = 0;
  if (renewing) {
    // Whole mirrored blocks (an even count) sized so that the cap holds about target_lives
    // lives; but one round per life when the calls are so slow that lives of two rounds and
    // their warm-ups would not reach the 3 lives an interval needs (it is then over single
    // rounds, each from its own processes).
    double per_round = 0, spent = 0;
    for (const ArmState& a : arms) {
      per_round = std::max(per_round, a.cheapest_charge);
      spent = std::max(spent, a.out.spent_seconds);
    }
    const double predicted = per_round > 0 && std::isfinite(per_round) ? std::min(rule.cap_s / per_round, double(rule.max_samples))
                                                                       : double(rule.max_samples);
    int life_len = static_cast<int>(predicted / rule.target_lives);
    life_len = std::clamp(life_len, 2, std::max(2, rule.max_life_rounds));
    life_rounds = life_len - life_len % 2;
    const double left = per_round > 0 && std::isfinite(per_round) ? (rule.cap_s - spent) / per_round : predicted;
    if (left < kMinLivesForInterval * (2 + std::max(rule.life_warmup_calls, 0))) life_rounds = 1;
  }
  for (Pairing& p : pairs) p.result.life_rounds = life_rounds;

  std::vector<int> order; // this round's arms in the order they run
  // Extra warm-up calls before a refusal at round 0: a worker's first calls may all pay for
  // what later calls do not (a PyTorch arm that allocates its output afresh each call paid 1.4 s
  // on two first calls against 0.32 s in the job before, where fresh pages cost more).
  constexpr int kMaxLooks = 2;
  int second_looks = 0;
  while (any_active()) {
    if (rounds >= rule.max_samples) {
      for (Pairing& p : pairs)
        if (p.active) stop(p, StopReason::MaxSamples);
      break;
    }
    const bool renew_now = renewing && rounds > 0 && rounds % life_rounds == 0 && rounds / life_rounds > life;
    // Stop before a round the cap cannot hold; refuse early when 3 rounds cannot fit at all.
    // The calls still needed include the warm-ups of the renewals among those rounds.
    const int rounds_needed = std::max(kMinRoundsForVerdict - rounds, 1);
    int renewals_ahead = 0;
    for (int k = rounds; renewing && k < rounds + rounds_needed; ++k) renewals_ahead += k > 0 && k % life_rounds == 0;
    // Every stopping arm has only its first calls, which might mislead.
    bool first_call_only = rounds == 0 && second_looks < kMaxLooks;
    std::vector<size_t> stopping;
    std::vector<StopReason> reasons;
    for (size_t a = 0; a < arms.size(); ++a) {
      if (!arm_active(a)) continue;
      const ArmState& s = arms[a];
      const int still_needed = rounds_needed + renewals_ahead * rule.life_warmup_calls;
      const double per_call = std::isfinite(s.cheapest_charge) ? s.cheapest_charge : 0;
      const double per_call_wall = std::isfinite(s.cheapest_wall) ? s.cheapest_wall : 0;
      const bool cap = s.out.spent_seconds + still_needed * per_call > rule.cap_s;
      const bool wall = s.out.wall_seconds + still_needed * per_call_wall > rule.wall_limit_factor * rule.cap_s;
      if (cap || wall) {
        // Worth another look only when the arm would fit at half the cost of its cheapest call,
        // and only for an arm that has made no call but its first and the looks.
        const bool fits_at_half = s.out.spent_seconds + still_needed * per_call / 2 <= rule.cap_s &&
                                  s.out.wall_seconds + still_needed * per_call_wall / 2 <= rule.wall_limit_factor * rule.cap_s;
        if (s.out.warmup_calls != 1 + second_looks || !fits_at_half) first_call_only = false;
        stopping.push_back(a);
        reasons.push_back(rounds < kMinRoundsForVerdict ? StopReason::TooSlow : cap ? StopReason::Cap : StopReason::WallLimit);
      }
    }
    // A prediction from one call is a prediction from a worker's first call, which may pay for
    // what later calls do not (0.70 s instead of 0.49 s for SwiGLU case 5's reference; a 4 s
    // round trip on a candidate's first call): before refusing on it, when the refusal is
    // marginal, the arms with only their first calls make one more unrecorded call (at most
    // kMaxLooks in all), and the check runs again on the cheapest.
    if (!stopping.empty() && first_call_only) {
      const int look = second_looks++;
      for (size_t a : stopping) {
        auto c = timed_call(arms[a], {1 % input_sets, kContentSecondLookBase + look}, clock, rule.overhead_allowance_s);
        ++arms[a].out.warmup_calls;
        if (!c) {
          fail_arm_at(a, c.error());
          if (a == 0) return finish();
        }
      }
      continue;
    }
    // The reference's stop ends every pair, a candidate's its own; where both stop at once the
    // candidate's reason is the pair's.
    for (size_t i = stopping.size(); i-- > 0;) {
      if (stopping[i] == 0) {
        for (Pairing& p : pairs)
          if (p.active) stop(p, reasons[i]);
      } else if (pairs[stopping[i] - 1].active) {
        stop(pairs[stopping[i] - 1], reasons[i]);
      }
    }
    if (!any_active()) break;

    std::vector<int> live_arms;
    for (size_t a = 0; a < arms.size(); ++a)
      if (arm_active(a)) live_arms.push_back(static_cast<int>(a));
    if (renew_now) {
      // Every arm still measuring together, in a random order, then a short unrecorded warmup of each.
      const std::vector<int> renew_order = random_order(rng, live_arms);
      for (int a : renew_order) {
        if (!arm_active(static_cast<size_t>(a))) continue;
        ArmState& s = arms[static_cast<size_t>(a)];
        const double t = clock.now();
        Status st = s.arm.renew();
        s.out.renew_seconds += std::max(clock.now() - t, 0.0);
        ++s.out.renewals;
        if (!st) {
          fail_arm_at(static_cast<size_t>(a), Error{"harness: renewing the worker: " + st.error().message});
          if (a == 0) return finish();
        }
      }
      ++life;
      for (int i = 0; i < rule.life_warmup_calls; ++i) {
        for (int a : renew_order) {
          if (!arm_active(static_cast<size_t>(a))) continue;
          ArmState& s = arms[static_cast<size_t>(a)];
          auto c = timed_call(s, {(rounds + i) % input_sets, kContentLifeWarmupBase + life * (1 << 8) + i}, clock,
                              rule.overhead_allowance_s);
          ++s.out.warmup_calls;
          if (!c) {
            fail_arm_at(static_cast<size_t>(a), c.error());
            if (a == 0) return finish();
          }
        }
      }
      if (!any_active()) break;
      live_arms.clear();
      for (size_t a = 0; a < arms.size(); ++a)
        if (arm_active(a)) live_arms.push_back(static_cast<int>(a));
    }

    // Mirrored blocks: the first round of a block draws the order, the second reverses it, so
    // every pair of arms meets in both orders.
    // An arm that stopped inside a block leaves the others' orders mirrored.
    if (rounds % 2 == 0) {
      order = random_order(rng, live_arms);
    } else {
      std::erase_if(order, [&](int a) { return !arm_active(static_cast<size_t>(a)); });
      std::reverse(order.begin(), order.end());
    }
    const int set = rounds % input_sets;
    std::vector<std::optional<Call>> calls(arms.size());
    for (int a : order) {
      auto c = timed_call(arms[static_cast<size_t>(a)], {set, rounds}, clock, rule.overhead_allowance_s);
      if (!c) {
        fail_arm_at(static_cast<size_t>(a), c.error());
        if (a == 0) return finish(); // the incomplete round is not recorded
        continue;
      }
      calls[static_cast<size_t>(a)] = std::move(*c);
    }
    auto record = [&](size_t a, int position) {
      const Call& call = *calls[a];
      RecordedSample s;
      s.round = rounds;
      s.life = life;
      s.position = position;
      s.input_set = set;
      s.kernel_seconds = call.sample.kernel_seconds;
      s.round_trip_seconds = call.sample.round_trip_seconds;
      s.call_seconds = call.call_seconds;
      s.kernel_wall_seconds = call.kernel_wall_seconds;
      s.charged_seconds = call.charged_seconds;
      arms[a].out.samples.push_back(s);
      return s.kernel_seconds;
    };
    const auto position_of = [&](int a) { return static_cast<int>(std::find(order.begin(), order.end(), a) - order.begin()); };
    const double ref_t = record(0, position_of(0));
    ref_positions.push_back(position_of(0));
    if (std::isfinite(ref_t) && ref_t > 0) ref_kernel_total += ref_t;
    ref_out.kernel_seconds_total = ref_kernel_total;
    for (size_t k = 0; k < n_cands; ++k) {
      Pairing& p = pairs[k];
      if (!p.active || !calls[k + 1]) continue;
      const double t = record(k + 1, position_of(static_cast<int>(k + 1)));
      p.positions.push_back(position_of(static_cast<int>(k + 1)));
      if (std::isfinite(t) && t > 0) p.kernel_total += t;
      p.result.candidate.kernel_seconds_total = p.kernel_total;
    }
    ++rounds;

    // The stop rule, at block boundaries so that order stays balanced.
    if (rounds % 2 != 0) continue;
    if (rounds < first_check) continue;
    for (Pairing& p : pairs) {
      if (!p.active) continue;
      const bool enough_samples = rounds >= rule.min_samples;
      const bool enough_time = std::max(ref_kernel_total, p.kernel_total) >= rule.min_time_s || rounds >= rule.max_samples;
      if (!enough_time && !early_without_time) continue;
      if (p.last_check >= 0 && rounds - p.last_check < rule.check_every_rounds) continue;
      // The width rule waits for min_lives; the decided rule only for the 3 lives an interval
      // needs, since its stricter interval already pays for having few (Student's t at 2 degrees
      // of freedom and 99.9% is 31.6).
      const PairedResult& view = pair_view(p);
      const int lives_now = renewing ? usable_lives(log_ratios(view), lives_of(view.reference)) : 0;
      if (renewing && lives_now < kMinLivesForInterval) continue;
      p.last_check = rounds;
      if (enough_samples && enough_time && (!renewing || lives_now >= std::max(rule.min_lives, kMinLivesForInterval))) {
        const PairedEstimate e = estimate_of(view, ci, life);
        if (e.ci_determined && e.half_width <= rule.target_half_width) {
          stop(p, StopReason::CiTarget);
          continue;
        }
      }
      if (auto why = strict_stop(view)) stop(p, *why);
    }
  }
  return finish();
}

PairedResult measure_paired(TimedArm& ref, TimedArm& cand, util::Clock& clock,
                            const StopRule& rule, uint64_t seed, int input_sets,
                            const CrossCheck& cross_check) {
  TimedArm* const cands[1] = {&cand};
  return std::move(measure_shared(ref, cands, clock, rule, seed, input_sets, cross_check).front());
}

bool gap_excess(const PairedResult& r) {
  return r.candidate.unexplained_gap > 2 * r.reference.unexplained_gap + 2;
}

Verdict paired_verdict(const PairedResult& r, double delta) {
  if (r.status != PairedStatus::Measured) return Verdict::Ambiguous;
  return decide_verdict(r.estimate, delta);
}

} // namespace temper::judge
