#include "campaign/tuner_student.h"

#include "campaign/tuner_cache.h"
#include "campaign/tuner_space.h"
#include "core/task_loader.h"
#include "judge/probe.h"
#include "kb/target.h"
#include "util/fs.h"
#include "util/hash.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;
using tuner::Measurement;

Expected<TunerOptions> parse_tuner_spec(const std::string& spec) {
  TunerOptions o;
  if (spec == "tuner") return o;
  if (spec.rfind("tuner:", 0) != 0) return fail("'{}' is not a tuner spec (tuner or tuner:KEY=VALUE,...)", spec);
  std::string rest = spec.substr(6);
  auto number = [&](const std::string& key, const std::string& value) -> Expected<double> {
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !(v >= 0)) return fail("tuner option {}={}: not a number >= 0", key, value);
    return v;
  };
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find(',', start);
    if (end == std::string::npos) end = rest.size();
    const std::string item = rest.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) return fail("tuner option '{}': expected KEY=VALUE", item);
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    TEMPER_TRY_ASSIGN(double v, number(key, value));
    if (key == "max-variants") {
      if (v < 1 || v > static_cast<double>(judge::kMaxProbeVariants)) {
        return fail("tuner option max-variants={}: between 1 and {}", value, judge::kMaxProbeVariants);
      }
      o.max_variants = static_cast<size_t>(v);
    } else if (key == "seed") {
      o.seed = static_cast<uint64_t>(v);
    } else if (key == "submit-share") {
      if (v >= 1) return fail("tuner option submit-share={}: a fraction below 1", value);
      o.submit_share = v;
    } else if (key == "budget") {
      o.budget_s = v;
    } else {
      return fail("unknown tuner option '{}' (max-variants, seed, submit-share, budget)", key);
    }
  }
  return o;
}

namespace {

struct Variant {
  build::KnobValues knobs;
  std::string label;
  std::map<int64_t, Measurement> results; // by case
  std::string out;                        // why it left the race; empty while in it
};

struct Score {
  double speedup = 0; // geometric mean over the cases
  double ci_lo = 0;   // geometric mean of the lower ends (the speedup where undetermined)
};

std::optional<double> opt_number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::vector<int64_t> case_list(const json& cases) {
  std::vector<int64_t> out;
  if (cases.is_array()) {
    for (const auto& c : cases) {
      if (c.is_number_integer()) out.push_back(c.get<int64_t>());
    }
  }
  return out;
}

enum class Probed { Ok, BudgetSpent, Stopped };

class TunerRun {
public:
  TunerRun(const TunerOptions& o, const fs::path& task_dir, const agent::TurnRequest& req, HarnessFn harness, util::Clock& clock,
           std::ostream& log)
      : m_opt(o), m_task_dir(task_dir), m_req(req), m_harness(std::move(harness)), m_clock(clock), m_log(log),
        m_cache(o.cache_dir.empty() ? util::cache_root() / "tuner" : o.cache_dir) {
    m_start = m_clock.now();
  }

  int run() {
    int code = 0;
    auto st = search_and_submit();
    if (!st) {
      say("tuner: " + st.error().message);
      m_summary["error"] = st.error().message;
      code = 1;
    }
    m_summary["schema_version"] = 1;
    m_summary["kind"] = "temper.tuner";
    m_summary["probes"] = m_probes;
    m_summary["probe_seconds"] = m_probe_seconds;
    m_summary["cache"] = {{"dir", m_cache.dir().string()}, {"hits", m_hits}, {"misses", m_misses}};
    m_summary["wall_seconds"] = m_clock.now() - m_start;
    if (!m_summary.contains("stop_reason")) m_summary["stop_reason"] = code ? "error" : "done";
    if (auto w = util::write_file_atomic(m_req.workspace / "tuner.json", m_summary.dump(2) + "\n"); !w) {
      say("tuner: cannot write tuner.json: " + w.error().message);
    }
    return code;
  }

  const std::string& last_line() const { return m_last; }

private:
  void say(const std::string& line) {
    m_log << line << "\n";
    m_log.flush();
    m_last = line;
  }

  Expected<agent::HarnessResponse> call(const agent::HarnessRequest& r) { return m_harness(r); }

