#include "campaign/orchestrator.h"

#include "campaign/stagnation.h"
#include "build/compiler.h"
#include "core/task_loader.h"
#include "judge/common.h"
#include "judge/timing.h"
#include "kb/target.h"
#include "util/fs.h"
#include "util/process.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

BriefContext brief_context(const CampaignConfig& config, const OrchestratorDeps& deps, const fs::path& workspace) {
  return BriefContext{config.task_name, deps.target_class, workspace, config.budgets.turn_s, config.judge};
}

} // namespace

Orchestrator::Orchestrator(fs::path dir, CampaignFile file, OrchestratorDeps deps)
    : m_dir(std::move(dir)), m_file(std::move(file)), m_deps(std::move(deps)) {}

Orchestrator::~Orchestrator() = default;

Expected<std::unique_ptr<Orchestrator>> Orchestrator::create(const fs::path& dir, CampaignConfig config, OrchestratorDeps deps) {
  std::error_code ec;
  if (fs::exists(dir / "campaign.json")) return fail("{} already holds a campaign: use `temper resume {}`", dir.string(), dir.string());
  if (fs::exists(dir) && !fs::is_empty(dir, ec)) return fail("{} exists and is not empty: choose another --dir", dir.string());
  TEMPER_TRY(util::make_dirs(dir));
  config.task_dir = fs::absolute(config.task_dir).lexically_normal();
  TEMPER_TRY_ASSIGN(auto task, core::load_task(config.task_dir));
  config.task_name = config.task_dir.filename().string();
  if (config.target.is_null() || config.target.empty()) config.target = kb::current_target().to_json();
  // The starting reference: the task's reference for the campaign's backend (temper.yaml's
  // reference.cpu, reference.cuda) unless the campaign names another.
  fs::path ref = config.initial_reference;
  if (ref.empty()) {
    const std::string& backend = config.judge.backend;
    auto it = task.config.reference.find(backend);
    if (it == task.config.reference.end()) {
      return fail("task {} has no {} reference: give --reference, or name one in temper.yaml (reference: {{{}: FILE}})",
                  config.task_name, backend, backend);
    }
    ref = it->second.is_absolute() ? it->second : config.task_dir / it->second;
  }
  config.initial_reference = fs::absolute(ref).lexically_normal().string();
  CampaignFile file{std::move(config), CampaignState{}};
  std::unique_ptr<Orchestrator> o(new Orchestrator(fs::absolute(dir), std::move(file), std::move(deps)));
  TEMPER_TRY(o->init());
  TEMPER_TRY(o->m_deps.references->seal(o->m_file.config.initial_reference, "R0", "starting reference").map([](auto&&) {}));
  TEMPER_TRY(o->save());
  return o;
}

Expected<std::unique_ptr<Orchestrator>> Orchestrator::open(const fs::path& dir, OrchestratorDeps deps) {
  TEMPER_TRY_ASSIGN(auto file, load_campaign(dir));
  std::unique_ptr<Orchestrator> o(new Orchestrator(fs::absolute(dir), std::move(file), std::move(deps)));
  TEMPER_TRY(o->init());
  // Finish what a kill left half done, before anything new starts.
  if (o->m_file.state.phase == Phase::Student || o->m_file.state.phase == Phase::Revision) {
    TEMPER_TRY(o->load_round_plan());
    TEMPER_TRY(o->reconcile_attempts());
  }
  return o;
}

Status Orchestrator::init() {
  if (!m_deps.judge) return fail("orchestrator: no judge service");
  if (!m_deps.references) {
    m_deps.references = std::make_unique<SealedReferenceStore>(m_dir / "refs", m_file.config.task_dir, compiler_spec(m_file.config.judge),
                                                               util::default_process_runner(), m_file.config.judge.jobs);
  }
  if (!m_deps.clock) {
    m_own_clock = std::make_unique<util::SteadyClock>();
    m_clock = m_own_clock.get();
  } else {
    m_clock = m_deps.clock;
  }
  if (m_deps.target_class.empty()) m_deps.target_class = kb::current_target().target_class();
  if (m_deps.target_fingerprint.empty()) m_deps.target_fingerprint = kb::current_target().id();
  m_start = m_clock->now();
  m_base_elapsed = m_file.state.elapsed_s;
  TEMPER_TRY_ASSIGN(auto ledger, Ledger::open(m_dir / "ledger.sqlite"));
  m_ledger.emplace(std::move(ledger));
  return {};
}

double Orchestrator::elapsed() const { return m_base_elapsed + (m_clock->now() - m_start); }

Status Orchestrator::save() {
  m_file.state.elapsed_s = elapsed();
  return save_campaign(m_dir, m_file);
}

void Orchestrator::checkpoint(std::string_view point) {
  if (m_deps.checkpoint) m_deps.checkpoint(point);
}

