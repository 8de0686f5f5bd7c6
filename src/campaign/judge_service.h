// The orchestrator's way to the judge: judge a candidate (correctness, probe or gate tier)
// against a sealed reference, probe a knob grid, measure the reference as a black box. Behind an
// interface so the campaign's state machine is tested with a scripted judge; RealJudgeService
// calls the judge layer (run_judge, run_probe). Results are report JSON documents, the same the
// CLI writes, summarized by summarize_report.
#pragma once

#include "build/compiler.h"
#include "campaign/campaign_state.h"
#include "campaign/ledger.h"
#include "campaign/reference_store.h"
#include "judge/output_check.h"
#include "judge/paired.h"
#include "judge/roofline.h"
#include "judge/timing.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace temper::campaign {

struct JudgeCall {
  std::filesystem::path task_dir;
  std::filesystem::path candidate;  // a candidate source; empty: judge the sealed reference itself
  // The sealed reference, by name in its store (`temper judge --reference NAME --store DIR`):
  // the candidate is timed against its artifacts and must not call it. Without a name the run
  // is correctness only.
  std::string reference;
  std::filesystem::path store;
  // The reference arm is the task's PyTorch function (`temper judge --reference torch`) instead
  // of a sealed reference: the final report's "vs PyTorch" column.
  bool torch_reference = false;
  int torch_threads = -1;           // judge::TimingOptions::torch_threads (-1 the kernel's, 0 PyTorch's default)
  // The same judgement also against PyTorch at these thread counts, in the same jobs
  // (judge::TimingOptions::also_torch_threads): the report's "also" entries.
  std::vector<int> also_torch_threads;
  std::string tier = "gate";        // correctness | probe | gate
  std::vector<int64_t> cases;       // empty: every case of the task
  std::vector<std::string> grid;    // probe only: "NAME=v1,v2"
  std::vector<std::map<std::string, std::string>> variants; // probe only, instead of a grid: explicit variants
  double time_limit_s = 7200;       // the per-job limit the run must fit in
  std::optional<judge::Roofline> roofline; // timed runs: bounds per case (fraction of roofline)
  // The sealed reference's kernel seconds per case, as the campaign measured them once per
  // round (reference/times.json): a timed run raises its cap so that the slowest timed case's
  // reference fits a verdict (choose_cap). Empty: the configured cap as it is.
  std::map<int64_t, double> reference_seconds;
  // The judge's own progress lines on stderr (goldens, cases checked, timing jobs): for the
  // long runs the campaign makes on its own, the reference's times and the final report.
  bool progress = false;
};

struct JudgeOutcome {
  nlohmann::json report; // temper.judge.report or temper.probe.report
  std::string note;      // how the run was shaped to fit the per-job limit, if it was
};

class JudgeService {
public:
  virtual ~JudgeService() = default;
  // Errors are harness problems (bad task, reference that fails, a run that cannot fit in its
  // limit); a candidate's failure is in the report.
  virtual Expected<JudgeOutcome> judge(const JudgeCall& call) = 0;
  // A knob grid, or a list of variants, on one case (call.cases[0]) against the reference.
  virtual Expected<JudgeOutcome> probe_grid(const JudgeCall& call) = 0;
  // The sealed reference's disassembly summary (text), for the Teacher: its artifact for
  // call.cases[0] (or the task's first case).
  virtual Expected<std::string> disassemble(const JudgeCall& call) = 0;
  // Several probes (a tuner's rung over several cases), one outcome per call in order: here one
  // after another; a cluster runs their jobs side by side.
  virtual std::vector<Expected<JudgeOutcome>> probe_grids(const std::vector<JudgeCall>& calls) {
    std::vector<Expected<JudgeOutcome>> out;
    for (const auto& c : calls) out.push_back(probe_grid(c));
    return out;
  }
  // Whether this call (probe: probe_grid) was handed to a cluster before and can be waited for
  // or read back: `temper resume` then runs the step again instead of calling it interrupted.
  virtual bool has_job(const JudgeCall& /*call*/, bool /*probe*/) const { return false; }
};

// Names `ref` as the call's sealed reference.
void set_reference(JudgeCall& call, const SealedReference& ref);

// How the campaign compiles candidates and seals references (the same, so the judge's
// compiler-match check holds).
build::CompilerSpec compiler_spec(const JudgeSettings& settings);

// What the orchestrator needs from a report.
struct ReportSummary {
  std::string kind;
  int cases = 0;
  int passed = 0;
  bool all_passed = false;
  std::string first_failure;         // "case 5: INCORRECT_NUMERICAL: ..." when not all passed
  bool timed = false;
  std::string tier;
  std::optional<double> speedup;     // geomean over timed cases (probe grid: the best variant)
  // Geomean of the timed cases' fractions of the roofline (probe grid: the best variant's);
  // empty when any timed case has none (no roofline given, no cost model).
  std::optional<double> roofline_fraction;
  int faster = 0, slower = 0, same = 0, ambiguous = 0;
  bool all_confirmed = false;        // every timed case's verdict was confirmed
  int confirmation_jobs = 0;
  double wall_seconds = 0;
  double compile_seconds = 0;
  bool compile_cache_hit = true;
  double confirm_seconds = 0;
  std::string best_variant;          // probe grid
  double queue_seconds = 0;          // a cluster's queue and resubmissions (report's "executor"), not in wall_seconds

