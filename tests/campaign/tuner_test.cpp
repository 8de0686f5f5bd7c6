// The tuner Student: its search against a fake harness (joint grids, successive halving,
// constraints, the milestone's knob narrowing, the budget, the cache, the runner-up), its
// kernel and space rules, and one small real tuning run through a real harness socket and the
// real judge whose answer (SLOW=0) is known by construction.
#include "agent/harness_protocol.h"
#include "campaign/orchestrator.h"
#include "campaign/planfile_teacher.h"
#include "campaign/tuner_cache.h"
#include "campaign/tuner_space.h"
#include "campaign/tuner_student.h"
#include "campaign_fakes.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

namespace temper::campaign::tuner_test {
namespace {

using namespace testing;
using agent::HarnessRequest;
using agent::HarnessResponse;
using Knobs = std::map<std::string, std::string>;

// 24 combinations, 22 valid (A * B <= 16 rules out A=8,B=4 with either C).
constexpr const char* kKernel =
    "// temper: knob A = 1 in {1, 2, 4, 8}\n"
    "// temper: knob B = 1 in {1, 2, 4}\n"
    "// temper: knob C = 0 in {0, 1}\n"
    "// temper: knob-constraint A * B <= 16\n"
    "int body_of_the_kernel = 0;\n";

std::string label_of(const Knobs& k) {
  std::string out;
  for (const auto& [n, v] : k) out += (out.empty() ? "" : ",") + n + "=" + v;
  return out;
}

// Speedup by construction, no two variants equal: larger A and B help, C hurts; best
// A=8,B=2,C=0 (1.1185x), then A=8,B=1,C=0.
double formula(const Knobs& k, int64_t) {
  return 1 + 0.1 * std::stod(k.at("A")) / 8 + 0.037 * std::stod(k.at("B")) / 4 - 0.0213 * std::stod(k.at("C"));
}

struct FakeHarness {
  json status = {{"milestone", "M1"}, {"submissions", 0}, {"submission_budget", 8}, {"milestone_seconds", 0.0},
                 {"seconds_budget", 3600.0}, {"campaign_cases", json::array()}, {"reference_sha", "ref-1"}};
  std::function<double(const Knobs&, int64_t)> speed = formula;
  double probe_seconds = 1.0;
  std::function<bool(const std::string&)> accept = [](const std::string&) { return true; };
  std::vector<HarnessRequest> probes, submits;
  std::vector<std::string> probe_sources, submitted;

  Expected<HarnessResponse> operator()(const HarnessRequest& r) {
    HarnessResponse resp;
    if (r.op == "status") {
      resp.ok = true;
      resp.body = status;
    } else if (r.op == "probe") {
      probes.push_back(r);
      probe_sources.push_back(util::read_file(r.file).value_or(""));
      json by_case = json::object();
      json vs;
      for (int64_t c : r.cases.empty() ? std::vector<int64_t>{r.case_id.value_or(0)} : r.cases) {
        vs = variants_on(r, c);
        by_case[std::to_string(c)] = vs;
      }
      status["milestone_seconds"] = status["milestone_seconds"].get<double>() + probe_seconds;
      resp.ok = true;
      resp.body = {{"status", "probe"}, {"seconds", probe_seconds}, {"variants", vs}};
      if (!r.cases.empty()) resp.body["variants_by_case"] = by_case;
    } else if (r.op == "submit") {
      submits.push_back(r);
      submitted.push_back(util::read_file(r.file).value_or(""));
      status["submissions"] = status["submissions"].get<int>() + 1;
      resp.ok = accept(submitted.back());
      resp.body = {{"status", resp.ok ? "accepted" : "rejected"}, {"accepted", resp.ok}};
      resp.message = resp.ok ? "ACCEPTED" : "rejected";
    }
    return resp;
  }

