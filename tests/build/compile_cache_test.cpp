#include "build/compile_cache.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <fstream>

namespace compile_cache_test {

using namespace temper;
using namespace temper::build;

namespace {

// Counts compiler invocations (not --version probes) and forwards to the real runner.
class CountingRunner : public util::ProcessRunner {
public:
  util::ProcessResult run(const util::Command& cmd) override {
    bool is_version = cmd.argv.size() == 2 && cmd.argv[1] == "--version";
    if (!is_version) ++compiles;
    return util::default_process_runner().run(cmd);
  }
  int compiles = 0;
};

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

const char* kKernel = R"(#include <temper/kernel.h>
#include "helper.h"
TEMPER_EXPORT int temper_kernel(const temper_args* a) { (void)a; return HELPER_VALUE; }
)";

} // namespace

TEST(CompileCache, SecondCompileIsAHitAndCompilesNothing) {
  util::TempDir dir;
  write(dir.path() / "k.cpp", kKernel);
  write(dir.path() / "helper.h", "#define HELPER_VALUE 0\n");
  CountingRunner runner;
  CompileCache cache(dir.path() / "cache", CompilerSpec{"g++", {"-O1"}}, runner);
  CompileRequest req;
  req.source = dir.path() / "k.cpp";
  auto first = cache.compile(req);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(first->ok) << first->diagnostics;
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(fs::is_regular_file(first->artifact));
  EXPECT_EQ(runner.compiles, 1);

  auto second = cache.compile(req);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->artifact, first->artifact);
  EXPECT_EQ(runner.compiles, 1);

  // A second cache object on the same directory (another process) hits too.
  CompileCache other(dir.path() / "cache", CompilerSpec{"g++", {"-O1"}}, runner);
  auto third = other.compile(req);
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->cache_hit);
  EXPECT_EQ(runner.compiles, 1);
}

TEST(CompileCache, KeyCoversIncludedFilesFlagsAndMacros) {
  util::TempDir dir;
  write(dir.path() / "k.cpp", kKernel);
  write(dir.path() / "helper.h", "#define HELPER_VALUE 0\n");
  CountingRunner runner;
  CompileCache cache(dir.path() / "cache", CompilerSpec{"g++", {"-O1"}}, runner);
  CompileRequest req;
  req.source = dir.path() / "k.cpp";
  auto k1 = cache.key_for(req);
  ASSERT_TRUE(k1);

  write(dir.path() / "helper.h", "#define HELPER_VALUE 1\n");
  auto k2 = cache.key_for(req);
  EXPECT_NE(*k1, *k2) << "an included header changed";

  CompileRequest with_macro = req;
  with_macro.defines = {{"TEMPER_CASE_ID", "3"}};
  EXPECT_NE(*cache.key_for(with_macro), *k2);

  CompileRequest other_flags = req;
  other_flags.flags = {"-O2"};
  EXPECT_NE(*cache.key_for(other_flags), *k2);

  CompileRequest exe = req;
  exe.kind = ArtifactKind::Executable;
  EXPECT_NE(*cache.key_for(exe), *k2);
  EXPECT_EQ(runner.compiles, 0);
}

TEST(CompileCache, CompileErrorIsAResultWithDiagnosticsAndIsCached) {
  util::TempDir dir;
  write(dir.path() / "bad.cpp", "int f() { return undeclared_name; }\n");
  CountingRunner runner;
  CompileCache cache(dir.path() / "cache", CompilerSpec{"g++", {"-O1"}}, runner);
  CompileRequest req;
  req.source = dir.path() / "bad.cpp";
  auto r = cache.compile(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->diagnostics.find("undeclared_name"), std::string::npos) << r->diagnostics;
  auto again = cache.compile(req);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->ok);
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(runner.compiles, 1);
}

TEST(CompileCache, ParallelCompilesKeepOrder) {
  util::TempDir dir;
  write(dir.path() / "k.cpp", "#include <temper/kernel.h>\nTEMPER_EXPORT int temper_kernel(const temper_args*) { return VALUE; }\n");
  CountingRunner runner;
  CompileCache cache(dir.path() / "cache", CompilerSpec{"g++", {"-O0"}}, runner);
  std::vector<CompileRequest> reqs(4);
  for (int i = 0; i < 4; ++i) {
    reqs[i].source = dir.path() / "k.cpp";
    reqs[i].defines = {{"VALUE", std::to_string(i)}};
    reqs[i].label = "case " + std::to_string(i);
  }
  int done = 0;
  auto results = cache.compile_all(reqs, 2, [&](const CompileResult&) { ++done; });
  ASSERT_EQ(results.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(results[i]);
    EXPECT_TRUE(results[i]->ok);
    EXPECT_EQ(results[i]->label, "case " + std::to_string(i));
  }
  EXPECT_EQ(done, 4);
  EXPECT_EQ(runner.compiles, 4);
}

TEST(CompileCache, MissingCompilerIsAnError) {
  util::TempDir dir;
  write(dir.path() / "k.cpp", "int x;\n");
  CompileCache cache(dir.path() / "cache", CompilerSpec{"no-such-compiler-xyz", {}}, util::default_process_runner());
  CompileRequest req;
  req.source = dir.path() / "k.cpp";
  auto r = cache.compile(req);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no-such-compiler-xyz"), std::string::npos);
}

TEST(Compiler, SpecializationMarkerAndDefines) {
  EXPECT_TRUE(wants_specialization("// temper: specialize\nint x;"));
  EXPECT_TRUE(wants_specialization("int x; //   temper: specialize"));
  EXPECT_FALSE(wants_specialization("int x; // temper specialize later"));
  core::Operator op;
  core::Case c;
  c.id = 7;
  c.input_shapes = {{4, 6}};
  c.dtypes = {core::Dtype::F16};
  core::AttrValue dim;
  dim.kind = core::AttrKind::Int;
  dim.i = -1;
  core::AttrValue scale;
  scale.kind = core::AttrKind::Float;
  scale.f = 0.5;
  c.attrs = {{"dim", dim}, {"scale", scale}};
  auto d = specialization_defines(op, c);
  auto has = [&](const std::string& k, const std::string& v) {
    return std::find(d.begin(), d.end(), Define{k, v}) != d.end();
  };
  EXPECT_TRUE(has("TEMPER_CASE_ID", "7"));
  EXPECT_TRUE(has("TEMPER_IN0_RANK", "2"));
  EXPECT_TRUE(has("TEMPER_IN0_DIM1", "6LL"));
  EXPECT_TRUE(has("TEMPER_IN0_DTYPE", std::to_string(TEMPER_F16)));
  EXPECT_TRUE(has("TEMPER_ATTR_dim", "-1LL"));
  EXPECT_TRUE(has("TEMPER_ATTR_scale", "((double)0.5)"));
}

} // namespace compile_cache_test