void Orchestrator::say(const std::string& line) {
  if (m_deps.progress) *m_deps.progress << "temper: " << progress_tag() << line << std::endl;
}

// "[12:03 | M1 | 7 attempts, 5 probes | best 1.84x] ": where a long campaign stands, on every
// progress line. Best is the best accepted gate speedup of the round times what earlier rounds
// promoted (over the starting reference).
std::string Orchestrator::progress_tag() const {
  const CampaignState& s = m_file.state;
  const double secs = elapsed();
  std::string tag = fmt::format("[{:02}:{:02}", static_cast<int>(secs) / 60, static_cast<int>(secs) % 60);
  if (m_plan && s.phase != Phase::Done && s.milestone < static_cast<int>(m_plan->milestones.size())) {
    tag += " | " + m_plan->milestones[static_cast<size_t>(s.milestone)].id;
  }
  int probes = 0;
  for (const auto& a : s.window) probes += a.op == "probe";
  tag += fmt::format(" | {} attempts, {} probes", std::max(0, s.next_attempt - 1), probes);
  double chain = 1;
  for (const auto& r : s.rounds_done) {
    if (r.promoted && r.speedup > 0) chain *= r.speedup;
  }
  // Once the round is in rounds_done, its best is in the chain already.
  const bool round_counted = !s.rounds_done.empty() && s.rounds_done.back().round == s.round;
  double round_best = 0;
  if (!round_counted) {
    for (const auto& [id, sp] : s.accepted_speedup) round_best = std::max(round_best, sp);
  }
  const double best = chain * std::max(1.0, round_best);
  if (best > 1) tag += fmt::format(" | best {:.2f}x", best);
  return tag + "] ";
}

fs::path Orchestrator::round_dir() const { return m_dir / "rounds" / fmt::format("R{}", m_file.state.round); }

std::optional<std::string> Orchestrator::budget_exhausted() {
  const Budgets& b = m_file.config.budgets;
  if (b.wall_s > 0 && elapsed() >= b.wall_s) return fmt::format("budget spent: campaign wall time {:.0f} s of {:.0f} s", elapsed(), b.wall_s);
  if (b.cost_usd > 0) {
    if (auto t = m_ledger->totals(); t && t->agent_cost_usd >= b.cost_usd) {
      return fmt::format("budget spent: agent cost ${:.2f} of ${:.2f}", t->agent_cost_usd, b.cost_usd);
    }
  }
  return std::nullopt;
}

PlanContext Orchestrator::plan_context() const {
  PlanContext ctx;
  if (auto task = task_plan_context(m_file.config.task_dir)) ctx = std::move(*task);
  ctx.task_dir = m_file.config.task_dir;
  ctx.teacher_workspace = teacher_workspace();
  // The starting reference may be another kernel than the task's: a starter is never it either.
  // Later sealed references are Student kernels the Student has seen, so they are not refused.
  ctx.refused_sources.push_back(m_file.config.initial_reference);
  for (const auto& e : certified_kb_entries(m_deps.kb_roots, m_deps.target_class, m_deps.target_fingerprint)) ctx.kb_ids.insert(e.id);
  if (!m_deps.roofline) ctx.roofline_missing = "no certified bandwidth or FMA figures for this machine's class, or no cost model in temper.yaml";
  return ctx;
}

Status Orchestrator::load_round_plan() {
  const fs::path file = round_dir() / "plan.json";
  if (!fs::exists(file)) return fail("{}: missing (the campaign state says the plan was accepted)", file.string());
  TEMPER_TRY_ASSIGN(auto plan, load_plan(file, plan_context()));
  m_plan = std::move(plan);
  return {};
}

namespace {

// The reason every case of a report is UNSUPPORTED (the judge's "unsupported: no GPU: ..."),
// or nothing when any case got further or failed otherwise.
std::optional<std::string> everything_unsupported(const json& report) {
  const json& cases = report.value("cases", json::array());
  if (cases.empty()) return std::nullopt;
  for (const auto& c : cases)
    if (c.value("status", "") != "UNSUPPORTED") return std::nullopt;
  std::string why = cases.front().value("message", "");
  if (why.rfind("unsupported: ", 0) == 0) why = why.substr(13);
  return why.empty() ? std::string("the backend cannot run kernels on this machine") : why;
}

} // namespace

// ---- The loop ------------------------------------------------------------------------------

