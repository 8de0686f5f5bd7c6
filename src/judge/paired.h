// Paired timing of a candidate against a reference in one measurement job, independent of how
// a sample is taken: the arms are interfaces (worker processes in the judge, fakes in tests)
// and time comes from a util::Clock.
//
// Schedule. A round is one sample of each arm on the same input set; the set rotates per round
// (round % input_sets). Rounds come in blocks of two with mirrored order, AB BA or BA AB, the
// block's first order drawn from the seed: both arms see the same drift, each goes first in
// exactly half the rounds of every complete block, a linear trend cancels within a block, and
// a first-position effect becomes spread around the truth rather than a bias. The statistic is
// per round, r_i = ln(t_ref,i / t_cand,i) (stats.h).
//
// Sequence: warmup (unrecorded, alternating arms, each arm until it has spent warmup_s and made
// warmup_min_calls calls), then blocks until the stop rule holds. The width rule depends only on
// the interval's width and the amounts spent, never on where the estimate lies, so stopping
// early does not steer the verdict. The one rule that looks at where it lies, "decided"
// (StopRule::decided_band), stops only when a much stricter interval than the verdict's lies
// wholly outside the noise band: the verdict it leaves is the one the full measurement would
// almost surely give, and the chance that a candidate no faster than its reference stops there
// as FASTER is bounded by the stricter level's tail summed over the checks, and the
// confirmation jobs must agree (docs/benchmarks.md, "Stopping once decided").
//
// Budget. Each call is charged to its arm's cap as the kernel's measured time (kernel_seconds,
// on the protocol's clock) plus at most overhead_allowance_s of what the call cost around it:
// the harness's own per-sample work (restoring inputs, poisoning outputs, the cold-cache step,
// rechecks) and, with a CPU-time clock, time other processes held the CPU buy no samples, so
// they must not eat the cap; the wall limit below bounds them instead. Before each round, each arm's next call is predicted to cost its
// cheapest charge so far (warmup included). The measurement stops ("cap") when that call would
// take the arm past cap_s, or its wall time in sample() past wall_limit_factor * cap_s (which
// bounds the harness's part), and refuses at once ("too_slow", status TooSlow) while fewer than
// 3 rounds are recorded and the missing ones cannot fit: right after the warmup, an arm whose
// call takes more than a third of what is left of the cap is refused without spending the cap.
// With a single warmup call the prediction is that (possibly cold) call.
#pragma once

#include "judge/stats.h"
#include "util/clock.h"
#include "util/error.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge {

// One timed call as the arm reports it. ok = false is the kernel's failure (its message says
// why); an Error from sample() is the harness's. Either ends the measurement.
struct TimedSample {
  double kernel_seconds = 0;     // measured by the worker around the kernel call, on the
                                 // protocol's clock (monotonic, or the thread's CPU time)
  std::optional<double> kernel_wall_seconds; // the same call on the monotonic clock, when
                                 // kernel_seconds is not: what the cross-check uses
  double round_trip_seconds = 0; // measured by the judge around the command
  double judge_seconds = 0;      // the judge's own work in sample() (rechecking the output
                                 // against the golden): not the arm's cost, not in its wall limit
  bool ok = true;
  std::string message;
};

// Which values a call computes on. measure_paired gives both arms' calls of one step (a round,
// a warm-up step, a renewal's warm-up step) the same content id, and no two steps of a job the
// same one, so an arm that generates its values from (job, content id) computes on fresh values
// every call while the two arms of a round compute on the same values.
struct CallContent {
  int input_set = 0; // the arena slot (addresses rotate over the job)
  int content = 0;   // the values: unique per step of the job, the same for both arms
};

// Content ids by step kind: rounds count from 0; warm-up steps, second looks and renewals'
// warm-up steps have ranges of their own above every round number a job can reach.
inline constexpr int kContentWarmupBase = 1 << 24;
inline constexpr int kContentSecondLookBase = 2 << 24;
inline constexpr int kContentLifeWarmupBase = 3 << 24;

