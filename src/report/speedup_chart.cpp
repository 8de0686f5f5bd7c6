#include "report/speedup_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace temper::report {

namespace {
constexpr double kSpeedupLeft = 90, kSpeedupRight = 190, kSpeedupTop = 30, kSpeedupBottom = 30;

std::string verdict_class(const std::string& verdict) {
  std::string base = verdict.substr(0, verdict.find('?'));
  for (char& ch : base) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return base.empty() ? "none" : base;
}
} // namespace

SpeedupChart layout_speedup_chart(const std::vector<SpeedupRow>& rows, double width) {
  SpeedupChart c;
  c.width = width;
  c.plot_left = kSpeedupLeft;
  c.plot_right = width - kSpeedupRight;
  c.plot_top = kSpeedupTop;
  c.plot_bottom = kSpeedupTop + kSpeedupRowHeight * static_cast<double>(rows.size());
  c.height = c.plot_bottom + kSpeedupBottom;
  std::vector<double> values;
  for (const auto& r : rows) {
    for (const auto& v : {r.speedup, r.lo, r.hi}) {
      if (v) values.push_back(*v);
    }
  }
  c.x = log_scale_for(values, c.plot_left, c.plot_right, /*include_one=*/true);
  for (size_t i = 0; i < rows.size(); ++i) {
    const SpeedupRow& r = rows[i];
    SpeedupBar b;
    b.label = r.label;
    b.verdict = r.verdict;
    b.note = r.note;
    b.y = kSpeedupTop + kSpeedupRowHeight * (static_cast<double>(i) + 0.5);
    b.x_one = c.x.map(1.0);
    if (r.speedup && *r.speedup > 0) {
      b.timed = true;
      b.value = *r.speedup;
      b.x_value = c.x.map(*r.speedup);
      if (r.lo && r.hi && *r.lo > 0 && *r.hi > 0) {
        b.has_interval = true;
        b.x_lo = c.x.map(*r.lo);
        b.x_hi = c.x.map(*r.hi);
      }
    }
    c.bars.push_back(b);
  }
  return c;
}

std::string draw_speedup_chart(const SpeedupChart& c) {
  Svg svg(c.width, c.height, "speedup per case, log scale, with 95% intervals");
  // Grid and tick labels, top and bottom.
  for (double t : log_ticks(c.x.d0, c.x.d1)) {
    const double x = c.x.map(t);
    svg.line(x, c.plot_top, x, c.plot_bottom, "grid");
    svg.text(x, c.plot_top - 8, tick_label(t) + "x", "tick", "middle");
    svg.text(x, c.plot_bottom + 16, tick_label(t) + "x", "tick", "middle");
  }
  const double x_one = c.x.map(1.0);
  for (const auto& b : c.bars) {
    svg.text(c.plot_left - 8, b.y + 4, b.label, "label", "end");
    if (!b.timed) {
      svg.text(c.plot_left + 4, b.y + 4, b.note, "note");
      continue;
    }
    const std::string cls = "bar " + verdict_class(b.verdict);
    svg.rect(std::min(b.x_one, b.x_value), b.y - 7, std::abs(b.x_value - b.x_one), 14, cls,
             fmt::format("{}: {:.3f}x, {}", b.label, b.value, b.verdict));
    if (b.has_interval) {
      svg.line(b.x_lo, b.y, b.x_hi, b.y, "whisker");
      svg.line(b.x_lo, b.y - 5, b.x_lo, b.y + 5, "whisker");
      svg.line(b.x_hi, b.y - 5, b.x_hi, b.y + 5, "whisker");
    }
    svg.text(c.plot_right + 8, b.y + 4, fmt::format("{:.3f}x  {}", b.value, b.verdict), "value");
  }
  svg.line(x_one, c.plot_top - 2, x_one, c.plot_bottom + 2, "unity");
  return svg.str();
}

} // namespace temper::report
