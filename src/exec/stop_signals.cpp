#include "exec/stop_signals.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <unistd.h>

namespace temper::exec {

namespace {

std::atomic<int> g_pending{0};
struct sigaction g_old_int {}, g_old_term {};

void note(int signal) { g_pending.store(signal); }

} // namespace

StopSignals::StopSignals() {
  g_pending.store(0);
  struct sigaction sa {};
  sa.sa_handler = note;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int StopSignals::pending() { return g_pending.load(); }

void StopSignals::reraise(int signal) {
  std::signal(signal, SIG_DFL);
  std::raise(signal);
  std::_Exit(128 + signal);
}

} // namespace temper::exec
