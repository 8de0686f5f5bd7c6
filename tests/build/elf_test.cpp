// The ELF reader on shared objects g++ builds at test time, cross-checked against `nm -D` on
// system libraries, and on truncated, garbled and hand-broken files, which must give an Error.
#include "build/elf.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace elf_test {

using namespace temper;
using namespace temper::build;
namespace fs = std::filesystem;

namespace {

// Builds `code` into a shared object the way the judge builds kernels, plus `extra` arguments.
std::string build_so(const util::TempDir& dir, const std::string& name, const std::string& code,
                     std::vector<std::string> extra = {}) {
  fs::path src = dir.path() / (name + ".cpp");
  fs::path out = dir.path() / (name + ".so");
  std::ofstream(src) << code;
  util::Command cmd;
  cmd.argv = {"g++", "-std=c++20", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", src.string(), "-o", out.string()};
  cmd.argv.insert(cmd.argv.end(), extra.begin(), extra.end());
  auto r = util::default_process_runner().run(cmd);
  EXPECT_EQ(r.outcome, util::Outcome::Exited) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return out.string();
}

std::string bytes_of(const std::string& path) {
  auto b = util::read_file(path);
  EXPECT_TRUE(b) << path;
  return b ? *b : std::string();
}

std::set<std::string> names(const std::vector<ElfSymbol>& symbols) {
  std::set<std::string> out;
  for (const auto& s : symbols) out.insert(s.name);
  return out;
}

const char* kEscapes = R"(
#include <dlfcn.h>
#include <cstdlib>
#include <sys/socket.h>
#include <unistd.h>
extern "C" __attribute__((visibility("default"))) int entry(const char* p) {
  void* h = dlopen(p, RTLD_NOW);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  char* argv[] = {nullptr};
  if (s < -5) execve(p, argv, argv);
  return std::system(p) + s + (h != nullptr);
}
extern "C" __attribute__((visibility("default"), weak)) int weak_entry() { return 1; }
extern "C" int hidden_helper() { return 2; }
)";

} // namespace

TEST(Elf, SeesImportsWithTheirVersionsStripped) {
  util::TempDir dir;
  auto info = read_elf(build_so(dir, "escapes", kEscapes));
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->machine, EM_X86_64);
  for (const char* name : {"dlopen", "socket", "system", "execve"}) {
    const ElfSymbol* s = info->find_import(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->version.rfind("GLIBC_", 0), 0u) << name << " has version " << s->version;
    EXPECT_EQ(s->library, "libc.so.6") << name;
  }
  for (const auto& s : info->imports) EXPECT_EQ(s.name.find('@'), std::string::npos) << s.name;
  // The weak undefined symbols every g++ shared object carries.
  const ElfSymbol* gmon = info->find_import("__gmon_start__");
  ASSERT_NE(gmon, nullptr);
  EXPECT_EQ(gmon->binding, SymbolBinding::Weak);
  EXPECT_NE(std::find(info->needed.begin(), info->needed.end(), "libc.so.6"), info->needed.end());
  EXPECT_TRUE(info->search_paths.empty());
  EXPECT_TRUE(info->loader_refs.empty());
}

TEST(Elf, SeesExportsButNotHiddenSymbols) {
  util::TempDir dir;
  auto info = read_elf(build_so(dir, "escapes", kEscapes, {"-Wl,-soname,libescapes.so.3"}));
  ASSERT_TRUE(info) << info.error().message;
  const ElfSymbol* entry = info->find_export("entry");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->binding, SymbolBinding::Global);
  const ElfSymbol* weak = info->find_export("weak_entry");
  ASSERT_NE(weak, nullptr);
  EXPECT_EQ(weak->binding, SymbolBinding::Weak);
  EXPECT_EQ(info->find_export("hidden_helper"), nullptr);
  EXPECT_EQ(info->find_export("dlopen"), nullptr);
  EXPECT_EQ(info->find_import("entry"), nullptr);
  EXPECT_EQ(info->soname, "libescapes.so.3");
}

