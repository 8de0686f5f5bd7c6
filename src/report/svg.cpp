#include "report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace temper::report {

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += ch;
    }
  }
  return out;
}

double LinearScale::map(double v) const {
  if (d1 == d0) return (r0 + r1) / 2;
  return r0 + (v - d0) / (d1 - d0) * (r1 - r0);
}

double LogScale::map(double v) const {
  const double lo = std::log10(d0), hi = std::log10(d1);
  const double lv = v > 0 ? std::log10(v) : lo;
  if (hi == lo) return (r0 + r1) / 2;
  return r0 + (lv - lo) / (hi - lo) * (r1 - r0);
}

namespace {

// The largest 1-2-5 step at or below v, and the smallest at or above it.
double step_below(double v) {
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {5.0, 2.0, 1.0}) {
    if (m * decade <= v * (1 + 1e-12)) return m * decade;
  }
  return decade;
}

double step_above(double v) {
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * decade >= v * (1 - 1e-12)) return m * decade;
  }
  return 10 * decade;
}

} // namespace

LogScale log_scale_for(const std::vector<double>& values, double r0, double r1, bool include_one) {
  double lo = include_one ? 1.0 : INFINITY, hi = include_one ? 1.0 : 0.0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!std::isfinite(lo) || hi <= 0) lo = hi = 1.0;
  LogScale s;
  s.d0 = step_below(lo);
  s.d1 = step_above(hi);
  if (s.d1 <= s.d0) s.d1 = step_above(s.d0 * 1.5); // one value: still a visible span
  s.r0 = r0;
  s.r1 = r1;
  return s;
}

std::vector<double> log_ticks(double d0, double d1, int max_ticks) {
  std::vector<double> all, decades;
  if (!(d0 > 0) || !(d1 > d0)) return all;
  for (int e = static_cast<int>(std::floor(std::log10(d0))); e <= static_cast<int>(std::ceil(std::log10(d1))); ++e) {
    const double decade = std::pow(10.0, e);
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * decade;
      if (v < d0 * (1 - 1e-9) || v > d1 * (1 + 1e-9)) continue;
      all.push_back(v);
      if (m == 1.0) decades.push_back(v);
    }
  }
  if (all.size() < 3) {
    // A narrow domain (e.g. [1, 2]): evenly spaced round ticks read better than two ends.
    const double raw = (d1 - d0) / 4;
    const double decade = std::pow(10.0, std::floor(std::log10(raw)));
    double step = decade;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
      if (m * decade >= raw * (1 - 1e-9)) {
        step = m * decade;
        break;
      }
    }
    all.clear();
    for (double k = std::ceil(d0 / step - 1e-9); k * step <= d1 * (1 + 1e-9); k += 1) all.push_back(k * step);
    return all;
  }
  if (static_cast<int>(all.size()) <= max_ticks || decades.size() < 2) return all;
  return decades;
}

std::string tick_label(double v) {
  if (v >= 1e5 || v < 1e-3) return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", v);
}

Svg::Svg(double width, double height, std::string_view aria_label) : m_width(width), m_height(height), m_label(aria_label) {}

namespace {
std::string title_element(std::string_view title) {
  return title.empty() ? std::string() : fmt::format("<title>{}</title>", escape_xml(title));
}
} // namespace

void Svg::rect(double x, double y, double w, double h, std::string_view cls, std::string_view title) {
  m_body += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"{}\">{}</rect>\n", x, y,
                        std::max(0.0, w), std::max(0.0, h), cls, title_element(title));
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view cls) {
  m_body += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" class=\"{}\"/>\n", x1, y1, x2, y2, cls);
}

void Svg::circle(double cx, double cy, double r, std::string_view cls, std::string_view title) {
  m_body += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" class=\"{}\">{}</circle>\n", cx, cy, r, cls,
                        title_element(title));
}

void Svg::text(double x, double y, std::string_view content, std::string_view cls, std::string_view anchor) {
  m_body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"{}\" text-anchor=\"{}\">{}</text>\n", x, y, cls, anchor,
                        escape_xml(content));
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, std::string_view cls) {
  std::string pts;
  for (const auto& [x, y] : points) pts += fmt::format("{:.1f},{:.1f} ", x, y);
  m_body += fmt::format("<polyline points=\"{}\" class=\"{}\"/>\n", pts, cls);
}

std::string Svg::str() const {
  // viewBox plus max-width: the chart scales down in a narrow window and never overflows it.
  return fmt::format("<svg viewBox=\"0 0 {:.0f} {:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
                     "role=\"img\" aria-label=\"{}\" style=\"max-width:100%;height:auto\">\n{}</svg>\n",
                     m_width, m_height, m_width, m_height, escape_xml(m_label), m_body);
}

} // namespace temper::report
