#include "judge/boundary.h"

#include "util/fs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

namespace temper::judge {

namespace fs = std::filesystem;

namespace {

// What a kernel has no use for, grouped by the reason given in the message. Names are the C
// library's entry points; C++ wrappers (std::system, std::thread) end in them too. Symbols the
// C library only calls internally (popen forks, getaddrinfo opens sockets) are listed by the
// entry point a candidate would import. pthread_create stays allowed: threads are fine.
struct ImportGroup {
  const char* why;
  std::vector<const char*> names;
  std::vector<const char*> prefixes;
};

const std::vector<ImportGroup>& import_groups() {
  static const std::vector<ImportGroup> groups = {
      {"loading or looking up code at run time is forbidden in a candidate",
       {"dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dladdr1", "dlinfo", "dl_iterate_phdr"},
       {"_dl_", "__libc_dl"}},
      {"starting processes or programs is forbidden in a candidate",
       {"fork", "vfork", "_Fork", "clone", "clone3", "system", "popen", "execl", "execle", "execlp", "execv", "execve",
        "execvp", "execvpe", "execveat", "fexecve", "wordexp", "forkpty", "daemon"},
       {"posix_spawn"}},
      {"network access is forbidden in a candidate",
       {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "getaddrinfo", "getnameinfo",
        "gethostbyname", "gethostbyname2", "gethostbyname_r", "gethostbyname2_r", "gethostbyaddr", "gethostbyaddr_r"},
       {}},
      // Signals, priorities, affinities and limits of another process are how a candidate would
      // stop or slow the reference's worker while it is being timed.
      {"reaching into other processes is forbidden in a candidate",
       {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "kill",
        "killpg", "tgkill", "tkill", "sigqueue", "setpriority", "sched_setaffinity", "sched_setscheduler",
        "sched_setparam", "prlimit", "prlimit64", "setrlimit", "setrlimit64", "unshare", "setns"},
       {}},
      // The worker's environment and arguments are fixed and say nothing about the judge, the
      // role or the phase (backend/worker.cpp); a kernel has no use for them, and one that reads
      // them is looking for a way to tell when it is watched.
      {"reading the environment or the program's arguments is forbidden in a candidate (a kernel that looks for the judge)",
       {"getenv", "secure_getenv", "__secure_getenv", "environ", "__environ", "_environ", "program_invocation_name",
        "program_invocation_short_name", "__progname", "__progname_full", "__libc_argv", "__libc_argc"},
       {}},
      {"a raw system call would bypass every other import check",
       {"syscall"},
       {}},
      {"changing page protections is how a kernel would patch the worker's timer or code",
       {"mprotect", "pkey_mprotect"},
       {}},
  };
  return groups;
}

// Time sources the worker reads around a call. A kernel that defines one is trying to interpose
// it (the worker does not resolve symbols through the kernel, but the intent is the cheat).
const std::vector<const char*>& timer_names() {
  static const std::vector<const char*> names = {"clock_gettime", "__clock_gettime", "clock_gettime64", "__clock_gettime64",
                                                 "gettimeofday", "__gettimeofday", "time", "clock", "times", "timespec_get",
                                                 "clock_getres", "__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time"};
  return names;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void add_unique(std::vector<std::string>& list, std::string item) {
  if (!item.empty() && std::find(list.begin(), list.end(), item) == list.end()) list.push_back(std::move(item));
}

fs::path absolute_normal(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::weakly_canonical(p, ec);
  if (ec) a = fs::absolute(p, ec).lexically_normal();
  return a;
}

// A library named by the task: "libfoo.so.1" stays a prefix as written; "foo" and "libfoo"
// become "libfoo.so", so that "libz" does not admit libzstd.
std::string library_prefix(const std::string& name) {
  if (name.find(".so") != std::string::npos || name.rfind("ld-", 0) == 0) return name;
  return (name.rfind("lib", 0) == 0 ? name : "lib" + name) + ".so";
}

std::string describe(const build::ElfSymbol& s) {
  if (s.version.empty()) return fmt::format("`{}`", s.name);
  if (s.library.empty()) return fmt::format("`{}` ({})", s.name, s.version);
  return fmt::format("`{}` ({} from {})", s.name, s.version, s.library);
}

// The source as the compiler sees its tokens, for the name checks: comments removed (a comment
// can name anything: it cannot read a file), backslash-newlines removed, adjacent string
// literals joined ("a" "b" -> "ab"), lower-cased, with each character's offset in the original.
struct Normalized {
  std::string text;
  std::vector<size_t> origin;
};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Backslash-newlines removed (translation phase 2), offsets kept.
Normalized splice_lines(std::string_view src) {
  Normalized n;
  n.text.reserve(src.size());
  n.origin.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\\' && i + 1 < src.size() && (src[i + 1] == '\n' || src[i + 1] == '\r')) {
      i += (src[i + 1] == '\r' && i + 2 < src.size() && src[i + 2] == '\n') ? 2 : 1;
      continue;
    }
    n.text.push_back(src[i]);
    n.origin.push_back(i);
  }
  return n;
}

// Comments replaced by one space, everything else kept: string, character and raw string
// literals are recognized so that "//" inside one is not a comment, and a ' inside a number
// (1'000) is a digit separator, not a character literal. Where it cannot tell, it keeps text:
// an unterminated literal runs to the end, which hides nothing.
Normalized strip_comments(const Normalized& in) {
  const std::string& s = in.text;
  Normalized n;
  n.text.reserve(s.size());
  n.origin.reserve(s.size());
  auto keep = [&](size_t i) {
    n.text.push_back(s[i]);
    n.origin.push_back(in.origin[i]);
  };
  std::string ident;       // the identifier or number the scan is in (code only)
  bool number = false;     // that token is a number (pp-number: digit separators allowed)
  size_t i = 0;
  // Copies a quoted literal that starts at s[i] (the quote) through its closing quote.
  auto quoted = [&](char quote) {
    keep(i++);
    while (i < s.size()) {
      if (s[i] == '\\' && i + 1 < s.size()) {
        keep(i++);
        keep(i++);
        continue;
      }
      const bool close = s[i] == quote;
      keep(i++);
      if (close) return;
    }
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      const size_t at = i;
      while (i < s.size() && s[i] != '\n') ++i;
      n.text.push_back(' ');
      n.origin.push_back(in.origin[at]);
      ident.clear();
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const size_t at = i;
      size_t close = s.find("*/", i + 2);
      i = close == std::string::npos ? s.size() : close + 2;
      n.text.push_back(' ');
      n.origin.push_back(in.origin[at]);
      ident.clear();
      continue;
    }
    if (c == '"') {
      const bool raw = ident == "R" || ident == "u8R" || ident == "uR" || ident == "UR" || ident == "LR";
      ident.clear();
      if (!raw) {
        quoted('"');
        continue;
      }
      // R"delim( ... )delim"
      size_t open = s.find('(', i + 1);
      if (open == std::string::npos || open - i - 1 > 16) {
        quoted('"');
        continue;
      }
      const std::string terminator = ")" + s.substr(i + 1, open - i - 1) + "\"";
      size_t close = s.find(terminator, open + 1);
      const size_t end = close == std::string::npos ? s.size() : close + terminator.size();
      while (i < end) keep(i++);
      continue;
    }
    if (c == '\'') {
      const bool separator = number && !ident.empty() && i + 1 < s.size() && ident_char(s[i + 1]);
      if (!separator) {
        ident.clear();
        quoted('\'');
        continue;
      }
      keep(i++);
      continue;
    }
    if (ident_char(c)) {
      if (ident.empty()) number = std::isdigit(static_cast<unsigned char>(c)) != 0;
      ident.push_back(c);
    } else if (c == '.' && number) {
      ident.push_back(c); // 1.5e3
    } else if (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      ident.assign(1, c); // .5
      number = true;
    } else {
      ident.clear();
    }
    keep(i++);
  }
  return n;
}

