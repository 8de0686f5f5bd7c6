// Boundary policy decisions on constructed ELF facts and source texts: what a correct kernel
// imports and links passes; each forbidden route is caught with its reason code and names the
// symbol, library or text.
#include "judge/boundary.h"
#include "core/task_loader.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <fstream>

namespace boundary_test {

using namespace temper;
using namespace temper::judge;
using build::ElfInfo;
using build::ElfSymbol;
using build::SymbolBinding;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;

ElfSymbol sym(std::string name, std::string version = "GLIBC_2.2.5", std::string library = "libc.so.6",
              SymbolBinding binding = SymbolBinding::Global) {
  return {std::move(name), std::move(version), std::move(library), binding};
}

// What g++ and clang++ builds of correct kernels import and link, threads and OpenMP included.
ElfInfo honest_kernel() {
  ElfInfo e;
  e.needed = {"libstdc++.so.6", "libm.so.6", "libmvec.so.1", "libgcc_s.so.1", "libc.so.6", "libgomp.so.1",
              "ld-linux-x86-64.so.2"};
  for (const char* weak : {"__gmon_start__", "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__cxa_finalize"}) {
    e.imports.push_back(sym(weak, "", "", SymbolBinding::Weak));
  }
  for (const char* name : {"memcpy", "memset", "malloc", "free", "pthread_create", "pthread_join", "__stack_chk_fail",
                           "__cxa_atexit", "__libc_single_threaded", "abort", "fopen", "printf", "sched_getaffinity",
                           "clock_gettime", "sysconf", "mmap", "munmap", "raise", "pthread_setaffinity_np"}) {
    e.imports.push_back(sym(name));
  }
  e.imports.push_back(sym("expf", "GLIBC_2.27", "libm.so.6"));
  e.imports.push_back(sym("_ZGVdN8v_expf", "GLIBC_2.22", "libmvec.so.1"));
  e.imports.push_back(sym("__tls_get_addr", "GLIBC_2.3", "ld-linux-x86-64.so.2"));
  e.imports.push_back(sym("__cxa_guard_acquire", "CXXABI_1.3", "libstdc++.so.6"));
  e.imports.push_back(sym("_ZSt9terminatev", "GLIBCXX_3.4", "libstdc++.so.6"));
  e.imports.push_back(sym("_Unwind_Resume", "GCC_3.0", "libgcc_s.so.1"));
  e.imports.push_back(sym("GOMP_parallel", "GOMP_4.0", "libgomp.so.1"));
  e.imports.push_back(sym("omp_get_num_threads", "OMP_1.0", "libgomp.so.1"));
  e.exports.push_back(sym("temper_kernel", "", ""));
  return e;
}

BoundaryVerdict with_import(const ElfSymbol& s, const std::set<std::string>& ref = {}) {
  ElfInfo e = honest_kernel();
  e.imports.push_back(s);
  return check_artifact(e, ref, default_boundary_policy());
}

} // namespace

TEST(Boundary, AnHonestKernelPasses) {
  auto v = check_artifact(honest_kernel(), {"ref_helper"}, default_boundary_policy());
  EXPECT_TRUE(v.ok()) << v.message();
  EXPECT_EQ(v.reason_code(), "");
  EXPECT_EQ(v.message(), "");
}

TEST(Boundary, ForbiddenImportsAreCaughtByName) {
  for (const char* name : {"dlopen", "dlsym", "dlmopen", "dlvsym", "dl_iterate_phdr", "execve", "execvpe", "execl",
                           "fexecve", "fork", "vfork", "_Fork", "clone", "clone3", "system", "popen", "wordexp",
                           "posix_spawn", "posix_spawnp", "posix_spawn_file_actions_init", "socket", "connect", "bind",
                           "accept", "accept4", "getaddrinfo", "ptrace", "process_vm_readv", "process_vm_writev",
                           "kill", "setpriority", "sched_setaffinity", "syscall", "mprotect", "_dl_find_object",
                           "__libc_dlopen_mode"}) {
    auto v = with_import(sym(name));
    ASSERT_FALSE(v.ok()) << name;
    EXPECT_EQ(v.reason_code(), "forbidden_import") << name;
    EXPECT_NE(v.message().find(std::string("`") + name + "`"), std::string::npos) << v.message();
  }
  auto v = with_import(sym("dlopen", "GLIBC_2.34"));
  EXPECT_NE(v.message().find("GLIBC_2.34 from libc.so.6"), std::string::npos) << v.message();
  EXPECT_NE(v.message().find("run time"), std::string::npos) << v.message();
  // Names that merely start like a forbidden one are fine where the rule is an exact name.
  EXPECT_TRUE(with_import(sym("systemd_helper")).ok());
  EXPECT_TRUE(with_import(sym("forked_tree")).ok());
}

