// ptxas's verbose report parsed into per-kernel resources (fixtures from nvcc 13 and the older
// CUDA 11 line format), and nvcc's command line; a real nvcc build where nvcc exists.
#include "build/compile_cache.h"
#include "build/cuda_compiler.h"
#include "build/ptxas_resources.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ptxas_resources_test {

using namespace temper;
using namespace temper::build;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(TEMPER_SOURCE_DIR) / "tests/fixtures/cuda";

CudaResources parse_fixture(const char* name) {
  auto text = util::read_file(kFixtures / name);
  EXPECT_TRUE(text.has_value()) << name;
  return parse_ptxas_resources(text ? *text : "");
}

const KernelResources* find(const CudaResources& r, const std::string& name, const std::string& arch) {
  for (const auto& f : r.functions)
    if (f.name == name && f.arch == arch) return &f;
  return nullptr;
}

} // namespace

TEST(PtxasResources, ReadsEveryKernelOfOneArchitecture) {
  CudaResources r = parse_fixture("ptxas_sm90_spills.txt");
  ASSERT_EQ(r.archs, std::vector<std::string>{"sm_90"});
  const KernelResources* spill = find(r, "_Z5spillPfi", "sm_90");
  ASSERT_NE(spill, nullptr);
  EXPECT_TRUE(spill->entry);
  EXPECT_EQ(spill->registers, 32);
  EXPECT_EQ(spill->stack_bytes, 1904);
  EXPECT_EQ(spill->spill_store_bytes, 1156);
  EXPECT_EQ(spill->spill_load_bytes, 1452);
  EXPECT_EQ(spill->smem_bytes, 0);
  const KernelResources* tiled = find(r, "_Z5tiledPfi", "sm_90");
  ASSERT_NE(tiled, nullptr);
  EXPECT_EQ(tiled->smem_bytes, 4096);
  EXPECT_EQ(tiled->barriers, 1);
  EXPECT_EQ(tiled->stack_bytes, 256);
  EXPECT_EQ(tiled->spill_bytes(), 0);
  const KernelResources* add = find(r, "_Z3addPfPKfi", "sm_90");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->registers, 10);
  // A device function ptxas did not inline: a stack frame, no register line.
  const KernelResources* helper = find(r, "_Z6helperPfi", "sm_90");
  ASSERT_NE(helper, nullptr);
  EXPECT_FALSE(helper->entry);

  auto m = r.metrics();
  EXPECT_EQ(m.at("cuda.registers"), 32);
  EXPECT_EQ(m.at("cuda.smem_bytes"), 4096);
  EXPECT_EQ(m.at("cuda.spill_bytes"), 1156 + 1452);
  EXPECT_EQ(m.at("cuda.stack_bytes"), 1904);
}

TEST(PtxasResources, KeepsArchitecturesApart) {
  CudaResources r = parse_fixture("ptxas_multi_arch.txt");
  ASSERT_EQ(r.archs, (std::vector<std::string>{"sm_80", "sm_90"}));
  EXPECT_EQ(r.functions.size(), 8u); // three entries and one device function per arch
  auto sm80 = r.metrics("sm_80");
  auto sm90 = r.metrics("sm_90");
  EXPECT_EQ(sm80.at("cuda.spill_bytes"), 1668 + 2384);
  EXPECT_EQ(sm90.at("cuda.spill_bytes"), 1156 + 1452);
  EXPECT_EQ(sm80.at("cuda.stack_bytes"), 2192);
  EXPECT_EQ(find(r, "_Z3addPfPKfi", "sm_80")->cmem0_bytes, 372);
  EXPECT_EQ(r.metrics(), sm90); // default: the last architecture
  EXPECT_TRUE(r.metrics("sm_100").empty());
}

TEST(PtxasResources, ReadsTheOlderRegisterLine) {
  CudaResources r = parse_fixture("ptxas_legacy_sm80.txt");
  const KernelResources* gemm = find(r, "_Z10gemm_tiledPKfS0_Pfi", "sm_80");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->registers, 40);
  EXPECT_EQ(gemm->smem_bytes, 8192);
  EXPECT_EQ(gemm->barriers, 0);
  const KernelResources* naive = find(r, "_Z5naivePKfS0_Pfi", "sm_80");
  ASSERT_NE(naive, nullptr);
  EXPECT_EQ(naive->registers, 255);
  EXPECT_EQ(naive->spill_bytes(), 36);
  auto j = r.to_json();
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["metrics"]["cuda.registers"], 255);
  EXPECT_EQ(j["functions"].size(), 2u);
}