  json variants_on(const HarnessRequest& r, int64_t case_id) const {
    json vs = json::array();
    {
      for (const auto& v : r.variants) {
        const double s = speed(v, case_id);
        json e = {{"label", label_of(v)}, {"knobs", v}};
        if (s > 0) {
          e.update({{"status", "PASSED"}, {"speedup", s}, {"ci", {s * 0.98, s * 1.02}}, {"verdict", s > 1.01 ? "FASTER" : "SAME"}});
        } else if (s == 0) { // correct, but the cap held no verdict
          e.update({{"status", "TOO_SLOW"}, {"speedup", nullptr}, {"ci", nullptr}, {"verdict", nullptr}, {"message", "cap"}});
        } else {
          e.update({{"status", "INCORRECT_NUMERICAL"}, {"speedup", nullptr}, {"ci", nullptr}, {"verdict", nullptr}, {"message", "wrong"}});
        }
        vs.push_back(e);
      }
    }
    return vs;
  }
};

json milestone_doc(json knobs, json gate_cases) {
  json m = {{"id", "M1"}, {"title", "tune"}, {"requirements", {"tune"}}, {"contract", "kernel.h"},
            {"acceptance", {{"correctness", {{"cases", "all"}}},
                            {"performance", {{"tier", "gate"}, {"cases", gate_cases}, {"min_speedup", 1.05}, {"against", "reference"}}}}},
            {"budget", {{"attempts", 8}, {"seconds", 3600}}}, {"depends_on", {"D1"}}, {"task", "swi_glu"}};
  if (!knobs.is_null()) m["knobs"] = knobs;
  return {{"schema_version", 1}, {"kind", "temper.milestone"}, {"milestone", m}};
}

class TunerFake : public ::testing::Test {
protected:
  util::TempDir tmp{"temper-tuner"};
  int turn = 0;

  fs::path workspace(const std::string& kernel, const json& milestone, const std::string& where = "src/starter/k.cpp") {
    const fs::path ws = tmp.path() / fmt::format("ws{}", ++turn);
    fs::create_directories((ws / where).parent_path());
    std::ofstream(ws / where) << kernel;
    if (!milestone.is_null()) std::ofstream(ws / "milestone.json") << milestone.dump(2);
    return ws;
  }

  agent::TurnResult run(FakeHarness& h, const fs::path& ws, TunerOptions o = {}) {
    if (o.cache_dir.empty()) o.cache_dir = tmp.path() / "cache";
    o.target = "test-target";
    TunerStudent t(source_dir() / "tasks" / "swi_glu", o);
    t.set_harness([&h](const HarnessRequest& r) { return h(r); });
    agent::TurnRequest req;
    req.workspace = ws;
    req.log_dir = ws.parent_path() / (ws.filename().string() + "-log");
    auto r = t.run_turn(req);
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r ? *r : agent::TurnResult{};
  }

  static json summary(const fs::path& ws) { return json::parse(*util::read_file(ws / "tuner.json")); }
};

std::set<std::string> labels(const HarnessRequest& r) {
  std::set<std::string> out;
  for (const auto& v : r.variants) out.insert(label_of(v));
  return out;
}

TEST_F(TunerFake, FirstRoundIsTheWholeJointSpaceOnTheContractCase) {
  FakeHarness h;
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {3, 7}));
  run(h, ws);
  ASSERT_FALSE(h.probes.empty());
  const HarnessRequest& first = h.probes.front();
  EXPECT_EQ(first.case_id, 3);
  ASSERT_EQ(first.variants.size(), 22u);
  std::set<std::string> expected;
  for (const char* a : {"1", "2", "4", "8"})
    for (const char* b : {"1", "2", "4"})
      for (const char* c : {"0", "1"})
        if (std::stoi(a) * std::stoi(b) <= 16) expected.insert(label_of({{"A", a}, {"B", b}, {"C", c}}));
  EXPECT_EQ(labels(first), expected); // every knob varies with every other: joint, not one at a time
  // Every variant is a full assignment, and no probe ever carries one that breaks the constraint.
  for (const auto& p : h.probes) {
    for (const auto& v : p.variants) {
      EXPECT_EQ(v.size(), 3u);
      EXPECT_LE(std::stoi(v.at("A")) * std::stoi(v.at("B")), 16) << label_of(v);
    }
  }
  // The probed file is the kernel as written; the submission has the fixed block in front.
  EXPECT_EQ(h.probe_sources.front(), kKernel);
  ASSERT_EQ(h.submitted.size(), 1u);
  EXPECT_EQ(h.submitted.front().rfind(std::string(tuner::kBlockBegin), 0), 0u);
  EXPECT_NE(h.submitted.front().find("#define A 8\n#define B 2\n#define C 0\n"), std::string::npos);
  EXPECT_TRUE(fs::exists(ws / "src" / "tuned.cpp"));
}

