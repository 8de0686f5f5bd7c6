// Fakes for campaign tests: a judge whose verdicts come from markers in the candidate source,
// a scripted Student that calls the orchestrator's handler directly, plan builders, and a task
// copy with its own plans.
#pragma once

#include "agent/agent.h"
#include "campaign/judge_service.h"
#include "campaign/orchestrator.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/hash.h"

#include <nlohmann/json.hpp>

#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace temper::campaign::testing {

namespace fs = std::filesystem;
using nlohmann::json;

// Thrown from a checkpoint or a fake to simulate temper being killed there. Not a
// std::exception, so nothing on the way catches it.
struct Killed {
  std::string where;
};

inline fs::path source_dir() { return TEMPER_SOURCE_DIR; }

// A reference store for the state machine's tests: copies sources to DIR/<id>/reference.cpp with
// a meta.json, compiling nothing (the real store, campaign::SealedReferenceStore, is tested with
// the real judge). FakeJudge reads the "sealed" source back through the same layout.
class PlainReferenceStore final : public ReferenceStore {
public:
  explicit PlainReferenceStore(fs::path dir) : m_dir(std::move(dir)) {}
  Expected<SealedReference> seal(const fs::path& source, const std::string& id, const std::string& label) override {
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(source));
    const std::string sha = util::hash_hex(text);
    if (auto existing = get(id)) {
      if (existing->sha == sha) return existing;
      return fail("plain store: reference {} exists with other content", id);
    }
    TEMPER_TRY(util::make_dirs(m_dir / id));
    TEMPER_TRY(util::write_file_atomic(m_dir / id / "reference.cpp", text));
    SealedReference r{id, label, sha, m_dir};
    TEMPER_TRY(util::write_file_atomic(m_dir / id / "meta.json", r.to_json().dump(2) + "\n"));
    return r;
  }
  Expected<SealedReference> get(const std::string& id) override {
    auto meta = util::read_file(m_dir / id / "meta.json");
    if (!meta) return fail("plain store: no sealed reference '{}'", id);
    json j = json::parse(*meta);
    return SealedReference{j.at("id"), j.at("label"), j.at("sha"), m_dir};
  }

private:
  fs::path m_dir;
};

// Candidate markers: "// fake: status=INCORRECT_NUMERICAL" fails every case; "// fake:
// speedup=1.7" passes, 1.7x faster than the task's reference (so 1.7 / 2.2 against a promoted
// "speedup=2.2" reference); FASTER above 1.01, SLOWER below 0.99, else SAME. "// fake:
// speedup=1.2 roofline=0.7" also puts each timed case at 70% of the roofline.
class FakeJudge final : public JudgeService {
public:
  struct Call {
    std::string tier;
    fs::path candidate;
    std::string content;
    std::vector<int64_t> cases;
    std::map<int64_t, double> reference_seconds;
    bool roofline = false; // the call carried the machine's roofline
    bool torch = false;    // the reference arm was the task's PyTorch function
    int torch_threads = -1; // its threads (JudgeCall::torch_threads: 0 is PyTorch's default)
    std::vector<int> also_torch; // JudgeCall::also_torch_threads: PyTorch arms in the same jobs
  };
  std::vector<Call> calls;
  int throw_on_call = 0; // 1-based call number that throws Killed; 0: never
  util::FakeClock* clock = nullptr; // when set, each judge call takes its report's 2 s on it
  // Against PyTorch (call.torch_reference): PyTorch is this many times faster than the task's
  // reference; a non-empty torch_error is the harness error such a call gets.
  double torch_ratio = 4.0;
  std::string torch_error;
  // PyTorch at its default thread count (torch_threads 0) is this many times faster again.
  double torch_default_gain = 1.6;

