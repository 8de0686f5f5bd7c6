// The charts' geometry against hand-computed values: log and linear scales, tick choice,
// speedup bars and interval whiskers, roofline marks, strip plots, the timeline's step line.
#include "report/roofline_chart.h"
#include "report/speedup_chart.h"
#include "report/strip_chart.h"
#include "report/svg.h"
#include "report/timeline_chart.h"

#include <gtest/gtest.h>

namespace temper::report::svg_test {
namespace {

TEST(SvgScaleTest, LogScaleMapsEqualRatiosToEqualDistances) {
  LogScale s{0.1, 10, 100, 500}; // two decades over 400 px: 200 px per decade
  EXPECT_DOUBLE_EQ(s.map(0.1), 100);
  EXPECT_DOUBLE_EQ(s.map(1), 300);
  EXPECT_DOUBLE_EQ(s.map(10), 500);
  // log10(2) = 0.30103: 2x sits 60.2 px right of 1x, 0.5x as far left.
  EXPECT_NEAR(s.map(2), 300 + 200 * 0.30103, 1e-3);
  EXPECT_NEAR(s.map(0.5), 300 - 200 * 0.30103, 1e-3);
  EXPECT_DOUBLE_EQ(s.map(0), 100); // not positive: the low end
}

TEST(SvgScaleTest, LinearScaleAndReversedRange) {
  LinearScale s{2, 6, 0, 100};
  EXPECT_DOUBLE_EQ(s.map(3), 25);
  LinearScale up{0, 10, 200, 0}; // y grows downwards in SVG
  EXPECT_DOUBLE_EQ(up.map(2.5), 150);
}

TEST(SvgScaleTest, LogDomainCoversValuesAndOneWithRoundEnds) {
  LogScale s = log_scale_for({1.3, 3.7, 0.8}, 0, 100, true);
  EXPECT_DOUBLE_EQ(s.d0, 0.5);
  EXPECT_DOUBLE_EQ(s.d1, 5);
  s = log_scale_for({25.4}, 0, 100, true);
  EXPECT_DOUBLE_EQ(s.d0, 1);
  EXPECT_DOUBLE_EQ(s.d1, 50);
  // Values that cannot sit on a log axis are left out.
  s = log_scale_for({0.0, -1, 2e-6, std::nan("")}, 0, 100, false);
  EXPECT_DOUBLE_EQ(s.d0, 2e-6);
  EXPECT_DOUBLE_EQ(s.d1, 5e-6);
}

TEST(SvgScaleTest, TicksFollowOneTwoFiveOrDecades) {
  EXPECT_EQ(log_ticks(0.5, 5), (std::vector<double>{0.5, 1, 2, 5}));
  const auto decades = log_ticks(1e-6, 1, 9);
  ASSERT_EQ(decades.size(), 7u);
  EXPECT_DOUBLE_EQ(decades.front(), 1e-6);
  EXPECT_DOUBLE_EQ(decades.back(), 1);
  EXPECT_EQ(log_ticks(1, 2), (std::vector<double>{1, 1.25, 1.5, 1.75, 2}));
  EXPECT_EQ(log_ticks(0.5, 1).size(), 3u); // 0.6, 0.8, 1 (steps of 0.2)
  EXPECT_EQ(tick_label(0.5), "0.5");
  EXPECT_EQ(tick_label(20), "20");
}

TEST(SvgTest, EscapesTextAndTitles) {
  Svg svg(100, 50, "a<b");
  svg.text(1, 2, "x & \"y\"", "label");
  svg.rect(0, 0, 10, 10, "bar", "<t>");
  const std::string s = svg.str();
  EXPECT_NE(s.find("aria-label=\"a&lt;b\""), std::string::npos) << s;
  EXPECT_NE(s.find(">x &amp; &quot;y&quot;</text>"), std::string::npos) << s;
  EXPECT_NE(s.find("<title>&lt;t&gt;</title>"), std::string::npos) << s;
  EXPECT_NE(s.find("viewBox=\"0 0 100 50\""), std::string::npos);
}

TEST(SpeedupChartTest, BarsRunFromOneToTheEstimateWithWhiskers) {
  // Speedups 2 [1.6, 2.5] and 0.5 [0.4, 0.625]: domain [0.2, 5] after rounding to 1-2-5.
  std::vector<SpeedupRow> rows = {{"case 1", 2.0, 1.6, 2.5, "FASTER", ""},
                                  {"case 2", 0.5, 0.4, 0.625, "SLOWER", ""},
                                  {"case 3", std::nullopt, std::nullopt, std::nullopt, "", "not timed"}};
  const SpeedupChart c = layout_speedup_chart(rows, 1000);
  EXPECT_DOUBLE_EQ(c.x.d0, 0.2);
  EXPECT_DOUBLE_EQ(c.x.d1, 5);
  ASSERT_EQ(c.bars.size(), 3u);
  // Plot from 90 to 810 px over log10(25) decades.
  const double px_per_decade = (810 - 90) / std::log10(25.0);
  const double x_one = 90 + std::log10(1 / 0.2) * px_per_decade;
  EXPECT_NEAR(c.bars[0].x_one, x_one, 1e-9);
  EXPECT_NEAR(c.bars[0].x_value, x_one + std::log10(2.0) * px_per_decade, 1e-9);
  EXPECT_NEAR(c.bars[1].x_value, x_one - std::log10(2.0) * px_per_decade, 1e-9);
  // Whiskers: 1.6 and 2.5 around 2; the symmetric interval of 0.5 mirrors it.
  EXPECT_NEAR(c.bars[0].x_lo, x_one + std::log10(1.6) * px_per_decade, 1e-9);
  EXPECT_NEAR(c.bars[0].x_hi, x_one + std::log10(2.5) * px_per_decade, 1e-9);
  EXPECT_NEAR(c.bars[1].x_hi - x_one, -(c.bars[0].x_lo - x_one), 1e-9);
  EXPECT_TRUE(c.bars[0].has_interval);
  EXPECT_FALSE(c.bars[2].timed);
  // Rows are kSpeedupRowHeight apart.
  EXPECT_DOUBLE_EQ(c.bars[1].y - c.bars[0].y, kSpeedupRowHeight);
  const std::string svg = draw_speedup_chart(c);
  EXPECT_NE(svg.find("class=\"bar faster\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"bar slower\""), std::string::npos);
  EXPECT_NE(svg.find(">not timed</text>"), std::string::npos);
}

TEST(RooflineChartTest, BoundAndAchievedOnALogTimeAxis) {
  // 50 us achieved against a 20 us bound: 40% of roofline.
  const RooflineChart c = layout_roofline_chart({{"case 1", 50e-6, 20e-6, "memory"}}, 1000);
  EXPECT_DOUBLE_EQ(c.x.d0, 20e-6);
  EXPECT_DOUBLE_EQ(c.x.d1, 50e-6);
  ASSERT_EQ(c.marks.size(), 1u);
  EXPECT_NEAR(c.marks[0].x_bound, c.plot_left, 1e-9);
  EXPECT_NEAR(c.marks[0].x_achieved, c.plot_right, 1e-9);
  EXPECT_DOUBLE_EQ(c.marks[0].fraction, 0.4);
  EXPECT_NE(draw_roofline_chart(c).find("40.0% of roofline, memory"), std::string::npos);
  EXPECT_EQ(seconds_text(2.5e-5), "25 us");
}

TEST(StripChartTest, BothArmsShareTheCaseAxisAndMedians) {
  // Samples 10..20 us: the axis spans 9.5 to 20.5 us (5% padding each side).
  StripRow r{"case 4", {10e-6, 12e-6, 14e-6}, {16e-6, 18e-6, 20e-6, 20e-6}};
  const StripChart c = layout_strip_chart({r}, 1000);
  ASSERT_EQ(c.panels.size(), 1u);
  const StripPanel& p = c.panels[0];
  EXPECT_NEAR(p.x.d0, 9.5e-6, 1e-15);
  EXPECT_NEAR(p.x.d1, 20.5e-6, 1e-15);
  EXPECT_NEAR(p.x.map(10e-6), c.plot_left + (0.5 / 11) * (c.plot_right - c.plot_left), 1e-6);
  EXPECT_DOUBLE_EQ(p.reference_median_s, 12e-6);
  EXPECT_DOUBLE_EQ(p.candidate_median_s, 19e-6);
  ASSERT_EQ(p.reference_dots.size(), 3u);
  ASSERT_EQ(p.candidate_dots.size(), 4u);
  for (const auto& [x, y] : p.candidate_dots) EXPECT_LE(std::abs(y - p.y_candidate), 6.0);
  // Many samples are thinned to kMaxDotsPerArm dots; n still counts them all.
  StripRow big{"case 5", std::vector<double>(1000, 1e-3), {}};
  const StripChart b = layout_strip_chart({big}, 1000);
  EXPECT_EQ(b.panels[0].reference_dots.size(), kMaxDotsPerArm);
  EXPECT_EQ(b.panels[0].reference_n, 1000u);
}

TEST(TimelineChartTest, LanesMarkersAndBestSpeedupSteps) {
  nlohmann::json events = nlohmann::json::array({
      {{"seq", 1}, {"round", 1}, {"kind", "probe"}, {"outcome", "probe"}, {"speedup", 1.2}, {"best_speedup", nullptr}},
      {{"seq", 2}, {"round", 1}, {"kind", "gate"}, {"outcome", "accepted"}, {"speedup", 2.0}, {"best_speedup", 2.0}},
      {{"seq", 3}, {"round", 1}, {"kind", "promotion"}, {"outcome", "promoted"}, {"speedup", 2.0}, {"best_speedup", 2.0}},
      {{"seq", 4}, {"round", 2}, {"kind", "gate"}, {"outcome", "rejected"}, {"speedup", 0.9}, {"best_speedup", 2.0}},
  });
  const TimelineChart c = layout_timeline_chart(events, 1000);
  ASSERT_EQ(c.lanes.size(), 3u); // probe, gate, promotion (no submission, escalation, revision)
  EXPECT_EQ(c.lanes[0].first, "probe");
  EXPECT_EQ(c.lanes[2].first, "promotion");
  ASSERT_EQ(c.markers.size(), 4u);
  // Evenly spaced: seq 1 at plot_left + 10, seq 4 at plot_right - 10.
  EXPECT_DOUBLE_EQ(c.markers[0].x, c.plot_left + 10);
  EXPECT_DOUBLE_EQ(c.markers[3].x, c.plot_right - 10);
  EXPECT_NEAR(c.markers[1].x - c.markers[0].x, (c.plot_right - c.plot_left - 20) / 3, 1e-9);
  EXPECT_EQ(c.markers[3].cls, "rejected");
  EXPECT_EQ(c.markers[1].y, c.markers[3].y); // the gate lane
  // Best speedup on [1, 2]: 1x at the bottom, 2x at the top; the step line holds 1x until seq 2.
  EXPECT_DOUBLE_EQ(c.best_y.map(1), c.best_bottom);
  EXPECT_DOUBLE_EQ(c.best_y.map(2), c.best_top);
  ASSERT_EQ(c.best_line.size(), 7u);
  EXPECT_DOUBLE_EQ(c.best_line[0].second, c.best_bottom);
  EXPECT_DOUBLE_EQ(c.best_line[1].second, c.best_bottom); // level until event 2
  EXPECT_DOUBLE_EQ(c.best_line[2].second, c.best_top);
  ASSERT_EQ(c.rounds.size(), 2u);
  EXPECT_EQ(c.rounds[1].second, "R2");
}

TEST(CostChartTest, BarsScaleToTheLargestCategoryWithShares) {
  // Gate 30 s is the longest bar (150 to 800 px); agent 15 s half of it; shares of the 60 s wall.
  nlohmann::json costs = {{"agent_own_s", 15.0}, {"probe_s", 6.0}, {"gate_s", 30.0}, {"confirmation_s", 3.0},
                          {"compile_s", 6.0}, {"other_s", 0.0}, {"wall_s", 60.0}};
  const std::string svg = draw_cost_chart(costs, 1000);
  EXPECT_NE(svg.find("width=\"650.0\" height=\"16.0\" class=\"cost gate_s\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("width=\"325.0\" height=\"16.0\" class=\"cost agent_own_s\""), std::string::npos) << svg;
  EXPECT_NE(svg.find(">30.0 s (50%)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.0 s (0%)</text>"), std::string::npos);
}

} // namespace
} // namespace temper::report::svg_test