Status Orchestrator::run() {
  if (!m_teacher) {
    TEMPER_TRY_ASSIGN(m_teacher, m_deps.make_agent(m_file.config.teacher, agent::Role::Teacher));
  }
  if (!m_student) {
    if (m_file.config.student.empty()) return fail("no Student agent: give --student (e.g. cmd:\"...\", claude, script:DIR)");
    TEMPER_TRY_ASSIGN(m_student, m_deps.make_agent(m_file.config.student, agent::Role::Student));
  }
  while (m_file.state.phase != Phase::Done) {
    const Phase p = m_file.state.phase;
    if (p != Phase::RoundEnd) {
      if (auto spent = budget_exhausted()) {
        TEMPER_TRY(end_round(*spent));
        continue;
      }
    }
    switch (p) {
    case Phase::Plan: TEMPER_TRY(plan_phase()); break;
    case Phase::Student: TEMPER_TRY(student_phase()); break;
    case Phase::Revision: TEMPER_TRY(revision_phase()); break;
    case Phase::RoundEnd: TEMPER_TRY(round_end_phase()); break;
    case Phase::Done: break;
    }
  }
  say(fmt::format("campaign done: {}", m_file.state.end_reason));
  return {};
}

Status Orchestrator::end_round(const std::string& reason) {
  m_file.state.round_end_reason = reason;
  m_file.state.phase = Phase::RoundEnd;
  say(fmt::format("round {} ends: {}", m_file.state.round, reason));
  return save();
}

Expected<agent::TurnResult> Orchestrator::run_turn(agent::Role role, const std::string& purpose, const fs::path& workspace,
                                                   const std::string& brief) {
  const bool teacher = role == agent::Role::Teacher;
  const int number = ++m_file.state.agent_turns;
  TEMPER_TRY(save()); // the number is spent even if the turn never finishes
  TEMPER_TRY(util::write_file_atomic(workspace / "BRIEF.md", brief));
  agent::TurnRequest req;
  req.role = role;
  req.workspace = workspace;
  req.brief = brief;
  req.time_limit = std::chrono::seconds(static_cast<int64_t>(m_file.config.budgets.turn_s));
  req.log_dir = m_dir / "logs" / fmt::format("turn-{:04}-{}", number, teacher ? "teacher" : "student");
  req.sandbox = m_file.config.sandbox;
  // The kernel ABI headers, so an agent can compile its candidate locally before submitting.
  req.readonly_paths = {build::temper_include_dir()};
  // A driver's own memory across turns and resumes (the script driver's turn counter).
  req.state_dir = m_dir / "agents" / (teacher ? "teacher" : "student");
  TEMPER_TRY(util::make_dirs(req.state_dir));
  TEMPER_TRY(util::make_dirs(req.log_dir));
  // Set before the harness thread starts, cleared once it has stopped (declared first, so
  // destroyed last, on every path out).
  m_turn_key = fmt::format("turn-{}", number);
  struct ClearTurn {
    std::string& key;
    ~ClearTurn() { key.clear(); }
  } clear_turn{m_turn_key};
  std::unique_ptr<agent::HarnessServer> server;
  if (m_deps.start_harness) {
    TEMPER_TRY(util::make_dirs(m_dir / "run"));
    req.harness_socket = m_dir / "run" / (teacher ? "teacher.sock" : "student.sock");
    std::error_code ec;
    fs::remove(req.harness_socket, ec);
    agent::HarnessHandler handler = teacher ? agent::HarnessHandler([this](const agent::HarnessRequest& r) { return handle_teacher(r); })
                                            : agent::HarnessHandler([this](const agent::HarnessRequest& r) { return handle_student(r); });
    TEMPER_TRY_ASSIGN(server, m_deps.start_harness(req.harness_socket, handler));
  }
  say(fmt::format("round {}: {} turn {} ({})", m_file.state.round, teacher ? "Teacher" : "Student", number, purpose));
  agent::Agent& a = teacher ? *m_teacher : *m_student;
  auto result = a.run_turn(req);
  if (server) server->stop();
  if (!result) return tl::unexpected(result.error());
  AgentTurnRow row;
  row.key = m_turn_key;
  row.round = m_file.state.round;
  row.role = teacher ? "teacher" : "student";
  row.purpose = purpose;
  row.agent = a.name();
  row.seconds = result->seconds;
  row.input_tokens = result->input_tokens;
  row.output_tokens = result->output_tokens;
  row.cost_usd = result->cost_usd;
  row.exit_code = result->exit_code;
  row.timed_out = result->timed_out;
  TEMPER_TRY(m_ledger->add(row).map([](bool) {}));
  checkpoint("after_turn");
  return result;
}

// ---- Plan ----------------------------------------------------------------------------------

