// While a StopSignals is alive, SIGINT and SIGTERM do not end temper at once: they are noted, so
// that whoever waits on cluster jobs can cancel them first (scancel) and then end temper with the
// same signal (StopSignals::reraise). Outside such a scope the default actions hold.
#pragma once

namespace temper::exec {

class StopSignals {
public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal that arrived while a scope was alive, or 0.
  static int pending();
  // Ends the process with `signal` under its default action (after the scope restored it).
  [[noreturn]] static void reraise(int signal);
};

} // namespace temper::exec