TEST_F(TunerFake, HalvingKeepsTheBetterHalfOnTwiceTheCases) {
  FakeHarness h;
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {1, 2, 3, 4, 5}));
  auto r = run(h, ws);
  EXPECT_EQ(r.exit_code, 0);
  // Round 0: 22 on case 1; round 1: 11 on case 2; round 2: 6 on cases 3 and 4; round 3: 3 on 5.
  std::vector<std::pair<int64_t, size_t>> seen;
  for (const auto& p : h.probes) seen.emplace_back(*p.case_id, p.variants.size());
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, size_t>>{{1, 22}, {2, 11}, {3, 6}, {4, 6}, {5, 3}}));
  // The survivors of round 0 are its 11 best by construction.
  std::vector<std::pair<double, std::string>> all;
  for (const auto& v : h.probes[0].variants) all.emplace_back(formula(v, 1), label_of(v));
  std::sort(all.rbegin(), all.rend());
  std::set<std::string> best11;
  for (size_t k = 0; k < 11; ++k) best11.insert(all[k].second);
  EXPECT_EQ(labels(h.probes[1]), best11);
  EXPECT_EQ(labels(h.probes[2]), labels(h.probes[3]));
  json s = summary(ws);
  EXPECT_EQ(s["winner"], "A=8,B=2,C=0");
  EXPECT_EQ(s["accepted"], "A=8,B=2,C=0");
  EXPECT_EQ(s["stop_reason"], "the gate's cases are exhausted");
  EXPECT_EQ(s["rounds"].size(), 4u);
  EXPECT_EQ(s["probes"], 5);
  // A readable log of what was measured.
  auto log = util::read_file(r.transcript);
  ASSERT_TRUE(log.has_value());
  EXPECT_NE(log->find("measured   case   1  A=8,B=2,C=0"), std::string::npos) << *log;
}

// Where the judge runs on a cluster, a rung of several cases is one probe (--cases), which the
// cluster runs side by side; the race is the same.
TEST_F(TunerFake, OnAClusterARungIsOneProbeOfAllItsCases) {
  FakeHarness h;
  h.status["executor"] = {{"kind", "slurm"}, {"max_jobs", 4}};
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {1, 2, 3, 4, 5}));
  auto r = run(h, ws);
  EXPECT_EQ(r.exit_code, 0);
  std::vector<std::pair<std::vector<int64_t>, size_t>> seen;
  for (const auto& p : h.probes) seen.emplace_back(p.cases.empty() ? std::vector<int64_t>{*p.case_id} : p.cases, p.variants.size());
  using Seen = std::vector<std::pair<std::vector<int64_t>, size_t>>;
  EXPECT_EQ(seen, (Seen{{{1}, 22}, {{2}, 11}, {{3, 4}, 6}, {{5}, 3}}));
  json s = summary(ws);
  EXPECT_EQ(s["winner"], "A=8,B=2,C=0");
  EXPECT_EQ(s["probes"], 4);
}

TEST_F(TunerFake, FailingVariantsLeaveTheRace) {
  FakeHarness h;
  // A=1 fails everywhere; C=1 fails on case 2 only, so the C=1 survivors of round 0 drop there.
  h.speed = [](const Knobs& k, int64_t c) { return k.at("A") == "1" || (k.at("C") == "1" && c == 2) ? -1.0 : formula(k, c); };
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {1, 2}));
  run(h, ws);
  for (size_t p = 1; p < h.probes.size(); ++p) {
    for (const auto& v : h.probes[p].variants) EXPECT_NE(v.at("A"), "1");
  }
  EXPECT_EQ(summary(ws)["winner"], "A=8,B=2,C=0");
}

