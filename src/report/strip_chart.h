// The timing samples of both arms, per case, as strip plots: one dot per timed call (jittered
// vertically by a fixed pattern, so the picture is reproducible), the median as a bar. Each
// case has its own linear time axis spanning both arms, so overlap and noise are visible
// whatever the case's size.
#pragma once

#include "report/svg.h"

#include <string>
#include <utility>
#include <vector>

namespace temper::report {

struct StripRow {
  std::string label;
  std::vector<double> reference_s, candidate_s;
};

struct StripPanel {
  std::string label;
  LinearScale x; // seconds -> pixels
  double y_reference = 0, y_candidate = 0;
  std::vector<std::pair<double, double>> reference_dots, candidate_dots;
  double x_reference_median = 0, x_candidate_median = 0;
  double reference_median_s = 0, candidate_median_s = 0;
  size_t reference_n = 0, candidate_n = 0; // samples, before any thinning
};

struct StripChart {
  double width = 0, height = 0;
  double plot_left = 0, plot_right = 0;
  std::vector<StripPanel> panels;
};

// At most this many dots per arm and case; more samples are thinned evenly (the median uses
// all of them).
inline constexpr size_t kMaxDotsPerArm = 300;

StripChart layout_strip_chart(const std::vector<StripRow>& rows, double width);
std::string draw_strip_chart(const StripChart& chart);

double median_of(std::vector<double> v);

} // namespace temper::report
