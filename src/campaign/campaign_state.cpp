#include "campaign/campaign_state.h"

#include "util/fs.h"

namespace temper::campaign {

using nlohmann::json;

const char* phase_name(Phase p) {
  switch (p) {
  case Phase::Plan: return "plan";
  case Phase::Student: return "student";
  case Phase::Revision: return "revision";
  case Phase::RoundEnd: return "round_end";
  case Phase::Done: return "done";
  }
  return "?";
}

std::optional<Phase> parse_phase(const std::string& name) {
  for (Phase p : {Phase::Plan, Phase::Student, Phase::Revision, Phase::RoundEnd, Phase::Done}) {
    if (name == phase_name(p)) return p;
  }
  return std::nullopt;
}

json JudgeSettings::to_json() const {
  return {{"cases", cases}, {"compiler", compiler}, {"flags", flags}, {"cap_s", cap_s}, {"cache_mode", cache_mode},
          {"measure_jobs", measure_jobs}, {"confirm_jobs", confirm_jobs}, {"min_samples", min_samples},
          {"min_time_s", min_time_s}, {"noise_floor", noise_floor}, {"cpus", cpus}, {"jobs", jobs},
          {"call_timeout_s", call_timeout_s}, {"threads", threads}, {"threads_all", threads_all},
          {"backend", backend}, {"cuda_arch", cuda_arch}};
}

JudgeSettings JudgeSettings::from_json(const json& j) {
  JudgeSettings s;
  s.cases = j.value("cases", s.cases);
  s.compiler = j.value("compiler", s.compiler);
  s.flags = j.value("flags", s.flags);
  s.cap_s = j.value("cap_s", s.cap_s);
  s.cache_mode = j.value("cache_mode", s.cache_mode);
  s.measure_jobs = j.value("measure_jobs", s.measure_jobs);
  s.confirm_jobs = j.value("confirm_jobs", s.confirm_jobs);
  s.min_samples = j.value("min_samples", s.min_samples);
  s.min_time_s = j.value("min_time_s", s.min_time_s);
  s.noise_floor = j.value("noise_floor", s.noise_floor);
  s.cpus = j.value("cpus", s.cpus);
  s.jobs = j.value("jobs", s.jobs);
  s.call_timeout_s = j.value("call_timeout_s", s.call_timeout_s);
  s.threads = j.value("threads", s.threads);
  s.threads_all = j.value("threads_all", false);
  s.backend = j.value("backend", s.backend); // absent in older campaigns: the CPU
  s.cuda_arch = j.value("cuda_arch", s.cuda_arch);
  return s;
}

json CampaignConfig::to_json() const {
  return {{"task_dir", task_dir.string()},
          {"task", task_name},
          {"agents", {{"teacher", teacher}, {"student", student}}},
          {"rounds", rounds},
          {"budgets", {{"wall_s", budgets.wall_s}, {"job_s", budgets.job_s}, {"cost_usd", budgets.cost_usd}, {"turn_s", budgets.turn_s}}},
          {"triggers",
           {{"rejections", triggers.rejections}, {"plateau", triggers.plateau}, {"plateau_noise", triggers.plateau_noise},
            {"revisions", triggers.revisions}, {"teacher_turns", triggers.teacher_turns}}},
          {"judge", judge.to_json()},
          {"initial_reference", initial_reference},
          {"sandbox", sandbox},
          {"vs_torch", vs_torch},
          {"target", target},
          {"executor", executor.to_json()}};
}

Expected<CampaignConfig> CampaignConfig::from_json(const json& j) {
  try {
    CampaignConfig c;
    c.task_dir = j.at("task_dir").get<std::string>();
    c.task_name = j.at("task").get<std::string>();
    c.teacher = j.at("agents").at("teacher").get<std::string>();
    c.student = j.at("agents").at("student").get<std::string>();
    c.rounds = j.at("rounds").get<int>();
    const json& b = j.at("budgets");
    c.budgets.wall_s = b.at("wall_s");
    c.budgets.job_s = b.at("job_s");
    c.budgets.cost_usd = b.at("cost_usd");
    c.budgets.turn_s = b.at("turn_s");
    const json& t = j.at("triggers");
    c.triggers.rejections = t.at("rejections");
    c.triggers.plateau = t.at("plateau");
    c.triggers.plateau_noise = t.at("plateau_noise");
    c.triggers.revisions = t.at("revisions");
    c.triggers.teacher_turns = t.at("teacher_turns");
    c.judge = JudgeSettings::from_json(j.at("judge"));
    c.initial_reference = j.value("initial_reference", "");
    c.sandbox = j.value("sandbox", true);
    c.vs_torch = j.value("vs_torch", true);
    c.target = j.value("target", json::object());
    TEMPER_TRY_ASSIGN(c.executor, exec::ExecutorSettings::from_json(j.value("executor", json())));
    return c;
  } catch (const json::exception& e) {
    return fail("campaign.json: config: {}", e.what());
  }
}

json CampaignState::to_json() const {
  json win = json::array();
  for (const auto& a : window) {
    win.push_back({{"number", a.number}, {"op", a.op}, {"accepted", a.accepted}, {"speedup", a.speedup ? json(*a.speedup) : json()}});
  }
  json done = json::array();
  for (const auto& r : rounds_done) {
    done.push_back({{"round", r.round}, {"reference_before", r.reference_before}, {"promoted", r.promoted},
                    {"reference_after", r.reference_after}, {"attempt", r.attempt}, {"speedup", r.speedup},
                    {"end_reason", r.end_reason}, {"note", r.note}});
  }
  return {{"round", round}, {"phase", phase_name(phase)}, {"milestone", milestone}, {"next_attempt", next_attempt},
          {"applied_attempt", applied_attempt}, {"revisions", revisions}, {"teacher_turns", teacher_turns}, {"agent_turns", agent_turns},
          {"milestone_submissions", milestone_submissions}, {"milestone_student_turns", milestone_student_turns},
          {"milestone_seconds", milestone_seconds}, {"consecutive_rejected", consecutive_rejected}, {"window", win},
          {"pending_trigger", pending_trigger}, {"pending_detail", pending_detail}, {"accepted", accepted},
          {"accepted_speedup", accepted_speedup}, {"round_end_reason", round_end_reason}, {"reference_id", reference_id},
          {"elapsed_s", elapsed_s}, {"rounds_done", done}, {"end_reason", end_reason}};
}

Expected<CampaignState> CampaignState::from_json(const json& j) {
  try {
    CampaignState s;
    s.round = j.at("round");
    auto phase = parse_phase(j.at("phase").get<std::string>());
    if (!phase) return fail("campaign.json: unknown phase '{}'", j.at("phase").get<std::string>());
    s.phase = *phase;
    s.milestone = j.at("milestone");
    s.next_attempt = j.at("next_attempt");
    s.applied_attempt = j.at("applied_attempt");
    s.revisions = j.at("revisions");
    s.teacher_turns = j.at("teacher_turns");
    s.agent_turns = j.at("agent_turns");
    s.milestone_submissions = j.at("milestone_submissions");
    s.milestone_student_turns = j.at("milestone_student_turns");
    s.milestone_seconds = j.at("milestone_seconds");
    s.consecutive_rejected = j.at("consecutive_rejected");
    for (const auto& a : j.at("window")) {
      AttemptBrief b;
      b.number = a.at("number");
      b.op = a.at("op");
      b.accepted = a.at("accepted");
      if (!a.at("speedup").is_null()) b.speedup = a.at("speedup").get<double>();
      s.window.push_back(b);
    }
    s.pending_trigger = j.at("pending_trigger");
    s.pending_detail = j.at("pending_detail");
    s.accepted = j.at("accepted").get<std::map<std::string, int>>();
    s.accepted_speedup = j.at("accepted_speedup").get<std::map<std::string, double>>();
    s.round_end_reason = j.at("round_end_reason");
    s.reference_id = j.at("reference_id");
    s.elapsed_s = j.at("elapsed_s");
    for (const auto& r : j.at("rounds_done")) {
      RoundSummary x;
      x.round = r.at("round");
      x.reference_before = r.at("reference_before");
      x.promoted = r.at("promoted");
      x.reference_after = r.at("reference_after");
      x.attempt = r.at("attempt");
      x.speedup = r.at("speedup");
      x.end_reason = r.at("end_reason");
      x.note = r.at("note");
      s.rounds_done.push_back(x);
    }
    s.end_reason = j.at("end_reason");
    return s;
  } catch (const json::exception& e) {
    return fail("campaign.json: state: {}", e.what());
  }
}

Status save_campaign(const std::filesystem::path& dir, const CampaignFile& c) {
  json doc = {{"schema_version", kCampaignSchemaVersion}, {"kind", "temper.campaign"}, {"config", c.config.to_json()},
              {"state", c.state.to_json()}};
  return util::write_file_atomic(dir / "campaign.json", doc.dump(2) + "\n");
}

Expected<CampaignFile> load_campaign(const std::filesystem::path& dir) {
  const auto file = dir / "campaign.json";
  if (!std::filesystem::exists(file)) return fail("{} is not a campaign directory (no campaign.json)", dir.string());
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail("{}: {}", file.string(), e.what());
  }
  if (doc.value("schema_version", 0) != kCampaignSchemaVersion) {
    return fail("{}: schema_version {} is not {} (written by another temper version)", file.string(), doc.value("schema_version", 0), kCampaignSchemaVersion);
  }
  CampaignFile c;
  TEMPER_TRY_ASSIGN(c.config, CampaignConfig::from_json(doc.at("config")));
  TEMPER_TRY_ASSIGN(c.state, CampaignState::from_json(doc.at("state")));
  return c;
}

} // namespace temper::campaign