  Expected<JudgeOutcome> judge(const JudgeCall& call) override {
    // No candidate: the sealed reference itself is judged (the Teacher's measurements).
    auto text = util::read_file(call.candidate.empty() ? call.store / call.reference / "reference.cpp" : call.candidate);
    if (!text) return tl::unexpected(text.error());
    calls.push_back({call.tier, call.candidate, *text, call.cases, call.reference_seconds, call.roofline.has_value(), call.torch_reference,
                     call.torch_threads, call.also_torch_threads});
    if (call.torch_reference && !torch_error.empty()) return fail("{}", torch_error);
    if (clock) clock->advance(2.0);
    if (throw_on_call > 0 && static_cast<int>(calls.size()) == throw_on_call) throw Killed{"judge"};
    json report = report_for(call, *text, call.torch_reference, call.torch_threads);
    if (!call.also_torch_threads.empty()) {
      // The PyTorch arms of the same judgement: a report each, or the error each got.
      json also = json::array();
      for (int threads : call.also_torch_threads) {
        if (!torch_error.empty()) also.push_back({{"torch_threads", threads}, {"error", torch_error}});
        else also.push_back({{"torch_threads", threads}, {"report", report_for(call, *text, true, threads)}});
      }
      report["also"] = also;
    }
    return JudgeOutcome{report, ""};
  }

  json report_for(const JudgeCall& call, const std::string& source, bool torch_reference, int torch_threads) const {
    const std::string* text = &source;
    std::smatch m;
    std::string status = "PASSED";
    double speedup = 1.0;
    if (std::regex_search(*text, m, std::regex("fake: status=([A-Z_]+)"))) status = m[1];
    if (std::regex_search(*text, m, std::regex("fake: speedup=([0-9.]+)"))) speedup = std::stod(m[1]);
    // Speedups are over the task's reference; a promoted reference carries its own marker.
    if (!torch_reference && !call.reference.empty() && !call.candidate.empty()) {
      auto ref = util::read_file(call.store / call.reference / "reference.cpp");
      if (ref && std::regex_search(*ref, m, std::regex("fake: speedup=([0-9.]+)"))) speedup /= std::stod(m[1]);
    }
    if (torch_reference) speedup /= torch_ratio * (torch_threads == 0 ? torch_default_gain : 1.0);
    std::vector<int64_t> cases = call.cases.empty() ? std::vector<int64_t>{1, 2} : call.cases;
    if (call.tier == "probe") cases.resize(1);
    const bool timed = call.tier != "correctness" && status == "PASSED";
    const std::string verdict = speedup > 1.01 ? "FASTER" : speedup < 0.99 ? "SLOWER" : "SAME";
    const bool gate = call.tier == "gate";
    json jcases = json::array();
    for (auto id : cases) {
      // Thread CPU time below the wall time, as on a busy machine.
      json c = {{"case_id", id}, {"status", status}, {"kernel_seconds", 0.001 / speedup}, {"kernel_cpu_seconds", 0.0008 / speedup},
                {"compile", {{"seconds", 0.5}, {"cache_hit", false}}}};
      if (status != "PASSED") c["message"] = "fake failure";
      if (timed) {
        json jobs = json::array({{{"kind", "measurement"}, {"wall_seconds", 0.25}}});
        if (gate) jobs.push_back({{"kind", "confirmation"}, {"wall_seconds", 0.25}});
        c["timing"] = {{"verdict", verdict}, {"confirmed", gate}, {"speedup", speedup}, {"jobs", jobs}};
        // "fake: roofline=0.7": each case at 70% of the roofline, when the call gave one.
        if (call.roofline && std::regex_search(*text, m, std::regex("fake: .*roofline=([0-9.]+)"))) c["timing"]["roofline_fraction"] = std::stod(m[1]);
      }
      jcases.push_back(c);
    }
    json context = {{"fake", true}};
    if (torch_reference) {
      context["reference"] = {{"torch", torch_threads == 0 ? "torch 9.9.9, 2 threads (its default)" : "torch 9.9.9, 1 thread"},
                              {"function", "pytorch.py"}};
    }
    json report = {{"schema_version", 1}, {"kind", "temper.judge.report"}, {"context", context},
                   {"summary", {{"wall_seconds", 2.0}, {"compile_seconds", 0.5}}}, {"cases", jcases}};
    if (call.tier != "correctness") {
      const int n = timed ? static_cast<int>(cases.size()) : 0;
      report["timing"] = {{"tier", call.tier}, {"measurement_jobs", 1}, {"confirmation_jobs", gate ? 1 : 0}, {"cases_timed", n},
                          {"geomean_speedup", timed ? json(speedup) : json()},
                          {"verdicts", {{"FASTER", verdict == "FASTER" ? n : 0}, {"SLOWER", verdict == "SLOWER" ? n : 0},
                                        {"SAME", verdict == "SAME" ? n : 0}, {"AMBIGUOUS", 0}}}};
    } else {
      report["timing"] = nullptr;
    }
    return report;
  }
  Expected<JudgeOutcome> probe_grid(const JudgeCall& call) override { return judge(call); }
  Expected<std::string> disassemble(const JudgeCall&) override { return std::string("fake disassembly: 42 instructions\n"); }