Normalized normalize(std::string_view src) {
  const Normalized code = strip_comments(splice_lines(src));
  Normalized n;
  n.text.reserve(code.text.size());
  n.origin.reserve(code.text.size());
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; };
  const std::string& t = code.text;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '"') {
      size_t j = i + 1;
      while (j < t.size() && is_space(t[j])) ++j;
      if (j < t.size() && t[j] == '"') {
        i = j; // drop the closing quote, the space between and the opening quote
        continue;
      }
    }
    n.text.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(t[i]))));
    n.origin.push_back(code.origin[i]);
  }
  return n;
}

int line_of(std::string_view text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(std::min(offset, text.size())), '\n'));
}

} // namespace

BoundaryPolicy default_boundary_policy() {
  BoundaryPolicy p;
  for (const auto& g : import_groups()) {
    for (const char* n : g.names) p.forbidden_imports.push_back({n, false, g.why});
    for (const char* n : g.prefixes) p.forbidden_imports.push_back({n, true, g.why});
  }
  // The C library's internal interface: binding to it reaches the loader and libc internals
  // (__libc_dlopen_mode, _dl_*) around every name listed above.
  p.forbidden_versions = {"GLIBC_PRIVATE"};
  // The C and C++ runtimes. libmvec is glibc's vector half of libm: g++'s own -lm link pulls it
  // in (libm.so is a linker script naming it AS_NEEDED) when a kernel calls a vector math
  // function, so it belongs with libm.
  p.allowed_libraries = {"libc.so", "libm.so", "libmvec.so", "libstdc++.so", "libgcc_s.so", "libgomp.so",
                         "ld-linux", "linux-vdso"};
  // The vault and the cache (goldens, the secret seed), and the sealed references' store
  // ($TEMPER_HOME/refs), however a kernel would find them.
  p.protected_names = {"vault", "secret-seed", "temper_cache_dir", "xdg_cache_home", ".cache/temper", "temper_home",
                       ".temper/refs"};
  return p;
}

