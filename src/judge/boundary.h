// Static boundary checks on a candidate before any of its code runs (DESIGN.md, judge step 4):
// its artifact must not import what would let it load code, start processes, reach the network
// or other processes (the reference's worker among them), must link only allowed libraries and
// must not bind to symbols the reference exports; its source, and the local headers it
// includes, must not name the vault, the reference or the goldens.
//
// These are tripwires against the direct routes, decided on what the loader will see and what
// the compiler will read. They do not replace the runtime sandbox: a kernel can still hide a
// path from a text search or issue a system call from inline assembly, and only seccomp and
// landlock in the worker stop that.
#pragma once

#include "build/elf.h"
#include "core/task.h"
#include "util/error.h"

#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace temper::judge {

// Reason codes, reported with status REJECTED_CHEAT.
inline constexpr std::string_view kCallsReference = "calls_reference";
inline constexpr std::string_view kForbiddenImport = "forbidden_import";
inline constexpr std::string_view kForbiddenLibrary = "forbidden_library";
inline constexpr std::string_view kReadsProtectedFile = "reads_protected_file";
inline constexpr std::string_view kTimerTampering = "timer_tampering";
// Found at run time rather than on the artifact (correctness.cpp, timing.cpp, timing_phase.cpp).
inline constexpr std::string_view kForbiddenSyscall = "forbidden_syscall";
inline constexpr std::string_view kWritesInputs = "writes_inputs";
inline constexpr std::string_view kStaleOutput = "stale_output";     // an earlier call's output for other inputs
inline constexpr std::string_view kDeferredWork = "deferred_work";   // the output changed after the call returned
inline constexpr std::string_view kTimedBehaviourDiffers = "timed_behaviour_differs";
// Found at run time by temper-cuda-worker: work still running after the timed window.
inline constexpr std::string_view kWorkOutsideTimedWindow = "work_outside_timed_window";
inline constexpr std::string_view kWorkOutsideCall = "work_outside_call"; // threads worked between (or, unclocked, during) calls

// An imported symbol no candidate may use: the exact name, or every name starting with it.
struct ForbiddenImport {
  std::string name;
  bool prefix = false;
  std::string why; // completes "imports `dlopen`: ..." (e.g. "loading code at run time")
};

struct BoundaryPolicy {
  std::vector<ForbiddenImport> forbidden_imports;
  std::vector<std::string> forbidden_versions; // symbol versions nothing outside the C library binds to
  std::vector<std::string> allowed_libraries;  // each DT_NEEDED entry must start with one of these
  std::vector<std::string> protected_names;    // lower case; no source file may contain one
  std::vector<std::filesystem::path> protected_files; // absolute; no source file may include one
};

// The lists every job starts from (boundary.cpp has them, with their reasons).
BoundaryPolicy default_boundary_policy();

// Adds a directory (a sealed reference's store entry) to the names no source may contain.
void protect_directory(BoundaryPolicy& policy, const std::filesystem::path& dir);

// The default policy plus what this job protects and allows: the task's allowed_libraries
// ("libfoo.so.1", "libfoo" or "foo"), its golden source, its references and the extra
// `references` (the timing reference), and the cache root (goldens and the secret seed live
// there). A reference whose file name is the candidate's own is protected by path only; one that
// is the candidate itself (judging the reference, as task checks do) is not protected.
BoundaryPolicy boundary_policy_for(const core::Task& task, const std::vector<std::filesystem::path>& references,
                                   const std::filesystem::path& candidate, const std::filesystem::path& cache_root);

// The CUDA backend's additions (docs/cuda.md): the CUDA runtime (libcudart) among the allowed
// libraries; creating streams and L2 persistence (access-policy attributes, persisting-L2
// limits and resets) among the forbidden imports unless the task's allowed_cuda_features
// names "streams" or "l2_persistence"; resetting the device always. cuBLAS, cuDNN and other
// libraries stay forbidden unless allowed_libraries names them.
void add_cuda_policy(BoundaryPolicy& policy, const core::Task& task);

struct BoundaryViolation {
  std::string reason_code; // one of the k* codes above
  std::string what;        // the fact, naming the symbol, library or text: "imports `dlopen` (...)"
  std::string why;         // why that is not allowed

  std::string message() const { return what + ": " + why; }
};

struct BoundaryVerdict {
  // Every violation found: those of the artifact first (calls_reference, forbidden_import,
  // forbidden_library), then those of the sources (reads_protected_file).
  std::vector<BoundaryViolation> violations;

  bool ok() const { return violations.empty(); }
  const std::string& reason_code() const; // the first violation's; empty when ok
  std::string message() const;            // the first violation's, then what a few others found
  void append(const BoundaryVerdict& other);
};

// The reference's symbols a candidate could bind to: its strong (global, non-weak) exports
// other than temper_kernel. Weak and unique ones are left out: they are inline functions and
// template instances that any object using the same header may also define or import, so they
// tell nothing about who calls whom.
std::set<std::string> callable_exports(const build::ElfInfo& reference);

BoundaryVerdict check_artifact(const build::ElfInfo& candidate, const std::set<std::string>& reference_exports,
                               const BoundaryPolicy& policy);

// One source text. `file` names it in messages (empty: "the source"). Adjacent string literals
// are joined and backslash-newlines dropped first, so `"va" "ult"` is still seen.
BoundaryVerdict check_source(std::string_view text, const BoundaryPolicy& policy, std::string_view file = {});

// The source and every local file it includes, found as the compile cache finds them (the
// including file's directory, then `include_dirs`): each text goes through check_source, and
// including a protected file is a violation however its path is spelled. Files under
// `trusted_dir` (temper's own include dir) are not read.
Expected<BoundaryVerdict> check_source_tree(const std::filesystem::path& source,
                                            const std::vector<std::filesystem::path>& include_dirs,
                                            const std::filesystem::path& trusted_dir, const BoundaryPolicy& policy);

} // namespace temper::judge