Expected<std::optional<std::string>> Orchestrator::prepare_teacher_workspace() {
  const fs::path ws = teacher_workspace();
  TEMPER_TRY(util::make_dirs(ws));
  TEMPER_TRY(copy_task_public(m_file.config.task_dir, ws / "task"));
  // The knowledge base's fingerprint of this machine, taken when the campaign was created.
  json target = m_file.config.target;
  target["target_class"] = m_deps.target_class;
  TEMPER_TRY(util::write_file_atomic(ws / "target.json", target.dump(2) + "\n"));
  TEMPER_TRY(copy_kb_entries(certified_kb_entries(m_deps.kb_roots, m_deps.target_class, m_deps.target_fingerprint), ws / "kb"));
  // The reference as a black box, measured once per round.
  const fs::path refdir = ws / "reference";
  TEMPER_TRY(util::make_dirs(refdir));
  TEMPER_TRY_ASSIGN(SealedReference ref, m_deps.references->get(m_file.state.reference_id));
  if (!fs::exists(refdir / "times.json")) {
    JudgeCall call;
    call.task_dir = m_file.config.task_dir;
    set_reference(call, ref); // no candidate: the sealed reference itself is judged
    call.tier = "correctness";
    call.cases = m_file.config.judge.cases;
    call.time_limit_s = m_file.config.budgets.job_s;
    call.progress = true; // goldens and trials of every case: minutes on a large task
    say(fmt::format("round {}: measuring the sealed reference {} on every case", m_file.state.round, ref.id));
    TEMPER_TRY_ASSIGN(JudgeOutcome out, m_deps.judge->judge(call));
    // Built and checked, but nothing can run on this machine: the campaign cannot measure anything.
    if (auto why = everything_unsupported(out.report)) return why;
    // The timing protocol charges its cap on its clock: for one-thread tasks the thread's CPU
    // time, which on a busy machine is a fraction of the wall time (choose_cap reads this).
    TEMPER_TRY_ASSIGN(core::Task task, core::load_task(m_file.config.task_dir));
    const int threads = m_file.config.judge.threads > 0 ? m_file.config.judge.threads : task.config.threads;
    // A CUDA kernel's time is its events' (kernel_seconds), whatever the host thread did.
    const bool cpu_clock = !m_file.config.judge.cuda() && judge::default_timing_clock(threads) == judge::kClockThreadCpu;
    json times = json::array();
    for (const auto& c : out.report.value("cases", json::array())) {
      const double wall = c.value("kernel_seconds", 0.0);
      const double cpu = c.value("kernel_cpu_seconds", 0.0);
      json row = {{"case_id", c.value("case_id", int64_t{0})}, {"status", c.value("status", "")},
                  {"dtypes", c.value("dtypes", json::array())}, {"shapes", c.value("shapes", json::array())},
                  {"kernel_seconds", wall}, {"kernel_cpu_seconds", cpu},
                  {"protocol_clock_seconds", cpu_clock && cpu > 0 ? cpu : wall}};
      // The case's roofline bound here, so a Teacher can gate on a fraction of it (min_roofline).
      if (m_deps.roofline) {
        const int64_t id = row["case_id"];
        auto it = std::find_if(task.cases.begin(), task.cases.end(), [id](const core::Case& k) { return k.id == id; });
        if (it != task.cases.end()) {
          if (auto b = judge::roofline_bound(task, *it, *m_deps.roofline)) {
            row["roofline_bound_seconds"] = b->seconds;
            row["roofline_limiter"] = b->limiter;
          }
        }
      }
      times.push_back(std::move(row));
    }
    const ReportSummary s = summarize_report(out.report);
    JudgeRunRow row{fmt::format("R{}-reference-times", m_file.state.round), m_file.state.round, "", 0, "ref-time", "correctness",
                    s.cases, s.wall_seconds, s.compile_seconds, 0, /*turn: the orchestrator's own*/ "", s.queue_seconds};
    TEMPER_TRY(m_ledger->add(row).map([](bool) {}));
    for (const auto& job : cluster_job_rows(row.key, out.report)) TEMPER_TRY(m_ledger->add(job).map([](bool) {}));
    TEMPER_TRY(util::write_file_atomic(refdir / "times.json",
                                       json{{"schema_version", 1}, {"reference", ref.id}, {"measured_by", "temper judge (correctness trials, median kernel seconds: wall and the calling thread's CPU time)"}, {"cases", times}}.dump(2) + "\n"));
  }
  if (!fs::exists(refdir / "disassembly.txt")) {
    JudgeCall call;
    call.task_dir = m_file.config.task_dir;
    set_reference(call, ref);
    if (!m_file.config.judge.cases.empty()) call.cases = {m_file.config.judge.cases.front()};
    auto text = m_deps.judge->disassemble(call);
    TEMPER_TRY(util::write_file_atomic(refdir / "disassembly.txt", text ? *text : "unavailable: " + text.error().message + "\n"));
  }
  if (!fs::exists(refdir / "profile.txt")) {
    std::string profile = m_file.config.judge.cuda()
                              ? "unsupported: temper ref profile measures CPU kernels (perf, cachegrind); a CUDA reference's profile "
                                "would need Nsight Compute, which temper does not drive yet (./harness ref-profile says the same)\n"
                              : "unsupported: no profiler was given to this campaign (./harness ref-profile says the same)\n";
    if (m_deps.ref_profile) {
      int64_t first = m_file.config.judge.cases.empty() ? 1 : m_file.config.judge.cases.front();
      auto p = m_deps.ref_profile(ref, first);
      profile = p ? *p : "unavailable: " + p.error().message + "\n";
    }
    TEMPER_TRY(util::write_file_atomic(refdir / "profile.txt", profile));
  }
  return std::optional<std::string>();
}