TEST_F(TunerFake, TooSlowIsTheCapsNotTheVariantsAndIsNotCached) {
  FakeHarness h;
  // The best variant cannot be timed on case 2: it stays in the race, ranked with everyone on
  // the cases all were timed on, and wins.
  h.speed = [](const Knobs& k, int64_t c) { return label_of(k) == "A=8,B=2,C=0" && c == 2 ? 0.0 : formula(k, c); };
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {1, 2}));
  auto r = run(h, ws);
  json s = summary(ws);
  EXPECT_EQ(s["winner"], "A=8,B=2,C=0");
  EXPECT_EQ(s["rounds"][1]["left_out_cases"], json::array({2}));
  EXPECT_TRUE(s["rounds"][1]["dropped"].empty()) << s["rounds"][1].dump();
  EXPECT_NE(util::read_file(r.transcript)->find("ranked without case(s) 2"), std::string::npos);
  // A rerun asks the cap's casualty again and nothing else.
  FakeHarness again;
  run(again, workspace(kKernel, milestone_doc(nullptr, {1, 2})));
  ASSERT_EQ(again.probes.size(), 1u);
  EXPECT_EQ(*again.probes[0].case_id, 2);
  EXPECT_EQ(labels(again.probes[0]), (std::set<std::string>{"A=8,B=2,C=0"}));
}

TEST_F(TunerFake, MilestoneKnobsNarrowAndFix) {
  FakeHarness h;
  const fs::path ws = workspace(kKernel, milestone_doc({{"A", {2, "8"}}, {"C", 1}}, {1}));
  run(h, ws);
  ASSERT_EQ(h.probes.size(), 1u);
  // A in {2, 8} and C fixed to 1: A=2 with B 1, 2, 4 and A=8 with B 1, 2.
  EXPECT_EQ(h.probes[0].variants.size(), 5u);
  for (const auto& v : h.probes[0].variants) {
    EXPECT_EQ(v.at("C"), "1");
    EXPECT_TRUE(v.at("A") == "2" || v.at("A") == "8") << label_of(v);
  }
  EXPECT_EQ(summary(ws)["winner"], "A=8,B=2,C=1");
}

TEST_F(TunerFake, MilestoneNamingAnUndeclaredKnobFailsTheTurnClearly) {
  FakeHarness h;
  const fs::path ws = workspace(kKernel, milestone_doc({{"TILE", {64}}}, {1}));
  auto r = run(h, ws);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(h.probes.empty());
  EXPECT_NE(summary(ws)["error"].get<std::string>().find("TILE"), std::string::npos);
}

TEST_F(TunerFake, NoKernelFailsTheTurnWithAMessage) {
  FakeHarness h;
  const fs::path ws = tmp.path() / "empty";
  fs::create_directories(ws);
  auto r = run(h, ws);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(summary(ws)["error"].get<std::string>().find("no kernel to tune"), std::string::npos);
  EXPECT_NE(util::read_file(r.transcript)->find("no kernel to tune"), std::string::npos);
}

TEST_F(TunerFake, BudgetStopsTheSearchAndKeepsTheSubmission) {
  FakeHarness h;
  h.status["seconds_budget"] = 100.0;
  h.probe_seconds = 70; // round 0 takes 70 of the 75 s probes may use; round 1 no longer fits
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {1, 2, 3}));
  run(h, ws);
  EXPECT_EQ(h.probes.size(), 1u);
  ASSERT_EQ(h.submits.size(), 1u);
  json s = summary(ws);
  EXPECT_EQ(s["stop_reason"], "probe budget spent");
  EXPECT_EQ(s["winner"], "A=8,B=2,C=0"); // the best of the last complete round

  FakeHarness spent;
  spent.status["milestone_seconds"] = 3600.0;
  const fs::path ws2 = workspace(kKernel, milestone_doc(nullptr, {1}));
  auto r = run(spent, ws2);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(spent.probes.empty());
  EXPECT_TRUE(spent.submits.empty());
  EXPECT_EQ(summary(ws2)["stop_reason"], "budget spent before the turn");
}