void protect_directory(BoundaryPolicy& policy, const fs::path& dir) {
  fs::path abs = absolute_normal(dir);
  if (std::distance(abs.begin(), abs.end()) < 3) return; // as for the cache root below
  std::string d = lower(abs.string());
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  add_unique(policy.protected_names, d);
}

BoundaryPolicy boundary_policy_for(const core::Task& task, const std::vector<fs::path>& references,
                                   const fs::path& candidate, const fs::path& cache_root) {
  BoundaryPolicy p = default_boundary_policy();
  for (const auto& lib : task.config.allowed_libraries) add_unique(p.allowed_libraries, library_prefix(lib));

  const std::string own_name = lower(candidate.filename().string());
  const fs::path own_path = absolute_normal(candidate);
  auto protect = [&](const fs::path& file, bool by_name) {
    if (file.empty()) return;
    fs::path abs = absolute_normal(file);
    if (abs == own_path) return; // judging the reference itself, as task checks do
    if (std::find(p.protected_files.begin(), p.protected_files.end(), abs) == p.protected_files.end()) {
      p.protected_files.push_back(abs);
    }
    add_unique(p.protected_names, lower(abs.string()));
    if (by_name) add_unique(p.protected_names, lower(abs.filename().string()));
  };
  std::vector<fs::path> refs = references;
  for (const auto& [backend, file] : task.config.reference) refs.push_back(file);
  for (const auto& r : refs) protect(r, lower(r.filename().string()) != own_name);
  if (!task.config.golden.empty()) protect(task.config.golden, lower(task.config.golden.filename().string()) != own_name);

  // A cache root as short as "/tmp" would match innocent text; the fixed names above still
  // cover the default location.
  fs::path root = absolute_normal(cache_root);
  if (std::distance(root.begin(), root.end()) >= 3) {
    std::string r = lower(root.string());
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    add_unique(p.protected_names, r);
  }
  return p;
}

