// The metric registry and metric values. Every metric the judge can report has a stable dotted
// name, a unit, a direction (whether lower or higher is better, or neither) and a source (the
// collector that measures it). A value is a number or "unsupported: reason": a machine that
// cannot measure something says why, and never reports a zero in its place.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge::profile {

enum class Direction { Lower, Higher, Neither };

std::string_view direction_name(Direction d); // "lower", "higher", "neither"

struct MetricDef {
  std::string_view name;        // "cg.D1mr"
  std::string_view unit;        // "us", "count", "bytes", ...
  Direction direction = Direction::Neither;
  std::string_view source;      // "worker clock", "perf_event_open", "valgrind", "objdump", "ptxas", ...
  std::string_view description;
};

// Every registered metric, in a stable order (grouped by prefix).
const std::vector<MetricDef>& metric_registry();

// The registered metric of that exact name, or nullptr.
const MetricDef* find_metric(std::string_view name);

// The registered name closest to `name` (for "did you mean"), or empty when none is close.
std::string closest_metric(std::string_view name);

struct MetricValue {
  std::optional<double> number; // set when measured
  std::string reason;           // why not, when unsupported

  static MetricValue of(double v) { return MetricValue{v, {}}; }
  static MetricValue unsupported(std::string why) { return MetricValue{std::nullopt, std::move(why)}; }
  bool supported() const { return number.has_value(); }
  std::string text() const; // "12.5" or "unsupported: reason"
};

// The measured metrics of one kernel artifact on one case, plus attachments that are not
// numbers (the compiler's vectorization remarks, collector settings, and "per_call": for a metric
// that is the median over the profiled calls (time.median_us, sw.*, hw.*), the calls' values).
class MetricSet {
public:
  // Only registered names may be set; anything else is a programming error caught by tests.
  void set(std::string_view name, double value);
  void unsupported(std::string_view name, std::string reason);
  // Marks every registered metric whose name starts with `prefix` unsupported for `reason`,
  // unless it already has a value.
  void unsupported_prefix(std::string_view prefix, const std::string& reason);

  const MetricValue* find(std::string_view name) const;
  const std::map<std::string, MetricValue>& values() const { return m_values; }
  nlohmann::json& attachments() { return m_attachments; }
  const nlohmann::json& attachments() const { return m_attachments; }

  // {"values": {"cg.D1mr": 1234, "hw.cycles": "unsupported: ..."}, "attachments": {...}}
  nlohmann::json to_json() const;
  // Reads what to_json wrote; names not in the registry are an error.
  static Expected<MetricSet> from_json(const nlohmann::json& j);

private:
  std::map<std::string, MetricValue> m_values;
  nlohmann::json m_attachments = nlohmann::json::object();
};

} // namespace temper::judge::profile