  int count(const std::string& tier, const std::string& needle = "") const {
    int n = 0;
    for (const auto& c : calls) n += c.tier == tier && (needle.empty() || c.content.find(needle) != std::string::npos);
    return n;
  }
};

// One Student action: write `content` to kernel.cpp and submit or probe it, or escalate.
struct Action {
  Action(std::string op_, std::string content_, std::string text_, std::vector<std::string> grid_ = {}, std::vector<int64_t> cases_ = {})
      : op(std::move(op_)), content(std::move(content_)), text(std::move(text_)), grid(std::move(grid_)), cases(std::move(cases_)) {}
  std::string op; // submit | probe | escalate | status
  std::string content;
  std::string text;
  std::vector<std::string> grid; // probe: knob axes "NAME=v1,v2"
  std::vector<int64_t> cases;    // probe: several cases at once
};
using Turn = std::vector<Action>;

inline Action submit(const std::string& marker) {
  return {"submit", "#include <temper/kernel.h>\n// " + marker + "\nTEMPER_EXPORT int temper_kernel(const temper_args*) { return 0; }\n", ""};
}
inline Action probe(const std::string& marker) {
  Action a = submit(marker);
  a.op = "probe";
  return a;
}
inline Action escalate(const std::string& why) { return {"escalate", "", why}; }

// Scripted turns per (round, milestone); a turn leaves the script only when it ran to its end,
// so a turn interrupted by a simulated kill is replayed on resume, as a real Student would
// start its turn over.
class ScriptedStudent final : public agent::Agent {
public:
  std::map<std::string, std::deque<Turn>> script; // key "R1/M0"
  Orchestrator** orchestrator = nullptr;
  std::vector<std::string> responses;
  int turns = 0;
  double turn_seconds = 1.0;        // what each turn reports
  util::FakeClock* clock = nullptr; // when set, each turn lasts turn_seconds on it, its requests included

  std::string name() const override { return "scripted"; }
  Expected<agent::TurnResult> run_turn(const agent::TurnRequest& req) override {
    ++turns;
    const double t0 = clock ? clock->now() : 0;
    auto finish = [&](agent::TurnResult r) {
      if (clock) clock->advance(turn_seconds - (clock->now() - t0));
      return r;
    };
    const std::string round = req.workspace.parent_path().filename().string();
    auto md = util::read_file(req.workspace / "milestone.md");
    std::smatch m;
    std::string milestone = "?";
    if (md && std::regex_search(*md, m, std::regex(" (M[0-9]+): "))) milestone = m[1];
    seen.push_back(round + "/" + milestone);
    std::set<std::string>& files = workspace_files[round + "/" + milestone];
    for (const auto& e : fs::recursive_directory_iterator(req.workspace)) {
      if (e.is_regular_file()) files.insert(e.path().lexically_relative(req.workspace).string());
    }
    agent::TurnResult r;
    r.seconds = turn_seconds;
    r.input_tokens = 100;
    r.output_tokens = 50;
    r.cost_usd = 0.01;
    auto& q = script[round + "/" + milestone];
    if (q.empty()) return finish(r); // nothing scripted: an idle turn
    const Turn turn = q.front();
    for (size_t k = 0; k < turn.size(); ++k) {
      const Action& a = turn[k];
      agent::HarnessRequest hr;
      hr.op = a.op;
      if (!a.content.empty()) {
        std::ofstream(req.workspace / "kernel.cpp") << a.content;
        hr.file = "kernel.cpp";
      }
      hr.text = a.text;
      hr.grid = a.grid;
      hr.cases = a.cases;
      try {
        auto resp = (*orchestrator)->handle_student(hr);
        responses.push_back(resp.message);
      } catch (const Killed&) {
        // The requests answered before the kill are done; the one in flight is retried, as a
        // Student whose harness call failed would.
        q.front().erase(q.front().begin(), q.front().begin() + static_cast<std::ptrdiff_t>(k));
        throw;
      }
    }
    q.pop_front();
    return finish(r);
  }
  std::vector<std::string> seen;
  std::map<std::string, std::set<std::string>> workspace_files; // "R1/M0" -> files at turn start
};