class TimedArm {
public:
  virtual ~TimedArm() = default;
  // Runs the kernel once on `call.input_set`'s slot with `call.content`'s values and reports its times.
  virtual Expected<TimedSample> sample(CallContent call) = 0;
  // Whether renew() starts a new life (StopRule::target_lives); arms that cannot keep one life.
  virtual bool renewable() const { return false; }
  // Replaces the arm's process and memory with fresh ones (new code and data placement), same
  // kernel, same input sets. An error is the harness's, as from sample().
  virtual Status renew() { return {}; }
};

struct StopRule {
  int min_samples = 10;    // per arm (= rounds) before the interval may stop the measurement
  // Accumulated kernel time before the interval may stop it, reached by either arm (nvbench's
  // min-time 0.5 s): forces more rounds for fast kernels. Either arm, because the slower arm's
  // time spans the same wall time; requiring both would send every large speedup to the cap.
  double min_time_s = 0.5;
  double target_half_width = std::log(1.005); // of the log-ratio interval: +-0.5%
  double cap_s = 15;       // per arm, charged as above (kernel time + bounded overhead), incl. warmup
  double overhead_allowance_s = 1e-3; // per call, charged on top of the kernel's time at most
  double wall_limit_factor = 4;       // an arm's wall time in sample() stops it at this * cap_s
  int max_samples = 1000;  // per arm; also satisfies min_time_s when reached (at most 2^16: content ids)
  double warmup_s = 0.025; // per arm, unrecorded
  int warmup_min_calls = 1;
  int warmup_max_calls = 1000; // bounds the warmup when calls take no time
  int check_every_rounds = 4;  // interval recomputed at most this often once the minimums hold
  CiOptions ci;                // interval method and level (the bootstrap seed is overridden)
  // Lives. A worker process keeps its code and data placement for its whole life, and on this
  // machine's VMs placement alone moves a kernel's time by 1-5% for as long as the process
  // lives (the same artifact in both arms: A/A intervals over rounds excluded 1 in 43% of jobs).
  // So, when both arms are renewable, both are renewed together every few rounds and the
  // interval is taken over lives (CiMethod::Lives): placement becomes noise the interval
  // covers instead of a bias it hides. Rounds per life: an even number chosen after the warmup
  // so that the cap holds about target_lives lives, within [2, max_life_rounds]; 1 when the
  // calls are so slow that lives of 2 rounds and their warm-ups would not reach the 3 lives an
  // interval needs. The interval may stop the measurement only once min_lives lives have data.
  // 0 target_lives: one life.
  int target_lives = 12;
  int min_lives = 6;
  int max_life_rounds = 16;
  // Unrecorded calls per arm after each renewal: the worker maps its arena populated, but a
  // kernel's first call in a process can still pay its own first-touch costs (a scratch
  // allocation's page faults, cold code).
  int life_warmup_calls = 1;
  // Stop once decided: at a check, when the interval at decided_confidence (same method; after
  // decided_min_samples rounds) lies wholly above decided_band or wholly below -decided_band (log units: the
  // verdict's noise band), the verdict is settled and further rounds would only narrow an
  // interval nobody needs narrower (a 25x speedup needs no +-0.5%). 0: off. The reported
  // estimate stays the usual one, with the interval it has.
  double decided_band = 0;
  double decided_confidence = 0.999;
  // Whether the decided and behind rules also wait for min_time_s. They need not: min_time_s
  // buys the width rule's +-0.5% on fast kernels, while a settled verdict's 99.9% interval over
  // lives already pays for having few samples (its false-stop rate is per interval, whatever its
  // width). On a 0.1 ms kernel the minimum time alone is 1000 rounds (max_samples), 18 s a job
  // against PyTorch's runner. true: the old rule (bench/timing_protocol compares both).
  bool decided_waits_for_min_time = false;
  // Rounds before the decided and behind rules may stop a job, when fewer than min_samples (they
  // never wait longer than it): on a reference of 0.6 s a call the cap holds 8 rounds, so
  // min_samples (10) sent every job there although a 50x speedup is settled after 6. Like
  // min_time_s, min_samples buys the width rule its precision; the decided rule's interval over
  // lives pays for few samples itself. 0: min_samples (the old rule; bench/timing_protocol).
  int decided_min_samples = 6;
  // Racing (the probe tier): at a check, when the interval at decided_confidence lies wholly
  // below behind_below (log speedup), the candidate is clearly slower than a variant already
  // measured against the same reference, and more rounds would only rank it more precisely among
  // the losers. Unset: off. Like "decided", it waits for decided_min_samples and for 3 lives.
  std::optional<double> behind_below;
};

