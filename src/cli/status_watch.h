// `temper status CAMPAIGN --watch`: the status again every interval until the campaign is done.
// On a terminal each snapshot replaces the last in place; piped, a snapshot is printed as
// plain lines only when it changed, so a log holds each state once.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>

namespace temper::cli {

struct WatchOptions {
  double interval_s = 2;
  bool in_place = false; // a terminal: clear and redraw
  // Between snapshots; tests replace it. Returns false to stop watching.
  std::function<bool(double seconds)> sleep;
};

// Returns the exit status: 0 once the campaign is done, 2 when its status cannot be read.
int watch_status(const std::filesystem::path& dir, const WatchOptions& options, std::ostream& out, std::ostream& err);

} // namespace temper::cli