TEST_F(TunerFake, SecondRunHitsTheCacheAndProbesNothing) {
  FakeHarness h;
  run(h, workspace(kKernel, milestone_doc(nullptr, {1, 2, 3, 4, 5})));
  ASSERT_EQ(h.probes.size(), 5u);
  FakeHarness again;
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {1, 2, 3, 4, 5}));
  run(again, ws);
  EXPECT_TRUE(again.probes.empty());
  ASSERT_EQ(again.submitted.size(), 1u);
  EXPECT_EQ(again.submitted.front(), h.submitted.front());
  json s = summary(ws);
  EXPECT_EQ(s["cache"]["hits"], 22 + 11 + 6 + 6 + 3);
  EXPECT_EQ(s["cache"]["misses"], 0);
  EXPECT_NE(util::read_file(ws.parent_path() / (ws.filename().string() + "-log") / "transcript.log")->find("cache hit"), std::string::npos);
  // Against another reference nothing is reused.
  FakeHarness other;
  other.status["reference_sha"] = "ref-2";
  run(other, workspace(kKernel, milestone_doc(nullptr, {1})));
  EXPECT_EQ(other.probes.size(), 1u);
}

TEST_F(TunerFake, RejectedWinnerGivesWayToTheRunnerUpOnce) {
  FakeHarness h;
  h.accept = [](const std::string&) { return false; };
  const fs::path ws = workspace(kKernel, milestone_doc(nullptr, {1}));
  run(h, ws);
  ASSERT_EQ(h.submitted.size(), 2u);
  EXPECT_NE(h.submitted[0], h.submitted[1]);
  json s = summary(ws);
  EXPECT_EQ(s["submissions"].size(), 2u);
  EXPECT_EQ(s["submissions"][1]["label"], "A=8,B=1,C=0");

  FakeHarness one_left;
  one_left.accept = [](const std::string&) { return false; };
  one_left.status["submissions"] = 7;
  run(one_left, workspace(kKernel, milestone_doc(nullptr, {1})));
  EXPECT_EQ(one_left.submitted.size(), 1u);
}

TEST_F(TunerFake, LargeSpacesAreSampledReproduciblyWithTheIncumbentFirst) {
  TunerOptions o;
  o.max_variants = 5;
  o.seed = 42;
  FakeHarness a, b;
  o.cache_dir = tmp.path() / "cache-a";
  run(a, workspace(kKernel, milestone_doc(nullptr, {1})), o);
  o.cache_dir = tmp.path() / "cache-b";
  run(b, workspace(kKernel, milestone_doc(nullptr, {1})), o);
  ASSERT_EQ(a.probes.size(), 1u);
  ASSERT_EQ(a.probes[0].variants.size(), 5u);
  EXPECT_EQ(label_of(a.probes[0].variants[0]), "A=1,B=1,C=0"); // the defaults
  EXPECT_EQ(a.probes[0].variants, b.probes[0].variants);
}

TEST_F(TunerFake, AcceptedKernelBlockIsStrippedAndMeasuredFirst) {
  FakeHarness h;
  const std::string accepted = tuner::with_block(kKernel, {{"A", "4"}, {"B", "2"}, {"C", "1"}});
  const fs::path ws = workspace(accepted, milestone_doc(nullptr, {1}), "src/accepted/M0.cpp");
  std::ofstream(ws / "src" / "accepted" / "M1.cpp") << tuner::with_block(kKernel, {{"A", "2"}, {"B", "1"}, {"C", "0"}});
  run(h, ws);
  ASSERT_FALSE(h.probes.empty());
  EXPECT_EQ(label_of(h.probes[0].variants[0]), "A=2,B=1,C=0"); // the newest accepted kernel's values
  EXPECT_EQ(h.probe_sources[0], kKernel);
  EXPECT_EQ(summary(ws)["kernel"]["origin"], "accepted M1");
}

