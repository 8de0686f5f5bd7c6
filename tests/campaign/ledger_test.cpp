#include "campaign/ledger.h"

#include "util/fs.h"

#include <gtest/gtest.h>

namespace temper::campaign {
namespace {

TEST(LedgerTest, RowsAreKeyedSoReplaysAddNothing) {
  util::TempDir tmp;
  auto ledger = Ledger::open(tmp.path() / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  JudgeRunRow gate{"R1-A0001-report.json", 1, "M1", 1, "submit", "gate", 2, 10.0, 1.0, 3.0};
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
    ASSERT_TRUE(ledger->add(JudgeRunRow{"a", 1, "M1", 1, "submit", "gate", 2, 10.0, 1.0, 3.0}));
    ASSERT_TRUE(ledger->add(JudgeRunRow{"b", 1, "M1", 2, "probe", "probe", 1, 4.0, 0.5, 0.0}));
    ASSERT_TRUE(ledger->add(JudgeRunRow{"c", 1, "", 0, "ref-time", "correctness", 2, 2.0, 0.0, 0.0}));
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
  EXPECT_DOUBLE_EQ(t->probe_s, 3.5 + 2.0);   // probe 4 - 0.5, plus the reference measurement
  EXPECT_DOUBLE_EQ(t->confirmation_s, 3.0);
  EXPECT_EQ(t->compiles, 2);
  EXPECT_EQ(t->compile_cache_hits, 1);
  EXPECT_DOUBLE_EQ(t->compile_s, 1.0);        // the cache hit costs nothing
  EXPECT_EQ(t->agent_turns, 2);
  EXPECT_DOUBLE_EQ(t->agent_s, 61.0);
  EXPECT_DOUBLE_EQ(t->agent_cost_usd, 0.25);
  EXPECT_EQ(t->tokens, 1200);
  EXPECT_EQ(t->revisions, 1);
  EXPECT_EQ(t->promotions, 1);
}

TEST(LedgerTest, UnwritableFileIsAnError) {
  auto ledger = Ledger::open("/nonexistent-dir/ledger.sqlite");
  EXPECT_FALSE(ledger.has_value());
}

} // namespace
} // namespace temper::campaign
