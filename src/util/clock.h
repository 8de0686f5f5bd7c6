// A monotonic clock behind an interface, so that code which measures and waits (the judge's
// paired timing loop) can be tested with a clock the test advances by hand.
#pragma once

namespace temper::util {

class Clock {
public:
  virtual ~Clock() = default;
  // Seconds on a monotonic scale; only differences mean anything.
  virtual double now() const = 0;
  virtual void sleep_for(double seconds) = 0;
};

// std::chrono::steady_clock. A double holds nanoseconds exactly for ~100 days of uptime.
class SteadyClock final : public Clock {
public:
  double now() const override;
  void sleep_for(double seconds) override;
};

// Moves only when told: advance() or sleep_for(). Starts at 0.
class FakeClock final : public Clock {
public:
  double now() const override { return m_now; }
  void sleep_for(double seconds) override { advance(seconds); }
  // Negative or NaN steps are ignored: the clock is monotonic.
  void advance(double seconds) {
    if (seconds > 0) m_now += seconds;
  }

private:
  double m_now = 0;
};

} // namespace temper::util