  // Seconds the orchestrator will count for this turn so far: the probes' judge time, and the
  // turn's own wall time when it ends.
  // The turn's wall time already holds the probes it waited for; the probes' own seconds count
  // only where they exceed it (a clock that did not move, as in tests).
  double spent() const { return std::max(m_probe_seconds, m_clock.now() - m_start); }
  double probe_budget() const { return m_budget * (1 - m_opt.submit_share); }

  Status read_status() {
    agent::HarnessRequest r;
    r.op = "status";
    TEMPER_TRY_ASSIGN(auto resp, call(r));
    if (!resp.ok) return fail("harness status refused: {}", resp.message);
    m_status = resp.body;
    return {};
  }

  Status read_milestone() {
    const fs::path file = m_req.workspace / "milestone.json";
    std::error_code ec;
    if (!fs::exists(file, ec)) {
      say("milestone.json: absent; the kernel's own knob space and the campaign's cases apply");
      return {};
    }
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
    try {
      const json doc = json::parse(text);
      m_milestone = doc.contains("milestone") ? doc["milestone"] : doc;
    } catch (const json::parse_error& e) {
      return fail("milestone.json is not valid JSON: {}", e.what());
    }
    if (!m_milestone.is_object()) return fail("milestone.json: \"milestone\" is not an object");
    return {};
  }

  // The contract case first, then the rest of the gate's cases (the halving order).
  Status choose_cases(const core::Task& task) {
    std::vector<int64_t> campaign = case_list(m_status.value("campaign_cases", json::array()));
    if (campaign.empty()) {
      for (const auto& c : task.cases) campaign.push_back(c.id);
    }
    auto resolve = [&](const json& cases) {
      if (cases.is_string() && cases.get<std::string>() == "all") return campaign;
      return case_list(cases);
    };
    const json acc = m_milestone.is_object() ? m_milestone.value("acceptance", json::object()) : json::object();
    std::vector<int64_t> gate, correctness;
    bool has_gate = false;
    if (acc.contains("performance") && acc["performance"].is_object()) {
      has_gate = true;
      gate = resolve(acc["performance"].value("cases", json("all")));
    }
    if (acc.contains("correctness") && acc["correctness"].is_object()) correctness = resolve(acc["correctness"].value("cases", json("all")));
    int64_t contract = 0;
    if (!gate.empty()) contract = gate.front();
    else if (!correctness.empty()) contract = correctness.front();
    else contract = campaign.front();
    m_cases = {contract};
    for (auto id : has_gate ? gate : std::vector<int64_t>{}) {
      if (std::find(m_cases.begin(), m_cases.end(), id) == m_cases.end()) m_cases.push_back(id);
    }
    for (auto id : m_cases) {
      if (!task.find_case(id)) return fail("case {} is not a case of task {}", id, task.op.name);
    }
    return {};
  }

  tuner::CacheKey key(const Variant& v, int64_t case_id) const {
    tuner::CacheKey k = m_key;
    k.case_id = case_id;
    k.knobs = v.label;
    return k;
  }

  // Measures `which` on `case_id`: the cache first, then one probe of the misses. Variants that
  // break a constraint on the case leave the race.
  Expected<Probed> measure(const std::vector<size_t>& which, int64_t case_id, bool may_truncate) {
    TEMPER_TRY_ASSIGN(std::vector<size_t> misses, misses_on(which, case_id));
    return probe(misses, {case_id}, may_truncate);
  }

  // A whole rung in one probe of several cases, which a cluster runs side by side, when the
  // harness says the judge runs on one and every case misses the same variants (the usual
  // rung: the survivors on cases they were never measured on); else case by case.
  Expected<Probed> measure_rung(const std::vector<size_t>& which, const std::vector<int64_t>& cases) {
    const bool cluster = m_status.value("executor", json::object()).value("kind", "local") == "slurm";
    // The cases with something to measure (the earlier rounds' cases are in the cache).
    std::vector<int64_t> open;
    std::vector<std::vector<size_t>> misses;
    for (int64_t c : cases) {
      TEMPER_TRY_ASSIGN(auto m, misses_on(which, c));
      if (m.empty()) continue;
      open.push_back(c);
      misses.push_back(std::move(m));
    }
    const bool same = std::all_of(misses.begin(), misses.end(), [&](const auto& m) { return m == misses.front(); });
    if (cluster && open.size() > 1 && same) return probe(misses.front(), open, false);
    for (size_t k = 0; k < open.size(); ++k) {
      TEMPER_TRY_ASSIGN(Probed p, probe(misses[k], {open[k]}, false));
      if (p != Probed::Ok) return p;
    }
    return Probed::Ok;
  }

