// Opens an HTML report in headless Chromium (Debian's `chromium`): what the page shows once
// laid out in a 1280 px wide window, the console messages it produced, and a screenshot.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace temper::report::testing {

struct BrowserView {
  std::string skip_reason;           // not empty: Chromium could not start here, and why
  nlohmann::json probe;              // {"scroll_width", "scroll_height", "errors", "counts": {selector: n}, "sections": {id: data-count}}
  std::vector<std::string> console;  // CONSOLE lines Chromium logged
  std::filesystem::path screenshot;  // the whole page, 1280 px wide
};

// `selectors`: CSS selectors whose matches the probe counts. The report itself is never
// changed: the probe script runs in a copy beside it; the screenshot is of the report.
BrowserView open_in_browser(const std::filesystem::path& html, const std::filesystem::path& out_dir, const std::string& name,
                            const std::vector<std::string>& selectors);

// Where tests keep what they produce for people to look at: build/tests/output/.
std::filesystem::path test_output_dir();

} // namespace temper::report::testing
