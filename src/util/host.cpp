#include "util/host.h"

#include "util/fs.h"
#include "util/hash.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <sys/utsname.h>
#include <thread>
#include <unistd.h>

namespace temper::util {

namespace {

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// Parses sysfs cache sizes such as "32K", "1024K", "32768K", "2M".
uint64_t parse_size(const std::string& text) {
  std::string t = trim(text);
  if (t.empty()) return 0;
  uint64_t mult = 1;
  char last = t.back();
  if (last == 'K') mult = 1024;
  if (last == 'M') mult = 1024 * 1024;
  if (last == 'G') mult = 1024ull * 1024 * 1024;
  if (mult != 1) t.pop_back();
  try {
    return std::stoull(t) * mult;
  } catch (...) {
    return 0;
  }
}

void read_caches(HostInfo& h) {
  const fs::path base = "/sys/devices/system/cpu/cpu0/cache";
  std::error_code ec;
  for (int i = 0; i < 8; ++i) {
    fs::path idx = base / fmt::format("index{}", i);
    if (!fs::exists(idx, ec)) break;
    auto level = read_file(idx / "level");
    auto type = read_file(idx / "type");
    auto size = read_file(idx / "size");
    if (!level || !type || !size) continue;
    int lv = std::atoi(level->c_str());
    std::string ty = trim(*type);
    uint64_t bytes = parse_size(*size);
    if (lv == 1 && ty == "Data") h.l1d_bytes = bytes;
    if (lv == 2) h.l2_bytes = bytes;
    if (lv >= 2 && ty != "Instruction") h.llc_bytes = std::max(h.llc_bytes, bytes);
  }
}

HostInfo probe() {
  HostInfo h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  struct utsname u {};
  if (::uname(&u) == 0) h.kernel = u.release;
  if (auto cpuinfo = read_file("/proc/cpuinfo")) {
    std::istringstream in(*cpuinfo);
    std::string line, family, model, stepping;
    while (std::getline(in, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos) {
        if (!h.cpu_model.empty()) break; // first processor block is enough
        continue;
      }
      std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (key == "vendor_id") h.cpu_vendor = value;
      else if (key == "model name") h.cpu_model = value;
      else if (key == "cpu family") family = value;
      else if (key == "model") model = value;
      else if (key == "stepping") stepping = value;
      else if (key == "flags") {
        std::istringstream fs_(value);
        std::string f;
        while (fs_ >> f) h.cpu_flags.push_back(f);
      }
    }
    h.cpu_family = fmt::format("{}/{}/{}", family, model, stepping);
  }
  h.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) h.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  read_caches(h);
  return h;
}

} // namespace

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

bool HostInfo::has_flag(const std::string& f) const {
  return std::find(cpu_flags.begin(), cpu_flags.end(), f) != cpu_flags.end();
}

std::string HostInfo::cpu_signature() const {
  Hasher hs;
  hs.add(cpu_vendor).add(cpu_model).add(cpu_family);
  for (const auto& f : cpu_flags) hs.add(f);
  return hs.hex().substr(0, 16);
}

nlohmann::json HostInfo::to_json() const {
  return {{"hostname", hostname},         {"kernel", kernel},         {"cpu_vendor", cpu_vendor},
          {"cpu_model", cpu_model},       {"cpu_family", cpu_family}, {"logical_cpus", logical_cpus},
          {"memory_bytes", memory_bytes}, {"l1d_bytes", l1d_bytes},   {"l2_bytes", l2_bytes},
          {"llc_bytes", llc_bytes},       {"cpu_signature", cpu_signature()},
          {"avx512f", has_flag("avx512f")}, {"avx2", has_flag("avx2")}, {"f16c", has_flag("f16c")}};
}

const HostInfo& host_info() {
  static const HostInfo info = probe();
  return info;
}

} // namespace temper::util
