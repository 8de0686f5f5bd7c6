#include "campaign/judge_job.h"

#include "core/task_loader.h"
#include "core/thread_count.h"
#include "judge/common.h"
#include "kb/store.h"
#include "kb/target.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/host.h"
#include "util/json_file.h"

#include <chrono>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

json judge_call_to_json(const JudgeCall& c) {
  json j = {{"task_dir", c.task_dir.string()},
            {"candidate", c.candidate.string()},
            {"reference", c.reference},
            {"store", c.store.string()},
            {"torch_reference", c.torch_reference},
            {"torch_threads", c.torch_threads},
            {"also_torch_threads", c.also_torch_threads},
            {"tier", c.tier},
            {"cases", c.cases},
            {"grid", c.grid},
            {"variants", c.variants},
            {"time_limit_s", c.time_limit_s},
            {"progress", c.progress}};
  if (c.roofline) j["roofline"] = c.roofline->to_json();
  json seconds = json::object();
  for (const auto& [id, s] : c.reference_seconds) seconds[std::to_string(id)] = s;
  j["reference_seconds"] = seconds;
  return j;
}

Expected<JudgeCall> judge_call_from_json(const json& j) {
  if (!j.is_object()) return fail("a judge call must be an object");
  try {
    JudgeCall c;
    c.task_dir = j.at("task_dir").get<std::string>();
    c.candidate = j.value("candidate", "");
    c.reference = j.value("reference", "");
    c.store = j.value("store", "");
    c.torch_reference = j.value("torch_reference", false);
    c.torch_threads = j.value("torch_threads", -1);
    c.also_torch_threads = j.value("also_torch_threads", std::vector<int>());
    c.tier = j.value("tier", "gate");
    c.cases = j.value("cases", std::vector<int64_t>());
    c.grid = j.value("grid", std::vector<std::string>());
    c.variants = j.value("variants", std::vector<std::map<std::string, std::string>>());
    c.time_limit_s = j.value("time_limit_s", 7200.0);
    c.progress = j.value("progress", false);
    if (j.contains("roofline") && j["roofline"].is_object()) {
      judge::Roofline r;
      r.bytes_per_s = j["roofline"].value("bytes_per_s", 0.0);
      r.flops_per_s = j["roofline"].value("flops_per_s", 0.0);
      r.source = j["roofline"].value("source", "");
      c.roofline = r;
    }
    const json seconds = j.value("reference_seconds", json::object());
    for (const auto& [id, s] : seconds.items()) c.reference_seconds[std::stoll(id)] = s.get<double>();
    return c;
  } catch (const std::exception& e) {
    return fail("a judge call that does not read: {}", e.what());
  }
}

json JudgeJob::to_json() const {
  json roots = json::array();
  for (const auto& r : kb_roots) roots.push_back(r.string());
  return {{"schema_version", kJudgeJobSchemaVersion}, {"kind", kJudgeJobKind}, {"op", op}, {"settings", settings.to_json()},
          {"call", judge_call_to_json(call)}, {"kb_roots", roots}};
}

Expected<JudgeJob> JudgeJob::from_json(const json& j) {
  if (!j.is_object() || j.value("kind", "") != kJudgeJobKind) return fail("not a {} document", kJudgeJobKind);
  if (j.value("schema_version", 0) > kJudgeJobSchemaVersion)
    return fail("judge job schema {} is newer than this temper's {}: run a newer temper on the node", j.value("schema_version", 0), kJudgeJobSchemaVersion);
  JudgeJob job;
  job.op = j.value("op", "judge");
  if (job.op != "judge" && job.op != "probe_grid") return fail("judge job: unknown op '{}'", job.op);
  job.settings = JudgeSettings::from_json(j.at("settings"));
  TEMPER_TRY_ASSIGN(job.call, judge_call_from_json(j.at("call")));
  for (const auto& r : j.value("kb_roots", json::array())) job.kb_roots.emplace_back(r.get<std::string>());
  return job;
}

std::string JudgeJob::key() const {
  // The candidate's content too: a path names a file, and the same job on another file is
  // another job.
  std::string text = to_json().dump();
  if (!call.candidate.empty()) text += util::read_file(call.candidate).value_or("");
  return util::hash_hex(text).substr(0, 16);
}

json node_facts() {
  const auto& t = kb::current_target();
  return {{"hostname", util::host_info().hostname}, {"fingerprint", t.id()}, {"target_class", t.target_class()}};
}

Status run_judge_job(const fs::path& dir, util::ProcessRunner& runner, const std::string& temper_version,
                     const std::function<bool()>& stopped) {
  TEMPER_TRY_ASSIGN(json doc, util::read_json(dir / "job.json"));
  const auto t0 = std::chrono::steady_clock::now();
  json result = {{"schema_version", kJudgeJobSchemaVersion}, {"kind", kJudgeJobResultKind}, {"node", node_facts()},
                 {"started", judge::utc_now()}};
  auto job = JudgeJob::from_json(doc);
  if (!job) {
    result["ok"] = false;
    result["error"] = job.error().message;
  } else {
    // `--threads all` means this node's CPUs, which may not be as many as the submitting machine's.
    if (job->settings.threads_all) job->settings.threads = core::usable_cpus();
    if (job->call.roofline) {
      // This node's figures, for its own class and the run's thread count.
      int threads = job->settings.threads;
      if (threads <= 0) {
        auto task = core::load_task(job->call.task_dir);
        threads = task ? task->config.threads : 1;
      }
      judge::Roofline roof = kb::roofline_from_kb(kb::load_kb(job->kb_roots.empty() ? kb::default_kb_roots() : job->kb_roots),
                                                  kb::current_target(), threads);
      if (roof.bytes_per_s > 0 || roof.flops_per_s > 0) job->call.roofline = roof;
      else job->call.roofline.reset();
    }
    RealJudgeService service(job->settings, runner, temper_version);
    auto out = job->op == "probe_grid" ? service.probe_grid(job->call) : service.judge(job->call);
    result["ok"] = out.has_value();
    if (out) {
      result["report"] = out->report;
      result["note"] = out->note;
    } else {
      result["error"] = out.error().message;
    }
  }
  result["finished"] = judge::utc_now();
  result["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stopped && stopped()) return fail("the job was told to stop while it ran: no result written");
  return util::write_file_atomic(dir / "result.json", result.dump(2) + "\n");
}

} // namespace temper::campaign
