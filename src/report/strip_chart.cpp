#include "report/strip_chart.h"
#include "report/roofline_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace temper::report {

namespace {
constexpr double kStripLeft = 90, kStripRight = 250, kStripTop = 10, kStripPanel = 56, kStripJitter = 6;

// A fixed, evenly spread pattern in [-1, 1] (golden-ratio steps), so a report re-renders the same.
double jitter(size_t i) {
  const double f = std::fmod(static_cast<double>(i) * 0.6180339887498949, 1.0);
  return 2 * f - 1;
}

std::vector<std::pair<double, double>> dots(const std::vector<double>& samples, const LinearScale& x, double y) {
  std::vector<std::pair<double, double>> out;
  const size_t n = samples.size();
  const size_t shown = std::min(n, kMaxDotsPerArm);
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = shown == n ? k : k * n / shown;
    out.emplace_back(x.map(samples[i]), y + kStripJitter * jitter(k));
  }
  return out;
}
} // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

StripChart layout_strip_chart(const std::vector<StripRow>& rows, double width) {
  StripChart c;
  c.width = width;
  c.plot_left = kStripLeft;
  c.plot_right = width - kStripRight;
  c.height = kStripTop + kStripPanel * static_cast<double>(rows.size()) + 10;
  for (size_t i = 0; i < rows.size(); ++i) {
    const StripRow& r = rows[i];
    StripPanel p;
    p.label = r.label;
    double lo = INFINITY, hi = -INFINITY;
    for (const auto* arm : {&r.reference_s, &r.candidate_s}) {
      for (double s : *arm) {
        lo = std::min(lo, s);
        hi = std::max(hi, s);
      }
    }
    if (!std::isfinite(lo)) lo = hi = 0;
    const double pad = (hi - lo) * 0.05;
    p.x = {lo - pad, hi + pad, c.plot_left, c.plot_right};
    const double top = kStripTop + kStripPanel * static_cast<double>(i);
    p.y_reference = top + 16;
    p.y_candidate = top + 38;
    p.reference_dots = dots(r.reference_s, p.x, p.y_reference);
    p.candidate_dots = dots(r.candidate_s, p.x, p.y_candidate);
    p.reference_median_s = median_of(r.reference_s);
    p.candidate_median_s = median_of(r.candidate_s);
    p.x_reference_median = p.x.map(p.reference_median_s);
    p.x_candidate_median = p.x.map(p.candidate_median_s);
    p.reference_n = r.reference_s.size();
    p.candidate_n = r.candidate_s.size();
    c.panels.push_back(std::move(p));
  }
  return c;
}

std::string draw_strip_chart(const StripChart& c) {
  Svg svg(c.width, c.height, "timing samples of the reference and the candidate per case");
  for (const auto& p : c.panels) {
    const double top = p.y_reference - 16;
    svg.line(c.plot_left, top + kStripPanel - 2, c.plot_right, top + kStripPanel - 2, "grid");
    svg.text(c.plot_left - 8, p.y_reference + 14, p.label, "label", "end");
    svg.text(c.plot_left + 2, top + 8, seconds_text(p.x.d0), "tick");
    svg.text(c.plot_right - 2, top + 8, seconds_text(p.x.d1), "tick", "end");
    for (const auto& [x, y] : p.reference_dots) svg.circle(x, y, 2, "dot reference");
    for (const auto& [x, y] : p.candidate_dots) svg.circle(x, y, 2, "dot candidate");
    svg.line(p.x_reference_median, p.y_reference - 9, p.x_reference_median, p.y_reference + 9, "median");
    svg.line(p.x_candidate_median, p.y_candidate - 9, p.x_candidate_median, p.y_candidate + 9, "median");
    svg.text(c.plot_right + 8, p.y_reference + 4,
             fmt::format("reference: median {}, n={}", seconds_text(p.reference_median_s), p.reference_n), "value reference");
    svg.text(c.plot_right + 8, p.y_candidate + 4,
             fmt::format("candidate: median {}, n={}", seconds_text(p.candidate_median_s), p.candidate_n), "value candidate");
  }
  return svg.str();
}

} // namespace temper::report
