#include "build/ptxas_resources.h"

#include <algorithm>
#include <regex>
#include <sstream>

namespace temper::build {

namespace {

int64_t number_before(const std::string& line, const std::regex& re) {
  std::smatch m;
  return std::regex_search(line, m, re) ? std::stoll(m[1].str()) : 0;
}

} // namespace

CudaResources parse_ptxas_resources(std::string_view text) {
  // ptxas 11..13 print, per architecture and entry:
  //   ptxas info    : Compiling entry function '_Z3addPfPKfi' for 'sm_90'
  //   ptxas info    : Function properties for _Z3addPfPKfi
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 10 registers, used 0 barriers, 4096 bytes smem, 372 bytes cmem[0]
  // and "Function properties" blocks alone for device functions that were not inlined.
  static const std::regex entry_re(R"(Compiling entry function '([^']+)'(?: for '([^']+)')?)");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex frame_re(
      R"((\d+) bytes stack frame,\s*(\d+) bytes spill stores,\s*(\d+) bytes spill loads)");
  static const std::regex regs_re(R"(Used (\d+) registers)");
  static const std::regex barriers_re(R"(used (\d+) barriers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  static const std::regex cmem0_re(R"((\d+) bytes cmem\[0\])");

  CudaResources out;
  std::string arch;             // of the entry being compiled
  int open_entry = -1;          // index of the entry whose "Used" line is still to come
  int props_target = -1;        // index the next stack-frame line belongs to
  std::istringstream in{std::string(text)};
  std::string line;
  auto find = [&](const std::string& name, const std::string& a) {
    for (size_t k = out.functions.size(); k-- > 0;) {
      if (out.functions[k].name == name && out.functions[k].arch == a) return static_cast<int>(k);
    }
    return -1;
  };
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      if (m[2].matched) arch = m[2].str();
      if (!arch.empty() && std::find(out.archs.begin(), out.archs.end(), arch) == out.archs.end()) out.archs.push_back(arch);
      KernelResources k;
      k.name = m[1].str();
      k.arch = arch;
      out.functions.push_back(std::move(k));
      open_entry = static_cast<int>(out.functions.size()) - 1;
      props_target = -1;
      continue;
    }
    if (std::regex_search(line, m, props_re)) {
      const std::string name = m[1].str();
      props_target = open_entry >= 0 && out.functions[static_cast<size_t>(open_entry)].name == name ? open_entry : find(name, arch);
      if (props_target < 0) {
        KernelResources f;
        f.name = name;
        f.arch = arch;
        f.entry = false;
        out.functions.push_back(std::move(f));
        props_target = static_cast<int>(out.functions.size()) - 1;
      }
      continue;
    }
    if (std::regex_search(line, m, frame_re)) {
      if (props_target >= 0) {
        KernelResources& f = out.functions[static_cast<size_t>(props_target)];
        f.stack_bytes = std::stoll(m[1].str());
        f.spill_store_bytes = std::stoll(m[2].str());
        f.spill_load_bytes = std::stoll(m[3].str());
      }
      props_target = -1;
      continue;
    }
    if (std::regex_search(line, m, regs_re)) {
      if (open_entry >= 0) {
        KernelResources& f = out.functions[static_cast<size_t>(open_entry)];
        f.registers = std::stoi(m[1].str());
        f.barriers = static_cast<int>(number_before(line, barriers_re));
        f.smem_bytes = number_before(line, smem_re);
        f.cmem0_bytes = number_before(line, cmem0_re);
      }
      open_entry = -1;
      continue;
    }
  }
  return out;
}

std::map<std::string, double> CudaResources::metrics(std::string_view arch) const {
  std::string a(arch);
  if (a.empty() && !archs.empty()) a = archs.back();
  std::map<std::string, double> m;
  bool any = false;
  double regs = 0, smem = 0, stack = 0, spill = 0;
  for (const auto& f : functions) {
    if (f.arch != a) continue;
    any = true;
    spill += static_cast<double>(f.spill_bytes());
    if (!f.entry) continue;
    regs = std::max(regs, static_cast<double>(f.registers));
    smem = std::max(smem, static_cast<double>(f.smem_bytes));
    stack = std::max(stack, static_cast<double>(f.stack_bytes));
  }
  if (!any) return m;
  m[std::string(kMetricRegisters)] = regs;
  m[std::string(kMetricSmemBytes)] = smem;
  m[std::string(kMetricSpillBytes)] = spill;
  m[std::string(kMetricStackBytes)] = stack;
  return m;
}

nlohmann::json CudaResources::to_json() const {
  nlohmann::json fns = nlohmann::json::array();
  for (const auto& f : functions) {
    fns.push_back({{"name", f.name},
                   {"arch", f.arch},
                   {"entry", f.entry},
                   {"registers", f.registers},
                   {"barriers", f.barriers},
                   {"smem_bytes", f.smem_bytes},
                   {"cmem0_bytes", f.cmem0_bytes},
                   {"stack_bytes", f.stack_bytes},
                   {"spill_store_bytes", f.spill_store_bytes},
                   {"spill_load_bytes", f.spill_load_bytes}});
  }
  nlohmann::json metrics_json = nlohmann::json::object();
  for (const auto& [name, value] : metrics()) metrics_json[name] = value;
  return {{"schema_version", 1}, {"archs", archs}, {"functions", fns}, {"metrics", metrics_json}};
}

} // namespace temper::build
