#include "util/progress.h"

#include <cstdio>
#include <unistd.h>

namespace temper::util {

Progress::Progress(bool enabled) : m_enabled(enabled), m_tty(::isatty(2) != 0) {}

Progress::~Progress() { finish(); }

void Progress::status(const std::string& message) {
  if (!m_enabled) return;
  std::lock_guard lock(m_mu);
  if (m_tty) {
    std::fprintf(stderr, "\r\033[K%s", message.c_str());
    m_dirty = true;
  } else {
    std::fprintf(stderr, "%s\n", message.c_str());
  }
  std::fflush(stderr);
}

void Progress::line(const std::string& message) {
  if (!m_enabled) return;
  std::lock_guard lock(m_mu);
  if (m_tty && m_dirty) std::fprintf(stderr, "\r\033[K");
  m_dirty = false;
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!m_enabled) return;
  std::lock_guard lock(m_mu);
  if (m_tty && m_dirty) std::fprintf(stderr, "\r\033[K");
  m_dirty = false;
  std::fflush(stderr);
}

} // namespace temper::util
