#include "judge/profile/perf_counters.h"

#include "util/fs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace temper::judge::profile {

namespace {

struct CounterSpec {
  const char* metric;
  uint32_t type;
  uint64_t config;
  double scale;
};

constexpr uint64_t kL1dReadMiss = PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                  (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);

const CounterSpec kSpecs[] = {
    {"sw.task_clock_ms", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1e-6},
    {"sw.page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1},
    {"sw.context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1},
    {"sw.cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1},
    {"hw.cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1},
    {"hw.instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1},
    {"hw.l1d_misses", PERF_TYPE_HW_CACHE, kL1dReadMiss, 1},
    {"hw.llc_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1},
    {"hw.branch_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1},
};

std::string paranoid_level() {
  auto text = util::read_file("/proc/sys/kernel/perf_event_paranoid");
  if (!text) return "unknown";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string open_failure(const CounterSpec& spec, int err) {
  const char* kind = spec.type == PERF_TYPE_SOFTWARE ? "software" : "hardware";
  std::string hint;
  switch (err) {
  case ENOENT:
  case EOPNOTSUPP:
  case ENODEV:
    hint = spec.type == PERF_TYPE_SOFTWARE ? "this kernel does not provide the event"
                                            : "this machine exposes no hardware performance counters (usual in a VM)";
    break;
  case EACCES:
  case EPERM:
    hint = fmt::format("not permitted (kernel.perf_event_paranoid = {}, or a container's seccomp profile)", paranoid_level());
    break;
  case ENOSYS: hint = "perf_event_open is not available on this kernel"; break;
  default: hint = "perf_event_open refused it"; break;
  }
  return fmt::format("perf_event_open({} {}) failed: {} ({}); {}", kind, spec.metric, std::strerror(err),
                     err == ENOENT ? "ENOENT" : err == EACCES ? "EACCES" : err == EPERM ? "EPERM" : std::to_string(err), hint);
}

// Opens one counter on `pid`, counting user and kernel time where allowed, else user time only
// (perf_event_paranoid 2 forbids the kernel part to unprivileged users).
int open_counter(const CounterSpec& spec, pid_t pid, int& err) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = spec.type;
  attr.config = spec.config;
  attr.inherit = 1;
  attr.exclude_hv = 1;
  long fd = ::syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    attr.exclude_kernel = 1;
    fd = ::syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  }
  err = fd < 0 ? errno : 0;
  return static_cast<int>(fd);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

ProcessCounters::ProcessCounters(pid_t pid) {
  for (const auto& spec : kSpecs) {
    Counter c;
    c.metric = spec.metric;
    c.scale = spec.scale;
    int err = 0;
    c.fd = open_counter(spec, pid, err);
    if (c.fd < 0) c.reason = open_failure(spec, err);
    m_counters.push_back(std::move(c));
  }
}

ProcessCounters::~ProcessCounters() {
  for (const auto& c : m_counters)
    if (c.fd >= 0) ::close(c.fd);
}

std::vector<std::optional<uint64_t>> ProcessCounters::read() const {
  std::vector<std::optional<uint64_t>> out;
  for (const auto& c : m_counters) {
    uint64_t v = 0;
    if (c.fd >= 0 && ::read(c.fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v)) out.emplace_back(v);
    else out.emplace_back(std::nullopt);
  }
  return out;
}

void ProcessCounters::add_metrics(
    const std::vector<std::pair<std::vector<std::optional<uint64_t>>, std::vector<std::optional<uint64_t>>>>& calls,
    MetricSet& out) const {
  std::optional<double> cycles, instructions;
  std::vector<double> cycle_calls, instruction_calls;
  for (size_t k = 0; k < m_counters.size(); ++k) {
    const Counter& c = m_counters[k];
    if (c.fd < 0) {
      out.unsupported(c.metric, c.reason);
      continue;
    }
    std::vector<double> deltas;
    for (const auto& [before, after] : calls) {
      if (k < before.size() && k < after.size() && before[k] && after[k] && *after[k] >= *before[k]) {
        deltas.push_back(static_cast<double>(*after[k] - *before[k]) * c.scale);
      }
    }
    if (deltas.empty()) {
      out.unsupported(c.metric, calls.empty() ? "no call completed" : "the counter could not be read");
      continue;
    }
    double m = median(deltas);
    out.set(c.metric, m);
    out.attachments()["per_call"][c.metric] = deltas;
    if (c.metric == "hw.cycles") {
      cycles = m;
      cycle_calls = deltas;
    }
    if (c.metric == "hw.instructions") {
      instructions = m;
      instruction_calls = deltas;
    }
  }
  if (cycles && instructions && *cycles > 0) {
    out.set("hw.ipc", *instructions / *cycles);
    std::vector<double> ipc;
    for (size_t k = 0; k < cycle_calls.size() && k < instruction_calls.size(); ++k) {
      if (cycle_calls[k] > 0) ipc.push_back(instruction_calls[k] / cycle_calls[k]);
    }
    out.attachments()["per_call"]["hw.ipc"] = ipc;
  } else {
    const MetricValue* cy = out.find("hw.cycles");
    out.unsupported("hw.ipc", cy && !cy->supported() ? cy->reason : "needs hw.cycles and hw.instructions");
  }
}

std::optional<std::string> ProcessCounters::hardware_unsupported_reason() {
  int err = 0;
  int fd = open_counter(kSpecs[4], 0, err);
  if (fd >= 0) {
    ::close(fd);
    return std::nullopt;
  }
  return open_failure(kSpecs[4], err);
}

} // namespace temper::judge::profile
