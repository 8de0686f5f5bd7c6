// The `harness` command an agent runs in its workspace: parses its arguments into a harness
// request, sends it to the orchestrator named by $TEMPER_HARNESS_SOCKET and prints the answer.
#pragma once

namespace temper::agent {

inline constexpr int kHarnessExitOk = 0;       // the orchestrator answered ok
inline constexpr int kHarnessExitNotOk = 1;    // it answered, and the answer is "not ok"
inline constexpr int kHarnessExitUsage = 2;    // bad arguments, or no orchestrator to talk to

int harness_cli_main(int argc, char** argv);

} // namespace temper::agent
