// A tiny SVG builder and the scales every chart shares. The charts compute their geometry with
// these scales (so tests check numbers, not markup) and then draw it with Svg.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace temper::report {

// Text for XML/HTML: & < > " ' escaped.
std::string escape_xml(std::string_view text);

// A linear map from a data interval to a pixel interval (either may be reversed).
struct LinearScale {
  double d0 = 0, d1 = 1; // domain
  double r0 = 0, r1 = 1; // range, pixels
  double map(double v) const;
};

// A log10 map: equal ratios take equal pixels, so 0.5x and 2x sit at the same distance from 1x.
// Domain values must be positive; map() clamps non-positive values to the domain's low end.
struct LogScale {
  double d0 = 0.1, d1 = 10;
  double r0 = 0, r1 = 1;
  double map(double v) const;
};

// A log domain that holds every value and 1.0, widened to whole decade subdivisions (1, 2, 5)
// so the ends are round numbers. Values that are not positive or not finite are ignored.
LogScale log_scale_for(const std::vector<double>& values, double r0, double r1, bool include_one);

// Tick values inside [d0, d1] on the 1-2-5 sequence (and the decades alone when that gives
// too many, more than max_ticks; evenly spaced round values when it gives fewer than 3).
std::vector<double> log_ticks(double d0, double d1, int max_ticks = 9);

// "0.5", "2", "20", "0.002", "1.5e+06": short tick labels.
std::string tick_label(double v);

// An SVG document built element by element. Classes style it from the page's CSS; `title`
// adds a tooltip (readable without JavaScript).
class Svg {
public:
  Svg(double width, double height, std::string_view aria_label);
  void rect(double x, double y, double w, double h, std::string_view cls, std::string_view title = {});
  void line(double x1, double y1, double x2, double y2, std::string_view cls);
  void circle(double cx, double cy, double r, std::string_view cls, std::string_view title = {});
  // anchor: start | middle | end
  void text(double x, double y, std::string_view content, std::string_view cls, std::string_view anchor = "start");
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view cls);
  std::string str() const; // the <svg> element

private:
  double m_width, m_height;
  std::string m_label;
  std::string m_body;
};

} // namespace temper::report
