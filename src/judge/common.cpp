#include "judge/common.h"

#include "core/inputs.h"
#include "util/host.h"

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

bool always_needs_low_precision(const core::Task& task, const std::vector<GoldenOutput>& outputs) {
  for (const auto& o : outputs)
    if (task.tolerance_for(o.name).standard == "flashattention") return true;
  return false;
}

nlohmann::json job_context(const JobFacts& f) {
  const core::Task& task = *f.task;
  return {
      {"temper_version", f.temper_version},
      {"date", utc_now()},
      {"host", util::host_info().to_json()},
      {"compiler", {{"program", f.compiler->program}, {"path", f.compiler_id->path}, {"version", f.compiler_id->version}}},
      {"flags", f.compiler->flags},
      {"specialized_per_case", f.specialized},
      {"job_seed_id", core::seed_id(f.job_seed)},
      {"trials", f.trials},
      {"threads", task.config.threads},
      {"call_timeout_s", std::chrono::duration<double>(f.call_timeout).count()},
      {"task", {{"name", task.op.name}, {"dir", task.dir.string()}, {"cases_file", task.cases_file},
                {"tolerance", task.config.tolerance.standard}}},
      {"candidate", {{"path", f.candidate.string()}, {"sha", f.candidate_sha}}},
  };
}

} // namespace temper::judge
