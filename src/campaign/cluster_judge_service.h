// The JudgeService that sends judge runs to a Slurm cluster (`temper run --executor slurm`):
// each judgement is a job (job.json under CAMPAIGN/jobs/KEY, run on a node as
// `temper job run DIR`); a gate on several cases has its cases, and a probe its variants, shared
// out over up to --max-jobs jobs that run at once, their reports merged into one. Both arms of
// every pair, and every timing job of a case, run inside one job on one node; each report says
// which node (fingerprint and target class) under "executor", and a judgement whose parts ran
// on nodes of different classes is an error, not a ranking or a geometric mean. The
// roofline is the node's own: the job carries the knowledge-base roots and the node reads the
// figures certified for its class. Disassembly (no timing) runs here.
#pragma once

#include "campaign/judge_job.h"
#include "campaign/judge_service.h"
#include "exec/cluster_executor.h"
#include "util/clock.h"

#include <filesystem>
#include <iosfwd>
#include <vector>

namespace temper::campaign {

struct ClusterJudgeOptions {
  std::filesystem::path jobs_root;  // CAMPAIGN/jobs: on a filesystem the nodes see
  std::filesystem::path temper_exe; // what the nodes run (the same path there)
  std::vector<std::filesystem::path> kb_roots; // the nodes' rooflines come from these
  int max_jobs = 4;
};

class ClusterJudgeService final : public JudgeService {
public:
  ClusterJudgeService(JudgeSettings settings, ClusterJudgeOptions options, exec::ClusterExecutor& executor, JudgeService& local,
                      util::Clock& clock)
      : m_settings(std::move(settings)), m_options(std::move(options)), m_executor(executor), m_local(local), m_clock(clock) {}

  Expected<JudgeOutcome> judge(const JudgeCall& call) override { return run_merged(call, false); }
  Expected<JudgeOutcome> probe_grid(const JudgeCall& call) override { return run_merged(call, true); }
  // A rung: every call's jobs submitted together, up to max_jobs at once.
  std::vector<Expected<JudgeOutcome>> probe_grids(const std::vector<JudgeCall>& calls) override;
  Expected<std::string> disassemble(const JudgeCall& call) override { return m_local.disassemble(call); }
  bool has_job(const JudgeCall& call, bool probe) const override;

  // The jobs a call becomes: one for a judgement, up to max_jobs for a probe.
  Expected<std::vector<JudgeJob>> jobs_for(const JudgeCall& call, bool probe) const;

private:
  // The call's jobs run, and their reports merged into one with its "executor" object.
  Expected<JudgeOutcome> run_merged(const JudgeCall& call, bool probe);
  // One outcome per job, in order; a signal while they are out cancels them and ends temper.
  std::vector<Expected<JudgeOutcome>> run_jobs(const std::vector<JudgeJob>& jobs);
  Expected<JudgeOutcome> read_outcome(const exec::JobSpec& spec, const exec::JobOutcome& o) const;
  // One call's job outcomes as one report with its "executor" object.
  Expected<JudgeOutcome> merge(const JudgeCall& call, bool probe, const std::vector<Expected<JudgeOutcome>>& results, double elapsed) const;
  exec::JobSpec spec_for(const JudgeJob& job) const;

  JudgeSettings m_settings;
  ClusterJudgeOptions m_options;
  exec::ClusterExecutor& m_executor;
  JudgeService& m_local;
  util::Clock& m_clock;
};

// One judge report from the reports of a gate's parts (its cases shared out over jobs): every
// case in `order`, the summary's counts, and the timing aggregate recomputed by the judge's rule
// (judge::aggregate_cases over each case's first measurement job and its verdict); wall_seconds
// the longest part's (they ran at once).
nlohmann::json merge_judge_reports(const std::vector<nlohmann::json>& parts, const std::vector<int64_t>& order, double wall_seconds);

// One probe report from the reports of a probe's parts: every variant, ranked again (timed
// fastest first by speedup, then the rest), counts and best recomputed, and wall_seconds the
// longest part's (they ran at once).
nlohmann::json merge_probe_reports(const std::vector<nlohmann::json>& parts, double wall_seconds);

} // namespace temper::campaign
