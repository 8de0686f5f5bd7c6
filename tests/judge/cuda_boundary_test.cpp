// The CUDA additions to the candidate boundary (judge/boundary.h add_cuda_policy), decided on
// the imports and libraries of an nvcc-built shared object.
#include "core/task.h"
#include "judge/boundary.h"

#include <gtest/gtest.h>

namespace cuda_boundary_test {

using namespace temper;
using namespace temper::judge;
using build::ElfInfo;
using build::ElfSymbol;

namespace {

// What nvcc -shared -cudart shared produces for an honest kernel.
ElfInfo cuda_kernel(std::vector<std::string> extra_imports = {}, std::vector<std::string> extra_needed = {}) {
  ElfInfo e;
  e.needed = {"libcudart.so.13", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"};
  e.needed.insert(e.needed.end(), extra_needed.begin(), extra_needed.end());
  for (const char* n : {"__cudaRegisterFatBinary", "__cudaLaunchKernel", "__cudaPushCallConfiguration", "cudaGetLastError"}) {
    e.imports.push_back(ElfSymbol{n, "libcudart.so.13", "libcudart.so.13"});
  }
  for (auto& n : extra_imports) e.imports.push_back(ElfSymbol{n, "libcudart.so.13", "libcudart.so.13"});
  return e;
}

BoundaryPolicy cuda_policy(const core::Task& task) {
  BoundaryPolicy p = default_boundary_policy();
  add_cuda_policy(p, task);
  return p;
}

} // namespace

TEST(CudaBoundary, AnHonestKernelOnTheRuntimePasses) {
  core::Task task;
  BoundaryVerdict v = check_artifact(cuda_kernel(), {}, cuda_policy(task));
  EXPECT_TRUE(v.ok()) << v.message();
  // Without the CUDA policy the runtime is not an allowed library.
  EXPECT_EQ(check_artifact(cuda_kernel(), {}, default_boundary_policy()).reason_code(), "forbidden_library");
}

TEST(CudaBoundary, CreatingAStreamIsForbiddenUnlessAllowed) {
  core::Task task;
  BoundaryVerdict v = check_artifact(cuda_kernel({"cudaStreamCreateWithFlags"}), {}, cuda_policy(task));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.reason_code(), "forbidden_import");
  EXPECT_NE(v.message().find("cudaStreamCreateWithFlags"), std::string::npos) << v.message();
  task.config.allowed_cuda_features = {"streams"};
  EXPECT_TRUE(check_artifact(cuda_kernel({"cudaStreamCreateWithFlags"}), {}, cuda_policy(task)).ok());
}

TEST(CudaBoundary, L2PersistenceIsForbiddenUnlessAllowed) {
  core::Task task;
  for (const char* call : {"cudaCtxResetPersistingL2Cache", "cudaStreamSetAttribute", "cudaDeviceSetLimit"}) {
    BoundaryVerdict v = check_artifact(cuda_kernel({call}), {}, cuda_policy(task));
    EXPECT_EQ(v.reason_code(), "forbidden_import") << call;
  }
  task.config.allowed_cuda_features = {"l2_persistence"};
  EXPECT_TRUE(check_artifact(cuda_kernel({"cudaStreamSetAttribute"}), {}, cuda_policy(task)).ok());
  // Resetting the device is never allowed: it would destroy the worker's context.
  EXPECT_EQ(check_artifact(cuda_kernel({"cudaDeviceReset"}), {}, cuda_policy(task)).reason_code(), "forbidden_import");
  EXPECT_EQ(check_artifact(cuda_kernel({"cudaLaunchHostFunc"}), {}, cuda_policy(task)).reason_code(), "forbidden_import");
  EXPECT_EQ(check_artifact(cuda_kernel({"cuStreamAddCallback"}), {}, cuda_policy(task)).reason_code(), "forbidden_import");
}

TEST(CudaBoundary, LibrariesBeyondTheRuntimeNeedTheTasksPermission) {
  core::Task task;
  BoundaryVerdict v = check_artifact(cuda_kernel({}, {"libcublas.so.13"}), {}, cuda_policy(task));
  EXPECT_EQ(v.reason_code(), "forbidden_library");
  EXPECT_NE(v.message().find("libcublas.so.13"), std::string::npos) << v.message();
  task.config.allowed_libraries = {"cublas"};
  BoundaryPolicy p = boundary_policy_for(task, {}, "cand.cu", "/tmp/a/b/c");
  add_cuda_policy(p, task);
  EXPECT_TRUE(check_artifact(cuda_kernel({}, {"libcublas.so.13"}), {}, p).ok());
  EXPECT_EQ(check_artifact(cuda_kernel({}, {"libcudnn.so.9"}), {}, p).reason_code(), "forbidden_library");
}

TEST(CudaBoundary, CallingTheReferenceIsForbidden) {
  core::Task task;
  ElfInfo reference = cuda_kernel();
  reference.exports.push_back(ElfSymbol{"temper_cuda_kernel", "", "", build::SymbolBinding::Global});
  reference.exports.push_back(ElfSymbol{"swiglu_launch", "", "", build::SymbolBinding::Global});
  auto exports = callable_exports(reference);
  EXPECT_EQ(exports, std::set<std::string>{"swiglu_launch"}); // the entry point is everyone's
  ElfInfo cand = cuda_kernel();
  cand.imports.push_back(ElfSymbol{"swiglu_launch", "", "", build::SymbolBinding::Global});
  EXPECT_EQ(check_artifact(cand, exports, cuda_policy(task)).reason_code(), "calls_reference");
}

} // namespace cuda_boundary_test