void add_cuda_policy(BoundaryPolicy& p, const core::Task& task) {
  add_unique(p.allowed_libraries, "libcudart.so");
  auto allowed = [&](const char* feature) {
    const auto& f = task.config.allowed_cuda_features;
    return std::find(f.begin(), f.end(), feature) != f.end();
  };
  if (!allowed("streams")) {
    const char* why = "creating streams is forbidden in a CUDA candidate: work on another stream escapes the timed "
                      "window (allowed_cuda_features: [streams] admits it)";
    for (const char* n : {"cudaStreamCreate", "cuStreamCreate"}) p.forbidden_imports.push_back({n, true, why});
  }
  if (!allowed("l2_persistence")) {
    const char* why = "L2 persistence controls are forbidden in a CUDA candidate: they defeat the cold-L2 protocol "
                      "(allowed_cuda_features: [l2_persistence] admits them)";
    for (const char* n : {"cudaCtxResetPersistingL2Cache", "cuCtxResetPersistingL2Cache", "cudaStreamSetAttribute",
                          "cuStreamSetAttribute", "cudaDeviceSetLimit", "cuCtxSetLimit", "cudaGraphKernelNodeSetAttribute",
                          "cuGraphKernelNodeSetAttribute"}) {
      p.forbidden_imports.push_back({n, true, why});
    }
  }
  for (const char* n : {"cudaDeviceReset", "cuCtxDestroy", "cuDevicePrimaryCtxReset"}) {
    p.forbidden_imports.push_back({n, true, "resetting the device destroys the worker's context, buffers and timers"});
  }
  // A host callback runs on a thread the driver started before the worker's sandbox went on
  // (docs/cuda.md): outside Landlock's rules on kernels without Landlock ABI 8.
  for (const char* n : {"cudaLaunchHostFunc", "cudaStreamAddCallback", "cuLaunchHostFunc", "cuStreamAddCallback"}) {
    p.forbidden_imports.push_back({n, true, "host callbacks run on the driver's threads, outside the CUDA worker's sandbox"});
  }
}

const std::string& BoundaryVerdict::reason_code() const {
  static const std::string none;
  return violations.empty() ? none : violations.front().reason_code;
}

std::string BoundaryVerdict::message() const {
  if (violations.empty()) return {};
  constexpr size_t kShown = 3;
  std::string out = violations.front().message();
  for (size_t k = 1; k < violations.size() && k <= kShown; ++k) out += "; also " + violations[k].what;
  if (violations.size() > kShown + 1) out += fmt::format("; and {} more", violations.size() - kShown - 1);
  return out;
}

void BoundaryVerdict::append(const BoundaryVerdict& other) {
  violations.insert(violations.end(), other.violations.begin(), other.violations.end());
}

std::set<std::string> callable_exports(const build::ElfInfo& reference) {
  std::set<std::string> out;
  for (const auto& s : reference.exports) {
    if (s.binding == build::SymbolBinding::Global && s.name != "temper_kernel" && s.name != "temper_cuda_kernel") {
      out.insert(s.name);
    }
  }
  return out;
}

BoundaryVerdict check_artifact(const build::ElfInfo& candidate, const std::set<std::string>& reference_exports,
                               const BoundaryPolicy& policy) {
  BoundaryVerdict v;
  for (const auto& s : candidate.imports) {
    if (reference_exports.count(s.name)) {
      v.violations.push_back({std::string(kCallsReference), fmt::format("imports {}, which the reference exports", describe(s)),
                              "a candidate must not call the reference"});
    }
  }
  for (const auto& s : candidate.imports) {
    auto rule = std::find_if(policy.forbidden_imports.begin(), policy.forbidden_imports.end(), [&](const ForbiddenImport& f) {
      return f.prefix ? s.name.rfind(f.name, 0) == 0 : s.name == f.name;
    });
    if (rule != policy.forbidden_imports.end()) {
      v.violations.push_back({std::string(kForbiddenImport), fmt::format("imports {}", describe(s)), rule->why});
    } else if (std::find(policy.forbidden_versions.begin(), policy.forbidden_versions.end(), s.version) !=
               policy.forbidden_versions.end()) {
      v.violations.push_back({std::string(kForbiddenImport), fmt::format("imports {}", describe(s)),
                              "binding to the C library's private interface is forbidden"});
    }
  }
  for (const auto& s : candidate.exports) {
    if (std::find_if(timer_names().begin(), timer_names().end(), [&](const char* n) { return s.name == n; }) !=
        timer_names().end()) {
      v.violations.push_back({std::string(kTimerTampering), fmt::format("defines and exports `{}`", s.name),
                              "a candidate must not interpose the clock the worker times it with"});
    }
  }
  for (const auto& lib : candidate.needed) {
    // A path ("/tmp/x/libc.so.6") would pass a prefix test on its file name while loading any file.
    bool allowed = lib.find('/') == std::string::npos &&
                   std::any_of(policy.allowed_libraries.begin(), policy.allowed_libraries.end(),
                               [&](const std::string& prefix) { return lib.rfind(prefix, 0) == 0; });
    if (!allowed) {
      v.violations.push_back({std::string(kForbiddenLibrary), fmt::format("links {}", lib),
                              fmt::format("not an allowed library (allowed: {})", fmt::join(policy.allowed_libraries, ", "))});
    }
  }
  for (const auto& path : candidate.search_paths) {
    v.violations.push_back({std::string(kForbiddenLibrary), fmt::format("sets the library search path `{}`", path),
                            "the loader could then find other libraries under allowed names"});
  }
  for (const auto& lib : candidate.loader_refs) {
    v.violations.push_back({std::string(kForbiddenLibrary), fmt::format("names `{}` as a filter or audit library", lib),
                            "the loader would load it besides the allowed libraries"});
  }
  return v;
}

