// The content-addressed compile cache, shared between processes. The key covers the source and
// every file it includes from its own directory or temper's include dir, the flags, the
// macros, the artifact kind and the compiler's identity (which includes the CPU for
// -march=native). A hit compiles nothing. Compile errors are cached too (they are as
// deterministic as successes); a compiler that was killed or timed out is not.
#pragma once

#include "build/compiler.h"
#include "util/error.h"
#include "util/process.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace temper::build {

struct CompileResult {
  bool ok = false;             // an artifact exists
  fs::path artifact;           // inside the cache; valid when ok
  std::string diagnostics;     // compiler output (warnings on success, errors on failure)
  double seconds = 0;          // compile time when it was built (also reported on hits)
  bool cache_hit = false;
  std::string key;
  std::vector<std::string> command;
  std::string label;
};

class CompileCache {
public:
  CompileCache(fs::path root, CompilerSpec compiler, util::ProcessRunner& runner);

  // Builds one artifact or finds it in the cache. Errors are harness problems (unreadable
  // source, missing compiler); a source that does not compile is a CompileResult with ok=false.
  Expected<CompileResult> compile(const CompileRequest& req);

  // Builds independent requests in parallel on `jobs` threads (0: one per core), in the
  // request order. `on_done` (optional) is called as each finishes, from worker threads.
  std::vector<Expected<CompileResult>> compile_all(
      const std::vector<CompileRequest>& reqs, int jobs,
      const std::function<void(const CompileResult&)>& on_done = {});

  // The cache key a request would have, without compiling.
  Expected<std::string> key_for(const CompileRequest& req);

  const fs::path& root() const { return m_root; }
  const CompilerSpec& compiler() const { return m_compiler; }
  void set_timeout(std::chrono::seconds t) { m_timeout = t; }

private:
  fs::path m_root;
  CompilerSpec m_compiler;
  util::ProcessRunner& m_runner;
  std::chrono::seconds m_timeout{300};
};

} // namespace temper::build
