// Counters from perf_event_open on another process (the worker), read by the judge right before
// it sends RUN and right after DONE comes back, so they cover one kernel call (plus the worker's
// reading of one command and writing of one reply). Opened with `inherit`, so threads the kernel
// starts are counted too. A counter this machine cannot open is "unsupported" with the errno and
// a hint (no PMU in a VM, perf_event_paranoid); opening never fails as a whole.
#pragma once

#include "judge/profile/metrics.h"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace temper::judge::profile {

class ProcessCounters {
public:
  // Opens the sw.* and hw.* counters on `pid`; each one that cannot be opened remembers why.
  explicit ProcessCounters(pid_t pid);
  ~ProcessCounters();
  ProcessCounters(const ProcessCounters&) = delete;
  ProcessCounters& operator=(const ProcessCounters&) = delete;

  // Current values, one per counter (nullopt where the counter is not open or the read failed).
  std::vector<std::optional<uint64_t>> read() const;

  // Adds per-call metrics from pairs of readings (before, after): the median over calls for every
  // counter, hw.ipc from cycles and instructions, and the reasons for the unsupported ones. The
  // per-call values themselves go to attachments()["per_call"][metric] (kb metric probes put an
  // interval on their median).
  void add_metrics(const std::vector<std::pair<std::vector<std::optional<uint64_t>>, std::vector<std::optional<uint64_t>>>>& calls,
                   MetricSet& out) const;

  // Why a counter of this kind cannot be opened here, or nullopt if it can (opened on this
  // process and closed again). Used by tests and `temper profile` to explain the machine.
  static std::optional<std::string> hardware_unsupported_reason();

private:
  struct Counter {
    std::string metric;
    int fd = -1;
    std::string reason; // when fd < 0
    double scale = 1;   // task clock: ns to ms
  };
  std::vector<Counter> m_counters;
};

} // namespace temper::judge::profile