  // The variants of `which` still to be measured on `case_id`: not breaking a knob-constraint
  // there (those leave the race), not in the cache (those are taken from it).
  Expected<std::vector<size_t>> misses_on(const std::vector<size_t>& which, int64_t case_id) {
    const core::ExprScope scope = core::make_case_scope(m_task->op, *m_task->find_case(case_id));
    std::vector<size_t> misses;
    for (size_t i : which) {
      Variant& v = m_variants[i];
      if (v.results.count(case_id)) continue;
      TEMPER_TRY_ASSIGN(bool ok, build::satisfies(m_space, v.knobs, &scope));
      if (!ok) {
        v.out = fmt::format("breaks a knob-constraint on case {}", case_id);
        say(fmt::format("  {}: {}", v.label, v.out));
        continue;
      }
      if (auto hit = m_cache.get(key(v, case_id))) {
        ++m_hits;
        v.results[case_id] = *hit;
        say(fmt::format("  cache hit  case {:>3}  {:<40} {}", case_id, v.label, describe(*hit)));
        continue;
      }
      misses.push_back(i);
    }
    return misses;
  }

  // One probe of `misses` on `cases` (all of them on each).
  Expected<Probed> probe(std::vector<size_t> misses, const std::vector<int64_t>& cases, bool may_truncate) {
    if (misses.empty()) return Probed::Ok;
    const int64_t case_id = cases.front();
    // The time left for probing; an estimate from earlier probes decides whether this one fits
    // (a probe of several cases costs its variants on each).
    const double left = probe_budget() - spent();
    if (left <= 0) return Probed::BudgetSpent;
    if (m_per_variant > 0) {
      const auto fits = static_cast<size_t>(left / (m_per_variant * static_cast<double>(cases.size())));
      if (fits < misses.size()) {
        if (!may_truncate || fits == 0) return Probed::BudgetSpent;
        say(fmt::format("  budget: {:.0f} s left for probes, room for {} of {} variants", left, fits, misses.size()));
        for (size_t k = fits; k < misses.size(); ++k) m_variants[misses[k]].out = "not measured: the budget ran out";
        misses.resize(fits);
      }
    }
    agent::HarnessRequest r;
    r.op = "probe";
    r.file = m_candidate;
    if (cases.size() == 1) r.case_id = case_id;
    else r.cases = cases;
    for (size_t i : misses) r.variants.emplace_back(m_variants[i].knobs.begin(), m_variants[i].knobs.end());
    if (cases.size() == 1) say(fmt::format("  probe case {:>3}: {} variant(s)", case_id, misses.size()));
    else say(fmt::format("  probe cases {}: {} variant(s) on each, side by side", fmt::join(cases, ","), misses.size()));
    const double t0 = m_clock.now();
    TEMPER_TRY_ASSIGN(auto resp, call(r));
    ++m_probes;
    const double wall = m_clock.now() - t0;
    const double seconds = opt_number(resp.body, "seconds").value_or(0);
    m_probe_seconds += seconds;
    m_misses += static_cast<int>(misses.size() * cases.size());
    const json& vs = resp.body.value("variants", json());
    if (!vs.is_array()) {
      say(fmt::format("  the probe brought no variants back: {}", resp.message));
      for (size_t i : misses) m_variants[i].out = "no probe result";
      return Probed::Stopped;
    }
    m_per_variant = std::max(m_per_variant, (seconds + wall) / static_cast<double>(misses.size() * cases.size()));
    if (cases.size() > 1) {
      const json by_case = resp.body.value("variants_by_case", json::object());
      for (int64_t c : cases) {
        const json one = by_case.value(std::to_string(c), json());
        if (!one.is_array()) {
          say(fmt::format("  the probe brought no variants back for case {}", c));
          for (size_t i : misses) m_variants[i].out = "no probe result";
          return Probed::Stopped;
        }
        record(misses, c, one);
      }
      return Probed::Ok;
    }
    record(misses, case_id, vs);
    return Probed::Ok;
  }

