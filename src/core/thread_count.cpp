#include "core/thread_count.h"

#include <fmt/format.h>

#include <charconv>
#include <sched.h>

namespace temper::core {

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

Expected<int> parse_thread_count(std::string_view text) {
  if (text == "all") return usable_cpus();
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > kMaxThreads)
    return fail("threads must be 1 to {} or 'all' (every CPU this process may use), got '{}'", kMaxThreads, text);
  return n;
}

} // namespace temper::core
