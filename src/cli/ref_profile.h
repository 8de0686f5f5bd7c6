// `temper ref profile`: the one place where a sealed reference meets the profiler. The profiling
// module (another branch) connects here; until it does, the command says it is unavailable.
#pragma once

#include "judge/seal.h"

#include <cstdint>
#include <filesystem>
#include <ostream>

namespace temper::cli {

// Profiles the sealed reference's artifact on one case and prints the profile; returns the exit
// status. Never prints or reads the vaulted source. `threads` > 0: the kernel's thread count
// (a campaign's `--threads`), else the task's.
int profile_sealed(const judge::SealedRef& ref, int64_t case_id, const std::filesystem::path& artifact, std::ostream& out,
                   std::ostream& err, int threads = 0);

} // namespace temper::cli
