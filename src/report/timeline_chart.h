// A campaign's timeline (campaign::campaign_timeline): events in order along x, one lane per
// kind (probe, submission, gate, escalation, revision, promotion) with a marker per event
// coloured by its outcome, and above them the best verified speedup over the starting
// reference after each event, as a step line on a log scale. Events are spaced evenly rather
// than by time: a campaign's minutes-long turns and second-long probes would otherwise crowd.
#pragma once

#include "report/svg.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace temper::report {

struct TimelineMarker {
  double x = 0, y = 0;
  std::string cls;   // outcome class: accepted, rejected, probe, promoted, ...
  std::string title; // the event's label, outcome and speedup
};

struct TimelineChart {
  double width = 0, height = 0;
  double plot_left = 0, plot_right = 0, best_top = 0, best_bottom = 0;
  LinearScale x;      // event sequence number -> pixels
  LogScale best_y;    // best speedup -> pixels
  std::vector<std::pair<std::string, double>> lanes; // kind, y
  std::vector<TimelineMarker> markers;
  std::vector<std::pair<double, double>> best_line;
  std::vector<std::pair<double, std::string>> rounds; // x where a round starts, "R2"
};

// `events`: the "events" array of campaign_timeline.
TimelineChart layout_timeline_chart(const nlohmann::json& events, double width);
std::string draw_timeline_chart(const TimelineChart& chart);

// Costs by category (campaign status "costs"): one bar per category on a linear scale of
// seconds, with its share of the wall time.
std::string draw_cost_chart(const nlohmann::json& costs, double width);

} // namespace temper::report