TEST(Elf, SeesLibrariesSearchPathsAndLoaderReferences) {
  util::TempDir dir;
  const char* code = R"(
#include <cmath>
extern "C" __attribute__((visibility("default"))) double entry(double x) { return std::cbrt(x) + std::erfc(x); }
)";
  auto plain = read_elf(build_so(dir, "m", code, {"-Wl,--no-as-needed", "-lm"}));
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_NE(std::find(plain->needed.begin(), plain->needed.end(), "libm.so.6"), plain->needed.end());

  auto odd = read_elf(build_so(dir, "odd", code,
                               {"-Wl,-rpath,/opt/elsewhere", "-Wl,--enable-new-dtags", "-Wl,--audit,libspy.so.1",
                                "-Wl,--filter,libfilter.so.2"}));
  ASSERT_TRUE(odd) << odd.error().message;
  EXPECT_EQ(odd->search_paths, std::vector<std::string>{"/opt/elsewhere"});
  EXPECT_NE(std::find(odd->loader_refs.begin(), odd->loader_refs.end(), "libspy.so.1"), odd->loader_refs.end());
  EXPECT_NE(std::find(odd->loader_refs.begin(), odd->loader_refs.end(), "libfilter.so.2"), odd->loader_refs.end());
}

// A source alone can add a library: g++ links -lm, and Debian's libm.so is a linker script that
// names libmvec AS_NEEDED, so calling a vector math entry point brings in libmvec.so.1.
TEST(Elf, AVectorMathCallPullsInLibmvec) {
  util::TempDir dir;
  const char* code = R"(
#include <immintrin.h>
extern "C" __m128 _ZGVbN4v_expf(__m128);
extern "C" __attribute__((visibility("default"))) void entry(float* a) { _mm_storeu_ps(a, _ZGVbN4v_expf(_mm_loadu_ps(a))); }
)";
  auto info = read_elf(build_so(dir, "mvec", code));
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_NE(std::find(info->needed.begin(), info->needed.end(), "libmvec.so.1"), info->needed.end());
  ASSERT_NE(info->find_import("_ZGVbN4v_expf"), nullptr);
  EXPECT_EQ(info->find_import("_ZGVbN4v_expf")->library, "libmvec.so.1");
}

// `nm -D` reads section headers, this reader reads the dynamic segment: they must agree on the
// names of the big libraries a kernel links.
TEST(Elf, AgreesWithNmOnSystemLibraries) {
  if (util::find_program("nm").empty()) GTEST_SKIP() << "nm is not installed";
  for (const char* lib : {"libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"}) {
    util::Command where;
    where.argv = {"g++", "-print-file-name=" + std::string(lib)};
    auto w = util::default_process_runner().run(where);
    std::string path = w.output.substr(0, w.output.find('\n'));
    if (path.empty() || path.front() != '/') GTEST_SKIP() << "g++ does not know where " << lib << " is";
    auto info = read_elf(path);
    ASSERT_TRUE(info) << info.error().message;

    auto nm_names = [&](const char* which) {
      util::Command nm;
      nm.argv = {"nm", "-D", which, path};
      auto r = util::default_process_runner().run(nm);
      std::set<std::string> out;
      std::istringstream in(r.output);
      std::string line;
      while (std::getline(in, line)) {
        std::string name = line.substr(line.rfind(' ') + 1);
        out.insert(name.substr(0, name.find('@')));
      }
      return out;
    };
    EXPECT_EQ(names(info->imports), nm_names("--undefined-only")) << lib;
    auto exports = names(info->exports);
    EXPECT_EQ(exports, nm_names("--defined-only")) << lib;
    EXPECT_GT(exports.size(), 100u) << lib;
  }
}

TEST(Elf, GarbageIsAnErrorNotACrash) {
  for (std::string bad : {std::string(), std::string("hello"), std::string("\x7f" "ELF"), std::string(64, '\0'),
                          std::string(4096, '\xff')}) {
    EXPECT_FALSE(parse_elf(bad)) << bad.size();
  }
  std::string not_64 = std::string("\x7f" "ELF") + std::string(60, '\0');
  not_64[EI_CLASS] = ELFCLASS32;
  auto e = parse_elf(not_64);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("64-bit"), std::string::npos) << e.error().message;

  util::TempDir dir;
  fs::path missing = dir.path() / "missing.so";
  auto m = read_elf(missing);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("missing.so"), std::string::npos) << m.error().message;
}