  // The confirmed gate verdict FASTER that promotion asks for: a gate with confirmation jobs,
  // every case passed, every timed case confirmed, none SLOWER or AMBIGUOUS, at least one
  // FASTER, and a geomean speedup above 1.
  bool gate_faster() const;
};

ReportSummary summarize_report(const nlohmann::json& report);

// The ledger rows of a report's cluster submissions ("executor" of a report a cluster ran; none
// for a local run), keyed under the judge run's key.
std::vector<ClusterJobRow> cluster_job_rows(const std::string& judge_run_key, const nlohmann::json& report);

// Shapes a timed run to fit `limit_s`: the per-arm cap shrinks so that cases x jobs x 2 arms x
// cap plus a fixed allowance per case stays within the limit. Error when even a 0.05 s cap does
// not fit. Returns the cap to use.
Expected<double> fit_cap_to_limit(double cap_s, int cases, int jobs, double limit_s);

// Correctness trials time warm calls on a quiet worker; a timed call follows a cold-cache step,
// may run while the other CPU compiles and checks, and the first call of every worker life
// costs more (SwiGLU case 4's reference: 0.70 s against 0.47 s, in each of the 3 lives a
// verdict needs): the measured reference time is taken this much longer. At 1.25 and at 1.5,
// probes on cases 4 and 5 came back TOO_SLOW.
inline constexpr double kReferenceTimeMargin = 2.0;
// A bound on what one slow case may cost every case of the run (the cap is per run, not per
// case), and on older campaigns' times.json, which held wall-clock seconds that a loaded machine
// inflates (10x at load 10 on 2 cores): the cap is raised at most this many times the configured one.
inline constexpr double kMaxCapRaise = 8;

struct CapChoice {
  double cap_s = 0;
  std::string note; // what changed from the configured cap and why; empty when nothing did
};

// The per-arm cap of a timed run of `cases` case(s) x `jobs` job(s): the configured `cap_s`,
// raised so that the sealed reference's slowest case among `timed_cases` (all of
// `reference_seconds` when empty), at kReferenceTimeMargin times its measured seconds, records
// the rounds a verdict needs plus its warm-up under `rule` (judge::cap_for_verdict) instead of
// being TOO_SLOW, at most kMaxCapRaise times `cap_s`; then bounded by the per-job limit
// (fit_cap_to_limit).
Expected<CapChoice> choose_cap(double cap_s, const std::map<int64_t, double>& reference_seconds,
                               const std::vector<int64_t>& timed_cases, int cases, int jobs, double limit_s,
                               const judge::StopRule& rule);

// The sealed reference `reference_id`'s kernel seconds per passed case, from the times.json the
// campaign in `campaign_dir` measured for it (rounds/R<n>/teacher/reference/times.json, written
// once per round for that round's reference); empty when none was measured.
std::map<int64_t, double> measured_reference_seconds(const std::filesystem::path& campaign_dir, const std::string& reference_id);

class RealJudgeService final : public JudgeService {
public:
  RealJudgeService(JudgeSettings settings, util::ProcessRunner& runner, std::string temper_version = "dev")
      : m_settings(std::move(settings)), m_runner(runner), m_version(std::move(temper_version)) {}
  Expected<JudgeOutcome> judge(const JudgeCall& call) override;
  Expected<JudgeOutcome> probe_grid(const JudgeCall& call) override;
  Expected<std::string> disassemble(const JudgeCall& call) override;
  // The temper-worker binary; default: beside the running executable, or $TEMPER_WORKER.
  void set_worker_exe(std::filesystem::path exe) { m_worker_exe = std::move(exe); }

private:
  std::filesystem::path m_worker_exe;
  // Every judgement of a campaign runs on the machine's secret seed, so the same values recur
  // (the final report judges one kernel three times, on the same values): outputs proved once
  // need no golden again (judge/timing.h).
  std::shared_ptr<judge::ProvedOutputs> m_proved = std::make_shared<judge::ProvedOutputs>();
  // And their correctness trials compare the same bytes again (a probe's variants, a gate after
  // the submission's check, the final report's three judgements): one comparison serves them.
  std::shared_ptr<judge::ComparedOutputs> m_compared = std::make_shared<judge::ComparedOutputs>();
  JudgeSettings m_settings;
  util::ProcessRunner& m_runner;
  std::string m_version;
};

} // namespace temper::campaign