  // A probe's answer for `case_id`: each variant's measurement, into the cache too.
  void record(const std::vector<size_t>& misses, int64_t case_id, const json& vs) {
    std::map<std::string, const json*> by_label;
    for (const auto& v : vs) by_label[v.value("label", "")] = &v;
    for (size_t i : misses) {
      Variant& v = m_variants[i];
      auto it = by_label.find(v.label);
      if (it == by_label.end()) {
        v.out = "missing from the probe's answer";
        say(fmt::format("  {}: {}", v.label, v.out));
        continue;
      }
      const json& e = *it->second;
      Measurement m;
      m.status = e.value("status", "");
      m.speedup = opt_number(e, "speedup");
      if (e.contains("ci") && e["ci"].is_array() && e["ci"].size() == 2 && e["ci"][0].is_number() && e["ci"][1].is_number()) {
        m.ci_lo = e["ci"][0].get<double>();
        m.ci_hi = e["ci"][1].get<double>();
      }
      if (e.contains("verdict") && e["verdict"].is_string()) m.verdict = e["verdict"].get<std::string>();
      if (e.contains("message") && e["message"].is_string()) m.message = e["message"].get<std::string>();
      v.results[case_id] = m;
      say(fmt::format("  measured   case {:>3}  {:<40} {}", case_id, v.label, describe(m)));
      if (auto st = m_cache.put(key(v, case_id), m); !st) say("  cache: " + st.error().message);
    }
  }

  static std::string describe(const Measurement& m) {
    if (!m.timed()) return m.status + (m.message.empty() ? std::string(" (not timed)") : ": " + m.message);
    std::string ci = m.ci_lo ? fmt::format(" [{:.3f}, {:.3f}]", *m.ci_lo, *m.ci_hi) : "";
    return fmt::format("{:.3f}x{} {}", *m.speedup, ci, m.verdict);
  }

  // The score over `cases`, or nothing when the variant failed or was not timed on one of them.
  std::optional<Score> score(Variant& v, const std::vector<int64_t>& cases) {
    if (!v.out.empty()) return std::nullopt;
    double ls = 0, lc = 0;
    for (auto c : cases) {
      auto it = v.results.find(c);
      if (it == v.results.end()) return std::nullopt;
      const Measurement& m = it->second;
      if (!m.timed() || !(*m.speedup > 0)) {
        v.out = fmt::format("case {}: {}", c, m.timed() ? "no speedup" : m.status + (m.message.empty() ? "" : ": " + m.message));
        return std::nullopt;
      }
      ls += std::log(*m.speedup);
      lc += std::log(m.ci_lo && *m.ci_lo > 0 ? *m.ci_lo : *m.speedup);
    }
    const double n = static_cast<double>(cases.size());
    return Score{std::exp(ls / n), std::exp(lc / n)};
  }

  // The cases of `cases` every variant of `which` still in the race was timed on: a case where
  // one came back TOO_SLOW compares no one (the others' figures on it would rank them against a
  // missing one). A variant TOO_SLOW on every case leaves the race.
  std::vector<int64_t> comparable_cases(const std::vector<size_t>& which, const std::vector<int64_t>& cases) {
    std::vector<int64_t> out;
    for (auto c : cases) {
      bool usable = true;
      for (size_t i : which) {
        const Variant& v = m_variants[i];
        auto it = v.results.find(c);
        if (v.out.empty() && it != v.results.end() && it->second.too_slow()) usable = false;
      }
      if (usable) out.push_back(c);
    }
    if (out.empty()) {
      for (size_t i : which) {
        if (m_variants[i].out.empty()) m_variants[i].out = "TOO_SLOW on every case of the round";
      }
    }
    return out;
  }

  // The variants of `which` that have a score on `cases`, best first: by the paired speedup,
  // ties broken by the interval's lower end. Cases some variant could not be timed on
  // (TOO_SLOW) are left out of everyone's score.
  std::vector<size_t> rank(const std::vector<size_t>& which, const std::vector<int64_t>& all_cases, json& round_log) {
    const std::vector<int64_t> cases = comparable_cases(which, all_cases);
    if (cases.size() < all_cases.size()) {
      std::vector<int64_t> left_out;
      for (auto c : all_cases) {
        if (std::find(cases.begin(), cases.end(), c) == cases.end()) left_out.push_back(c);
      }
      say(fmt::format("  ranked without case(s) {}: a variant was TOO_SLOW there (the cap, not the variant)",
                      fmt::join(left_out, ", ")));
      round_log["left_out_cases"] = left_out;
    }
    std::vector<std::pair<size_t, Score>> scored;
    for (size_t i : which) {
      if (auto s = score(m_variants[i], cases)) scored.emplace_back(i, *s); // none when `cases` is empty
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
      if (a.second.speedup != b.second.speedup) return a.second.speedup > b.second.speedup;
      return a.second.ci_lo > b.second.ci_lo;
    });
    std::vector<size_t> out;
    json ranked = json::array();
    for (const auto& [i, s] : scored) {
      out.push_back(i);
      ranked.push_back({{"label", m_variants[i].label}, {"speedup", s.speedup}, {"ci_lo", s.ci_lo}});
    }
    json dropped = json::array();
    for (size_t i : which) {
      if (!m_variants[i].out.empty()) dropped.push_back({{"label", m_variants[i].label}, {"why", m_variants[i].out}});
    }
    round_log["ranking"] = ranked;
    round_log["dropped"] = dropped;
    return out;
  }

