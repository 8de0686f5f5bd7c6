// nvcc as a kernel compiler: where it is, and the command line for a CUDA candidate's shared
// object. temper runs nvcc at run time as it runs g++, so nothing here needs a CUDA toolkit to
// build; without nvcc a CUDA job says so.
#pragma once

#include "build/compiler.h"

#include <filesystem>
#include <string>
#include <vector>

namespace temper::build {

// The architecture when neither the device nor --cuda-arch says (Hopper).
inline constexpr const char* kDefaultCudaArch = "sm_90";

// nvcc's path: $TEMPER_NVCC, else nvcc on PATH, else $CUDA_HOME/bin, $CUDA_PATH/bin,
// /usr/local/cuda/bin. Empty when none exists.
std::string find_nvcc();

// The toolkit's library directory beside that nvcc (bin/../lib64), empty when unknown.
std::filesystem::path cuda_library_dir(const std::string& nvcc);

// A CompilerSpec for CUDA candidates: nvcc, `flags` (default -O3), the architecture
// ("sm_90", "90", "9.0" and "compute_90" all mean sm_90).
CompilerSpec cuda_compiler_spec(std::string nvcc, const std::string& arch, std::vector<std::string> flags = {});

// "sm_90" from "sm_90", "90", "9.0", "compute_90", "sm_90a" stays as it is; empty when
// the text is not an architecture.
std::string normalize_cuda_arch(const std::string& text);

// nvcc -std=c++20 FLAGS -arch=ARCH [-shared -Xcompiler -fPIC,-fvisibility=hidden -cudart shared]
// -Xptxas -v -I... -D... SOURCE -o OUTPUT. ptxas's verbose report lands in the diagnostics,
// where build/ptxas_resources.h reads registers, shared memory, spills and stack. The runtime
// is linked shared so that the candidate and temper-cuda-worker use one CUDA runtime.
std::vector<std::string> nvcc_command(const CompilerSpec& compiler, const CompileRequest& req,
                                      const std::filesystem::path& output);

} // namespace temper::build
