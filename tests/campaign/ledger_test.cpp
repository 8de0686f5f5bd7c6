#include "campaign/ledger.h"

#include "campaign/judge_service.h"
#include "util/fs.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace temper::campaign::ledger_test {
namespace {

namespace fs = std::filesystem;

TEST(LedgerTest, RowsAreKeyedSoReplaysAddNothing) {
  util::TempDir tmp;
  auto ledger = Ledger::open(tmp.path() / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  JudgeRunRow gate{"R1-A0001-report.json", 1, "M1", 1, "submit", "gate", 2, 10.0, 1.0, 3.0, ""};
  EXPECT_TRUE(*ledger->add(gate));
  EXPECT_FALSE(*ledger->add(gate));
  EXPECT_TRUE(*ledger->has("judge_runs", gate.key));
  EXPECT_FALSE(*ledger->has("judge_runs", "other"));
  EXPECT_FALSE(ledger->has("nope; DROP TABLE x", "k").has_value());
}

TEST(LedgerTest, TotalsByCategorySurviveReopening) {
  util::TempDir tmp;
  {
    auto ledger = Ledger::open(tmp.path() / "ledger.sqlite");
    ASSERT_TRUE(ledger.has_value());
    ASSERT_TRUE(ledger->add(JudgeRunRow{"a", 1, "M1", 1, "submit", "gate", 2, 10.0, 1.0, 3.0, ""}));
    ASSERT_TRUE(ledger->add(JudgeRunRow{"b", 1, "M1", 2, "probe", "probe", 1, 4.0, 0.0, 0.0, ""}));
    ASSERT_TRUE(ledger->add(JudgeRunRow{"c", 1, "", 0, "ref-time", "correctness", 2, 2.0, 0.0, 0.0, ""}));
    ASSERT_TRUE(ledger->add(CompileRow{"c1", 1, 1, "candidate", 1.0, false}));
    ASSERT_TRUE(ledger->add(CompileRow{"c2", 1, 2, "candidate", 0.5, true}));
    ASSERT_TRUE(ledger->add(AgentTurnRow{"t1", 1, "student", "M1", "claude", 60.0, 1000, 200, 0.25, 0, false}));
    ASSERT_TRUE(ledger->add(AgentTurnRow{"t2", 1, "teacher", "plan", "planfile", 1.0, std::nullopt, std::nullopt, std::nullopt, 0, false}));
    ASSERT_TRUE(ledger->add(RevisionRow{"r1", 1, 1, "escalation", "replan", "D2", "why"}));
    ASSERT_TRUE(ledger->add(PromotionRow{"p1", 1, true, 3, "R1", 1.8, "promoted"}));
    ASSERT_TRUE(ledger->add(PromotionRow{"p2", 2, false, 0, "R1", 0, "nothing"}));
  }
  auto ledger = Ledger::open(tmp.path() / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value());
  auto t = ledger->totals();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->judge_runs, 3);
  EXPECT_DOUBLE_EQ(t->gate_s, 6.0);          // 10 - 1 compile - 3 confirmation
  EXPECT_DOUBLE_EQ(t->probe_s, 4.0 + 2.0);   // the probe (its build was a cache hit), plus the reference measurement
  EXPECT_DOUBLE_EQ(t->confirmation_s, 3.0);
  EXPECT_EQ(t->compiles, 2);
  EXPECT_EQ(t->compile_cache_hits, 1);
  EXPECT_DOUBLE_EQ(t->compile_s, 1.0);        // the judge runs' build time; the cache hit cost nothing
  EXPECT_DOUBLE_EQ(t->judge_s, 16.0);
  EXPECT_DOUBLE_EQ(t->probe_s + t->gate_s + t->confirmation_s + t->compile_s, t->judge_s);
  EXPECT_EQ(t->agent_turns, 2);
  EXPECT_DOUBLE_EQ(t->agent_s, 61.0);
  EXPECT_DOUBLE_EQ(t->agent_cost_usd, 0.25);
  EXPECT_EQ(t->tokens, 1200);
  EXPECT_EQ(t->revisions, 1);
  EXPECT_EQ(t->promotions, 1);
}

// A Student turn of 30 s whose harness requests made two judge runs (a probe of 4 s, a gate of
// 10 s): the agent's own time is the 16 s left, and agent plus judge categories count each
// second once. Runs outside any turn (the orchestrator's reference measurement, the final
// report) are not taken from any agent.
TEST(LedgerTest, AgentOwnTimeExcludesTheJudgeRunsInsideItsTurn) {
  util::TempDir tmp;
  auto ledger = Ledger::open(tmp.path() / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value());
  ASSERT_TRUE(ledger->add(JudgeRunRow{"R1-reference-times", 1, "", 0, "ref-time", "correctness", 2, 3.0, 1.0, 0.0, ""}));
  ASSERT_TRUE(ledger->add(AgentTurnRow{"turn-1", 1, "teacher", "plan", "planfile", 0.5, std::nullopt, std::nullopt, std::nullopt, 0, false}));
  ASSERT_TRUE(ledger->add(JudgeRunRow{"R1-A0001-probe.json", 1, "M1", 1, "probe", "probe", 1, 4.0, 1.0, 0.0, "turn-2"}));
  ASSERT_TRUE(ledger->add(JudgeRunRow{"R1-A0002-gate.json", 1, "M1", 2, "submit", "gate", 2, 10.0, 0.5, 3.0, "turn-2"}));
  ASSERT_TRUE(ledger->add(AgentTurnRow{"turn-2", 1, "student", "M1", "tuner", 30.0, std::nullopt, std::nullopt, std::nullopt, 0, false}));
  ASSERT_TRUE(ledger->add(JudgeRunRow{"final-R1", 1, "", 0, "final", "gate", 2, 8.0, 0.0, 2.0, ""}));
  auto t = ledger->totals();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_DOUBLE_EQ(t->agent_s, 30.5);
  EXPECT_DOUBLE_EQ(t->agent_judge_s, 14.0);
  EXPECT_DOUBLE_EQ(t->agent_own_s, 16.5);
  EXPECT_DOUBLE_EQ(t->judge_s, 3.0 + 4.0 + 10.0 + 8.0);
  EXPECT_DOUBLE_EQ(t->final_s, 8.0);
  EXPECT_DOUBLE_EQ(t->compile_s, 2.5);
  EXPECT_DOUBLE_EQ(t->confirmation_s, 5.0);
  EXPECT_DOUBLE_EQ(t->probe_s, 2.0 + 3.0);
  EXPECT_DOUBLE_EQ(t->gate_s, 6.5 + 6.0);
  // Every second once: the categories add up to the turns plus the runs outside them.
  EXPECT_DOUBLE_EQ(t->agent_own_s + t->probe_s + t->gate_s + t->confirmation_s + t->compile_s, 30.5 + 3.0 + 8.0);
}

// A judge run whose summed parallel build time exceeds its wall time gives compile no more than
// the run lasted, so the categories still add up.
TEST(LedgerTest, CompileTimeIsCappedByTheRunItWasIn) {
  util::TempDir tmp;
  auto ledger = Ledger::open(tmp.path() / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value());
  ASSERT_TRUE(ledger->add(JudgeRunRow{"a", 1, "M1", 1, "probe", "probe", 8, 5.0, 12.0, 0.0, ""}));
  auto t = ledger->totals();
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->compile_s, 5.0);
  EXPECT_DOUBLE_EQ(t->probe_s, 0.0);
}

