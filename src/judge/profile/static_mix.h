// Static analysis of a kernel artifact: its disassembly (objdump, AT&T syntax) classified by
// instruction kind. The classifier is a pure function of objdump's text, so it is tested on
// fixed instruction sequences; analyze_artifact runs objdump on a real shared object.
#pragma once

#include "judge/profile/metrics.h"
#include "util/error.h"
#include "util/process.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace temper::judge::profile {

struct InstructionMix {
  int64_t code_bytes = 0;
  int64_t instructions = 0;
  int64_t vec512 = 0;       // widest register operand is zmm
  int64_t vec256 = 0;       // ymm
  int64_t vec128 = 0;       // xmm, excluding scalar floating point
  int64_t scalar_fp = 0;    // ss/sd forms on xmm, and x87
  int64_t fma = 0;          // vfmadd/vfmsub/vfnmadd/vfnmsub in any width
  int64_t nontemporal_stores = 0; // movnt* (movntdqa is a load and does not count)
  int64_t prefetches = 0;
  int functions = 0;        // functions counted
};

enum class InstructionKind { Other, Vec512, Vec256, Vec128, ScalarFp };

// The kind of one instruction from its mnemonic and operand text (AT&T: "vaddps", "%zmm1,%zmm2,%zmm3").
InstructionKind classify(std::string_view mnemonic, std::string_view operands);

// Classifies `objdump -d` output (with raw bytes shown). Only the kernel's code counts: the
// .init/.plt/.fini sections and the C runtime's helper functions (frame_dummy,
// register_tm_clones, ...) are skipped.
InstructionMix classify_disassembly(std::string_view objdump_text);

// Disassembles `artifact` with objdump and classifies it. Errors: objdump missing or failing.
Expected<InstructionMix> analyze_artifact(const std::filesystem::path& artifact, util::ProcessRunner& runner);

// Puts the mix into `out` as static.* metrics.
void add_static_metrics(const InstructionMix& mix, MetricSet& out);

} // namespace temper::judge::profile