TEST_F(TunerFake, MilestoneOnAnAcceptedKernelKeepsTheKnobsItDoesNotName) {
  FakeHarness h;
  const std::string accepted = tuner::with_block(kKernel, {{"A", "2"}, {"B", "1"}, {"C", "0"}});
  const fs::path ws = workspace(accepted, milestone_doc({{"C", {0, 1}}}, {1}), "src/accepted/M1.cpp");
  auto r = run(h, ws);
  ASSERT_EQ(h.probes.size(), 1u);
  EXPECT_EQ(labels(h.probes[0]), (std::set<std::string>{"A=2,B=1,C=0", "A=2,B=1,C=1"}));
  const std::string transcript = *util::read_file(r.transcript);
  EXPECT_NE(transcript.find("knob A stays at 2"), std::string::npos) << transcript;
  EXPECT_EQ(transcript.find("knob C stays"), std::string::npos);
}

TEST_F(TunerFake, MilestoneJsonAbsentUsesTheCampaignCases) {
  FakeHarness h;
  h.status["campaign_cases"] = {6, 2};
  const fs::path ws = workspace(kKernel, nullptr);
  run(h, ws);
  ASSERT_FALSE(h.probes.empty());
  EXPECT_EQ(h.probes[0].case_id, 6);
  EXPECT_EQ(h.probes.size(), 1u); // no gate known: the contract case only
}

TEST(TunerSpace, BlockRoundTripAndSpecs) {
  const std::string body = "// kernel\nint x;\n";
  auto split = tuner::strip_block(tuner::with_block(body, {{"UNROLL", "4"}, {"NT", "1"}}));
  EXPECT_EQ(split.body, body);
  EXPECT_EQ(split.fixed, (build::KnobValues{{"NT", "1"}, {"UNROLL", "4"}}));
  EXPECT_TRUE(tuner::strip_block(body).fixed.empty());

  auto o = parse_tuner_spec("tuner:max-variants=64,seed=7,submit-share=0.5,budget=600");
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->max_variants, 64u);
  EXPECT_EQ(o->seed, 7u);
  EXPECT_DOUBLE_EQ(o->submit_share, 0.5);
  EXPECT_DOUBLE_EQ(o->budget_s, 600);
  EXPECT_FALSE(parse_tuner_spec("tuner:max-variants=1000").has_value());
  EXPECT_FALSE(parse_tuner_spec("tuner:colour=red").has_value());
  auto agent = make_campaign_agent("tuner", source_dir() / "tasks" / "swi_glu");
  ASSERT_TRUE(agent.has_value());
  EXPECT_EQ((*agent)->name(), "tuner");
}

TEST(TunerCache, StoresMeasuredAndFailedVariantsOnly) {
  util::TempDir tmp("temper-tuner-cache");
  tuner::TunerCache cache(tmp.path());
  tuner::CacheKey k{"SwiGlu", "h", 3, "t", "r", "c", "A=1"};
  tuner::Measurement untimed{"PASSED", std::nullopt, std::nullopt, std::nullopt, "", "", false};
  ASSERT_TRUE(cache.put(k, untimed).has_value());
  EXPECT_FALSE(cache.get(k).has_value());
  tuner::Measurement failed{"COMPILE_ERROR", std::nullopt, std::nullopt, std::nullopt, "", "error: x", false};
  ASSERT_TRUE(cache.put(k, failed).has_value());
  auto hit = cache.get(k);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->status, "COMPILE_ERROR");
  EXPECT_TRUE(hit->cached);
  tuner::CacheKey other = k;
  other.case_id = 4;
  EXPECT_FALSE(cache.get(other).has_value());
}

// ---- A real tuning run ---------------------------------------------------------------------