Status Orchestrator::plan_phase() {
  CampaignState& s = m_file.state;
  const fs::path plan_file = round_dir() / "plan.json";
  if (fs::exists(plan_file)) { // accepted before a kill
    TEMPER_TRY(load_round_plan());
  } else {
    TEMPER_TRY_ASSIGN(std::optional<std::string> unsupported, prepare_teacher_workspace());
    if (unsupported) {
      s.phase = Phase::Done;
      s.end_reason = fmt::format("unsupported: {} (the reference {} was built; nothing can run here)", *unsupported, s.reference_id);
      return save();
    }
    const fs::path ws = teacher_workspace();
    std::string errors;
    const PlanContext ctx = plan_context();
    while (!m_plan || fs::exists(plan_file) == false) {
      if (s.teacher_turns >= m_file.config.triggers.teacher_turns) {
        s.teacher_turns = 0;
        return end_round(fmt::format("the Teacher gave no valid plan in {} turns", m_file.config.triggers.teacher_turns));
      }
      ++s.teacher_turns;
      std::error_code ec;
      fs::remove(ws / "plan.json", ec);
      TEMPER_TRY_ASSIGN(std::string brief, teacher_plan_brief(brief_context(m_file.config, m_deps, ws), errors));
      TEMPER_TRY_ASSIGN(auto turn, run_turn(agent::Role::Teacher, "plan", ws, brief));
      (void)turn;
      std::vector<PlanIssue> issues;
      json doc;
      if (!fs::exists(ws / "plan.json")) {
        issues.push_back({"/", "no plan.json was written in the workspace"});
      } else {
        TEMPER_TRY_ASSIGN(std::string text, util::read_file(ws / "plan.json"));
        try {
          doc = json::parse(text);
          issues = validate_plan(doc, ctx);
        } catch (const json::parse_error& e) {
          issues.push_back({"/", fmt::format("not valid JSON: {}", e.what())});
        }
      }
      if (!issues.empty()) {
        errors = format_issues(issues);
        TEMPER_TRY(util::write_file_atomic(ws / "plan_errors.json", json{{"schema_version", 1}, {"issues", issues_to_json(issues)}}.dump(2) + "\n"));
        say(fmt::format("round {}: the plan is not valid ({} problem(s)); back to the Teacher", s.round, issues.size()));
        TEMPER_TRY(save());
        continue;
      }
      std::error_code rm;
      fs::remove(ws / "plan_errors.json", rm);
      TEMPER_TRY(util::write_file_atomic(plan_file, doc.dump(2) + "\n"));
      checkpoint("after_plan");
      TEMPER_TRY(load_round_plan());
    }
  }
  s.teacher_turns = 0;
  s.milestone = 0;
  s.phase = Phase::Student;
  say(fmt::format("round {}: plan accepted: {} decisions, {} milestones", s.round, m_plan->decisions.size(), m_plan->milestones.size()));
  return save();
}

// ---- Student -------------------------------------------------------------------------------

Status Orchestrator::prepare_student_workspace() {
  const fs::path ws = student_workspace();
  const Milestone& m = m_plan->milestones.at(static_cast<size_t>(m_file.state.milestone));
  TEMPER_TRY(util::make_dirs(ws / "src"));
  TEMPER_TRY(util::make_dirs(ws / "feedback"));
  TEMPER_TRY(util::write_file_atomic(ws / "milestone.md", render_milestone(m, m_file.config.task_name)));
  const json& source = m_plan->source.at("milestones").at(static_cast<size_t>(m_file.state.milestone));
  TEMPER_TRY(util::write_file_atomic(ws / "milestone.json", milestone_document(source, m_file.config.task_name).dump(2) + "\n"));
  // The milestone's starter kernel, checked again (the plan was valid, the files may have moved).
  std::error_code rm;
  fs::remove_all(ws / "src" / "starter", rm);
  if (!m.starter.empty()) {
    TEMPER_TRY_ASSIGN(fs::path starter, resolve_starter(m.starter, plan_context()));
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(starter));
    TEMPER_TRY(util::make_dirs(ws / "src" / "starter"));
    TEMPER_TRY(util::write_file_atomic(ws / starter_workspace_path(m.starter), text));
  }
  // Exactly the cited entries: remove what an earlier milestone cited.
  std::error_code ec;
  fs::remove_all(ws / "kb", ec);
  std::vector<KbEntryRef> cited;
  for (const auto& e : certified_kb_entries(m_deps.kb_roots, m_deps.target_class, m_deps.target_fingerprint)) {
    if (std::find(m.kb.begin(), m.kb.end(), e.id) != m.kb.end()) cited.push_back(e);
  }
  TEMPER_TRY(copy_kb_entries(cited, ws / "kb"));
  // Accepted kernels of earlier milestones are the starting point of the next.
  for (const auto& [id, n] : m_file.state.accepted) {
    const fs::path src = attempt_dir(n) / "candidate.cpp";
    if (!fs::exists(src)) continue;
    TEMPER_TRY(util::make_dirs(ws / "src" / "accepted"));
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(src));
    TEMPER_TRY(util::write_file_atomic(ws / "src" / "accepted" / (id + ".cpp"), text));
  }
  return {};
}