  Status search_and_submit() {
    say(fmt::format("tuner: turn in {}", m_req.workspace.string()));
    TEMPER_TRY(read_status());
    TEMPER_TRY(read_milestone());
    const std::string milestone = m_status.value("milestone", m_milestone.is_object() ? m_milestone.value("id", "") : "");
    m_summary["milestone"] = milestone;
    TEMPER_TRY_ASSIGN(core::Task task, core::load_task(m_task_dir));
    m_task = &task;
    TEMPER_TRY(choose_cases(task));

    TEMPER_TRY_ASSIGN(tuner::TunerKernel kernel, tuner::pick_kernel(m_req.workspace));
    say(fmt::format("kernel: {} ({}){}", kernel.file.lexically_relative(m_req.workspace).string(), kernel.origin,
                    kernel.incumbent.empty() ? "" : ", incumbent " + build::knob_label(kernel.incumbent)));
    m_summary["kernel"] = {{"file", kernel.file.lexically_relative(m_req.workspace).string()}, {"origin", kernel.origin}};
    TEMPER_TRY_ASSIGN(build::KnobSpace declared, build::parse_knobs(kernel.body));
    const json knobs = m_milestone.is_object() ? m_milestone.value("knobs", json()) : json();
    TEMPER_TRY_ASSIGN(m_space, tuner::narrow_space(declared, knobs));
    const std::vector<std::string> kept = tuner::keep_incumbent(m_space, knobs, kernel.incumbent);
    for (const auto& name : kept) {
      say(fmt::format("knob {} stays at {}: the milestone does not name it", name, kernel.incumbent.at(name)));
    }

    // Budget: what the milestone has left, minus the share kept for submitting.
    const double seconds_budget = m_status.value("seconds_budget", 3600.0);
    const double spent_before = m_status.value("milestone_seconds", 0.0);
    m_budget = seconds_budget - spent_before;
    if (m_opt.budget_s > 0) m_budget = std::min(m_budget, m_opt.budget_s);
    m_budget = std::min(m_budget, static_cast<double>(m_req.time_limit.count()));
    const int submissions_left = m_status.value("submission_budget", 8) - m_status.value("submissions", 0);
    say(fmt::format("milestone {}: {:.0f} s of {:.0f} s left, {} submission(s) left; probes may use {:.0f} s", milestone,
                    std::max(0.0, m_budget), seconds_budget, submissions_left, std::max(0.0, probe_budget())));
    m_summary["budget"] = {{"seconds", m_budget}, {"probe_seconds", probe_budget()}, {"submissions_left", submissions_left}};
    if (m_budget <= 0 || submissions_left <= 0) {
      m_summary["stop_reason"] = "budget spent before the turn";
      say("the milestone's budget is spent: nothing to do this turn");
      return {};
    }

    // The candidate every probe builds: the kernel without the tuner block.
    TEMPER_TRY(util::make_dirs(m_req.workspace / "src" / "tuner"));
    m_candidate = m_req.workspace / "src" / "tuner" / "candidate.cpp";
    TEMPER_TRY(util::write_file_atomic(m_candidate, kernel.body));
    TEMPER_TRY_ASSIGN(std::string task_hash, tuner::task_definition_hash(m_task_dir));
    m_key.task = task.op.name;
    m_key.task_hash = task_hash;
    // The machine and how probes build and measure on it (compiler, flags, cache mode, CPUs).
    m_key.target = m_opt.target.empty() ? kb::current_target().id() : m_opt.target;
    if (m_status.contains("measurement")) m_key.target += "/" + util::hash_hex(m_status["measurement"].dump());
    m_key.reference = m_status.value("reference_sha", "");
    m_key.candidate = util::hash_hex(kernel.body);

    json space = json::array();
    for (const auto& k : m_space.knobs) space.push_back({{"name", k.name}, {"values", k.values}, {"default", k.default_value}});
    json constraints = json::array();
    for (const auto& c : m_space.constraints) constraints.push_back(c.source());
    m_summary["space"] = {{"knobs", space}, {"constraints", constraints}, {"combinations", m_space.size()}};
    m_summary["cases"] = m_cases;
    m_summary["rounds"] = json::array();
    say(fmt::format("cases: contract case {}, halving over {}", m_cases.front(), fmt::join(m_cases, ", ")));

    if (m_space.empty()) {
      say("the kernel declares no knobs: submitting it as it is");
      m_summary["stop_reason"] = "no knobs";
      return submit({{kernel.body, "", build::KnobValues{}}}, submissions_left);
    }
    for (const auto& k : m_space.knobs) say(fmt::format("knob {} in {{{}}}", k.name, fmt::join(k.values, ", ")));
    for (const auto& c : m_space.constraints) say("constraint " + c.source());

    // Round 0: a joint draw on the contract case.
    const int64_t contract = m_cases.front();
    const core::ExprScope scope = core::make_case_scope(task.op, *task.find_case(contract));
    const size_t limit = std::min(m_opt.max_variants, judge::kMaxProbeVariants);
    TEMPER_TRY_ASSIGN(tuner::VariantDraw draw, tuner::draw_variants(m_space, kernel.incumbent, scope, limit, m_opt.seed));
    say(fmt::format("round 0: {} of {} valid variant(s) ({}), case {}", draw.variants.size(), draw.valid,
                    draw.exhaustive ? "all of them" : fmt::format("a random sample, seed {}", m_opt.seed), contract));
    m_summary["space"]["valid"] = draw.valid;
    m_summary["space"]["exhaustive"] = draw.exhaustive;
    if (draw.variants.empty()) return fail("no variant of the kernel satisfies its knob-constraints on case {}", contract);
    std::vector<size_t> alive;
    for (auto& v : draw.variants) {
      alive.push_back(m_variants.size());
      m_variants.push_back({v, build::knob_label(v), {}, ""});
    }

    size_t ncases = 1;
    std::vector<size_t> ranked;
    std::vector<size_t> previous; // the last complete ranking, when a round is cut short
    std::string stop;
    for (int round = 0;; ++round) {
      const std::vector<int64_t> cases(m_cases.begin(), m_cases.begin() + static_cast<std::ptrdiff_t>(ncases));
      if (round > 0) say(fmt::format("round {}: {} variant(s) on case(s) {}", round, alive.size(), fmt::join(cases, ", ")));
      json round_log = {{"round", round}, {"cases", cases}, {"variants", alive.size()}};
      bool cut = false;
      if (round > 0 && cases.size() > 1) {
        TEMPER_TRY_ASSIGN(Probed p, measure_rung(alive, cases));
        if (p != Probed::Ok) {
          stop = p == Probed::BudgetSpent ? "probe budget spent" : "the harness stopped the probes";
          cut = true;
        }
      } else {
        for (auto c : cases) {
          TEMPER_TRY_ASSIGN(Probed p, measure(alive, c, round == 0));
          if (p != Probed::Ok) {
            stop = p == Probed::BudgetSpent ? "probe budget spent" : "the harness stopped the probes";
            cut = true;
            break;
          }
        }
      }
      if (cut && round > 0) {
        // A round cut short compares unlike sets: keep the previous round's ranking.
        say(fmt::format("round {} stopped: {}", round, stop));
        round_log["stopped"] = stop;
        m_summary["rounds"].push_back(round_log);
        ranked = previous;
        break;
      }
      ranked = rank(alive, cases, round_log);
      m_summary["rounds"].push_back(round_log);
      // The scores rank() gave, over the cases it compared them on.
      const json& ranking = round_log["ranking"];
      for (size_t k = 0; k < ranking.size() && k < 5; ++k) {
        say(fmt::format("  #{} {:<40} {:.3f}x", k + 1, ranking[k]["label"].get<std::string>(), ranking[k]["speedup"].get<double>()));
      }
      if (cut) {
        say(fmt::format("round {} stopped: {}", round, stop));
        break;
      }
      if (ranked.size() <= 1) {
        stop = ranked.empty() ? "no variant was timed" : "one variant left";
        break;
      }
      if (ncases >= m_cases.size()) {
        stop = "the gate's cases are exhausted";
        break;
      }
      previous = ranked;
      alive.assign(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>((ranked.size() + 1) / 2));
      ncases = std::min(ncases * 2, m_cases.size());
    }
    say("search ends: " + stop);
    m_summary["stop_reason"] = stop;
    if (ranked.empty()) {
      say("no variant to submit");
      return {};
    }
    std::vector<Submission> order;
    for (size_t k = 0; k < ranked.size() && k < 2; ++k) {
      const Variant& v = m_variants[ranked[k]];
      order.push_back({tuner::with_block(kernel.body, v.knobs), v.label, v.knobs});
    }
    m_summary["winner"] = m_variants[ranked.front()].label;
    return submit(order, submissions_left);
  }