BoundaryVerdict check_source(std::string_view text, const BoundaryPolicy& policy, std::string_view file) {
  BoundaryVerdict v;
  const Normalized n = normalize(text);
  const std::string where = file.empty() ? std::string("the source") : fmt::format("{}", file);
  for (const auto& name : policy.protected_names) {
    if (name.empty()) continue;
    size_t at = n.text.find(name);
    if (at == std::string::npos) continue;
    v.violations.push_back({std::string(kReadsProtectedFile),
                            fmt::format("{} names `{}` (line {})", where, name, line_of(text, n.origin[at])),
                            "a candidate must not refer to the vault, the reference, the goldens or temper's cache"});
  }
  return v;
}

Expected<BoundaryVerdict> check_source_tree(const fs::path& source, const std::vector<fs::path>& include_dirs,
                                            const fs::path& trusted_dir, const BoundaryPolicy& policy) {
  // The same include pattern the compile cache follows (compile_cache.cpp), so the two agree on
  // which files a build reads.
  static const std::regex include_re(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  constexpr size_t kMaxFiles = 1000;
  const fs::path trusted = trusted_dir.empty() ? fs::path() : absolute_normal(trusted_dir);
  auto is_trusted = [&](const fs::path& abs) {
    if (trusted.empty()) return false;
    auto rel = abs.lexically_relative(trusted);
    return !rel.empty() && *rel.begin() != "..";
  };

  BoundaryVerdict v;
  std::vector<fs::path> todo = {source};
  std::set<fs::path> seen;
  while (!todo.empty()) {
    fs::path file = todo.back();
    todo.pop_back();
    const fs::path abs = absolute_normal(file);
    if (!seen.insert(abs).second || is_trusted(abs)) continue;
    if (seen.size() > kMaxFiles) return fail("{} includes more than {} local files", source.string(), kMaxFiles);
    const std::string label = file == source ? std::string() : fmt::format("the included file {}", file.string());
    if (std::find(policy.protected_files.begin(), policy.protected_files.end(), abs) != policy.protected_files.end()) {
      v.violations.push_back({std::string(kReadsProtectedFile),
                              fmt::format("{} is a protected file", file == source ? "the candidate" : file.string()),
                              "a candidate must not include the reference or the golden"});
      continue;
    }
    TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
    v.append(check_source(text, policy, label));
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      std::vector<fs::path> candidates = {file.parent_path() / m[1].str()};
      for (const auto& d : include_dirs) candidates.push_back(d / m[1].str());
      for (const auto& c : candidates) {
        std::error_code ec;
        if (fs::is_regular_file(c, ec)) {
          todo.push_back(c);
          break;
        }
      }
    }
  }
  return v;
}

} // namespace temper::judge