// Checks a rule taken from a user (flags, config); measure_paired itself clamps nonsense.
Status validate_stop_rule(const StopRule& rule);

// The smallest cap_s under `rule` at which an arm whose every call is charged `call_seconds`
// of kernel time (the overhead allowance comes on top) records the 3 rounds a verdict needs
// instead of stopping TOO_SLOW: its warm-up calls, the 3 rounds, and with lives
// (target_lives > 0; one round per life at such a cap) the warm-ups of the 2 renewals that
// give the interval its 3 lives.
double cap_for_verdict(const StopRule& rule, double call_seconds);

// Round-trip cross-check. A sample is flagged, in this order of precedence:
//   InvalidTime       kernel time negative or not finite, or round trip not positive/finite;
//   ExceedsRoundTrip  kernel time > round trip + tolerance_s: the worker timed more than the
//                     judge saw, which only a lying worker can do;
//   UnexplainedGap    round trip - kernel time > gap_factor * overhead + gap_slack_s: the call
//                     spent far longer outside the kernel's timer than the harness needs, the
//                     trace of work done before the timer starts or of a patched timer. The
//                     overhead is `overhead_s` when calibrated, else the median gap of the
//                     reference arm (the sealed reference is trusted and runs the same harness).
// Both use the kernel's wall time (TimedSample::kernel_wall_seconds when given). Flags are
// counted, never acted on here: samples stay in the statistics (dropping one arm's sample would
// break the pairing, and on a loaded machine the trusted reference is flagged too). The
// reference's count is the machine's baseline; gap_excess() says when the candidate's count
// stands out from it, which the judge reports as a warning, not a verdict.
struct CrossCheck {
  double tolerance_s = 1e-6; // timer granularity between the worker's and the judge's clocks
  std::optional<double> overhead_s;
  double gap_factor = 4;
  double gap_slack_s = 1e-3; // scheduler hiccups on a shared 2-core VM
};

enum class SampleFlag { None, InvalidTime, ExceedsRoundTrip, UnexplainedGap };
std::string_view sample_flag_name(SampleFlag f); // none, invalid_time, ...

SampleFlag check_sample(double kernel_seconds, double round_trip_seconds,
                        const CrossCheck& check, double overhead_s);

enum class Arm { Reference, Candidate };
std::string_view arm_name(Arm a); // reference, candidate

enum class PairedStatus { Measured, TooSlow, ArmFailed };
std::string_view paired_status_name(PairedStatus s); // MEASURED, TOO_SLOW, ARM_FAILED

// ci_target: the interval reached the target width; decided: the stricter interval settled the
// verdict (StopRule::decided_band); cap: an arm's next call would pass cap_s;
// wall_limit: an arm's next call would pass wall_limit_factor * cap_s of wall time (a loaded
// machine, with a CPU-time clock, or a costly harness); max_samples: max_samples rounds without
// reaching the target; too_slow: fewer than 3 rounds fit; arm_failed: an arm's call failed;
// behind: the stricter interval lies below StopRule::behind_below (a probe's race).
enum class StopReason { CiTarget, Decided, Cap, WallLimit, MaxSamples, TooSlow, ArmFailed, Behind };
std::string_view stop_reason_name(StopReason r);