TEST(Boundary, TheCLibrarysPrivateInterfaceIsForbidden) {
  auto v = with_import(sym("__nptl_whatever", "GLIBC_PRIVATE"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.reason_code(), "forbidden_import");
  EXPECT_NE(v.message().find("private"), std::string::npos) << v.message();
}

TEST(Boundary, ImportingWhatTheReferenceExportsCallsTheReference) {
  ElfInfo ref;
  ref.exports = {sym("temper_kernel", "", ""), sym("ref_fast_exp", "", ""),
                 sym("_ZNSt6vectorIfSaIfEE17_M_realloc_insertEv", "", "", SymbolBinding::Weak),
                 sym("_ZN9__gnu_cxx9__freeresEv", "", "", SymbolBinding::Unique)};
  const std::set<std::string> callable = callable_exports(ref);
  EXPECT_EQ(callable, std::set<std::string>{"ref_fast_exp"});

  auto v = with_import(sym("ref_fast_exp", "", ""), callable);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.reason_code(), "calls_reference");
  EXPECT_NE(v.message().find("ref_fast_exp"), std::string::npos) << v.message();
  // A weak template instance both sides may share is no evidence of a call.
  EXPECT_TRUE(with_import(sym("_ZNSt6vectorIfSaIfEE17_M_realloc_insertEv", "", ""), callable).ok());
}

TEST(Boundary, CallingTheReferenceComesFirstAmongSeveralViolations) {
  ElfInfo e = honest_kernel();
  e.imports.push_back(sym("dlopen", "GLIBC_2.34"));
  e.imports.push_back(sym("ref_fast_exp", "", ""));
  e.needed.push_back("libz.so.1");
  auto v = check_artifact(e, {"ref_fast_exp"}, default_boundary_policy());
  ASSERT_EQ(v.violations.size(), 3u) << v.message();
  EXPECT_EQ(v.violations[0].reason_code, "calls_reference");
  EXPECT_EQ(v.violations[1].reason_code, "forbidden_import");
  EXPECT_EQ(v.violations[2].reason_code, "forbidden_library");
  EXPECT_EQ(v.reason_code(), "calls_reference");
  EXPECT_NE(v.message().find("; also"), std::string::npos) << v.message();
  EXPECT_NE(v.message().find("libz.so.1"), std::string::npos) << v.message();
}

TEST(Boundary, OnlyAllowedLibrariesMayBeLinked) {
  auto linking = [](std::string lib, const BoundaryPolicy& p = default_boundary_policy()) {
    ElfInfo e = honest_kernel();
    e.needed.push_back(std::move(lib));
    return check_artifact(e, {}, p);
  };
  for (const char* lib : {"libopenblas.so.0", "libz.so.1", "libcrypto.so.3", "libmkl_rt.so.2", "libcudart.so.12"}) {
    auto v = linking(lib);
    ASSERT_FALSE(v.ok()) << lib;
    EXPECT_EQ(v.reason_code(), "forbidden_library");
    EXPECT_NE(v.message().find(lib), std::string::npos) << v.message();
  }
  // An allowed name behind a path could be any file.
  EXPECT_EQ(linking("/tmp/evil/libc.so.6").reason_code(), "forbidden_library");
  EXPECT_EQ(linking("./libm.so.6").reason_code(), "forbidden_library");

  ElfInfo runpath = honest_kernel();
  runpath.search_paths = {"$ORIGIN/../lib"};
  auto v = check_artifact(runpath, {}, default_boundary_policy());
  EXPECT_EQ(v.reason_code(), "forbidden_library");
  EXPECT_NE(v.message().find("$ORIGIN/../lib"), std::string::npos) << v.message();
  ElfInfo audit = honest_kernel();
  audit.loader_refs = {"libspy.so.1"};
  EXPECT_EQ(check_artifact(audit, {}, default_boundary_policy()).reason_code(), "forbidden_library");
}

