#include "kb/target.h"

#include "build/compiler.h"
#include "util/hash.h"
#include "util/process.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <sys/utsname.h>

namespace temper::kb {

namespace {

struct ModelRange {
  int family;
  int model_lo;
  int model_hi;
  const char* name;
};

// AMD: family decides the generation except where Zen 3 and Zen 4 share family 25.
constexpr ModelRange kAmd[] = {
    {23, 0x00, 0x2f, "zen"},   {23, 0x30, 0xff, "zen2"}, {25, 0x00, 0x0f, "zen3"}, {25, 0x10, 0x1f, "zen4"},
    {25, 0x20, 0x5f, "zen3"},  {25, 0x60, 0xff, "zen4"}, {26, 0x00, 0xff, "zen5"}, {27, 0x00, 0xff, "zen6"},
};

// Intel family 6 server and client cores a kernel engineer meets; the rest fall back to f6mNN.
constexpr ModelRange kIntel[] = {
    {6, 0x55, 0x55, "skylakex"},       {6, 0x6a, 0x6a, "icelakex"},     {6, 0x6c, 0x6c, "icelakex"},
    {6, 0x8f, 0x8f, "sapphirerapids"}, {6, 0xcf, 0xcf, "emeraldrapids"}, {6, 0xad, 0xad, "graniterapids"},
    {6, 0xae, 0xae, "graniterapids"},  {6, 0x97, 0x97, "alderlake"},    {6, 0x9a, 0x9a, "alderlake"},
    {6, 0xb7, 0xb7, "raptorlake"},     {6, 0xba, 0xba, "raptorlake"},   {6, 0x8c, 0x8c, "tigerlake"},
    {6, 0x7e, 0x7e, "icelake"},        {6, 0x9e, 0x9e, "kabylake"},     {6, 0x5e, 0x5e, "skylake"},
    {6, 0x4f, 0x4f, "broadwell"},      {6, 0x3f, 0x3f, "haswell"},      {6, 0xaa, 0xaa, "meteorlake"},
};

template <size_t N>
const char* lookup(const ModelRange (&table)[N], int family, int model) {
  for (const auto& r : table) {
    if (r.family == family && model >= r.model_lo && model <= r.model_hi) return r.name;
  }
  return nullptr;
}

} // namespace

bool TargetFingerprint::has_flag(const std::string& f) const {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

std::string TargetFingerprint::microarch() const {
  const char* name = nullptr;
  if (cpu_vendor == "AuthenticAMD") name = lookup(kAmd, family, model);
  if (cpu_vendor == "GenuineIntel") name = lookup(kIntel, family, model);
  if (name) return name;
  return fmt::format("unknown-f{}m{}", family, model);
}

TargetClassParts parse_target_class(const std::string& target_class) {
  const size_t first = target_class.find('-');
  const size_t last = target_class.rfind('-');
  if (first == std::string::npos || last == first) return {};
  return {target_class.substr(0, first), target_class.substr(first + 1, last - first - 1), target_class.substr(last + 1)};
}

std::string microarch_vendor(const std::string& microarch) {
  for (const auto& r : kAmd) {
    if (microarch == r.name) return "AuthenticAMD";
  }
  for (const auto& r : kIntel) {
    if (microarch == r.name) return "GenuineIntel";
  }
  return {};
}

std::string TargetFingerprint::isa_tier() const {
  if (arch == "aarch64") return has_flag("sve") ? "sve" : "neon";
  if (has_flag("avx512f")) return "avx512";
  if (has_flag("avx2")) return "avx2";
  if (has_flag("avx")) return "avx";
  if (has_flag("sse4_2")) return "sse4";
  return "base";
}

std::string TargetFingerprint::target_class() const {
  if (!device_class.empty()) return device_class;
  return fmt::format("{}-{}-{}", arch, microarch(), isa_tier());
}

std::string TargetFingerprint::id() const {
  util::Hasher h;
  h.add(arch).add(cpu_vendor).add(cpu_model).add(fmt::format("{}/{}/{}", family, model, stepping));
  for (const auto& f : flags) h.add(f);
  h.add(fmt::format("{}/{}/{}/{}/{}", l1d_bytes, l2_bytes, llc_bytes, cores, memory_gib)).add(compiler);
  if (!device_class.empty()) h.add(device_class).add(device); // a CPU's id stays what it was
  return h.hex().substr(0, 16);
}

nlohmann::json TargetFingerprint::to_json() const {
  nlohmann::json j = {{"schema_version", 1},
          {"kind", "temper.target"},
          {"target_class", target_class()},
          {"fingerprint", id()},
          {"arch", arch},
          {"microarch", microarch()},
          {"isa_tier", isa_tier()},
          {"cpu_vendor", cpu_vendor},
          {"cpu_model", cpu_model},
          {"family", family},
          {"model", model},
          {"stepping", stepping},
          {"flags", flags},
          {"l1d_bytes", l1d_bytes},
          {"l2_bytes", l2_bytes},
          {"llc_bytes", llc_bytes},
          {"cores", cores},
          {"memory_gib", memory_gib},
          {"compiler", compiler}};
  if (!device_class.empty()) {
    j["device_class"] = device_class;
    j["device"] = device;
  }
  return j;
}

TargetFingerprint make_fingerprint(const util::HostInfo& host, const std::string& compiler_version) {
  TargetFingerprint t;
  struct utsname u {};
  t.arch = ::uname(&u) == 0 ? u.machine : "unknown";
  t.cpu_vendor = host.cpu_vendor;
  t.cpu_model = host.cpu_model;
  // host.cpu_family is "family/model/stepping".
  std::sscanf(host.cpu_family.c_str(), "%d/%d/%d", &t.family, &t.model, &t.stepping);
  t.flags = host.cpu_flags;
  std::sort(t.flags.begin(), t.flags.end());
  t.l1d_bytes = host.l1d_bytes;
  t.l2_bytes = host.l2_bytes;
  t.llc_bytes = host.llc_bytes;
  t.cores = host.logical_cpus;
  t.memory_gib = host.memory_bytes >> 30;
  t.compiler = compiler_version;
  return t;
}

const TargetFingerprint& current_target() {
  static const TargetFingerprint t = [] {
    auto id = build::identify_compiler("g++", util::default_process_runner());
    return make_fingerprint(util::host_info(), id ? id->version : std::string());
  }();
  return t;
}

} // namespace temper::kb
