#include "util/process_cpu.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace temper::util {

std::optional<double> process_cpu_seconds(pid_t pid) {
  clockid_t clock;
  if (::clock_getcpuclockid(pid, &clock) != 0) return std::nullopt;
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return std::nullopt;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

// Reads a small /proc file whole into `buf` (NUL-terminated); false when it cannot.
bool read_small(const std::string& path, char* buf, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return false;
  size_t n = std::fread(buf, 1, size - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  return n > 0;
}

} // namespace

std::optional<double> thread_cpu_seconds(pid_t pid, pid_t tid) {
  char buf[128];
  if (!read_small(fmt::format("/proc/{}/task/{}/schedstat", pid, tid), buf, sizeof buf)) return std::nullopt;
  unsigned long long ns = 0;
  if (std::sscanf(buf, "%llu", &ns) != 1) return std::nullopt;
  return static_cast<double>(ns) * 1e-9;
}

int thread_count(pid_t pid) {
  char buf[1024];
  if (!read_small(fmt::format("/proc/{}/stat", pid), buf, sizeof buf)) return 0;
  // The command name may hold spaces and parentheses: fields count from the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  // After ')': state (3) ... num_threads is field 20, the 18th after the name.
  int field = 2;
  for (const char* q = p + 1; *q; ++q) {
    if (*q != ' ') continue;
    if (++field == 20) return std::atoi(q + 1);
  }
  return 0;
}

} // namespace temper::util
