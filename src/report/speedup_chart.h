// Per-case speedup as horizontal bars on a log scale, from 1x to the estimate, with the 95%
// interval as a whisker and the verdict beside it. Layout and drawing are separate so the
// geometry can be checked numerically.
#pragma once

#include "report/svg.h"

#include <optional>
#include <string>
#include <vector>

namespace temper::report {

struct SpeedupRow {
  std::string label;               // "case 3"
  std::optional<double> speedup;   // none: the case was not timed
  std::optional<double> lo, hi;    // the interval, when determined
  std::string verdict;             // FASTER, SLOWER, SAME, AMBIGUOUS (a "?" suffix: not confirmed)
  std::string note;                // shown instead of a bar when there is no speedup
};

struct SpeedupBar {
  std::string label, verdict, note;
  double y = 0;                    // the row's centre line
  bool timed = false;
  double value = 0;
  double x_one = 0, x_value = 0;   // the bar runs between these
  bool has_interval = false;
  double x_lo = 0, x_hi = 0;
};

struct SpeedupChart {
  double width = 0, height = 0;
  double plot_left = 0, plot_right = 0, plot_top = 0, plot_bottom = 0;
  LogScale x;
  std::vector<SpeedupBar> bars;
};

inline constexpr double kSpeedupRowHeight = 24;

SpeedupChart layout_speedup_chart(const std::vector<SpeedupRow>& rows, double width);
std::string draw_speedup_chart(const SpeedupChart& chart);

} // namespace temper::report
