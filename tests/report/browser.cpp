#include "browser.h"

#include "util/fs.h"
#include "util/process.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <sstream>

namespace temper::report::testing {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Test-only: measures the laid-out page and counts elements, then writes the result into the
// DOM, which --dump-dom prints.
std::string probe_script(const std::vector<std::string>& selectors) {
  return fmt::format(R"js(<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
window.addEventListener('load', () => {{
  const counts = {{}};
  for (const s of {}) counts[s] = document.querySelectorAll(s).length;
  const sections = {{}};
  for (const s of document.querySelectorAll('section[id]')) sections[s.id] = Number(s.dataset.count);
  let widest = 0;
  for (const el of document.querySelectorAll('main *')) widest = Math.max(widest, el.getBoundingClientRect().right);
  const out = {{scroll_width: document.documentElement.scrollWidth, scroll_height: document.documentElement.scrollHeight,
               widest_right: widest, errors: window.__errors, counts, sections}};
  const pre = document.createElement('pre');
  pre.id = 'temper-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}});
</script>)js",
                     json(selectors).dump());
}

std::vector<std::string> chromium_base(const std::string& exe, const fs::path& profile) {
  return {exe, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
          "--user-data-dir=" + profile.string()};
}

util::ProcessResult run(std::vector<std::string> argv) {
  util::Command cmd;
  cmd.argv = std::move(argv);
  cmd.timeout = std::chrono::seconds(90);
  return util::default_process_runner().run(cmd);
}

} // namespace

fs::path test_output_dir() {
  fs::path dir = fs::path(TEMPER_BINARY_DIR) / "tests" / "output";
  fs::create_directories(dir);
  return dir;
}

BrowserView open_in_browser(const fs::path& html, const fs::path& out_dir, const std::string& name,
                            const std::vector<std::string>& selectors) {
  BrowserView view;
  std::string exe = util::find_program("chromium");
  if (exe.empty()) exe = util::find_program("chromium-browser");
  if (exe.empty()) {
    view.skip_reason = "no chromium on PATH (scripts/setup.sh installs Debian's chromium package)";
    return view;
  }
  util::TempDir profile("temper-chromium");
  const fs::path probe_html = html.parent_path() / (html.stem().string() + ".probe.html");
  std::string page = *util::read_file(html);
  const auto body_end = page.rfind("</body>");
  page.insert(body_end == std::string::npos ? page.size() : body_end, probe_script(selectors));
  (void)util::write_file_atomic(probe_html, page);

  auto argv = chromium_base(exe, profile.path());
  for (const char* a : {"--window-size=1280,900", "--enable-logging=stderr", "--v=0", "--dump-dom"}) argv.push_back(a);
  argv.push_back("file://" + fs::absolute(probe_html).string());
  const util::ProcessResult dom = run(argv);
  std::smatch m;
  static const std::regex probe_re(R"re(<pre id="temper-probe">([^<]*)</pre>)re");
  if (!dom.ok() || !std::regex_search(dom.output, m, probe_re)) {
    view.skip_reason = fmt::format("chromium could not start or render here ({}): {}", dom.describe(),
                                   dom.output.substr(0, 600));
    return view;
  }
  std::string text = m[1];
  // The DOM dump escapes &, < and > in text.
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  }
  view.probe = json::parse(text, nullptr, false);
  std::istringstream lines(dom.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(":CONSOLE") != std::string::npos) view.console.push_back(line);
  }
  // The screenshot: the report itself (no probe), the whole page tall.
  const int height = std::clamp(view.probe.value("scroll_height", 900), 300, 16000);
  view.screenshot = out_dir / (name + ".png");
  auto shot = chromium_base(exe, profile.path());
  shot.push_back(fmt::format("--window-size=1280,{}", height));
  shot.push_back("--screenshot=" + view.screenshot.string());
  shot.push_back("file://" + fs::absolute(html).string());
  const util::ProcessResult s = run(shot);
  if (!s.ok()) view.screenshot.clear();
  fs::remove(probe_html);
  return view;
}

} // namespace temper::report::testing