Status Orchestrator::student_phase() {
  CampaignState& s = m_file.state;
  if (!m_plan) TEMPER_TRY(load_round_plan());
  if (s.milestone >= static_cast<int>(m_plan->milestones.size())) return end_round("all milestones accepted");
  const Milestone& m = m_plan->milestones[static_cast<size_t>(s.milestone)];
  if (s.accepted.count(m.id)) {
    say(fmt::format("round {}: {} accepted (attempt {})", s.round, m.id, s.accepted[m.id]));
    s.milestone++;
    s.milestone_submissions = 0;
    s.milestone_student_turns = 0;
    s.milestone_seconds = 0;
    s.consecutive_rejected = 0;
    s.window.clear();
    TEMPER_TRY(save());
    if (s.milestone >= static_cast<int>(m_plan->milestones.size())) return end_round("all milestones accepted");
    return {};
  }
  if (s.pending_trigger.empty()) {
    if (auto st = check_stagnation(s, m_file.config.triggers, m)) {
      s.pending_trigger = st->trigger;
      s.pending_detail = st->detail;
    }
  }
  if (!s.pending_trigger.empty()) {
    say(fmt::format("round {}: {} stalled ({}): {}", s.round, m.id, s.pending_trigger, s.pending_detail));
    s.phase = Phase::Revision;
    s.teacher_turns = 0;
    return save();
  }
  TEMPER_TRY(prepare_student_workspace());
  ++s.milestone_student_turns;
  TEMPER_TRY_ASSIGN(std::string brief, student_brief(brief_context(m_file.config, m_deps, student_workspace()), m));
  const double before_turn = s.milestone_seconds;
  TEMPER_TRY_ASSIGN(auto turn, run_turn(agent::Role::Student, m.id, student_workspace(), brief));
  // Attempts judged during the turn were added as they came in, and the turn's wall time holds
  // them too: count the turn's time, or the attempts' if they add up to more.
  s.milestone_seconds = before_turn + std::max(turn.seconds, s.milestone_seconds - before_turn);
  return save();
}

// ---- Revision ------------------------------------------------------------------------------

