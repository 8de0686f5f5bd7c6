#include "judge/profile/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace temper::judge::profile {

std::string_view direction_name(Direction d) {
  switch (d) {
  case Direction::Lower: return "lower";
  case Direction::Higher: return "higher";
  case Direction::Neither: return "neither";
  }
  return "neither";
}

const std::vector<MetricDef>& metric_registry() {
  using D = Direction;
  static const std::vector<MetricDef> kMetrics = {
      // Timing: the profile's own cold calls, or the paired timing's candidate arm when the judge timed the case.
      {"time.median_us", "us", D::Lower, "worker clock", "median kernel time of one call"},
      {"time.mean_us", "us", D::Lower, "worker clock", "mean kernel time of one call"},
      {"time.min_us", "us", D::Lower, "worker clock", "fastest call"},
      {"time.max_us", "us", D::Lower, "worker clock", "slowest call"},
      {"time.rel_spread", "ratio", D::Lower, "worker clock", "(q3 - q1) / median of the call times"},
      {"time.samples", "count", D::Neither, "worker clock", "calls measured"},
      {"time.speedup", "ratio", D::Higher, "paired timing", "speedup over the reference (judge with --reference)"},
      // Software counters: perf_event_open on the worker process around each call.
      {"sw.task_clock_ms", "ms", D::Lower, "perf_event_open (software)", "CPU time of all the kernel's threads per call"},
      {"sw.page_faults", "count", D::Lower, "perf_event_open (software)", "page faults per call"},
      {"sw.context_switches", "count", D::Lower, "perf_event_open (software)", "context switches per call"},
      {"sw.cpu_migrations", "count", D::Lower, "perf_event_open (software)", "CPU migrations per call"},
      // Hardware counters: only where the machine exposes a PMU.
      {"hw.cycles", "count", D::Lower, "perf_event_open (hardware)", "core cycles per call"},
      {"hw.instructions", "count", D::Lower, "perf_event_open (hardware)", "instructions retired per call"},
      {"hw.ipc", "ratio", D::Higher, "perf_event_open (hardware)", "instructions per cycle"},
      {"hw.l1d_misses", "count", D::Lower, "perf_event_open (hardware)", "L1 data cache read misses per call"},
      {"hw.llc_misses", "count", D::Lower, "perf_event_open (hardware)", "last-level cache misses per call"},
      {"hw.branch_misses", "count", D::Lower, "perf_event_open (hardware)", "mispredicted branches per call"},
      // Cache simulation of one call (opt-in: --with cachegrind).
      {"cg.Ir", "count", D::Lower, "valgrind", "instructions executed in one call"},
      {"cg.Dr", "count", D::Neither, "valgrind", "data reads in one call"},
      {"cg.Dw", "count", D::Neither, "valgrind", "data writes in one call"},
      {"cg.D1mr", "count", D::Lower, "valgrind", "L1 data read misses"},
      {"cg.D1mw", "count", D::Lower, "valgrind", "L1 data write misses"},
      {"cg.LLmr", "count", D::Lower, "valgrind", "last-level read misses (instruction and data)"},
      {"cg.LLmw", "count", D::Lower, "valgrind", "last-level write misses"},
      // Static analysis of the artifact's code.
      {"static.code_bytes", "bytes", D::Neither, "objdump", "machine code of the kernel's functions"},
      {"static.instructions", "count", D::Neither, "objdump", "instructions in the kernel's functions"},
      {"static.vec512_ops", "count", D::Neither, "objdump", "instructions on zmm (512-bit) registers"},
      {"static.vec256_ops", "count", D::Neither, "objdump", "instructions on ymm (256-bit) registers"},
      {"static.vec128_ops", "count", D::Neither, "objdump", "packed instructions on xmm (128-bit) registers"},
      {"static.scalar_fp_ops", "count", D::Neither, "objdump", "scalar floating-point instructions (ss/sd, x87)"},
      {"static.fma_ops", "count", D::Neither, "objdump", "fused multiply-add instructions"},
      {"static.nontemporal_stores", "count", D::Neither, "objdump", "non-temporal (streaming) stores"},
      {"static.prefetches", "count", D::Neither, "objdump", "software prefetch instructions"},
      // Build.
      {"compile.seconds", "s", D::Lower, "compile cache", "time the compiler took for the artifact"},
      {"compile.vectorized_loops", "count", D::Neither, "compiler remarks", "loops the compiler reports as vectorized"},
      // CUDA backend (fed by its build step).
      {"cuda.registers", "count", D::Lower, "ptxas", "registers per thread"},
      {"cuda.smem_bytes", "bytes", D::Neither, "ptxas", "static shared memory per block"},
      {"cuda.spill_bytes", "bytes", D::Lower, "ptxas", "spill stores plus loads per thread"},
      {"cuda.stack_bytes", "bytes", D::Lower, "ptxas", "stack frame per thread"},
  };
  return kMetrics;
}

const MetricDef* find_metric(std::string_view name) {
  for (const auto& m : metric_registry())
    if (m.name == name) return &m;
  return nullptr;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

} // namespace

std::string closest_metric(std::string_view name) {
  std::string best;
  size_t best_d = 4; // farther than 3 edits is no suggestion
  for (const auto& m : metric_registry()) {
    size_t d = edit_distance(name, m.name);
    if (d < best_d) {
      best_d = d;
      best = std::string(m.name);
    }
  }
  return best;
}

std::string MetricValue::text() const {
  if (!number) return "unsupported: " + reason;
  double v = *number;
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

void MetricSet::set(std::string_view name, double value) { m_values[std::string(name)] = MetricValue::of(value); }

void MetricSet::unsupported(std::string_view name, std::string reason) {
  m_values[std::string(name)] = MetricValue::unsupported(std::move(reason));
}

void MetricSet::unsupported_prefix(std::string_view prefix, const std::string& reason) {
  for (const auto& m : metric_registry()) {
    if (m.name.substr(0, prefix.size()) != prefix) continue;
    auto it = m_values.find(std::string(m.name));
    if (it == m_values.end() || !it->second.supported()) unsupported(m.name, reason);
  }
}

const MetricValue* MetricSet::find(std::string_view name) const {
  auto it = m_values.find(std::string(name));
  return it == m_values.end() ? nullptr : &it->second;
}

nlohmann::json MetricSet::to_json() const {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [name, v] : m_values) {
    if (v.number && std::isfinite(*v.number)) values[name] = *v.number;
    else if (v.number) values[name] = "unsupported: not a finite number";
    else values[name] = "unsupported: " + v.reason;
  }
  return {{"values", values}, {"attachments", m_attachments}};
}

Expected<MetricSet> MetricSet::from_json(const nlohmann::json& j) {
  MetricSet s;
  if (!j.is_object() || !j.contains("values") || !j["values"].is_object()) {
    return fail("a metrics block must be an object with a \"values\" object");
  }
  for (const auto& [name, v] : j["values"].items()) {
    if (!find_metric(name)) return fail("unknown metric '{}' in the metrics block", name);
    if (v.is_number()) {
      s.set(name, v.get<double>());
    } else if (v.is_string()) {
      std::string text = v.get<std::string>();
      constexpr std::string_view kPrefix = "unsupported: ";
      s.unsupported(name, text.rfind(kPrefix, 0) == 0 ? text.substr(kPrefix.size()) : text);
    } else {
      return fail("metric '{}' must be a number or an \"unsupported: reason\" string", name);
    }
  }
  if (j.contains("attachments")) s.m_attachments = j["attachments"];
  return s;
}

} // namespace temper::judge::profile