  struct Submission {
    std::string source;
    std::string label;
    build::KnobValues knobs;
  };

  // The winner; the runner-up once if the winner is rejected.
  Status submit(const std::vector<Submission>& order, int submissions_left) {
    m_summary["submissions"] = json::array();
    for (size_t k = 0; k < order.size() && static_cast<int>(k) < submissions_left; ++k) {
      const Submission& s = order[k];
      const fs::path file = m_req.workspace / "src" / "tuned.cpp";
      TEMPER_TRY(util::write_file_atomic(file, s.source));
      agent::HarnessRequest r;
      r.op = "submit";
      r.file = file;
      say(fmt::format("submit {} ({})", s.label.empty() ? "the kernel" : s.label, k == 0 ? "the winner" : "the runner-up"));
      TEMPER_TRY_ASSIGN(auto resp, call(r));
      say(resp.message);
      const std::string status = resp.body.value("status", "");
      m_summary["submissions"].push_back({{"label", s.label}, {"knobs", s.knobs}, {"accepted", resp.ok}, {"status", status}});
      if (resp.ok) {
        m_summary["accepted"] = s.label;
        return {};
      }
      // Only a judged rejection is worth a second try; a refusal (a revision is pending, no
      // milestone open) ends the turn.
      if (status != "rejected") break;
    }
    return {};
  }