Status Orchestrator::revision_phase() {
  CampaignState& s = m_file.state;
  if (!m_plan) TEMPER_TRY(load_round_plan());
  const int number = s.revisions + 1;
  const fs::path revdir = round_dir() / "revisions";
  if (fs::exists(revdir / fmt::format("{:03}.json", number))) return finish_revision(number);
  if (s.revisions >= m_file.config.triggers.revisions) {
    return end_round(fmt::format("revisions exhausted ({} of {}); last trigger: {}", s.revisions, m_file.config.triggers.revisions, s.pending_trigger));
  }
  const fs::path ws = teacher_workspace();
  TEMPER_TRY(util::make_dirs(ws));
  const std::string milestone_id = m_plan->milestones.at(static_cast<size_t>(std::min<int>(s.milestone, static_cast<int>(m_plan->milestones.size()) - 1))).id;
  std::string errors;
  while (true) {
    if (s.teacher_turns >= m_file.config.triggers.teacher_turns) {
      return end_round(fmt::format("the Teacher gave no valid revision in {} turns", m_file.config.triggers.teacher_turns));
    }
    TEMPER_TRY(write_trajectory());
    // The current plan, for the Teacher to edit; a fresh request without an old answer.
    TEMPER_TRY(util::write_file_atomic(ws / "plan.json", m_plan->source.dump(2) + "\n"));
    std::error_code ec;
    fs::remove(ws / "revision.json", ec);
    json request = {{"schema_version", 1}, {"revision", number}, {"trigger", s.pending_trigger}, {"detail", s.pending_detail},
                    {"milestone", milestone_id}, {"accepted", s.accepted}};
    TEMPER_TRY(util::write_file_atomic(ws / "REVISION.json", request.dump(2) + "\n"));
    TEMPER_TRY(util::write_file_atomic(ws / "REVISION.md", fmt::format("# Revision {} requested\n\ntrigger: {}\n\n{}\n\nstalled at: {}\n",
                                                                       number, s.pending_trigger, s.pending_detail, milestone_id)));
    ++s.teacher_turns;
    TEMPER_TRY_ASSIGN(std::string brief, teacher_revision_brief(brief_context(m_file.config, m_deps, ws), s.pending_trigger,
                                                                s.pending_detail, errors));
    TEMPER_TRY_ASSIGN(auto turn, run_turn(agent::Role::Teacher, "revision", ws, brief));
    (void)turn;
    std::vector<PlanIssue> issues;
    json rev_doc, plan_doc;
    std::optional<Plan> new_plan;
    auto read_json = [&](const fs::path& f, json& into, const std::string& prefix) {
      if (!fs::exists(f)) {
        issues.push_back({prefix, fmt::format("no {} was written in the workspace", f.filename().string())});
        return;
      }
      auto text = util::read_file(f);
      try {
        into = json::parse(text ? *text : std::string());
      } catch (const json::parse_error& e) {
        issues.push_back({prefix, fmt::format("not valid JSON: {}", e.what())});
      }
    };
    read_json(ws / "revision.json", rev_doc, "revision.json:/");
    read_json(ws / "plan.json", plan_doc, "plan.json:/");
    if (issues.empty()) {
      for (auto& i : validate_plan(plan_doc, plan_context())) issues.push_back({"plan.json:" + i.path, i.message});
      if (issues.empty()) {
        new_plan = parse_plan(plan_doc, plan_context()).value();
        for (auto& i : validate_revision(rev_doc, *m_plan, *new_plan)) issues.push_back({"revision.json:" + i.path, i.message});
      }
    }
    if (!issues.empty()) {
      errors = format_issues(issues);
      TEMPER_TRY(util::write_file_atomic(ws / "plan_errors.json", json{{"schema_version", 1}, {"issues", issues_to_json(issues)}}.dump(2) + "\n"));
      say(fmt::format("round {}: revision {} is not valid ({} problem(s)); back to the Teacher", s.round, number, issues.size()));
      TEMPER_TRY(save());
      continue;
    }
    Revision rev = parse_revision(rev_doc, *m_plan, *new_plan).value();
    const int restart = restart_index(rev, *new_plan);
    // Write-ahead: the new plan, then the record; finish_revision makes them current.
    TEMPER_TRY(util::make_dirs(revdir));
    TEMPER_TRY(util::write_file_atomic(revdir / fmt::format("{:03}.plan.json", number), plan_doc.dump(2) + "\n"));
    json record = {{"schema_version", 1},
                   {"number", number},
                   {"trigger", s.pending_trigger},
                   {"detail", s.pending_detail},
                   {"stalled_at", milestone_id},
                   {"kind", revision_kind_name(rev.kind)},
                   {"from", rev.from},
                   {"reason", rev.reason},
                   {"restart", restart < static_cast<int>(new_plan->milestones.size()) ? new_plan->milestones[static_cast<size_t>(restart)].id : "end"},
                   {"restart_index", restart},
                   {"after_attempt", s.next_attempt - 1}, // where it falls in the round's history (the report's timeline)
                   {"time", judge::utc_now()}};
    TEMPER_TRY(util::write_file_atomic(revdir / fmt::format("{:03}.json", number), record.dump(2) + "\n"));
    std::error_code rm;
    fs::remove(ws / "plan_errors.json", rm);
    checkpoint("after_revision_record");
    return finish_revision(number);
  }
}

Status Orchestrator::finish_revision(int number) {
  CampaignState& s = m_file.state;
  const fs::path revdir = round_dir() / "revisions";
  TEMPER_TRY_ASSIGN(std::string rtext, util::read_file(revdir / fmt::format("{:03}.json", number)));
  TEMPER_TRY_ASSIGN(std::string ptext, util::read_file(revdir / fmt::format("{:03}.plan.json", number)));
  json record = json::parse(rtext);
  TEMPER_TRY(util::write_file_atomic(round_dir() / "plan.json", ptext));
  TEMPER_TRY(load_round_plan());
  RevisionRow row{fmt::format("R{}-revision-{}", s.round, number), s.round, number, record.value("trigger", ""), record.value("kind", ""),
                  record.value("from", ""), record.value("reason", "")};
  TEMPER_TRY(m_ledger->add(row).map([](bool) {}));
  const int restart = record.value("restart_index", 0);
  for (size_t i = static_cast<size_t>(std::max(0, restart)); i < m_plan->milestones.size(); ++i) {
    s.accepted.erase(m_plan->milestones[i].id);
    s.accepted_speedup.erase(m_plan->milestones[i].id);
  }
  // Milestones beyond the new plan's end no longer exist.
  for (auto it = s.accepted.begin(); it != s.accepted.end();) {
    if (m_plan->milestone_index(it->first) < 0) {
      s.accepted_speedup.erase(it->first);
      it = s.accepted.erase(it);
    } else {
      ++it;
    }
  }
  s.revisions = number;
  s.milestone = restart;
  s.milestone_submissions = 0;
  s.milestone_student_turns = 0;
  s.milestone_seconds = 0;
  s.consecutive_rejected = 0;
  s.window.clear();
  s.pending_trigger.clear();
  s.pending_detail.clear();
  s.teacher_turns = 0;
  s.phase = Phase::Student;
  say(fmt::format("round {}: revision {}: {} from {} ({}); work restarts at {}", s.round, number, record.value("kind", ""),
                  record.value("from", ""), record.value("trigger", ""), record.value("restart", "")));
  return save();
}

