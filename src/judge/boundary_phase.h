// The boundary checks of a job, before any candidate code runs: the candidate's source (and the
// local headers it includes) must not name the vault, the references, the golden or the cache;
// each candidate artifact must import nothing forbidden, link only allowed libraries and not
// bind to a symbol the reference exports. Shared by judge and probe. `backend` "cuda" adds the
// CUDA policy (add_cuda_policy) and takes the task's cuda reference for the exports.
#pragma once

#include "build/compile_cache.h"
#include "core/task.h"
#include "judge/boundary.h"

#include <filesystem>
#include <string_view>
#include <vector>

namespace temper::judge {

// One verdict per candidate build (a build that failed to compile gets an ok verdict: its
// status is already COMPILE_ERROR). The reference's exports come from `reference_builds`, or,
// when there are none, from one build of the task's cpu reference through the cache.
// `protected_dirs` (a sealed reference's store entry) must not be named by the source either.
Expected<std::vector<BoundaryVerdict>> check_boundary(const core::Task& task, const std::filesystem::path& candidate,
                                                      const std::vector<std::filesystem::path>& protected_references,
                                                      const std::vector<std::filesystem::path>& protected_dirs,
                                                      const std::vector<const build::CompileResult*>& candidate_builds,
                                                      const std::vector<build::CompileResult>& reference_builds,
                                                      const core::Case& any_case, build::CompileCache& cache,
                                                      std::string_view backend = "cpu");

} // namespace temper::judge