// Writes a ledger as schema 1 wrote it (no judge_runs.turn).
void write_schema_one_ledger(const fs::path& file) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  const char* sql = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
CREATE TABLE compiles (key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, attempt INTEGER, label TEXT,
  seconds REAL NOT NULL, cache_hit INTEGER NOT NULL);
CREATE TABLE judge_runs (key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, milestone TEXT, attempt INTEGER,
  op TEXT NOT NULL, tier TEXT, cases INTEGER, seconds REAL NOT NULL, compile_seconds REAL NOT NULL, confirm_seconds REAL NOT NULL);
CREATE TABLE agent_turns (key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, role TEXT NOT NULL, purpose TEXT,
  agent TEXT, seconds REAL NOT NULL, input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, exit_code INTEGER,
  timed_out INTEGER);
CREATE TABLE revisions (key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, number INTEGER, trigger TEXT,
  kind TEXT, from_id TEXT, reason TEXT);
CREATE TABLE promotions (key TEXT PRIMARY KEY, time TEXT NOT NULL, round INTEGER, promoted INTEGER NOT NULL,
  attempt INTEGER, reference_id TEXT, speedup REAL, note TEXT);
INSERT INTO judge_runs VALUES ('R1-reference-times', 't', 1, '', 0, 'ref-time', 'correctness', 2, 3.0, 0.0, 0.0);
INSERT INTO judge_runs VALUES ('R1-ref-time-t-1', 't', 1, '', 0, 'ref-time', 'correctness', 2, 2.0, 0.0, 0.0);
INSERT INTO judge_runs VALUES ('R1-A0001-probe.json', 't', 1, 'M1', 1, 'probe', 'probe', 1, 4.0, 0.0, 0.0);
INSERT INTO agent_turns VALUES ('turn-1', 't', 1, 'teacher', 'plan', 'cmd', 10.0, NULL, NULL, NULL, 0, 0);
INSERT INTO agent_turns VALUES ('turn-2', 't', 1, 'student', 'M1', 'tuner', 20.0, NULL, NULL, NULL, 0, 0);
)sql";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::string schema_version(const fs::path& file) {
  sqlite3* db = nullptr;
  sqlite3_open(file.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  std::string v;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// A schema 1 ledger opens, gains the turn column, keeps its rows, and takes new ones. Its old
// runs do not say which turn they ran in: those a harness request made (the probe, the
// Teacher's ref-time request) still come out of the agents' time, the orchestrator's own
// reference measurement does not.
TEST(LedgerTest, SchemaOneLedgerIsMigrated) {
  util::TempDir tmp;
  const fs::path file = tmp.path() / "ledger.sqlite";
  write_schema_one_ledger(file);
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto ledger = Ledger::open(file);
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  EXPECT_EQ(schema_version(file), std::to_string(kLedgerSchemaVersion));
  auto t = ledger->totals();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->judge_runs, 3);
  EXPECT_DOUBLE_EQ(t->agent_s, 30.0);
  EXPECT_DOUBLE_EQ(t->agent_own_s, 30.0 - 2.0 - 4.0);
  ASSERT_TRUE(ledger->add(JudgeRunRow{"R1-A0002-gate.json", 1, "M1", 2, "submit", "gate", 2, 5.0, 0.0, 0.0, "turn-3"}));
  ASSERT_TRUE(ledger->add(AgentTurnRow{"turn-3", 1, "student", "M1", "tuner", 9.0, std::nullopt, std::nullopt, std::nullopt, 0, false}));
  t = ledger->totals();
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->agent_own_s, 24.0 + 4.0);
  // Opening it again changes nothing.
  ledger = Ledger::open(file);
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  EXPECT_EQ(ledger->totals()->judge_runs, 4);
}