// ---- Round end and promotion ---------------------------------------------------------------

Status Orchestrator::round_end_phase() {
  TEMPER_TRY(finish_promotion());
  return {};
}

Status Orchestrator::finish_promotion() {
  CampaignState& s = m_file.state;
  const fs::path file = round_dir() / "promotion.json";
  json record;
  if (fs::exists(file)) {
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
    record = json::parse(text);
  } else {
    // The round's best candidate with a confirmed FASTER gate verdict against its reference.
    int best = 0;
    double best_speedup = 0;
    std::string best_milestone;
    std::error_code ec;
    for (int n = 1; n < s.next_attempt; ++n) {
      auto text = util::read_file(attempt_dir(n) / "result.json");
      if (!text) continue;
      json r = json::parse(*text);
      if (r.value("op", "") != "submit" || !r.value("gate_faster", false)) continue;
      const double sp = r.value("speedup", 0.0);
      if (sp > best_speedup) {
        best = n;
        best_speedup = sp;
        best_milestone = r.value("milestone", "");
      }
    }
    const std::string next_id = fmt::format("R{}", s.round);
    record = {{"schema_version", 1}, {"round", s.round}, {"reference_before", s.reference_id}, {"end_reason", s.round_end_reason},
              {"time", judge::utc_now()}};
    if (best > 0) {
      TEMPER_TRY_ASSIGN(auto sealed, m_deps.references->seal(attempt_dir(best) / "candidate.cpp", next_id,
                                                              fmt::format("round {} attempt {} ({})", s.round, best, best_milestone)));
      record["promoted"] = true;
      record["attempt"] = best;
      record["milestone"] = best_milestone;
      record["speedup"] = best_speedup;
      record["reference_after"] = sealed.id;
      record["note"] = fmt::format("attempt {} ({}) is {:.3f}x faster than {} with a confirmed gate verdict: sealed as {}", best,
                                   best_milestone, best_speedup, s.reference_id, sealed.id);
    } else {
      record["promoted"] = false;
      record["attempt"] = 0;
      record["speedup"] = 0;
      record["reference_after"] = s.reference_id;
      record["note"] = fmt::format("no candidate of round {} has a confirmed FASTER gate verdict against {}: nothing promoted", s.round, s.reference_id);
    }
    TEMPER_TRY(util::write_file_atomic(file, record.dump(2) + "\n"));
    checkpoint("after_promotion_record");
  }
  PromotionRow row{fmt::format("R{}-promotion", s.round), s.round, record.value("promoted", false), record.value("attempt", 0),
                   record.value("reference_after", ""), record.value("speedup", 0.0), record.value("note", "")};
  TEMPER_TRY(m_ledger->add(row).map([](bool) {}));
  say(fmt::format("round {}: {}", s.round, record.value("note", "")));
  RoundSummary summary{s.round, record.value("reference_before", ""), record.value("promoted", false), record.value("reference_after", ""),
                       record.value("attempt", 0), record.value("speedup", 0.0), s.round_end_reason, record.value("note", "")};
  s.rounds_done.push_back(summary);
  s.reference_id = summary.reference_after;
  const bool budget_spent = s.round_end_reason.rfind("budget spent", 0) == 0;
  if (s.round >= m_file.config.rounds || budget_spent) {
    s.phase = Phase::Done;
    s.end_reason = budget_spent ? s.round_end_reason : fmt::format("{} round(s) done", s.round);
    return save();
  }
  // The next round starts at the Teacher, against the (possibly new) reference.
  s.round++;
  s.phase = Phase::Plan;
  s.milestone = 0;
  s.next_attempt = 1;
  s.applied_attempt = 0;
  s.revisions = 0;
  s.teacher_turns = 0;
  s.milestone_submissions = 0;
  s.milestone_student_turns = 0;
  s.milestone_seconds = 0;
  s.consecutive_rejected = 0;
  s.window.clear();
  s.pending_trigger.clear();
  s.pending_detail.clear();
  s.accepted.clear();
  s.accepted_speedup.clear();
  s.round_end_reason.clear();
  m_plan.reset();
  say(fmt::format("round {} starts against reference {}", s.round, s.reference_id));
  return save();
}

} // namespace temper::campaign
