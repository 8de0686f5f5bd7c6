#include "agent/cli_agents.h"

#include "agent/cli_usage.h"
#include "agent/shell_words.h"
#include "agent/turn_runner.h"
#include "util/process.h"

#include <cstdlib>

namespace temper::agent {

namespace {

namespace fs = std::filesystem;

// Prompts larger than this go through BRIEF.md instead of argv (Linux caps one argument at 128 KiB).
constexpr size_t kMaxPromptArg = 100 * 1024;
constexpr const char* kPointerPrompt =
    "Your instructions are in BRIEF.md in the current directory. Read it completely and follow it.";

struct Preset {
  std::string name;
  std::vector<std::string> default_args;     // before the extra args
  std::vector<std::string> pass_env;         // variables (or PREFIX*) the CLI needs
  std::map<std::string, std::string> env;    // set for every turn
  // Credentials and settings seeded into the private home: (host path, path under HOME).
  std::vector<std::pair<fs::path, fs::path>> home_files;
  CliUsage (*parse)(std::string_view);
};

fs::path host_home() {
  const char* h = std::getenv("HOME");
  return h && *h ? fs::path(h) : fs::path("/root");
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const std::vector<std::string> kProxyEnv = {"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy",
                                            "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"};

Preset claude_preset() {
  fs::path home = host_home();
  const char* cfg = std::getenv("CLAUDE_CONFIG_DIR");
  fs::path config = cfg && *cfg ? fs::path(cfg) : home / ".claude";
  Preset p{"claude",
           // Permissions are the sandbox's job: inside it the agent may edit and run anything.
           {"-p", "--output-format", "json", "--permission-mode", "bypassPermissions", "--no-session-persistence"},
           {"ANTHROPIC_*", "CLAUDE_CODE_*", "API_TIMEOUT_MS"},
           {{"DISABLE_AUTOUPDATER", "1"}, {"DISABLE_TELEMETRY", "1"}, {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"}},
           {{config / ".credentials.json", ".claude/.credentials.json"},
            {config / "settings.json", ".claude/settings.json"},
            {home / ".claude.json", ".claude.json"}},
           &parse_claude_output};
  return p;
}

Preset codex_preset() {
  const char* ch = std::getenv("CODEX_HOME");
  fs::path config = ch && *ch ? fs::path(ch) : host_home() / ".codex";
  Preset p{"codex",
           {"exec", "--json", "--skip-git-repo-check", "--ephemeral", "--color", "never"},
           {"CODEX_API_KEY", "OPENAI_*"},
           {},
           {{config / "auth.json", ".codex/auth.json"}, {config / "config.toml", ".codex/config.toml"}},
           &parse_codex_output};
  return p;
}

Preset opencode_preset() {
  fs::path home = host_home();
  Preset p{"opencode",
           {"run", "--format", "json", "--title", "temper turn", "--auto"},
           {"OPENCODE_*", "ANTHROPIC_*", "OPENAI_*"},
           {{"OPENCODE_DISABLE_AUTOUPDATE", "1"}, {"OPENCODE_DISABLE_SHARE", "1"}},
           {{home / ".config" / "opencode", ".config/opencode"},
            {home / ".local" / "share" / "opencode" / "auth.json", ".local/share/opencode/auth.json"}},
           &parse_opencode_output};
  return p;
}

bool under_system_dir(const fs::path& p) {
  for (const char* d : {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/"}) {
    if (p.string().rfind(d, 0) == 0) return true;
  }
  return false;
}

class CliAgent final : public Agent {
public:
  CliAgent(Preset preset, std::vector<std::string> args, fs::path program)
      : m_preset(std::move(preset)), m_args(std::move(args)), m_program(std::move(program)) {}
  std::string name() const override { return m_preset.name; }

  Expected<TurnResult> run_turn(const TurnRequest& request) override {
    AgentCommand command;
    command.driver = m_preset.name;
    command.network = true;
    command.pass_env = m_preset.pass_env;
    command.pass_env.insert(command.pass_env.end(), kProxyEnv.begin(), kProxyEnv.end());
    command.env = m_preset.env;
    command.home_files = m_preset.home_files;

    // A CLI installed outside the system directories (npm prefix, ~/.local) is made visible
    // read-only at its own path, with its directory on PATH.
    std::error_code ec;
    fs::path real = fs::canonical(m_program, ec);
    if (!under_system_dir(m_program)) {
      command.readonly.push_back(m_program.parent_path());
      command.path_dirs.push_back(m_program.parent_path());
    }
    if (!ec && !under_system_dir(real) && real.parent_path() != m_program.parent_path()) {
      command.readonly.push_back(real.parent_path());
    }

    command.argv = {m_program.string()};
    command.argv.insert(command.argv.end(), m_args.begin(), m_args.end());
    if (m_preset.name == "claude" && request.sandbox) command.env["IS_SANDBOX"] = "1"; // bypass mode as root
    if (m_preset.name == "codex") {
      // Inside our sandbox, Codex's own (nested bubblewrap) cannot start; outside, keep it.
      if (request.sandbox) {
        command.argv.push_back("--dangerously-bypass-approvals-and-sandbox");
      } else {
        command.argv.insert(command.argv.end(), {"-s", "workspace-write"});
      }
      command.argv.insert(command.argv.end(), {"-C", request.workspace.string()});
    }
    command.argv.push_back(request.brief.empty() || request.brief.size() > kMaxPromptArg ? kPointerPrompt : request.brief);

    auto parse = m_preset.parse;
    command.parse_output = [parse](const std::string& out, TurnResult& result) {
      CliUsage u = parse(out);
      result.input_tokens = u.input_tokens;
      result.output_tokens = u.output_tokens;
      result.cost_usd = u.cost_usd;
      if (!u.final_text.empty()) {
        constexpr size_t kMax = 2000;
        result.summary = u.final_text.size() > kMax ? "..." + u.final_text.substr(u.final_text.size() - kMax) : u.final_text;
      }
      if (u.is_error && result.exit_code == 0) result.exit_code = 1; // opencode exits 0 on some failures
    };
    return run_agent_command(request, command);
  }

private:
  Preset m_preset;
  std::vector<std::string> m_args;
  fs::path m_program;
};

} // namespace

Expected<std::unique_ptr<Agent>> make_cli_agent(const std::string& name, const std::string& extra_args) {
  Preset preset;
  if (name == "claude") {
    preset = claude_preset();
  } else if (name == "codex") {
    preset = codex_preset();
  } else if (name == "opencode") {
    preset = opencode_preset();
  } else {
    return fail("unknown agent CLI \"{}\"", name);
  }
  std::string key = upper(name);
  std::vector<std::string> args = preset.default_args;
  if (const char* over = std::getenv(("TEMPER_" + key + "_ARGS").c_str()); over && *over) {
    TEMPER_TRY_ASSIGN(args, split_shell_words(over));
  }
  TEMPER_TRY_ASSIGN(auto extra, split_shell_words(extra_args));
  args.insert(args.end(), extra.begin(), extra.end());

  const char* bin = std::getenv(("TEMPER_" + key + "_BIN").c_str());
  std::string program = util::find_program(bin && *bin ? bin : name);
  if (program.empty()) {
    return fail("the {} driver needs the `{}` CLI, which is not on PATH (install it, or set TEMPER_{}_BIN)",
                name, bin && *bin ? bin : name, key);
  }
  return std::unique_ptr<Agent>(new CliAgent(std::move(preset), std::move(args), fs::absolute(program)));
}

} // namespace temper::agent
