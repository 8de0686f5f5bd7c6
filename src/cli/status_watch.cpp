#include "cli/status_watch.h"

#include "campaign/orchestrator.h"
#include "cli/commands.h"

#include <chrono>
#include <thread>

namespace temper::cli {

int watch_status(const std::filesystem::path& dir, const WatchOptions& options, std::ostream& out, std::ostream& err) {
  std::string last;
  for (;;) {
    auto st = campaign::campaign_status(dir);
    if (!st) {
      err << "temper: error: " << st.error().message << "\n";
      return kExitUsage;
    }
    const std::string text = campaign::format_status(*st);
    if (options.in_place) {
      // Home, each line cleared to its end, then the rest of the screen: no flicker of a blank
      // screen, no leftovers of a longer line before.
      std::string frame = last.empty() ? "\033[H\033[2J" : "\033[H";
      for (char ch : text) frame += ch == '\n' ? std::string("\033[K\n") : std::string(1, ch);
      out << frame << "\033[J" << std::flush;
    } else if (text != last) {
      out << (last.empty() ? "" : "\n") << text << std::flush;
    }
    last = text;
    if (st->value("phase", "") == "done") return kExitOk;
    const bool go_on = options.sleep ? options.sleep(options.interval_s) : (std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_s)), true);
    if (!go_on) return kExitOk;
  }
}

} // namespace temper::cli
