#include "judge/common.h"

#include <ctime>
#include <random>

namespace temper::judge {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

int job_count(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool needs_low_precision(const core::Task& task, const std::vector<GoldenOutput>& outputs) {
  for (const auto& o : outputs) {
    const std::string& s = task.tolerance_for(o.name).standard;
    if (s == "cann-bench" || s == "flashattention") return true;
  }
  return false;
}

} // namespace temper::judge
