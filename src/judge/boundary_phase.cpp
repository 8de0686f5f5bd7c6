#include "judge/boundary_phase.h"

#include "util/fs.h"

#include <fmt/format.h>

namespace temper::judge {

namespace fs = std::filesystem;

namespace {

// "undefined reference to `ref_fast_exp'" (GNU ld, gold and lld alike) for a symbol the
// reference exports.
BoundaryVerdict undefined_reference_exports(const std::string& diagnostics, const std::set<std::string>& reference_exports) {
  BoundaryVerdict v;
  constexpr std::string_view kPrefix = "undefined reference to `";
  for (size_t at = diagnostics.find(kPrefix); at != std::string::npos; at = diagnostics.find(kPrefix, at + 1)) {
    size_t begin = at + kPrefix.size();
    size_t end = diagnostics.find('\'', begin);
    if (end == std::string::npos) break;
    std::string name = diagnostics.substr(begin, end - begin);
    if (!reference_exports.count(name)) continue;
    v.violations.push_back({std::string(kCallsReference), fmt::format("calls `{}`, which the reference exports (it does not link without it)", name),
                            "a candidate must not call the reference"});
  }
  return v;
}

} // namespace

Expected<std::vector<BoundaryVerdict>> check_boundary(const core::Task& task, const fs::path& candidate,
                                                      const std::vector<fs::path>& protected_references,
                                                      const std::vector<fs::path>& protected_dirs,
                                                      const std::vector<const build::CompileResult*>& candidate_builds,
                                                      const std::vector<build::CompileResult>& reference_builds,
                                                      const core::Case& any_case, build::CompileCache& cache,
                                                      std::string_view backend) {
  BoundaryPolicy policy = boundary_policy_for(task, protected_references, candidate, util::cache_root());
  if (backend == "cuda") add_cuda_policy(policy, task);
  for (const auto& dir : protected_dirs) protect_directory(policy, dir);
  TEMPER_TRY_ASSIGN(const BoundaryVerdict source_verdict,
                    check_source_tree(candidate, {candidate.parent_path(), build::temper_include_dir()},
                                      build::temper_include_dir(), policy));
  std::vector<build::CompileResult> export_builds = reference_builds;
  if (auto cpu = task.config.reference.find(std::string(backend)); export_builds.empty() && cpu != task.config.reference.end()) {
    TEMPER_TRY_ASSIGN(std::string ref_text, util::read_file(cpu->second));
    build::CompileRequest r;
    r.source = cpu->second;
    r.label = "reference (boundary check)";
    if (build::wants_specialization(ref_text)) r.defines = build::specialization_defines(task.op, any_case);
    TEMPER_TRY_ASSIGN(build::CompileResult rb, cache.compile(r));
    if (!rb.ok) return fail("the task's reference {} does not compile:\n{}", cpu->second.string(), rb.diagnostics);
    export_builds.push_back(std::move(rb));
  }
  std::set<std::string> reference_exports;
  for (const auto& rb : export_builds) {
    TEMPER_TRY_ASSIGN(build::ElfInfo elf, build::read_elf(rb.artifact));
    reference_exports.merge(callable_exports(elf));
  }
  std::vector<BoundaryVerdict> verdicts(candidate_builds.size());
  for (size_t k = 0; k < candidate_builds.size(); ++k) {
    if (!candidate_builds[k]->ok) {
      // Kernels link with -z defs, so a call into the reference fails to link rather than
      // waiting for the loader: still a call into the reference.
      verdicts[k] = undefined_reference_exports(candidate_builds[k]->diagnostics, reference_exports);
      continue;
    }
    TEMPER_TRY_ASSIGN(build::ElfInfo elf, build::read_elf(candidate_builds[k]->artifact));
    verdicts[k] = check_artifact(elf, reference_exports, policy);
    verdicts[k].append(source_verdict);
  }
  return verdicts;
}

} // namespace temper::judge
