#include "agent/turn_runner.h"

#include "agent/sandbox.h"
#include "agent/turn_process.h"
#include "util/fs.h"
#include "util/process.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <unistd.h>

extern char** environ;

namespace temper::agent {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kStandardPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Variables of temper's environment that match a name or a "PREFIX*" pattern.
void copy_matching_env(const std::vector<std::string>& patterns, std::map<std::string, std::string>& env) {
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    for (const auto& pat : patterns) {
      bool match = !pat.empty() && pat.back() == '*' ? name.rfind(pat.substr(0, pat.size() - 1), 0) == 0 : name == pat;
      if (match) {
        env[name] = std::string(entry.substr(eq + 1));
        break;
      }
    }
  }
}

Status install_harness(const TurnRequest& request, const fs::path& harness) {
  fs::path dest = request.workspace / "harness";
  fs::path tmp = request.workspace / fmt::format(".harness.tmp.{}", ::getpid());
  std::error_code ec;
  fs::copy_file(harness, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec, ec);
  if (!ec) fs::rename(tmp, dest, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return fail("cannot install the harness client into {}: {}", dest.string(), ec.message());
  }
  return {};
}

Status seed_home(const fs::path& home, const AgentCommand& command) {
  for (const auto& [source, relative] : command.home_files) {
    std::error_code ec;
    if (!fs::exists(source, ec)) continue;
    fs::path dest = home / relative;
    TEMPER_TRY(util::make_dirs(dest.parent_path()));
    fs::copy(source, dest, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    if (ec) return fail("cannot copy {} into the agent's private home: {}", source.string(), ec.message());
  }
  return {};
}

void write_turn_record(const TurnRequest& request, const AgentCommand& command, const TurnResult& result,
                       bool network) {
  json j = {{"schema_version", 1},
            {"driver", command.driver},
            {"role", role_name(request.role)},
            {"argv", command.argv},
            {"workspace", request.workspace.string()},
            {"sandbox", request.sandbox},
            {"network", network},
            {"time_limit_s", request.time_limit.count()},
            {"exit_code", result.exit_code},
            {"timed_out", result.timed_out},
            {"seconds", result.seconds},
            {"input_tokens", result.input_tokens ? json(*result.input_tokens) : json()},
            {"output_tokens", result.output_tokens ? json(*result.output_tokens) : json()},
            {"cost_usd", result.cost_usd ? json(*result.cost_usd) : json()},
            {"summary", result.summary}};
  (void)util::write_file_atomic(request.log_dir / "turn.json",
                                j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

} // namespace

fs::path find_harness_executable(const TurnRequest& request) {
  std::error_code ec;
  if (!request.harness_executable.empty()) return request.harness_executable;
  if (const char* env = std::getenv("TEMPER_HARNESS_BIN"); env && *env) return env;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(self.parent_path() / "harness", ec)) return self.parent_path() / "harness";
  std::string on_path = util::find_program("harness");
  return on_path.empty() ? fs::path() : fs::path(on_path);
}

Status prepare_workspace(const TurnRequest& request) {
  std::error_code ec;
  if (request.workspace.empty() || !request.workspace.is_absolute()) {
    return fail("the agent workspace must be an absolute path, got \"{}\"", request.workspace.string());
  }
  if (!fs::is_directory(request.workspace, ec)) return fail("the agent workspace {} is not a directory", request.workspace.string());
  if (request.log_dir.empty()) return fail("the agent turn needs a log_dir for its transcript");
  TEMPER_TRY(util::make_dirs(request.log_dir));
  if (!request.brief.empty()) TEMPER_TRY(util::write_file_atomic(request.workspace / "BRIEF.md", request.brief));
  return {};
}

Expected<TurnResult> run_agent_command(const TurnRequest& request, const AgentCommand& command) {
  TEMPER_TRY(prepare_workspace(request));
  if (command.argv.empty()) return fail("driver {} produced an empty command", command.driver);
  std::error_code ec;
  if (!request.harness_socket.empty() && !fs::exists(request.harness_socket, ec)) {
    return fail("the harness socket {} does not exist (start the harness server before the turn)",
                request.harness_socket.string());
  }
  fs::path harness = find_harness_executable(request);
  if (!request.harness_socket.empty() && harness.empty()) {
    return fail("the `harness` client executable was not found (set TEMPER_HARNESS_BIN or put it next to temper)");
  }
  if (!harness.empty()) TEMPER_TRY(install_harness(request, harness));

  std::vector<fs::path> readonly = request.readonly_paths;
  readonly.insert(readonly.end(), command.readonly.begin(), command.readonly.end());
  for (const auto& extra : split(env_or("TEMPER_SANDBOX_RO", ""), ':')) readonly.emplace_back(extra);
  for (const auto& p : readonly) {
    if (!fs::exists(p, ec)) return fail("read-only path {} for the agent does not exist", p.string());
  }
  bool network = command.network || env_or("TEMPER_SANDBOX_NET", "") == "1";

  std::map<std::string, std::string> env;
  std::vector<std::string> pass = command.pass_env;
  for (const auto& name : split(env_or("TEMPER_SANDBOX_ENV", ""), ',')) pass.push_back(name);
  copy_matching_env(pass, env);
  for (const auto& [k, v] : command.env) env[k] = v;
  env["TEMPER_ROLE"] = role_name(request.role);
  env["TEMPER_WORKSPACE"] = request.workspace.string();

  TurnProcess process;
  process.time_limit = std::chrono::duration_cast<std::chrono::milliseconds>(request.time_limit);
  process.transcript = request.log_dir / "transcript.log";
  process.stdout_copy = request.log_dir / "stdout.log";
  std::string path_prefix;
  for (const auto& d : command.path_dirs) path_prefix += d.string() + ":";

  std::optional<util::TempDir> home;
  if (request.sandbox) {
    TEMPER_TRY(sandbox_available());
    home.emplace("temper-agent-home");
    TEMPER_TRY(seed_home(home->path(), command));
    env["PATH"] = path_prefix + kSandboxBinDir + ":" + kStandardPath;
    env["HOME"] = kSandboxHome;
    env["USER"] = env["LOGNAME"] = "agent";
    env["TMPDIR"] = "/tmp";
    env["TERM"] = "dumb";
    env["LANG"] = env_or("LANG", "C.UTF-8");
    if (!request.harness_socket.empty()) env["TEMPER_HARNESS_SOCKET"] = kSandboxSocketPath;
    for (const auto& [k, v] : request.env) env[k] = v;

    SandboxSpec spec;
    spec.workspace = request.workspace;
    spec.readonly = readonly;
    spec.readonly_at = command.readonly_at;
    if (!harness.empty()) spec.readonly_at.emplace_back(harness, fs::path(kSandboxBinDir) / "harness");
    spec.harness_socket = request.harness_socket;
    spec.home = home->path();
    spec.network = network;
    spec.env.assign(env.begin(), env.end());
    process.argv = bwrap_command(spec, command.argv);
  } else {
    // Trusted runs only (tests that say so): the agent sees the whole machine.
    if (!request.harness_socket.empty()) env["TEMPER_HARNESS_SOCKET"] = request.harness_socket.string();
    std::string harness_dir = harness.empty() ? "" : harness.parent_path().string() + ":";
    env["PATH"] = path_prefix + harness_dir + env_or("PATH", kStandardPath);
    for (const auto& [k, v] : request.env) env[k] = v;
    process.argv = command.argv;
    process.cwd = request.workspace;
    process.env_set.assign(env.begin(), env.end());
  }

  TEMPER_TRY_ASSIGN(TurnProcessResult ran, run_turn_process(process));
  TurnResult result;
  result.exit_code = ran.exit_code;
  result.timed_out = ran.timed_out;
  result.seconds = ran.seconds;
  result.transcript = process.transcript;
  if (command.parse_output) {
    auto out = util::read_file(process.stdout_copy);
    command.parse_output(out ? *out : std::string(), result);
  }
  if (result.summary.empty()) result.summary = file_tail(process.transcript);
  write_turn_record(request, command, result, network);
  return result;
}

} // namespace temper::agent
