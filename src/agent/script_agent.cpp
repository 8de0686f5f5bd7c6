#include "agent/script_agent.h"

#include "agent/turn_runner.h"
#include "util/fs.h"

#include <fstream>

namespace temper::agent {

namespace {

namespace fs = std::filesystem;

constexpr const char* kCounterFile = "script-turns";
constexpr const char* kScriptInside = "/run/temper/script";

class ScriptAgent final : public Agent {
public:
  explicit ScriptAgent(fs::path dir) : m_dir(std::move(dir)) {}
  std::string name() const override { return "script"; }

  Expected<TurnResult> run_turn(const TurnRequest& request) override {
    TEMPER_TRY_ASSIGN(int turn, next_turn(request));
    fs::path turn_dir = m_dir / fmt::format("turn-{:03}", turn);
    std::error_code ec;
    if (!fs::is_directory(turn_dir, ec)) return exhausted(request, turn_dir);

    if (fs::is_directory(turn_dir / "files", ec)) {
      fs::copy(turn_dir / "files", request.workspace,
               fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
      if (ec) return fail("script turn {}: cannot copy files into {}: {}", turn, request.workspace.string(), ec.message());
    }
    AgentCommand command;
    command.driver = "script";
    command.env["TEMPER_SCRIPT_TURN"] = std::to_string(turn);
    if (fs::exists(turn_dir / "run.sh", ec)) {
      fs::path seen = turn_dir;
      if (request.sandbox) {
        command.readonly_at.emplace_back(turn_dir, kScriptInside);
        seen = kScriptInside;
      }
      command.env["TEMPER_SCRIPT_DIR"] = seen.string();
      command.argv = {"/bin/sh", (seen / "run.sh").string()};
    } else {
      command.argv = {"/bin/sh", "-c", ":"};
    }
    return run_agent_command(request, command);
  }

private:
  // Counts the turn before running it, so a crash mid-turn moves on to the next turn on resume
  // rather than replaying half-done actions.
  Expected<int> next_turn(const TurnRequest& request) {
    if (request.state_dir.empty()) return ++m_turns_in_memory;
    fs::path counter = request.state_dir / kCounterFile;
    int done = 0;
    if (auto text = util::read_file(counter); text) {
      try {
        done = std::stoi(*text);
      } catch (const std::exception&) {
        return fail("script driver: {} does not hold a turn count", counter.string());
      }
    }
    TEMPER_TRY(util::write_file_atomic(counter, std::to_string(done + 1) + "\n"));
    return done + 1;
  }

  Expected<TurnResult> exhausted(const TurnRequest& request, const fs::path& turn_dir) {
    TEMPER_TRY(prepare_workspace(request));
    TurnResult r;
    r.exit_code = 1;
    r.summary = fmt::format("script exhausted: no {}", turn_dir.string());
    r.transcript = request.log_dir / "transcript.log";
    TEMPER_TRY(util::write_file_atomic(r.transcript, r.summary + "\n"));
    return r;
  }

  fs::path m_dir;
  int m_turns_in_memory = 0;
};

} // namespace

Expected<std::unique_ptr<Agent>> make_script_agent(const fs::path& dir) {
  std::error_code ec;
  if (dir.empty()) return fail("driver \"script:\" needs a directory, e.g. script:tests/fixtures/agents/demo");
  if (!fs::is_directory(dir, ec)) return fail("script directory {} does not exist", dir.string());
  return std::unique_ptr<Agent>(new ScriptAgent(fs::absolute(dir)));
}

} // namespace temper::agent
