#include "report/timeline_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace temper::report {

using nlohmann::json;

namespace {
constexpr double kTimelineLeft = 110, kTimelineRight = 30, kTimelineTop = 20, kTimelineBestHeight = 120, kTimelineLane = 26, kTimelineGap = 30;
const char* const kLaneKinds[] = {"probe", "submission", "gate", "escalation", "revision", "promotion"};

std::string outcome_class(const std::string& outcome) {
  std::string s = outcome;
  std::replace(s.begin(), s.end(), ' ', '-');
  return s.empty() ? "none" : s;
}
} // namespace

TimelineChart layout_timeline_chart(const json& events, double width) {
  TimelineChart c;
  c.width = width;
  c.plot_left = kTimelineLeft;
  c.plot_right = width - kTimelineRight;
  c.best_top = kTimelineTop;
  c.best_bottom = kTimelineTop + kTimelineBestHeight;
  const double n = static_cast<double>(events.size());
  c.x = {n > 1 ? 1.0 : 0.0, n > 1 ? n : 2.0, c.plot_left + 10, c.plot_right - 10};
  std::vector<double> bests;
  for (const auto& e : events) {
    if (e.value("best_speedup", json()).is_number()) bests.push_back(e["best_speedup"].get<double>());
  }
  c.best_y = log_scale_for(bests, c.best_bottom, c.best_top, /*include_one=*/true);
  // Lanes: the fixed kinds that occur, in a fixed order.
  double y = c.best_bottom + kTimelineGap + kTimelineLane / 2;
  for (const char* kind : kLaneKinds) {
    const bool present = std::any_of(events.begin(), events.end(), [&](const json& e) { return e.value("kind", "") == kind; });
    if (!present) continue;
    c.lanes.emplace_back(kind, y);
    y += kTimelineLane;
  }
  c.height = y - kTimelineLane / 2 + 30;
  int round = 0;
  for (const auto& e : events) {
    const double x = c.x.map(e.value("seq", 0));
    const int r = e.value("round", 0);
    if (r != round) {
      c.rounds.emplace_back(x - 6, fmt::format("R{}", r));
      round = r;
    }
    auto lane = std::find_if(c.lanes.begin(), c.lanes.end(), [&](const auto& l) { return l.first == e.value("kind", ""); });
    if (lane == c.lanes.end()) continue;
    const json sp = e.value("speedup", json());
    std::string title = e.value("label", "") + ": " + e.value("outcome", "");
    if (sp.is_number()) title += fmt::format(", {:.3f}x", sp.get<double>());
    c.markers.push_back({x, lane->second, outcome_class(e.value("outcome", "")), title});
    const json best = e.value("best_speedup", json());
    const double by = c.best_y.map(best.is_number() ? best.get<double>() : 1.0);
    // A step line: level until the event, then the new level.
    if (!c.best_line.empty()) c.best_line.emplace_back(x, c.best_line.back().second);
    c.best_line.emplace_back(x, by);
  }
  return c;
}

std::string draw_timeline_chart(const TimelineChart& c) {
  Svg svg(c.width, c.height, "campaign timeline: events by kind and the best verified speedup");
  for (double t : log_ticks(c.best_y.d0, c.best_y.d1, 5)) {
    const double y = c.best_y.map(t);
    svg.line(c.plot_left, y, c.plot_right, y, "grid");
    svg.text(c.plot_left - 8, y + 4, tick_label(t) + "x", "tick", "end");
  }
  svg.text(c.plot_left, c.best_top - 6, "best verified speedup over the starting reference", "note");
  svg.polyline(c.best_line, "best");
  const double bottom = c.lanes.empty() ? c.best_bottom : c.lanes.back().second + 13;
  for (const auto& [x, label] : c.rounds) {
    svg.line(x, c.best_top, x, bottom, "round");
    svg.text(x + 3, bottom + 14, label, "tick");
  }
  for (const auto& [kind, y] : c.lanes) {
    svg.line(c.plot_left, y, c.plot_right, y, "lane");
    svg.text(c.plot_left - 8, y + 4, kind, "label", "end");
  }
  for (const auto& m : c.markers) svg.circle(m.x, m.y, 6, "event " + m.cls, m.title);
  return svg.str();
}

std::string draw_cost_chart(const json& costs, double width) {
  std::vector<std::pair<const char*, const char*>> categories = {
      {"agent_own_s", "agent (own)"}, {"probe_s", "probe/exploration"}, {"gate_s", "gate"},
      {"confirmation_s", "confirmation"}, {"compile_s", "compile"}, {"other_s", "other"}};
  // Waiting for a cluster's nodes, where a cluster ran the judge (docs/scale-out.md).
  if (costs.value("cluster_jobs", 0) > 0) categories.insert(categories.end() - 1, {"queue_s", "queue"});
  const double wall = std::max(costs.value("wall_s", 0.0), 1e-9);
  double most = 0;
  for (const auto& [key, name] : categories) most = std::max(most, costs.value(key, 0.0));
  constexpr double kTimelineRow = 24, kCostLeft = 150, kCostRight = 200;
  const double height = 20 + kTimelineRow * static_cast<double>(categories.size()) + 10;
  const LinearScale x{0, std::max(most, 1e-9), kCostLeft, width - kCostRight};
  Svg svg(width, height, "costs by category, seconds");
  double y = 20;
  for (const auto& [key, name] : categories) {
    const double s = costs.value(key, 0.0);
    svg.text(kCostLeft - 8, y + 12, name, "label", "end");
    svg.rect(kCostLeft, y + 3, x.map(s) - kCostLeft, kTimelineRow - 8, std::string("cost ") + key, fmt::format("{}: {:.1f} s", name, s));
    svg.text(width - kCostRight + 8, y + 12, fmt::format("{:.1f} s ({:.0f}%)", s, 100 * s / wall), "value");
    y += kTimelineRow;
  }
  return svg.str();
}

} // namespace temper::report
