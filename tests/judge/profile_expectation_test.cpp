// The metric registry and mechanism expectations: parsing, errors, evaluation, verdicts.
#include "judge/profile/expectation.h"
#include "judge/profile/metrics.h"

#include <gtest/gtest.h>

namespace temper::judge::profile::profile_expectation_test {
namespace {

TEST(MetricRegistry, HasEveryMetricTheIssueNames) {
  for (const char* name :
       {"time.median_us", "sw.task_clock_ms", "sw.page_faults", "sw.context_switches", "hw.cycles", "hw.instructions", "hw.ipc",
        "hw.l1d_misses", "hw.llc_misses", "hw.branch_misses", "cg.Ir", "cg.D1mr", "cg.D1mw", "cg.LLmr", "cg.LLmw",
        "static.code_bytes", "static.vec512_ops", "static.vec256_ops", "static.vec128_ops", "static.scalar_fp_ops",
        "static.fma_ops", "static.nontemporal_stores", "static.prefetches", "compile.seconds", "cuda.registers",
        "cuda.smem_bytes", "cuda.spill_bytes", "cuda.stack_bytes"}) {
    const MetricDef* m = find_metric(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_FALSE(m->unit.empty()) << name;
    EXPECT_FALSE(m->source.empty()) << name;
  }
  EXPECT_EQ(find_metric("cuda.registers")->source, "ptxas");
  EXPECT_EQ(find_metric("cg.D1mr")->direction, Direction::Lower);
  EXPECT_EQ(find_metric("hw.ipc")->direction, Direction::Higher);
}

TEST(MetricRegistry, NamesAreUnique) {
  const auto& all = metric_registry();
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j) EXPECT_NE(all[i].name, all[j].name);
}

TEST(MetricSet, RoundTripsThroughJsonWithUnsupportedValues) {
  MetricSet s;
  s.set("cg.D1mr", 1234);
  s.unsupported("hw.cycles", "no PMU");
  s.attachments()["note"] = "x";
  nlohmann::json j = s.to_json();
  EXPECT_EQ(j["values"]["cg.D1mr"], 1234);
  EXPECT_EQ(j["values"]["hw.cycles"], "unsupported: no PMU");
  auto back = MetricSet::from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back->find("cg.D1mr")->number, 1234);
  EXPECT_FALSE(back->find("hw.cycles")->supported());
  EXPECT_EQ(back->find("hw.cycles")->reason, "no PMU");
  EXPECT_EQ(back->attachments()["note"], "x");

  nlohmann::json bad = {{"values", {{"cg.D1mx", 3}}}};
  auto err = MetricSet::from_json(bad);
  ASSERT_FALSE(err);
  EXPECT_NE(err.error().message.find("cg.D1mx"), std::string::npos);
}

TEST(Expectation, ParsesAbsoluteAndRelative) {
  auto a = parse_expectation("  static.vec512_ops > 0 ");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->metric, "static.vec512_ops");
  EXPECT_FALSE(a->relative);
  EXPECT_EQ(a->op, CompareOp::Greater);
  EXPECT_EQ(a->threshold, 0);
  EXPECT_EQ(a->text, "static.vec512_ops > 0");

  auto r = parse_expectation("cg.D1mr change <= -30%");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->relative);
  EXPECT_EQ(r->op, CompareOp::LessEqual);
  EXPECT_EQ(r->threshold, -30);

  auto c = parse_expectation("cuda.registers<=128");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->threshold, 128);
  auto t = parse_expectation("time.median_us change<=-10.5 %");
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->threshold, -10.5);
  for (const char* ok : {"hw.ipc >= 1.5", "static.fma_ops == 0", "static.prefetches != 0", "compile.seconds < 2e1"}) {
    EXPECT_TRUE(parse_expectation(ok)) << ok;
  }
}

std::string parse_error(const char* text) {
  auto e = parse_expectation(text);
  return e ? std::string("(parsed)") : e.error().message;
}