struct RecordedSample {
  int round = 0;
  int life = 0;     // which life of the arm's process took it (0 before the first renewal)
  int position = 0; // 0: this arm went first in its round, 1: second
  int input_set = 0;
  double kernel_seconds = 0;
  double round_trip_seconds = 0;
  double call_seconds = 0; // on the Clock around sample()
  double kernel_wall_seconds = 0; // = kernel_seconds when the protocol's clock is monotonic
  double charged_seconds = 0;     // what the call cost the cap
  SampleFlag flag = SampleFlag::None;
};

struct ArmResult {
  std::vector<RecordedSample> samples; // complete rounds only, in round order
  ArmStats stats;                      // of kernel_seconds
  int warmup_calls = 0;
  double spent_seconds = 0;        // charged to the cap, warmup included
  double wall_seconds = 0;         // on the Clock in sample() calls, warmup included
  double kernel_seconds_total = 0; // recorded samples
  int renewals = 0;                // lives after the first
  double renew_seconds = 0;        // wall time spent renewing (not charged to the cap)
  int invalid_time = 0;
  int exceeds_round_trip = 0;
  int unexplained_gap = 0;
};

struct PairedResult {
  PairedStatus status = PairedStatus::Measured;
  StopReason stop_reason = StopReason::CiTarget;
  std::optional<Arm> failed_arm;
  std::string failure_message;
  int rounds = 0;               // complete rounds recorded
  int lives = 1;                // lives the rounds came from
  int life_rounds = 0;          // rounds per life (0: one life, renewal off)
  int reference_first = 0;      // rounds in which the reference went first
  ArmResult reference;
  ArmResult candidate;
  PairedEstimate estimate;      // candidate's speedup over the reference
  int suspicious_samples = 0;   // flagged samples, both arms
  double gap_overhead_s = 0;    // the overhead the UnexplainedGap rule used
  double wall_seconds = 0;      // on the Clock, whole measurement
};

PairedResult measure_paired(TimedArm& ref, TimedArm& cand, util::Clock& clock,
                            const StopRule& rule, uint64_t seed, int input_sets,
                            const CrossCheck& cross_check = {});

// Several candidates against one reference in one job: a round is one call of the reference and
// of every candidate still measuring, on the same values, in a random order that the block's
// second round reverses (every pair meets in both orders, as in measure_paired). Each pair is
// what measure_paired would make of it: its own stop rule, cap and verdict over the rounds it
// took part in, the reference's calls of those rounds as its reference arm. A candidate that
// stops (its interval, its cap, a failed call) leaves the round; the reference's stop or failure
// ends every pair still measuring. What the reference spent (warm-ups, renewals, cap) is the
// job's, reported whole in every pair. The reference's calls are paid once for all candidates:
// a probe whose variants are 50 times faster than the reference spends its time there
// (docs/benchmarks.md, "One reference for a probe's variants"). With one candidate this is
// measure_paired, call for call.
//
// With SharedSide::Candidate the roles turn round: the shared arm is one candidate and the others
// are references (the final report's starting reference and PyTorch columns, one job per case).
// Every result is then the pair as measure_paired(other, shared) would report it (its reference
// arm the other's calls, the speedup the shared arm's over it); the stop rules are the same, the
// race's (behind_below) excepted, which ranks candidates and is ignored here.
enum class SharedSide { Reference, Candidate };
std::vector<PairedResult> measure_shared(TimedArm& shared, std::span<TimedArm* const> others, util::Clock& clock,
                                         const StopRule& rule, uint64_t seed, int input_sets,
                                         const CrossCheck& cross_check = {}, SharedSide side = SharedSide::Reference);

// Whether the candidate's UnexplainedGap count stands out from the reference's on the same
// machine in the same job: more than twice the reference's count plus 2.
bool gap_excess(const PairedResult& r);

// The candidate's verdict at noise threshold delta; AMBIGUOUS unless the status is Measured.
Verdict paired_verdict(const PairedResult& r, double delta);

} // namespace temper::judge