TEST(PtxasResources, IgnoresOutputWithoutAReport) {
  EXPECT_TRUE(parse_ptxas_resources("").empty());
  EXPECT_TRUE(parse_ptxas_resources("k.cu(3): error: identifier \"x\" is undefined\n").empty());
  EXPECT_TRUE(parse_ptxas_resources("").metrics().empty());
}

TEST(CudaCompiler, NormalizesArchitectures) {
  EXPECT_EQ(normalize_cuda_arch("sm_90"), "sm_90");
  EXPECT_EQ(normalize_cuda_arch("90"), "sm_90");
  EXPECT_EQ(normalize_cuda_arch("9.0"), "sm_90");
  EXPECT_EQ(normalize_cuda_arch("compute_80"), "sm_80");
  EXPECT_EQ(normalize_cuda_arch("sm_90a"), "sm_90a");
  EXPECT_EQ(normalize_cuda_arch("100"), "sm_100");
  EXPECT_EQ(normalize_cuda_arch("hopper"), "");
  EXPECT_EQ(normalize_cuda_arch("9"), "");
  EXPECT_EQ(normalize_cuda_arch(""), "");
}

TEST(CudaCompiler, BuildsASharedObjectOnTheSharedRuntimeWithPtxasReport) {
  CompilerSpec spec = cuda_compiler_spec("/opt/nvcc", "9.0");
  EXPECT_EQ(spec.kind, CompilerKind::Cuda);
  EXPECT_EQ(spec.flags, std::vector<std::string>{"-O3"});
  CompileRequest req;
  req.source = "/k/kernel.cu";
  req.defines = {{"TEMPER_CASE_ID", "3"}};
  auto argv = compile_command(spec, req, "/out/artifact");
  auto has = [&](const std::string& a) { return std::find(argv.begin(), argv.end(), a) != argv.end(); };
  EXPECT_EQ(argv.front(), "/opt/nvcc");
  EXPECT_TRUE(has("-arch=sm_90"));
  EXPECT_TRUE(has("-shared"));
  EXPECT_TRUE(has("-fPIC,-fvisibility=hidden"));
  EXPECT_TRUE(has("-cudart"));
  EXPECT_TRUE(has("-v"));
  EXPECT_TRUE(has("-DTEMPER_CASE_ID=3"));
  EXPECT_TRUE(has("-I/k"));
  EXPECT_EQ(argv[argv.size() - 2], "-o");
  EXPECT_EQ(cuda_compiler_spec("nvcc", "not-an-arch").cuda_arch, kDefaultCudaArch);
}

// One nvcc build of a real kernel and one failing build, through the compile cache (into the
// test cache, so the end-to-end tests find the same artifact).
TEST(CudaCompiler, CompilesWithNvccAndReportsResourcesAndErrors) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): no CUDA toolkit here";
  CompileCache cache(util::cache_root() / "compile", cuda_compiler_spec(nvcc, kDefaultCudaArch), util::default_process_runner());
  CompileRequest ok_req;
  ok_req.source = kFixtures / "swi_glu_tiled.cu";
  auto ok = cache.compile(ok_req);
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  ASSERT_TRUE(ok->ok) << ok->diagnostics;
  CudaResources r = parse_ptxas_resources(ok->diagnostics);
  ASSERT_FALSE(r.empty()) << ok->diagnostics;
  EXPECT_EQ(r.archs, std::vector<std::string>{"sm_90"});
  auto m = r.metrics();
  EXPECT_GT(m.at("cuda.registers"), 0);
  EXPECT_EQ(m.at("cuda.spill_bytes"), 0);

  CompileRequest bad_req;
  bad_req.source = kFixtures / "compile_error.cu";
  auto bad = cache.compile(bad_req);
  ASSERT_TRUE(bad.has_value()) << bad.error().message;
  EXPECT_FALSE(bad->ok);
  EXPECT_NE(bad->diagnostics.find("undeclared_in_this_kernel"), std::string::npos) << bad->diagnostics;
}

} // namespace ptxas_resources_test
