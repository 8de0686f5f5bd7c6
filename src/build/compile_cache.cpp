#include "build/compile_cache.h"

#include "util/fs.h"
#include "util/hash.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>
#include <unistd.h>

namespace temper::build {

namespace {

constexpr const char* kArtifactName = "artifact";
constexpr const char* kResultName = "result.json";

// Adds `file` and, recursively, every include it names that resolves to a file in its own
// directory, the request's include dirs or temper's include dir. System headers are covered by
// the compiler identity.
Status hash_closure(const fs::path& file, const std::vector<fs::path>& dirs, util::Hasher& h,
                    std::set<fs::path>& seen) {
  fs::path canon = fs::weakly_canonical(file);
  if (!seen.insert(canon).second) return {};
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
  h.add(canon.string()).add(text);
  static const std::regex include_re(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, include_re)) continue;
    std::string name = m[1];
    std::vector<fs::path> candidates = {file.parent_path() / name};
    for (const auto& d : dirs) candidates.push_back(d / name);
    for (const auto& c : candidates) {
      std::error_code ec;
      if (fs::is_regular_file(c, ec)) {
        TEMPER_TRY(hash_closure(c, dirs, h, seen));
        break;
      }
    }
  }
  return {};
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  return fmt::format("{}.{}.{:x}", ::getpid(), counter++, rd());
}

Expected<CompileResult> load_entry(const fs::path& dir) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(dir / kResultName));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail("corrupt cache entry {}", dir.string());
  CompileResult r;
  r.ok = j.value("ok", false);
  r.diagnostics = j.value("diagnostics", "");
  r.seconds = j.value("seconds", 0.0);
  r.command = j.value("command", std::vector<std::string>{});
  r.key = dir.filename().string();
  if (r.ok) {
    r.artifact = dir / kArtifactName;
    std::error_code ec;
    if (!fs::is_regular_file(r.artifact, ec)) return fail("cache entry {} lost its artifact", dir.string());
  }
  return r;
}

} // namespace

CompileCache::CompileCache(fs::path root, CompilerSpec compiler, util::ProcessRunner& runner)
    : m_root(std::move(root)), m_compiler(std::move(compiler)), m_runner(runner) {}

Expected<std::string> CompileCache::key_for(const CompileRequest& req) {
  TEMPER_TRY_ASSIGN(CompilerIdentity id, identify_compiler(m_compiler.program, m_runner));
  util::Hasher h;
  h.add("compile-key-v1").add(id.key);
  h.add(static_cast<int64_t>(req.kind));
  // The command line with the output path left out covers flags, macros and include dirs.
  for (const auto& arg : compile_command(m_compiler, req, "OUT")) h.add(arg);
  std::vector<fs::path> dirs = req.include_dirs;
  dirs.push_back(temper_include_dir());
  std::set<fs::path> seen;
  TEMPER_TRY(hash_closure(req.source, dirs, h, seen));
  return h.hex();
}

Expected<CompileResult> CompileCache::compile(const CompileRequest& req) {
  TEMPER_TRY_ASSIGN(std::string key, key_for(req));
  fs::path entry = m_root / key.substr(0, 2) / key;
  std::error_code ec;
  if (fs::is_directory(entry, ec)) {
    if (auto hit = load_entry(entry)) {
      hit->cache_hit = true;
      hit->label = req.label;
      return *hit;
    }
    fs::remove_all(entry, ec); // corrupt: rebuild
  }

  // Build in a private directory, then publish it with one rename so concurrent processes
  // never see a half-written entry.
  fs::path tmp = m_root / "tmp" / (key + "." + unique_suffix());
  TEMPER_TRY(util::make_dirs(tmp));
  CompileResult r;
  r.key = key;
  r.label = req.label;
  r.command = compile_command(m_compiler, req, tmp / kArtifactName);
  util::Command cmd;
  cmd.argv = r.command;
  cmd.timeout = m_timeout;
  util::ProcessResult pr = m_runner.run(cmd);
  r.seconds = pr.seconds;
  r.diagnostics = pr.output;
  if (pr.outcome == util::Outcome::FailedToStart) {
    fs::remove_all(tmp, ec);
    return fail("cannot run the compiler: {}", pr.output);
  }
  if (pr.outcome != util::Outcome::Exited) {
    // Killed or timed out: a verdict for this run, but not something to remember.
    fs::remove_all(tmp, ec);
    r.ok = false;
    r.diagnostics += fmt::format("\ncompiler {}", pr.describe());
    return r;
  }
  r.ok = pr.exit_code == 0 && fs::is_regular_file(tmp / kArtifactName, ec);
  nlohmann::json j = {{"schema_version", 1}, {"ok", r.ok},           {"diagnostics", r.diagnostics},
                      {"seconds", r.seconds}, {"command", r.command}, {"label", req.label},
                      {"source", req.source.string()}};
  TEMPER_TRY(util::write_file_atomic(tmp / kResultName, j.dump(2)));
  TEMPER_TRY(util::make_dirs(entry.parent_path()));
  fs::rename(tmp, entry, ec);
  if (ec) {
    // Another process published the same key first; theirs is as good as ours.
    fs::remove_all(tmp, ec);
  }
  auto published = load_entry(entry);
  if (!published) return tl::unexpected(published.error());
  published->cache_hit = false;
  published->seconds = r.seconds;
  published->label = req.label;
  return *published;
}

std::vector<Expected<CompileResult>> CompileCache::compile_all(
    const std::vector<CompileRequest>& reqs, int jobs, const std::function<void(const CompileResult&)>& on_done) {
  std::vector<Expected<CompileResult>> results(reqs.size(), fail("not compiled"));
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::mutex done_mu;
  auto work = [&] {
    for (size_t i; (i = next++) < reqs.size();) {
      results[i] = compile(reqs[i]);
      if (on_done && results[i]) {
        std::lock_guard lock(done_mu);
        on_done(*results[i]);
      }
    }
  };
  std::vector<std::thread> pool;
  int n = std::min<int>(jobs, static_cast<int>(reqs.size()));
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return results;
}

} // namespace temper::build