TEST(Boundary, TheTaskCanAllowMoreLibraries) {
  util::TempDir dir;
  fs::copy(kSource / "tasks/swi_glu", dir.path() / "t", fs::copy_options::recursive);
  std::ofstream(dir.path() / "t" / "temper.yaml", std::ios::app) << "allowed_libraries: [libopenblas.so.0, z]\n";
  auto task = core::load_task(dir.path() / "t");
  ASSERT_TRUE(task) << task.error().message;
  BoundaryPolicy p = boundary_policy_for(*task, {}, dir.path() / "cand.cpp", dir.path() / "cache");
  auto linking = [&](std::string lib) {
    ElfInfo e = honest_kernel();
    e.needed.push_back(std::move(lib));
    return check_artifact(e, {}, p);
  };
  EXPECT_TRUE(linking("libopenblas.so.0").ok());
  EXPECT_TRUE(linking("libz.so.1").ok());
  EXPECT_EQ(linking("libzstd.so.1").reason_code(), "forbidden_library"); // "z" means libz.so, not a prefix of any lib
  EXPECT_EQ(linking("libopenblas.so.1").reason_code(), "forbidden_library");
}

TEST(Boundary, SourceNamingTheVaultIsCaughtWithItsLine) {
  const BoundaryPolicy p = default_boundary_policy();
  auto v = check_source("// a kernel\nint x;\nconst char* p = \"/camp/VAULT/R1/kernel.so\";\n", p);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.reason_code(), "reads_protected_file");
  EXPECT_NE(v.message().find("`vault` (line 3)"), std::string::npos) << v.message();
  EXPECT_NE(v.message().find("the source"), std::string::npos) << v.message();

  // Split literals and line continuations are joined before searching.
  EXPECT_FALSE(check_source("const char* p = \"/camp/va\"\n   \"ult/x\";", p).ok());
  EXPECT_FALSE(check_source("const char* p = \"/camp/va\\\nult/x\";", p).ok());
  auto split = check_source("int a;\nconst char* p = \"va\" \"ult\";\n", p, "helper.h");
  EXPECT_NE(split.message().find("helper.h names `vault` (line 2)"), std::string::npos) << split.message();

  for (const char* text : {"getenv(\"TEMPER_CACHE_DIR\")", "\"~/.cache/temper/golden\"", "\"secret-seed\"",
                           "getenv(\"XDG_CACHE_HOME\")"}) {
    EXPECT_EQ(check_source(text, p).reason_code(), "reads_protected_file") << text;
  }
  EXPECT_TRUE(check_source("float golden_ratio = 1.618f; // compare with the golden output\n", p).ok());
}