  const TunerOptions& m_opt;
  fs::path m_task_dir;
  const agent::TurnRequest& m_req;
  HarnessFn m_harness;
  util::Clock& m_clock;
  std::ostream& m_log;
  tuner::TunerCache m_cache;
  double m_start = 0;
  json m_status = json::object();
  json m_milestone;
  json m_summary = json::object();
  const core::Task* m_task = nullptr;
  std::vector<int64_t> m_cases;
  build::KnobSpace m_space;
  std::vector<Variant> m_variants;
  tuner::CacheKey m_key;
  fs::path m_candidate;
  double m_budget = 0;
  double m_probe_seconds = 0;
  double m_per_variant = 0;
  int m_probes = 0;
  int m_hits = 0;
  int m_misses = 0;
  std::string m_last;
};

} // namespace

TunerStudent::TunerStudent(fs::path task_dir, TunerOptions options) : m_task_dir(std::move(task_dir)), m_options(std::move(options)) {}

Expected<agent::TurnResult> TunerStudent::run_turn(const agent::TurnRequest& request) {
  util::Clock& clock = m_clock ? *m_clock : m_steady;
  const double t0 = clock.now();
  HarnessFn harness = m_harness;
  if (!harness) {
    if (request.harness_socket.empty()) return fail("the tuner needs the turn's harness socket, and this turn has none");
#ifdef TEMPER_HAVE_AGENT_LAYER
    harness = [socket = request.harness_socket](const agent::HarnessRequest& r) { return agent::harness_call(socket, r); };
#else
    return fail("the tuner talks to the harness over its socket, and this build has no agent layer");
#endif
  }
  fs::path log_file;
  std::ofstream file_log;
  std::ostringstream memory_log;
  if (!request.log_dir.empty()) {
    TEMPER_TRY(util::make_dirs(request.log_dir));
    log_file = request.log_dir / "transcript.log";
    file_log.open(log_file, std::ios::app);
  }
  std::ostream& log = file_log.is_open() ? static_cast<std::ostream&>(file_log) : memory_log;
  TunerRun run(m_options, m_task_dir, request, harness, clock, log);
  agent::TurnResult result;
  result.exit_code = run.run();
  result.seconds = clock.now() - t0;
  result.transcript = log_file;
  result.summary = run.last_line();
  return result;
}

} // namespace temper::campaign
