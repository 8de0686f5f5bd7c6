#include "judge/profile/cache_sim.h"

#include "util/fs.h"

#include <fmt/format.h>

#include <sstream>

namespace temper::judge::profile {

namespace {

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Valgrind's output as one line: without its "--pid-- warning:" lines about the host's caches
// (auto-detection, which the fixed --I1/--D1/--LL options override) and "==pid== " prefixes.
std::string valgrind_summary(const std::string& output) {
  std::string out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("--", 0) == 0) continue;
    if (line.rfind("==", 0) == 0) {
      size_t end = line.find("==", 2);
      line = end == std::string::npos ? line : line.substr(end + 2);
    }
    size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    if (!out.empty()) out += "; ";
    out += line.substr(first);
  }
  return out;
}

} // namespace

Expected<CacheSimTotals> parse_cache_sim_output(std::string_view text) {
  std::vector<std::string> events;
  std::string totals_line, summary_line;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.rfind("events:", 0) == 0) events = words(line.substr(7));
    else if (line.rfind("totals:", 0) == 0) totals_line = std::string(line.substr(7));
    else if (line.rfind("summary:", 0) == 0) summary_line = std::string(line.substr(8));
  }
  if (events.empty()) return fail("the cache simulation output has no \"events:\" line");
  const std::string& line = totals_line.empty() ? summary_line : totals_line;
  if (line.empty()) return fail("the cache simulation output has no \"totals:\" or \"summary:\" line");
  std::vector<std::string> values = words(line);
  if (values.size() > events.size()) return fail("the totals line has {} values for {} events", values.size(), events.size());
  CacheSimTotals t;
  for (size_t k = 0; k < events.size(); ++k) {
    uint64_t v = 0;
    if (k < values.size()) { // valgrind omits trailing zeros
      try {
        v = std::stoull(values[k]);
      } catch (...) {
        return fail("the totals line has a value that is not a count: '{}'", values[k]);
      }
    }
    t[events[k]] = v;
  }
  return t;
}

void add_cache_sim_metrics(const CacheSimTotals& t, MetricSet& out) {
  auto get = [&](const char* name) -> std::optional<double> {
    auto it = t.find(name);
    if (it == t.end()) return std::nullopt;
    return static_cast<double>(it->second);
  };
  auto put = [&](const char* metric, std::optional<double> v) {
    if (v) out.set(metric, *v);
    else out.unsupported(metric, "the cache simulation did not report it");
  };
  put("cg.Ir", get("Ir"));
  put("cg.Dr", get("Dr"));
  put("cg.Dw", get("Dw"));
  put("cg.D1mr", get("D1mr"));
  put("cg.D1mw", get("D1mw"));
  auto ilmr = get("ILmr"), dlmr = get("DLmr");
  put("cg.LLmr", ilmr && dlmr ? std::optional<double>(*ilmr + *dlmr) : std::nullopt);
  put("cg.LLmw", get("DLmw"));
}

Expected<CacheSimRun> run_cache_simulation(const CacheSimRequest& rq, util::ProcessRunner& runner) {
  std::string valgrind = util::find_program("valgrind");
  if (valgrind.empty()) return fail("valgrind is not installed (Debian package valgrind)");
  std::filesystem::path out_file = rq.work_dir / "callgrind.out";
  CacheSimRun run;
  // Bubblewrap, when present: the driver has no seccomp sandbox, so keep the kernel away from
  // the network, other processes and every writable file but the work directory.
  std::string bwrap = util::find_program("bwrap");
  if (!bwrap.empty()) {
    run.command = {bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"};
    // The private /tmp hides whatever lives under the host's /tmp (a checkout, a cache): bind back,
    // read-only, the driver's directory and the compile cache that holds the artifact.
    for (const std::filesystem::path& p : {rq.driver_exe.parent_path(), util::cache_root()}) {
      const std::string dir = std::filesystem::absolute(p).lexically_normal().string();
      if (dir.rfind("/tmp/", 0) == 0) run.command.insert(run.command.end(), {"--ro-bind", dir, dir});
    }
    run.command.insert(run.command.end(), {"--bind", rq.work_dir.string(), rq.work_dir.string(), "--unshare-all",
                                           "--die-with-parent", "--new-session", "--"});
    run.sandboxed = true;
  }
  std::vector<std::string> vg = {valgrind, "--tool=callgrind", "--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64",
                                 "--LL=8388608,16,64", "--collect-atstart=no", "--toggle-collect=temper_profiled_call",
                                 "--callgrind-out-file=" + out_file.string(), "--error-exitcode=0", "--quiet",
                                 rq.driver_exe.string(), rq.load_file.string(), rq.arena_file.string()};
  run.command.insert(run.command.end(), vg.begin(), vg.end());

  auto attempt = [&](const std::vector<std::string>& argv) {
    util::Command cmd;
    cmd.argv = argv;
    cmd.timeout = rq.timeout;
    return runner.run(cmd);
  };
  util::ProcessResult r = attempt(run.command);
  if (run.sandboxed && r.outcome == util::Outcome::Exited && r.exit_code != 0 && !std::filesystem::exists(out_file) &&
      r.output.find("bwrap:") != std::string::npos) {
    // No user namespaces here: bubblewrap itself failed before the driver ran.
    return fail("bubblewrap cannot create its sandbox here ({}); the cache simulation does not run unsandboxed",
                r.output.substr(0, 300));
  }
  if (r.outcome == util::Outcome::TimedOut) return fail("the simulated call took longer than {} s", rq.timeout.count());
  if (!r.ok()) {
    std::string why = r.outcome == util::Outcome::Exited && r.exit_code == 3 ? "the kernel returned an error under valgrind"
                                                                             : "the driver failed under valgrind (" + r.describe() + ")";
    return fail("{}: {}", why, valgrind_summary(r.output).substr(0, 500));
  }
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(out_file));
  TEMPER_TRY_ASSIGN(run.totals, parse_cache_sim_output(text));
  return run;
}

} // namespace temper::judge::profile
