// Per case, the candidate's achieved time against the certified hardware lower bound on a log
// time axis: a line from the bound (the roofline) to the achieved median, the fraction of the
// roofline and the limiter (memory or compute) beside it.
#pragma once

#include "report/svg.h"

#include <string>
#include <vector>

namespace temper::report {

struct RooflineRow {
  std::string label;
  double achieved_s = 0;
  double bound_s = 0;
  std::string limiter;
};

struct RooflineMark {
  std::string label, limiter;
  double y = 0;
  double x_bound = 0, x_achieved = 0;
  double fraction = 0; // bound / achieved
  double achieved_s = 0, bound_s = 0;
};

struct RooflineChart {
  double width = 0, height = 0;
  double plot_left = 0, plot_right = 0, plot_top = 0, plot_bottom = 0;
  LogScale x; // seconds
  std::vector<RooflineMark> marks;
};

RooflineChart layout_roofline_chart(const std::vector<RooflineRow>& rows, double width);
std::string draw_roofline_chart(const RooflineChart& chart);

// "12.3 us", "4.56 ms", "1.20 s"
std::string seconds_text(double s);

} // namespace temper::report