// Judge runs a cluster ran: the wait for its nodes is a category of its own, left out of the
// agents' own time like the judge time it preceded; every submission is a row.
TEST(LedgerTest, ClusterQueueTimeAndSubmissionsAreCounted) {
  util::TempDir tmp;
  auto ledger = Ledger::open(tmp.path() / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  JudgeRunRow probe{"R1-A0001-report.json", 1, "M1", 1, "probe", "probe", 1, 10.0, 0.0, 0.0, "turn-1", 4.0};
  ASSERT_TRUE(ledger->add(probe));
  ASSERT_TRUE(ledger->add(AgentTurnRow{"turn-1", 1, "student", "M1", "tuner", 20.0, std::nullopt, std::nullopt, std::nullopt, 0, false}));
  ASSERT_TRUE(ledger->add(ClusterJobRow{probe.key + "-abc-1", probe.key, "abc", "101", 1, "PREEMPTED", "node1", 1.0, 2.0, "preempted"}));
  ASSERT_TRUE(ledger->add(ClusterJobRow{probe.key + "-abc-2", probe.key, "abc", "102", 2, "COMPLETED", "node1", 0.5, 9.0, ""}));
  EXPECT_FALSE(*ledger->add(ClusterJobRow{probe.key + "-abc-2", probe.key, "abc", "102", 2, "COMPLETED", "node1", 0.5, 9.0, ""}));
  EXPECT_TRUE(*ledger->has("cluster_jobs", probe.key + "-abc-1"));
  auto t = ledger->totals();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_DOUBLE_EQ(t->queue_s, 4.0);
  EXPECT_DOUBLE_EQ(t->judge_s, 10.0);
  EXPECT_DOUBLE_EQ(t->agent_own_s, 20.0 - 10.0 - 4.0);
  EXPECT_EQ(t->cluster_jobs, 2);
  EXPECT_EQ(t->cluster_failed, 1);
}

TEST(LedgerTest, LedgerFromNewerTemperIsAnError) {
  util::TempDir tmp;
  const fs::path file = tmp.path() / "ledger.sqlite";
  ASSERT_TRUE(Ledger::open(file).has_value());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto ledger = Ledger::open(file);
  ASSERT_FALSE(ledger.has_value());
  EXPECT_NE(ledger.error().message.find("newer"), std::string::npos) << ledger.error().message;
}

// A probe's variants built in this run count as compile time; a cache hit's seconds are the
// original build's, spent before this run, and do not.
TEST(LedgerTest, ProbeCompileTimeCountsOnlyCacheMisses) {
  const nlohmann::json report = {
      {"kind", "temper.probe.report"},
      {"summary", {{"wall_seconds", 9.0}}},
      {"variants",
       {{{"label", "a"}, {"status", "PASSED"}, {"compile", {{"seconds", 1.5}, {"cache_hit", false}}}},
        {{"label", "b"}, {"status", "PASSED"}, {"compile", {{"seconds", 4.0}, {"cache_hit", true}}}}}}};
  const ReportSummary s = summarize_report(report);
  EXPECT_DOUBLE_EQ(s.compile_seconds, 1.5);
  EXPECT_FALSE(s.compile_cache_hit);
  EXPECT_DOUBLE_EQ(s.wall_seconds, 9.0);
}

TEST(LedgerTest, UnwritableFileIsAnError) {
  auto ledger = Ledger::open("/nonexistent-dir/ledger.sqlite");
  EXPECT_FALSE(ledger.has_value());
}

} // namespace
} // namespace temper::campaign::ledger_test