// The name check reads tokens as the compiler does: what looks like a comment inside a literal
// is part of the literal, and what is inside a comment is nothing.
TEST(Boundary, CommentsAreSkippedAndLiteralsAreKept) {
  const BoundaryPolicy p = default_boundary_policy();
  auto code = [&](const std::string& text) { return check_source(text, p).reason_code(); };
  EXPECT_EQ(code("int x; // the vault holds references\n/* vault */ int y;"), "");
  EXPECT_EQ(code("auto p = \"//vault\";"), "reads_protected_file");
  EXPECT_EQ(code("auto p = R\"x(// \" vault)x\";"), "reads_protected_file");   // a raw string holds // and "
  EXPECT_EQ(code("auto p = u8R\"(/*)\"; auto q = \"vault\"; // */"), "reads_protected_file");
  EXPECT_EQ(code("char q = '\"'; auto p = \"//\"; auto r = \"vault\";"), "reads_protected_file");
  EXPECT_EQ(code("int n = 1'000'000; auto p = \"vault\";"), "reads_protected_file"); // a separator, not a char
  EXPECT_EQ(code("int n = 0x1'F; // vault"), "");
  EXPECT_EQ(code("char c = '\\''; auto p = \"/*\"; auto r = \"vault\"; // */"), "reads_protected_file");
  // A comment continued by a backslash-newline is still a comment; a literal so continued is not.
  EXPECT_EQ(code("// a comment \\\nvault"), "");
  EXPECT_EQ(code("auto p = \"va\\\nult\";"), "reads_protected_file");
  // The line reported is the original's.
  auto v = check_source("/* one\ntwo */\nauto p = \"vault\";", p);
  EXPECT_NE(v.message().find("(line 3)"), std::string::npos) << v.message();
}

TEST(Boundary, TheJobProtectsItsReferencesGoldenAndCache) {
  auto task = core::load_task(kSource / "tasks/swi_glu");
  ASSERT_TRUE(task) << task.error().message;
  util::TempDir dir;
  const fs::path cache = dir.path() / "some-cache";
  BoundaryPolicy p = boundary_policy_for(*task, {dir.path() / "campaign/vault/R2/best.cpp"}, dir.path() / "cand.cpp", cache);
  auto code = [&](const std::string& text) { return check_source(text, p).reason_code(); };
  EXPECT_EQ(code("#include \"../../tasks/swi_glu/reference.cpp\""), "reads_protected_file");
  // Comments cannot read files: a kernel may say what it was built like (the task's own CUDA
  // reference names reference.cpp in a comment); code and literals may not name them.
  EXPECT_EQ(code("// built like golden.cpp"), "");
  EXPECT_EQ(code("/* see best.cpp */ int x;"), "");
  EXPECT_EQ(code("auto p = \"best.cpp\";"), "reads_protected_file");
  EXPECT_EQ(code("auto p = \"gold\" /* joined */ \"en.cpp\";"), "reads_protected_file");
  EXPECT_EQ(code("fopen(\"" + cache.string() + "/golden/ab/cd.bundle\")"), "reads_protected_file");
  EXPECT_EQ(code("// a plain kernel that beats the reference"), "");

  // Judging the reference itself is how a task is checked; it must not trip over itself.
  BoundaryPolicy self = boundary_policy_for(*task, {}, task->config.reference.at("cpu"), cache);
  auto own = util::read_file(task->config.reference.at("cpu"));
  ASSERT_TRUE(own);
  EXPECT_TRUE(check_source(*own, self).ok()) << check_source(*own, self).message();
  // A reference that shares the candidate's file name is protected by its path alone.
  BoundaryPolicy same_name = boundary_policy_for(*task, {dir.path() / "vault/kernel.cpp"}, dir.path() / "src/kernel.cpp", cache);
  EXPECT_TRUE(check_source("// kernel.cpp: my fast kernel", same_name).ok());
}

