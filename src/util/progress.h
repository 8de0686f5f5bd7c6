// Progress lines for long work, on stderr. On a terminal the current line is rewritten in
// place; otherwise each message is a plain line, so logs stay readable. Thread-safe.
#pragma once

#include <mutex>
#include <string>

namespace temper::util {

class Progress {
public:
  explicit Progress(bool enabled = true);
  ~Progress();
  // A transient status ("golden 3/20: case 5"); replaced by the next one on a terminal.
  void status(const std::string& message);
  // A line that stays.
  void line(const std::string& message);
  void finish(); // clears a transient status line

private:
  std::mutex m_mu;
  bool m_enabled;
  bool m_tty;
  bool m_dirty = false;
};

} // namespace temper::util
