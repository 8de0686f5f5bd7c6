#include "report/roofline_chart.h"

#include <fmt/format.h>

namespace temper::report {

namespace {
constexpr double kRooflineLeft = 90, kRooflineRight = 250, kRooflineTop = 30, kRooflineBottom = 30, kRooflineRow = 24;

std::string time_tick(double s) {
  if (s >= 1) return tick_label(s) + " s";
  if (s >= 1e-3) return tick_label(s * 1e3) + " ms";
  if (s >= 1e-6) return tick_label(s * 1e6) + " us";
  return tick_label(s * 1e9) + " ns";
}
} // namespace

std::string seconds_text(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

RooflineChart layout_roofline_chart(const std::vector<RooflineRow>& rows, double width) {
  RooflineChart c;
  c.width = width;
  c.plot_left = kRooflineLeft;
  c.plot_right = width - kRooflineRight;
  c.plot_top = kRooflineTop;
  c.plot_bottom = kRooflineTop + kRooflineRow * static_cast<double>(rows.size());
  c.height = c.plot_bottom + kRooflineBottom;
  std::vector<double> values;
  for (const auto& r : rows) {
    values.push_back(r.achieved_s);
    values.push_back(r.bound_s);
  }
  c.x = log_scale_for(values, c.plot_left, c.plot_right, /*include_one=*/false);
  for (size_t i = 0; i < rows.size(); ++i) {
    const RooflineRow& r = rows[i];
    RooflineMark m;
    m.label = r.label;
    m.limiter = r.limiter;
    m.y = kRooflineTop + kRooflineRow * (static_cast<double>(i) + 0.5);
    m.x_bound = c.x.map(r.bound_s);
    m.x_achieved = c.x.map(r.achieved_s);
    m.fraction = r.achieved_s > 0 ? r.bound_s / r.achieved_s : 0;
    m.achieved_s = r.achieved_s;
    m.bound_s = r.bound_s;
    c.marks.push_back(m);
  }
  return c;
}

std::string draw_roofline_chart(const RooflineChart& c) {
  Svg svg(c.width, c.height, "achieved time against the hardware bound per case, log scale");
  for (double t : log_ticks(c.x.d0, c.x.d1)) {
    const double x = c.x.map(t);
    svg.line(x, c.plot_top, x, c.plot_bottom, "grid");
    svg.text(x, c.plot_top - 8, time_tick(t), "tick", "middle");
    svg.text(x, c.plot_bottom + 16, time_tick(t), "tick", "middle");
  }
  for (const auto& m : c.marks) {
    svg.text(c.plot_left - 8, m.y + 4, m.label, "label", "end");
    svg.line(m.x_bound, m.y, m.x_achieved, m.y, "gap");
    svg.rect(m.x_bound - 2, m.y - 8, 4, 16, "bound", fmt::format("{}: bound {} ({})", m.label, seconds_text(m.bound_s), m.limiter));
    svg.circle(m.x_achieved, m.y, 5, "achieved", fmt::format("{}: achieved {}", m.label, seconds_text(m.achieved_s)));
    svg.text(c.plot_right + 8, m.y + 4, fmt::format("{:.1f}% of roofline, {}", 100 * m.fraction, m.limiter), "value");
  }
  return svg.str();
}

} // namespace temper::report