// Every prefix of a real object: once a loadable segment is cut, the answer is an Error; never a
// crash, and never a different list of symbols.
TEST(Elf, EveryTruncationIsAnErrorOrTheFullAnswer) {
  util::TempDir dir;
  const std::string full = bytes_of(build_so(dir, "escapes", kEscapes));
  auto whole = parse_elf(full);
  ASSERT_TRUE(whole) << whole.error().message;
  int errors = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    auto part = parse_elf(std::string_view(full).substr(0, n));
    if (!part) {
      ++errors;
      continue;
    }
    EXPECT_EQ(names(part->imports), names(whole->imports)) << "cut at " << n;
  }
  EXPECT_GT(errors, static_cast<int>(full.size() / 2));
}

// Random damage to the headers and dynamic tables: whatever comes back, nothing crashes or hangs.
TEST(Elf, RandomDamageNeverCrashes) {
  util::TempDir dir;
  const std::string full = bytes_of(build_so(dir, "escapes", kEscapes));
  std::mt19937_64 rng(12345);
  const size_t span = std::min<size_t>(full.size(), 8192);
  int parsed = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = full;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % span;
      damaged[at] = static_cast<char>(rng() % 2 ? rng() : damaged[at] ^ (1 << (rng() % 8)));
    }
    if (parse_elf(damaged)) ++parsed;
  }
  EXPECT_GT(parsed, 0); // some damage misses what the reader looks at
}

// Hand-made damage at the places a hostile file would aim for.
TEST(Elf, TargetedDamageIsReported) {
  util::TempDir dir;
  const std::string full = bytes_of(build_so(dir, "escapes", kEscapes));
  Elf64_Ehdr eh;
  std::memcpy(&eh, full.data(), sizeof eh);

  auto with_header = [&](auto edit) {
    std::string b = full;
    Elf64_Ehdr h = eh;
    edit(h);
    std::memcpy(b.data(), &h, sizeof h);
    return parse_elf(b);
  };
  EXPECT_FALSE(with_header([](Elf64_Ehdr& h) { h.e_phoff = ~uint64_t{0} - 8; }));
  EXPECT_FALSE(with_header([](Elf64_Ehdr& h) { h.e_phnum = 0xffff; }));
  EXPECT_FALSE(with_header([](Elf64_Ehdr& h) { h.e_phentsize = 12; }));
  EXPECT_FALSE(with_header([](Elf64_Ehdr& h) { h.e_type = ET_REL; }));

  // Find the dynamic segment and corrupt the entries the reader follows.
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  std::memcpy(ph.data(), full.data() + eh.e_phoff, ph.size() * sizeof(Elf64_Phdr));
  auto dyn = std::find_if(ph.begin(), ph.end(), [](const Elf64_Phdr& p) { return p.p_type == PT_DYNAMIC; });
  ASSERT_NE(dyn, ph.end());
  auto with_dynamic = [&](int64_t tag, uint64_t value) {
    std::string b = full;
    for (uint64_t off = dyn->p_offset; off + sizeof(Elf64_Dyn) <= dyn->p_offset + dyn->p_filesz; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, b.data() + off, sizeof d);
      if (d.d_tag == tag) {
        d.d_un.d_val = value;
        std::memcpy(b.data() + off, &d, sizeof d);
        return parse_elf(b);
      }
    }
    ADD_FAILURE() << "no dynamic tag " << tag;
    return parse_elf(b);
  };
  for (uint64_t huge : {uint64_t{1} << 40, ~uint64_t{0}, ~uint64_t{0} - 100}) {
    EXPECT_FALSE(with_dynamic(DT_STRTAB, huge));
    EXPECT_FALSE(with_dynamic(DT_STRSZ, huge));
    EXPECT_FALSE(with_dynamic(DT_SYMTAB, huge));
    EXPECT_FALSE(with_dynamic(DT_GNU_HASH, huge));
    EXPECT_FALSE(with_dynamic(DT_VERNEED, huge));
    EXPECT_FALSE(with_dynamic(DT_NEEDED, huge));
  }
  EXPECT_FALSE(with_dynamic(DT_SYMENT, 16));
  // A string table one byte long: every name runs past it.
  EXPECT_FALSE(with_dynamic(DT_STRSZ, 1));
}

} // namespace elf_test
