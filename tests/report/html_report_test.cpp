// The judge report's page from a hand-written report JSON: every section with its case count,
// the mismatch table, the context block; no script and no external resource.
#include "report/judge_view.h"
#include "report/render.h"

#include <gtest/gtest.h>

namespace temper::report::html_report_test {
namespace {

using nlohmann::json;

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

json timed_case(int id, double speedup) {
  json arm_ref = {{"median", 20e-6}, {"samples", {19e-6, 20e-6, 21e-6}}};
  json arm_cand = {{"median", 20e-6 / speedup}, {"samples", {20e-6 / speedup, 21e-6 / speedup}}};
  return {{"case_id", id}, {"status", "PASSED"}, {"dtypes", {"bf16", "bf16"}}, {"shapes", {{4, 64}}},
          {"max_abs_error", 0.0}, {"max_rel_error", 1e-3}, {"kernel_seconds", 2e-5},
          {"timing", {{"verdict", "FASTER"}, {"confirmed", true}, {"speedup", speedup}, {"ci", {speedup * 0.9, speedup * 1.1}},
                      {"hardware_bound_us", 5.0}, {"hardware_bound_source", "roofline (limiter: memory; hw_kb x: bw)"},
                      {"roofline_fraction", 5e-6 / (20e-6 / speedup)},
                      {"jobs", {{{"kind", "measurement"}, {"reference", arm_ref}, {"candidate", arm_cand}},
                                {{"kind", "confirmation"}, {"reference", arm_ref}, {"candidate", arm_cand}}}}}}};
}

json sample_report() {
  json failing = {{"case_id", 5}, {"status", "INCORRECT_NUMERICAL"}, {"dtypes", {"fp32"}}, {"shapes", {{3, 67}}},
                  {"max_abs_error", "nan"}, {"message", "out: 12 of 201 elements outside tolerance"},
                  {"first_mismatches", {{{"output", "out"}, {"index", {0, 64}}, {"flat", 64}, {"got", "nan"}, {"expected", 0.25}},
                                        {{"output", "out"}, {"index", {0, 65}}, {"flat", 65}, {"got", 1e30}, {"expected", -0.5}}}}};
  return {{"schema_version", 1},
          {"kind", "temper.judge.report"},
          {"context", {{"temper_version", "0.1.0"}, {"target_class", "x86_64-zen4-avx512"}, {"flags", {"-O3", "-march=native"}},
                       {"compiler", {{"program", "g++"}, {"version", "g++ 12.2.0"}}}, {"task", {{"name", "swi_glu"}}},
                       {"host", {{"hostname", "<box>"}, {"cpu_model", "EPYC"}, {"logical_cpus", 2}, {"memory_bytes", 8ull << 30}}}}},
          {"cases", {timed_case(1, 2.0), timed_case(4, 0.8), failing}},
          {"timing", {{"tier", "gate"}, {"measurement_jobs", 1}, {"confirmation_jobs", 1}, {"geomean_speedup", 1.26},
                      {"geomean_ci", {1.1, 1.4}}, {"protocol", {{"cache_mode", "cold"}, {"clock", "thread_cpu"}}},
                      {"verdicts", {{"FASTER", 2}, {"SLOWER", 0}, {"SAME", 0}, {"AMBIGUOUS", 0}}}}}};
}

TEST(JudgeViewTest, ReadsTimingSamplesBoundsAndMismatches) {
  auto v = read_judge_view(sample_report());
  ASSERT_TRUE(v.has_value()) << v.error().message;
  ASSERT_EQ(v->cases.size(), 3u);
  EXPECT_EQ(v->passed, 2);
  const CaseView& c = v->cases[0];
  EXPECT_EQ(c.dtype, "bf16");
  EXPECT_DOUBLE_EQ(*c.speedup, 2.0);
  EXPECT_DOUBLE_EQ(*c.speedup_lo, 1.8);
  EXPECT_DOUBLE_EQ(*c.bound_s, 5e-6);
  EXPECT_DOUBLE_EQ(*c.achieved_s, 10e-6);
  EXPECT_EQ(c.limiter, "memory");
  EXPECT_EQ(c.reference_samples.size(), 6u); // both jobs
  EXPECT_EQ(c.candidate_samples.size(), 4u);
  const CaseView& f = v->cases[2];
  ASSERT_EQ(f.mismatches.size(), 2u);
  EXPECT_EQ(f.mismatches[0].index, "[0, 64]");
  EXPECT_EQ(f.mismatches[0].got, "nan");
  EXPECT_EQ(f.mismatches[1].got, "1e+30");
  EXPECT_FALSE(f.max_abs.has_value()); // "nan" is no number
  EXPECT_EQ(limiter_from_source("temper.yaml"), "given in temper.yaml");
}

TEST(JudgeViewTest, RefusesOtherDocuments) {
  auto v = read_judge_view(json{{"kind", "temper.probe.report"}});
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().message.find("temper.probe.report"), std::string::npos) << v.error().message;
}

TEST(HtmlReportTest, EverySectionWithItsCasesAndNoScript) {
  auto page = render_judge_report(sample_report());
  ASSERT_TRUE(page.has_value()) << page.error().message;
  const std::string& h = *page;
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(h.find("<title>temper judge report: swi_glu</title>"), std::string::npos);
  EXPECT_NE(h.find("<section id=\"cases\" data-count=\"3\">"), std::string::npos);
  EXPECT_NE(h.find("<section id=\"speedup\" data-count=\"3\">"), std::string::npos);
  EXPECT_NE(h.find("<section id=\"roofline\" data-count=\"2\">"), std::string::npos);
  EXPECT_NE(h.find("<section id=\"samples\" data-count=\"2\">"), std::string::npos);
  EXPECT_NE(h.find("<section id=\"mismatches\" data-count=\"1\">"), std::string::npos);
  EXPECT_EQ(count(h, "<tr class=\"case\""), 3u);
  EXPECT_EQ(count(h, "class=\"bar faster\""), 2u);
  EXPECT_EQ(count(h, "class=\"achieved\""), 2u);
  EXPECT_NE(h.find("<td>[0, 64]</td><td class=\"num\">nan</td><td class=\"num\">0.25</td>"), std::string::npos);
  EXPECT_NE(h.find("x86_64-zen4-avx512"), std::string::npos);
  EXPECT_NE(h.find("cache_mode: cold"), std::string::npos);
  EXPECT_NE(h.find("50.0% of roofline, memory"), std::string::npos);
  EXPECT_NE(h.find("&lt;box&gt;"), std::string::npos); // escaped
  // Self-contained and readable without JavaScript.
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("http"), std::string::npos);
  EXPECT_EQ(h.find(" src="), std::string::npos);
}

TEST(HtmlReportTest, UntimedReportSaysWhy) {
  json r = sample_report();
  r["timing"] = nullptr;
  for (auto& c : r["cases"]) c.erase("timing");
  auto page = render_judge_report(r);
  ASSERT_TRUE(page.has_value());
  EXPECT_NE(page->find("<section id=\"speedup\" data-count=\"0\">"), std::string::npos);
  EXPECT_NE(page->find("Not timed: judge with --reference"), std::string::npos);
  EXPECT_NE(page->find("<section id=\"samples\" data-count=\"0\">"), std::string::npos);
}

} // namespace
} // namespace temper::report::html_report_test