// Forwards to an agent the test owns, so it survives an Orchestrator destroyed by a "kill".
class AgentRef final : public agent::Agent {
public:
  explicit AgentRef(agent::Agent& a) : m_a(a) {}
  std::string name() const override { return m_a.name(); }
  Expected<agent::TurnResult> run_turn(const agent::TurnRequest& r) override { return m_a.run_turn(r); }

private:
  agent::Agent& m_a;
};

// Plans for tests: D1 (structure), D2 (inner loop); M0 correctness; M1 gate 1.5x vs the
// reference; M2 gate 1.1x vs the previous milestone.
inline json decision(const std::string& id, const std::string& choice) {
  return {{"id", id}, {"title", "decision " + id}, {"choice", choice}, {"rationale", "because"},
          {"evidence", {{"measurements", {"reference/times.json"}}}}, {"alternatives", json::array()}};
}

inline json milestone(const std::string& id, std::vector<std::string> deps, json performance) {
  json acc = {{"correctness", {{"cases", "all"}}}, {"expectations", {"vector instructions dominate"}}};
  if (!performance.is_null()) acc["performance"] = performance;
  return {{"id", id}, {"title", "milestone " + id}, {"requirements", {"do " + id}}, {"contract", "kernel.h ABI"},
          {"acceptance", acc}, {"kb", json::array()}, {"budget", {{"attempts", 6}, {"seconds", 36000}}}, {"depends_on", deps}};
}

inline json test_plan(const std::string& d2_choice) {
  return {{"schema_version", 1},
          {"kind", "temper.plan"},
          {"summary", "test plan"},
          {"decisions", {decision("D1", "one pass"), decision("D2", d2_choice)}},
          {"milestones",
           {milestone("M0", {"D1"}, nullptr),
            milestone("M1", {"D1", "D2"}, {{"tier", "gate"}, {"cases", "all"}, {"min_speedup", 1.5}, {"against", "reference"}}),
            milestone("M2", {"D2"}, {{"tier", "gate"}, {"cases", "all"}, {"min_speedup", 1.1}, {"against", "previous"}})}}};
}

// A copy of tasks/swi_glu (its kernels/ too) with the given plans under plans/ (01.json, 02.json, ...).
inline fs::path make_task(const fs::path& root, const std::vector<json>& plans) {
  const fs::path task = root / "tasks" / "swi_glu";
  fs::create_directories(task / "plans");
  for (const auto& e : fs::directory_iterator(source_dir() / "tasks" / "swi_glu")) {
    if (e.is_regular_file()) fs::copy_file(e.path(), task / e.path().filename());
  }
  fs::copy(source_dir() / "tasks" / "swi_glu" / "kernels", task / "kernels", fs::copy_options::recursive);
  for (size_t i = 0; i < plans.size(); ++i) {
    std::ofstream(task / "plans" / (std::string(i < 9 ? "0" : "") + std::to_string(i + 1) + ".json")) << plans[i].dump(2);
  }
  return task;
}

inline CampaignConfig test_config(const fs::path& task, int rounds) {
  CampaignConfig c;
  c.task_dir = task;
  c.teacher = "planfile";
  c.student = "scripted";
  c.rounds = rounds;
  c.judge.cases = {1, 2};
  c.triggers.rejections = 5;
  c.triggers.plateau = 6;
  c.triggers.revisions = 2;
  c.sandbox = false;
  c.target = {{"fake", true}};
  return c;
}

// Every file under `dir`, recursively.
inline std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  return out;
}

} // namespace temper::campaign::testing
