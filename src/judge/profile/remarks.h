// The compiler's vectorization remarks for a kernel source, from a separate compile of the same
// command line plus the remark flags (-fopt-info-vec for g++, -Rpass=loop-vectorize and
// -Rpass-missed=loop-vectorize for clang++), so the cached artifact is not touched.
#pragma once

#include "build/compiler.h"
#include "judge/profile/metrics.h"
#include "util/error.h"
#include "util/process.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge::profile {

struct VectorizationRemarks {
  std::vector<std::string> flags;  // the remark flags used
  std::vector<std::string> lines;  // remark lines, at most kMaxRemarkLines
  int vectorized_loops = 0;        // remarks saying a loop was vectorized
  bool truncated = false;
};

inline constexpr size_t kMaxRemarkLines = 200;

// The remark flags for this compiler ("g++", "clang++" or a path; clang is recognised by name).
std::vector<std::string> remark_flags(const std::string& compiler_program);

// Keeps the remark lines of the compiler's output and counts the vectorized loops.
VectorizationRemarks parse_remarks(std::string_view compiler_output, std::vector<std::string> flags);

// Compiles `request` once more with the remark flags into a scratch directory.
Expected<VectorizationRemarks> collect_remarks(const build::CompilerSpec& compiler, const build::CompileRequest& request,
                                               util::ProcessRunner& runner);

// compile.vectorized_loops, and the remarks as the attachment "vectorization_remarks".
void add_remarks(const VectorizationRemarks& remarks, MetricSet& out);

} // namespace temper::judge::profile