// M0 (correctness) is done by submitting the fixture as it is (SLOW=1); from M1 on the tuner
// works. Where the workspace lacks milestone.json (written by the orchestrator once plans carry
// knobs) it is written here from the plan, as the orchestrator would.
class M0ThenTuner final : public agent::Agent {
public:
  M0ThenTuner(fs::path task, json plan, TunerOptions options) : m_tuner(std::move(task), std::move(options)), m_plan(std::move(plan)) {}
  std::string name() const override { return "tuner"; }
  Expected<agent::TurnResult> run_turn(const agent::TurnRequest& req) override {
    if (!fs::exists(req.workspace / "src" / "accepted" / "M0.cpp")) {
      const fs::path file = req.workspace / "kernel.cpp";
      fs::copy_file(source_dir() / "tests" / "fixtures" / "swi_glu" / "tunable.cpp", file, fs::copy_options::overwrite_existing);
      HarnessRequest r;
      r.op = "submit";
      r.file = file;
      TEMPER_TRY(agent::harness_call(req.harness_socket, r).map([](auto&&) {}));
      return agent::TurnResult{};
    }
    if (!fs::exists(req.workspace / "milestone.json")) {
      json m = m_plan["milestones"][1];
      m["task"] = "swi_glu";
      std::ofstream(req.workspace / "milestone.json") << json{{"schema_version", 1}, {"kind", "temper.milestone"}, {"milestone", m}}.dump(2);
    }
    return m_tuner.run_turn(req);
  }

private:
  TunerStudent m_tuner;
  json m_plan;
};

TEST(TunerRealTest, FindsTheKnobValueKnownByConstruction) {
  util::TempDir tmp("temper-tuner-real");
  json plan = test_plan("rows");
  plan["milestones"].erase(2);
  plan["milestones"][1]["acceptance"]["performance"]["min_speedup"] = 0.5;
  plan["milestones"][1]["acceptance"]["performance"]["cases"] = {13, 9};
  plan["milestones"][1]["acceptance"]["expectations"] = json::array();
  const fs::path task = make_task(tmp.path(), {plan});

  CampaignConfig c = test_config(task, 1);
  c.student = "tuner";
  c.judge.cases = {13, 9};
  c.judge.cap_s = 0.3;
  c.judge.cache_mode = "warm";
  c.judge.measure_jobs = 1;
  c.judge.confirm_jobs = 1;
  c.judge.min_samples = 8;
  c.judge.min_time_s = 0.05;
  c.judge.jobs = 2;
  RealJudgeService judge(c.judge, util::default_process_runner());
  judge.set_worker_exe(fs::path(TEMPER_BINARY_DIR) / "temper-worker");
  OrchestratorDeps d;
  d.judge = &judge;
  d.make_agent = [&](const std::string& spec, agent::Role role) -> Expected<std::unique_ptr<agent::Agent>> {
    TunerOptions options;
    options.cache_dir = tmp.path() / "tuner-cache"; // a fresh cache: this run measures
    if (role == agent::Role::Student) return std::unique_ptr<agent::Agent>(new M0ThenTuner(task, plan, options));
    return make_campaign_agent(spec, task);
  };
  d.start_harness = [](const fs::path& socket, agent::HarnessHandler handler) { return agent::HarnessServer::start(socket, std::move(handler)); };
  auto o = Orchestrator::create(tmp.path() / "campaign", c, std::move(d));
  ASSERT_TRUE(o.has_value()) << o.error().message;
  auto ran = (*o)->run();
  ASSERT_TRUE(ran.has_value()) << ran.error().message;

  const fs::path r1 = tmp.path() / "campaign" / "rounds" / "R1";
  const json state = (*o)->state().accepted;
  ASSERT_TRUE(state.contains("M1")) << util::read_file(r1 / "student" / "tuner.json").value_or("no tuner.json");
  const int n = state["M1"];
  const std::string accepted = *util::read_file(r1 / "attempts" / fmt::format("{:04}", n) / "candidate.cpp");
  EXPECT_NE(accepted.find("#define SLOW 0\n"), std::string::npos) << accepted.substr(0, 200);
  json s = json::parse(*util::read_file(r1 / "student" / "tuner.json"));
  EXPECT_NE(s["winner"].get<std::string>().find("SLOW=0"), std::string::npos) << s.dump(2); // "PAD=x,SLOW=0"
  EXPECT_EQ(s["rounds"][0]["variants"], 6);
  // The probes went through the harness with explicit variants, and their results carry every one.
  json probe = json::parse(*util::read_file(r1 / "attempts" / "0002" / "result.json"));
  EXPECT_EQ(probe["op"], "probe");
  EXPECT_EQ(probe["variants"].size(), 6u) << probe.dump(2);
}

} // namespace
} // namespace temper::campaign::tuner_test