TEST(Boundary, IncludedFilesAreCheckedToo) {
  auto task = core::load_task(kSource / "tasks/swi_glu");
  ASSERT_TRUE(task) << task.error().message;
  util::TempDir dir;
  fs::create_directories(dir.path() / "src" / "inc");
  fs::create_directories(dir.path() / "trusted");
  std::ofstream(dir.path() / "src" / "k.cpp") << "#include \"inc/a.h\"\n#include <t.h>\nint k;\n";
  std::ofstream(dir.path() / "src" / "inc" / "a.h") << "#include \"b.h\"\n";
  std::ofstream(dir.path() / "src" / "inc" / "b.h") << "// harmless\n\n const char* p = \"vault\";\n";
  std::ofstream(dir.path() / "trusted" / "t.h") << "// names the vault, but temper wrote it\n";
  BoundaryPolicy p = boundary_policy_for(*task, {}, dir.path() / "src/k.cpp", dir.path() / "c");
  auto v = check_source_tree(dir.path() / "src/k.cpp", {dir.path() / "src", dir.path() / "trusted"}, dir.path() / "trusted", p);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->violations.size(), 1u) << v->message();
  EXPECT_EQ(v->reason_code(), "reads_protected_file");
  EXPECT_NE(v->message().find("b.h names `vault` (line 3)"), std::string::npos) << v->message();

  // Including the reference by a path that spells neither its name nor its location.
  fs::create_symlink(task->config.reference.at("cpu"), dir.path() / "src" / "inc" / "fast.h");
  std::ofstream(dir.path() / "src" / "k2.cpp") << "#include \"inc/fast.h\"\n";
  auto w = check_source_tree(dir.path() / "src/k2.cpp", {dir.path() / "src"}, {}, p);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->reason_code(), "reads_protected_file");
  EXPECT_NE(w->message().find("fast.h is a protected file"), std::string::npos) << w->message();

  std::ofstream(dir.path() / "src" / "clean.cpp") << "#include \"inc/missing.h\"\nint k;\n";
  auto clean = check_source_tree(dir.path() / "src/clean.cpp", {dir.path() / "src"}, {}, p);
  ASSERT_TRUE(clean) << clean.error().message;
  EXPECT_TRUE(clean->ok()) << clean->message();
}

TEST(Boundary, TheBundledKernelsPassTheSourceCheck) {
  for (const char* task_name : {"tasks/swi_glu", "tasks/gqa"}) {
    auto task = core::load_task(kSource / task_name);
    ASSERT_TRUE(task) << task.error().message;
    const fs::path ref = task->config.reference.at("cpu");
    for (const fs::path& cand : {ref, kSource / "tests/fixtures/swi_glu/correct_fast.cpp"}) {
      BoundaryPolicy p = boundary_policy_for(*task, {}, cand, util::cache_root());
      auto v = check_source_tree(cand, {cand.parent_path(), kSource / "include"}, kSource / "include", p);
      ASSERT_TRUE(v) << v.error().message;
      EXPECT_TRUE(v->ok()) << cand << ": " << v->message();
    }
  }
}

// Reading the environment or argv is how a kernel would look for the judge.
TEST(Boundary, ReadingTheEnvironmentOrArgumentsIsAForbiddenImport) {
  for (const char* name : {"getenv", "secure_getenv", "environ", "__environ", "program_invocation_name", "__libc_argv"}) {
    auto v = with_import(sym(name));
    ASSERT_FALSE(v.ok()) << name;
    EXPECT_EQ(v.reason_code(), "forbidden_import") << name;
    EXPECT_NE(v.message().find(name), std::string::npos) << v.message();
  }
}

// A kernel may call clock_gettime (honest_kernel imports it) but not define and export one.
TEST(Boundary, ExportingAClockIsTimerTampering) {
  EXPECT_TRUE(check_artifact(honest_kernel(), {}, default_boundary_policy()).ok());
  for (const char* name : {"clock_gettime", "gettimeofday", "__vdso_clock_gettime"}) {
    ElfInfo e = honest_kernel();
    e.exports.push_back(sym(name, "", ""));
    auto v = check_artifact(e, {}, default_boundary_policy());
    ASSERT_FALSE(v.ok()) << name;
    EXPECT_EQ(v.reason_code(), "timer_tampering") << name;
    EXPECT_NE(v.message().find(name), std::string::npos) << v.message();
  }
}

TEST(Boundary, TheSealedStoreIsAProtectedName) {
  BoundaryPolicy p = default_boundary_policy();
  protect_directory(p, "/srv/campaign/vault/R1");
  EXPECT_EQ(check_source(R"(auto f = fopen("/srv/campaign/vault/" "R1/artifacts/kernel.so", "rb");)", p).reason_code(),
            "reads_protected_file");
  EXPECT_EQ(check_source(R"(auto p = std::string(getenv("HOME")) + "/.temper/refs";)", p).reason_code(), "reads_protected_file");
  EXPECT_TRUE(check_source("float x = 1.0f; // plain code", p).ok());
}

} // namespace boundary_test