TEST(Expectation, ErrorsSayWhatIsWrong) {
  std::string unknown = parse_error("cg.D1mx change <= -30%");
  EXPECT_NE(unknown.find("unknown metric 'cg.D1mx'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("did you mean cg.D1mr"), std::string::npos) << unknown;
  EXPECT_NE(parse_error("foo.bar > 1").find("unknown metric 'foo.bar'"), std::string::npos);
  EXPECT_NE(parse_error("static.vec512_ops 0").find("no comparison"), std::string::npos);
  EXPECT_NE(parse_error("static.vec512_ops >").find("no number"), std::string::npos);
  EXPECT_NE(parse_error("static.vec512_ops > many").find("'many' is not a number"), std::string::npos);
  EXPECT_NE(parse_error("cg.D1mr change <= -30").find("percentage: write -30%"), std::string::npos);
  EXPECT_NE(parse_error("cg.D1mr <= -30%").find("no 'change'"), std::string::npos);
  EXPECT_NE(parse_error("cg.D1mr < 3 and more").find("unexpected text 'and more'"), std::string::npos);
  EXPECT_NE(parse_error("").find("empty"), std::string::npos);
  EXPECT_NE(parse_error("> 3").find("does not start with a metric"), std::string::npos);
}

MetricSet set_of(std::initializer_list<std::pair<const char*, double>> values) {
  MetricSet s;
  for (const auto& [k, v] : values) s.set(k, v);
  return s;
}

TEST(Expectation, EvaluatesAbsolute) {
  MetricSet cand = set_of({{"static.vec512_ops", 12}, {"static.vec256_ops", 0}});
  auto pass = evaluate(*parse_expectation("static.vec512_ops > 0"), cand, nullptr);
  EXPECT_EQ(pass.outcome, ExpectationOutcome::Passed);
  EXPECT_EQ(*pass.measured, 12);
  auto failed = evaluate(*parse_expectation("static.vec256_ops > 0"), cand, nullptr);
  EXPECT_EQ(failed.outcome, ExpectationOutcome::Failed);
  EXPECT_NE(failed.detail.find("static.vec256_ops = 0, expected > 0"), std::string::npos) << failed.detail;
}

TEST(Expectation, UnmeasurableMetricIsUnverifiableAndDoesNotPass) {
  MetricSet cand;
  cand.unsupported("hw.l1d_misses", "no hardware counters");
  auto r = evaluate(*parse_expectation("hw.l1d_misses change <= -30%"), cand, &cand);
  EXPECT_EQ(r.outcome, ExpectationOutcome::Unverifiable);
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.detail.find("no hardware counters"), std::string::npos);
  auto missing = evaluate(*parse_expectation("cuda.registers <= 128"), MetricSet{}, nullptr);
  EXPECT_EQ(missing.outcome, ExpectationOutcome::Unverifiable);
}

TEST(Expectation, EvaluatesRelativeAgainstTheBaseline) {
  MetricSet base = set_of({{"cg.D1mr", 1000}, {"time.median_us", 100}, {"static.prefetches", 0}});
  MetricSet cand = set_of({{"cg.D1mr", 600}, {"time.median_us", 95}, {"static.prefetches", 4}});
  auto d1 = evaluate(*parse_expectation("cg.D1mr change <= -30%"), cand, &base);
  EXPECT_EQ(d1.outcome, ExpectationOutcome::Passed);
  EXPECT_DOUBLE_EQ(*d1.change_pct, -40);
  EXPECT_EQ(*d1.baseline, 1000);
  auto t = evaluate(*parse_expectation("time.median_us change <= -10%"), cand, &base);
  EXPECT_EQ(t.outcome, ExpectationOutcome::Failed);
  EXPECT_DOUBLE_EQ(*t.change_pct, -5);
  auto none = evaluate(*parse_expectation("cg.D1mr change <= -30%"), cand, nullptr);
  EXPECT_EQ(none.outcome, ExpectationOutcome::Unverifiable);
  EXPECT_NE(none.detail.find("needs a baseline"), std::string::npos);
  auto zero = evaluate(*parse_expectation("static.prefetches change >= 10%"), cand, &base);
  EXPECT_EQ(zero.outcome, ExpectationOutcome::Unverifiable);
  EXPECT_NE(zero.detail.find("undefined"), std::string::npos);
}

TEST(Expectation, FasterWithoutThePredictedMechanismIsNamed) {
  MetricSet base = set_of({{"cg.D1mr", 1000}});
  MetricSet cand = set_of({{"cg.D1mr", 990}});
  std::vector<ExpectationResult> results = {evaluate(*parse_expectation("cg.D1mr change <= -30%"), cand, &base)};
  auto v = mechanism_verdict(results, true);
  EXPECT_EQ(v.code, "faster_without_predicted_mechanism");
  EXPECT_NE(v.message.find("faster, but the predicted mechanism did not happen"), std::string::npos);
  EXPECT_EQ(mechanism_verdict(results, false).code, "not_confirmed");
  EXPECT_EQ(mechanism_verdict(results, std::nullopt).code, "not_confirmed");
  MetricSet better = set_of({{"cg.D1mr", 100}});
  std::vector<ExpectationResult> ok = {evaluate(*parse_expectation("cg.D1mr change <= -30%"), better, &base)};
  EXPECT_EQ(mechanism_verdict(ok, true).code, "confirmed");
  EXPECT_EQ(mechanism_verdict({}, true).code, "none");
}

} // namespace
} // namespace temper::judge::profile::profile_expectation_test
