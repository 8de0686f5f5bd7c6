// Compiler drivers: which compiler, its identity (for cache keys), and the command line for a
// kernel shared object or a golden executable.
#pragma once

#include "core/task.h"
#include "util/error.h"
#include "util/process.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace temper::build {

namespace fs = std::filesystem;

enum class ArtifactKind { SharedObject, Executable };

// Host compilers (g++, clang++) build CPU kernels and goldens; nvcc builds CUDA kernels
// (build/cuda_compiler.h has its command line).
enum class CompilerKind { Host, Cuda };

struct CompilerSpec {
  std::string program = "g++";                       // g++, clang++, or a path
  std::vector<std::string> flags = {"-O3", "-march=native"}; // optimization flags for kernels
  CompilerKind kind = CompilerKind::Host;
  std::string cuda_arch = {};                        // Cuda: "sm_90"
};

// The compiler as a cache key sees it: resolved path, version text, and (because -march=native
// means "this CPU") the host CPU signature.
struct CompilerIdentity {
  std::string path;
  std::string version; // first line of --version
  std::string key;     // hash of everything above plus the CPU signature
};

// Runs `program --version` once per program per process.
Expected<CompilerIdentity> identify_compiler(const std::string& program, util::ProcessRunner& runner);

using Define = std::pair<std::string, std::string>;

struct CompileRequest {
  fs::path source;
  ArtifactKind kind = ArtifactKind::SharedObject;
  std::vector<std::string> flags;   // replaces CompilerSpec::flags when non-empty
  std::vector<Define> defines;      // -DNAME=VALUE, e.g. per-case specialization
  std::vector<fs::path> include_dirs; // besides temper's include dir and the source's directory
  std::string label;                // for progress and reports ("case 5", "golden")
};

// The full argument vector for one compile writing `output`.
std::vector<std::string> compile_command(const CompilerSpec& compiler, const CompileRequest& req,
                                         const fs::path& output);

// Where include/temper lives: $TEMPER_INCLUDE_DIR, else the source tree's include/ recorded at
// build time, else ../include beside the temper executable.
fs::path temper_include_dir();

// Whether the source asks for per-case specialization (a line `// temper: specialize`).
bool wants_specialization(const std::string& source_text);

// Macros describing one case, for specialized builds: TEMPER_CASE_ID, TEMPER_NUM_INPUTS,
// TEMPER_IN<i>_RANK, TEMPER_IN<i>_DIM<d>, TEMPER_IN<i>_DTYPE (a temper_dtype value),
// TEMPER_ATTR_<name> (ints, bools as 0/1, floats), TEMPER_SPECIALIZED=1.
std::vector<Define> specialization_defines(const core::Operator& op, const core::Case& c);

} // namespace temper::build
