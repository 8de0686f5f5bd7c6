#include "judge/profile/static_mix.h"
#include "util/text.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace temper::judge::profile {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }

// Functions the C runtime links into every shared object; not the kernel's code.
constexpr std::array<std::string_view, 6> kRuntimeFunctions = {
    "_init", "_fini", "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux", "frame_dummy"};

bool is_kernel_section(std::string_view section) {
  return !(section == ".init" || section == ".fini" || starts_with(section, ".plt"));
}

// Scalar SSE/AVX floating point: the mnemonic ends in ss or sd (after AT&T's size suffix on
// conversions from integers, cvtsi2ssl) and it works on xmm registers, which tells these apart
// from string instructions such as movsd without operands.
bool is_scalar_sse(std::string_view m, std::string_view ops) {
  if (ops.find("%xmm") == std::string_view::npos) return false;
  std::string_view base = m;
  if (starts_with(base, "vcvtsi2") || starts_with(base, "cvtsi2") || starts_with(base, "vcvtusi2")) {
    if (ends_with(base, "l") || ends_with(base, "q")) base.remove_suffix(1);
  }
  if (!(ends_with(base, "ss") || ends_with(base, "sd"))) return false;
  // Packed conversions whose names end in ...ss/...sd do not exist, but these integer ones do.
  return !(starts_with(base, "pmovs") || starts_with(base, "vpmovs") || starts_with(base, "pabs") || starts_with(base, "vpabs") ||
           starts_with(base, "psubs") || starts_with(base, "vpsubs") || starts_with(base, "padds") || starts_with(base, "vpadds"));
}

// x87: every mnemonic starts with f (fld, fmulp, fstp, ...); none of the others do, except the
// fences, which start with l/m/s.
bool is_x87(std::string_view m) { return starts_with(m, "f") && !starts_with(m, "fxsave") && !starts_with(m, "fxrstor"); }

} // namespace

InstructionKind classify(std::string_view m, std::string_view ops) {
  if (is_x87(m)) return InstructionKind::ScalarFp;
  if (ops.find("%zmm") != std::string_view::npos) return InstructionKind::Vec512;
  if (ops.find("%ymm") != std::string_view::npos) return InstructionKind::Vec256;
  if (ops.find("%xmm") != std::string_view::npos) {
    return is_scalar_sse(m, ops) ? InstructionKind::ScalarFp : InstructionKind::Vec128;
  }
  return InstructionKind::Other;
}

InstructionMix classify_disassembly(std::string_view text) {
  InstructionMix mix;
  std::string_view section;
  bool counting = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);

    if (starts_with(line, "Disassembly of section ")) {
      section = line.substr(23);
      if (ends_with(section, ":")) section.remove_suffix(1);
      counting = false;
      continue;
    }
    // A function header: "0000000000001139 <temper_kernel>:".
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && ends_with(line, ">:")) {
      size_t lt = line.find('<');
      std::string_view name = lt == std::string_view::npos ? "" : line.substr(lt + 1, line.size() - lt - 3);
      counting = is_kernel_section(section) &&
                 std::find(kRuntimeFunctions.begin(), kRuntimeFunctions.end(), name) == kRuntimeFunctions.end();
      if (counting) ++mix.functions;
      continue;
    }
    if (!counting) continue;
    // An instruction: "    1139:\t48 89 e5             \tmov    %rsp,%rbp". Long encodings
    // continue on a line with the address and more bytes but no third field.
    size_t tab1 = line.find('\t');
    if (tab1 == std::string_view::npos || util::trim(line.substr(0, tab1)).empty() || !ends_with(util::trim(line.substr(0, tab1)), ":")) continue;
    std::string_view rest = line.substr(tab1 + 1);
    size_t tab2 = rest.find('\t');
    std::string_view bytes = rest.substr(0, tab2);
    for (char ch : bytes)
      if (std::isxdigit(static_cast<unsigned char>(ch))) ++mix.code_bytes;
    if (tab2 == std::string_view::npos) continue;
    std::string_view ins = util::trim(rest.substr(tab2 + 1));
    if (ins.empty() || starts_with(ins, "(bad)")) continue;
    // Prefixes (rep, lock, notrack, bnd, data16) come before the mnemonic.
    for (std::string_view p : {"rep ", "repz ", "repnz ", "lock ", "notrack ", "bnd ", "data16 ", "cs ", "ds "}) {
      if (starts_with(ins, p)) ins = util::trim(ins.substr(p.size()));
    }
    size_t sp = ins.find_first_of(" \t");
    std::string_view m = ins.substr(0, sp);
    std::string_view ops = sp == std::string_view::npos ? std::string_view{} : util::trim(ins.substr(sp));
    // Drop a trailing comment ("# 2008 <...>").
    if (size_t hash = ops.find('#'); hash != std::string_view::npos) ops = util::trim(ops.substr(0, hash));
    ++mix.instructions;
    switch (classify(m, ops)) {
    case InstructionKind::Vec512: ++mix.vec512; break;
    case InstructionKind::Vec256: ++mix.vec256; break;
    case InstructionKind::Vec128: ++mix.vec128; break;
    case InstructionKind::ScalarFp: ++mix.scalar_fp; break;
    case InstructionKind::Other: break;
    }
    if (starts_with(m, "vfmadd") || starts_with(m, "vfmsub") || starts_with(m, "vfnmadd") || starts_with(m, "vfnmsub")) ++mix.fma;
    if ((starts_with(m, "movnt") || starts_with(m, "vmovnt")) && !starts_with(m, "movntdqa") && !starts_with(m, "vmovntdqa")) {
      ++mix.nontemporal_stores;
    }
    if (starts_with(m, "prefetch")) ++mix.prefetches;
  }
  // Two hex digits per byte.
  mix.code_bytes /= 2;
  return mix;
}

Expected<InstructionMix> analyze_artifact(const std::filesystem::path& artifact, util::ProcessRunner& runner) {
  std::string objdump = util::find_program("objdump");
  if (objdump.empty()) return fail("objdump is not installed (Debian package binutils)");
  util::Command cmd;
  cmd.argv = {objdump, "-d", "--wide", artifact.string()};
  cmd.timeout = std::chrono::seconds(60);
  cmd.max_output_bytes = size_t{64} << 20;
  util::ProcessResult r = runner.run(cmd);
  if (!r.ok()) return fail("objdump -d {} failed ({}): {}", artifact.string(), r.describe(), r.output.substr(0, 500));
  return classify_disassembly(r.output);
}

void add_static_metrics(const InstructionMix& mix, MetricSet& out) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  out.set("static.code_bytes", d(mix.code_bytes));
  out.set("static.instructions", d(mix.instructions));
  out.set("static.vec512_ops", d(mix.vec512));
  out.set("static.vec256_ops", d(mix.vec256));
  out.set("static.vec128_ops", d(mix.vec128));
  out.set("static.scalar_fp_ops", d(mix.scalar_fp));
  out.set("static.fma_ops", d(mix.fma));
  out.set("static.nontemporal_stores", d(mix.nontemporal_stores));
  out.set("static.prefetches", d(mix.prefetches));
}

} // namespace temper::judge::profile
