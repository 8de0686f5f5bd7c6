// campaign.json: what a campaign is (task, agents, budgets, triggers, judge settings) and where
// it stands (round, phase, milestone, attempts, revisions, accepted milestones, rounds done).
// Written atomically after every state change; `temper resume` starts from it.
#pragma once

#include "exec/slurm_client.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace temper::campaign {

inline constexpr int kCampaignSchemaVersion = 1;

struct Budgets {
  double wall_s = 0;       // campaign wall time over all runs; 0: unlimited
  double job_s = 7200;     // one judge run (a batch-job limit); the run is shaped to fit
  double cost_usd = 0;     // agent cost; 0: unlimited
  double turn_s = 1800;    // wall time of one agent turn
};

struct Triggers {
  int rejections = 5;          // consecutive submissions not accepted
  int plateau = 6;             // last K probes and submissions ...
  double plateau_noise = 0.01; // ... whose speedups lie within this relative band
  int revisions = 3;           // revisions per round before the round ends
  int teacher_turns = 3;       // turns the Teacher gets to produce a valid plan or revision
};

// How the orchestrator runs the judge (the `temper judge` flags of the same names).
struct JudgeSettings {
  std::vector<int64_t> cases; // the campaign's case selection; empty: every case
  std::string compiler = "g++";
  std::vector<std::string> flags;  // empty: the compiler's defaults
  double cap_s = 15;
  std::string cache_mode = "cold"; // cold | warm
  int measure_jobs = 3;
  int confirm_jobs = 3;
  int min_samples = 10;
  double min_time_s = 0.5;
  double noise_floor = 0.01;
  std::vector<int> cpus;
  int jobs = 0;
  double call_timeout_s = 60;
  // Threads every kernel of the campaign may use (`temper run --threads N|all`, resolved to a
  // count when the campaign starts); 0: temper.yaml's.
  int threads = 0;
  // Asked as `--threads all`: a cluster node runs its jobs on every CPU it has, not this
  // machine's count (docs/scale-out.md).
  bool threads_all = false;
  // Where kernels run (`temper run --backend`, judge/kernel_backend.h): cpu, or cuda with
  // `compiler` the nvcc that builds them and `cuda_arch` the architecture, both resolved when
  // the campaign starts so that every build of the campaign, on any later resume, is the same.
  std::string backend = "cpu";
  std::string cuda_arch;

  bool cuda() const { return backend == "cuda"; }
  nlohmann::json to_json() const;
  static JudgeSettings from_json(const nlohmann::json& j);
};

struct CampaignConfig {
  std::filesystem::path task_dir; // absolute
  std::string task_name;
  std::string teacher = "planfile";
  std::string student;
  int rounds = 1;
  Budgets budgets;
  Triggers triggers;
  JudgeSettings judge;
  std::string initial_reference;  // source the campaign started from (sealed as R0 into CAMPAIGN/refs)
  bool sandbox = true;
  // The final report also times the final kernel against the task's PyTorch function, where the
  // task has one (`temper run --no-vs-torch` leaves it out).
  bool vs_torch = true;
  nlohmann::json target;          // the fingerprint of the machine the campaign runs on
  // Where its judge runs go (`--executor slurm ...`, docs/scale-out.md); absent in older campaigns: local.
  exec::ExecutorSettings executor;

  nlohmann::json to_json() const;
  static Expected<CampaignConfig> from_json(const nlohmann::json& j);
};

// Phases of a round, in order; revision interrupts student and returns to it.
enum class Phase { Plan, Student, Revision, RoundEnd, Done };
const char* phase_name(Phase p);
std::optional<Phase> parse_phase(const std::string& name);

// An attempt as the stagnation rules see it.
struct AttemptBrief {
  int number = 0;
  std::string op;              // probe | submit | escalate
  bool accepted = false;
  std::optional<double> speedup;
};

struct RoundSummary {
  int round = 0;
  std::string reference_before;
  bool promoted = false;
  std::string reference_after;  // == reference_before when nothing was promoted
  int attempt = 0;
  double speedup = 0;
  std::string end_reason;
  std::string note;
};

struct CampaignState {
  int round = 1;
  Phase phase = Phase::Plan;
  int milestone = 0;            // index into the plan's milestones
  int next_attempt = 1;         // numbers attempts/NNNN within the round
  int applied_attempt = 0;      // every attempt up to this one is reflected below
  int revisions = 0;            // in this round
  int teacher_turns = 0;        // turns spent on the current plan or revision request
  int agent_turns = 0;          // every turn of the campaign, numbering ledger keys and logs
  // Current milestone.
  int milestone_submissions = 0;
  int milestone_student_turns = 0;
  double milestone_seconds = 0;
  int consecutive_rejected = 0;
  std::vector<AttemptBrief> window; // probes and submissions since the milestone (re)started
  std::string pending_trigger;      // rejections | plateau | escalation | budget; empty: none
  std::string pending_detail;
  // The round.
  std::map<std::string, int> accepted;             // milestone id -> attempt number
  std::map<std::string, double> accepted_speedup;  // milestone id -> geomean speedup over the reference
  std::string round_end_reason;
  // The campaign.
  std::string reference_id = "R0";   // current sealed reference
  double elapsed_s = 0;              // wall seconds of earlier runs (resume adds to it)
  std::vector<RoundSummary> rounds_done;
  std::string end_reason;            // why the campaign stopped (phase Done)

  nlohmann::json to_json() const;
  static Expected<CampaignState> from_json(const nlohmann::json& j);
};

struct CampaignFile {
  CampaignConfig config;
  CampaignState state;
};

Status save_campaign(const std::filesystem::path& dir, const CampaignFile& c);
Expected<CampaignFile> load_campaign(const std::filesystem::path& dir);

} // namespace temper::campaign
