// The campaign ledger: CAMPAIGN/ledger.sqlite records every compile, judge run, agent turn,
// revision and promotion with its cost. Every row has a unique key, so replaying a step after a
// crash (resume) inserts nothing twice; each insert is its own durable transaction.
//
// Schema 2 added judge_runs.turn, the agent turn a harness request ran inside; opening a
// schema 1 ledger adds the column (its old rows keep NULL there). Schema 3 added
// judge_runs.queue_seconds and the cluster_jobs table (judge runs sent to Slurm,
// docs/scale-out.md); older rows read 0 there.
#pragma once

#include "util/error.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace temper::campaign {

inline constexpr int kLedgerSchemaVersion = 3;

struct CompileRow {
  std::string key;
  int round = 0;
  int attempt = 0;      // 0 when not an attempt's build (reference measurements)
  std::string label;
  double seconds = 0;   // compile time; counted as cost only when not a cache hit
  bool cache_hit = false;
};

// Categories of judge time: the op decides probe (exploration, the Teacher's reference
// measurements too) or gate; confirmation jobs and compiles are split out of both.
struct JudgeRunRow {
  std::string key;
  int round = 0;
  std::string milestone;
  int attempt = 0;
  std::string op;             // probe | submit | ref-time | ref-disasm | ref-profile
  std::string tier;           // correctness | probe | gate
  int cases = 0;
  double seconds = 0;         // wall time of the whole run
  double compile_seconds = 0; // included in seconds
  double confirm_seconds = 0; // included in seconds
  std::string turn;           // the AgentTurnRow key whose harness request ran it; empty: the orchestrator's own
  double queue_seconds = 0;   // waiting for a cluster (queue, resubmissions), not in seconds
};

// One submission of a judge run to a cluster: every one is recorded, the ones resubmitted too.
struct ClusterJobRow {
  std::string key;          // JUDGE_RUN_KEY-JOB-N
  std::string judge_run;    // the JudgeRunRow key
  std::string job;          // the job's key (CAMPAIGN/jobs/JOB)
  std::string slurm_id;
  int submission = 1;
  std::string state;        // COMPLETED, FAILED, PREEMPTED, VANISHED, CANCELLED, ...
  std::string node;
  double queue_seconds = 0;
  double run_seconds = 0;
  std::string note;         // why a submission brought no result
};

struct AgentTurnRow {
  std::string key;
  int round = 0;
  std::string role;     // teacher | student
  std::string purpose;  // plan | revision | milestone id
  std::string agent;
  double seconds = 0;
  std::optional<int64_t> input_tokens;
  std::optional<int64_t> output_tokens;
  std::optional<double> cost_usd;
  int exit_code = 0;
  bool timed_out = false;
};

struct RevisionRow {
  std::string key;
  int round = 0;
  int number = 0;
  std::string trigger;
  std::string kind;
  std::string from;
  std::string reason;
};

struct PromotionRow {
  std::string key;
  int round = 0;
  bool promoted = false;
  int attempt = 0;
  std::string reference_id; // the new reference when promoted
  double speedup = 0;
  std::string note;
};

struct LedgerTotals {
  int compiles = 0;
  int compile_cache_hits = 0;
  int judge_runs = 0;
  int agent_turns = 0;
  int revisions = 0;
  int promotions = 0; // rows with promoted = 1
  // Seconds by category. probe, gate, confirmation and compile split the judge runs' wall time
  // (judge_s) with nothing left over; agent_own_s is the turns' time without the judge runs
  // made inside them, so these five never count a second twice.
  double probe_s = 0;        // probes and reference measurements, without compile and confirmation
  double gate_s = 0;         // submissions and the final report, without compile and confirmation
  double confirmation_s = 0;
  double compile_s = 0;      // builds inside judge runs that missed the compile cache
  double judge_s = 0;        // every judge run's wall time: probe + gate + confirmation + compile
  double final_s = 0;        // the final report's judge runs (after the campaign's own elapsed time)
  double agent_s = 0;        // the turns' wall time, judge runs through the harness included
  double agent_judge_s = 0;  // the judge runs' wall time inside turns (part of agent_s)
  double agent_own_s = 0;    // agent_s - agent_judge_s: the agents' own time
  double agent_cost_usd = 0;
  int64_t tokens = 0;
  double queue_s = 0;        // waiting for a cluster's nodes: not judge time, not the agents'
  int cluster_jobs = 0;      // submissions to a cluster
  int cluster_failed = 0;    // of those, the ones that brought no result (submitted again, or the step failed)
};

class Ledger {
public:
  // Opens (creating when absent) the ledger file and its tables, bringing an older schema up
  // to date; a ledger from a newer temper is an error.
  static Expected<Ledger> open(const std::filesystem::path& file);
  Ledger(Ledger&&) noexcept;
  Ledger& operator=(Ledger&&) noexcept;
  ~Ledger();

  // Each returns false (and inserts nothing) when a row with the same key exists.
  Expected<bool> add(const CompileRow& r);
  Expected<bool> add(const JudgeRunRow& r);
  Expected<bool> add(const AgentTurnRow& r);
  Expected<bool> add(const RevisionRow& r);
  Expected<bool> add(const PromotionRow& r);
  Expected<bool> add(const ClusterJobRow& r);

  Expected<bool> has(const std::string& table, const std::string& key) const;
  // Revisions and promotions with the UTC time each was recorded, in the order recorded (the
  // report's timeline).
  Expected<std::vector<std::pair<std::string, RevisionRow>>> revisions() const;
  Expected<std::vector<std::pair<std::string, PromotionRow>>> promotions() const;
  Expected<LedgerTotals> totals() const;

private:
  explicit Ledger(sqlite3* db) : m_db(db) {}
  sqlite3* m_db = nullptr;
};

} // namespace temper::campaign
