// A judge job as files, so that another machine can run it: job.json holds what
// RealJudgeService needs (the campaign's judge settings and one JudgeCall), a node runs
// `temper job run DIR`, and result.json holds the report it made, with the node's fingerprint
// and target class. The cluster executor (src/exec) moves these directories through Slurm.
#pragma once

#include "campaign/judge_service.h"
#include "util/error.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace temper::campaign {

inline constexpr int kJudgeJobSchemaVersion = 1;
inline constexpr std::string_view kJudgeJobKind = "temper.judge.job";
inline constexpr std::string_view kJudgeJobResultKind = "temper.judge.job.result";

struct JudgeJob {
  std::string op = "judge"; // judge | probe_grid
  JudgeSettings settings;
  JudgeCall call;
  // Where the node reads its roofline: a call with a roofline is judged with the figures
  // certified for the node's own class, not the submitting machine's.
  std::vector<std::filesystem::path> kb_roots;

  nlohmann::json to_json() const;
  static Expected<JudgeJob> from_json(const nlohmann::json& j);
  // 16 hex digits over the whole job and the candidate's content: the same job twice is one
  // directory (resume attaches, a finished one is read back).
  std::string key() const;
};

nlohmann::json judge_call_to_json(const JudgeCall& call);
Expected<JudgeCall> judge_call_from_json(const nlohmann::json& j);

// What a node tells about itself in a job's result: host name, fingerprint id and target class.
nlohmann::json node_facts();

// Runs the job in `dir` (job.json) here and writes dir/result.json atomically: {ok, report, note}
// or {ok: false, error}, with node_facts(). Errors are only about the job directory itself (no
// job.json, a result that cannot be written); a judge that could not run is a result.
// `stopped`, asked before the result is written: true when the job was told to stop (scancel, a
// preemption) while it ran. Its workers may have been signalled too, so what it measured is no
// result: none is written (an error instead), and the submitting side, seeing the job end
// without one, submits it again.
Status run_judge_job(const std::filesystem::path& dir, util::ProcessRunner& runner, const std::string& temper_version,
                     const std::function<bool()>& stopped = {});

} // namespace temper::campaign
