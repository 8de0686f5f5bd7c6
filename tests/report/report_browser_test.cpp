// The HTML reports in a real browser (headless Chromium): a small real judge run (two timed
// cases and one that fails correctness) and a scripted campaign. No console errors, every
// chart and table present with the right number of cases, the page fits a 1280 px window, and
// a screenshot in build/tests/output/ for people to look at. Also the CLI around them:
// `temper judge --html`, `temper report`, `temper status --watch` piped.
#include "browser.h"
#include "campaign/timeline.h"
#include "scripted_campaign.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <fstream>

namespace temper::report::report_browser_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::open_in_browser;

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

util::ProcessResult temper_cli(std::vector<std::string> args, int timeout_s = 300) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = std::chrono::seconds(timeout_s);
  return util::default_process_runner().run(cmd);
}

int count_of(const json& probe, const std::string& selector) { return probe["counts"].value(selector, -1); }

// What every report page must satisfy in the browser.
void expect_clean_and_fitting(const testing::BrowserView& v) {
  EXPECT_TRUE(v.console.empty()) << "console: " << v.console.front();
  EXPECT_TRUE(v.probe["errors"].empty()) << v.probe.dump();
  EXPECT_LE(v.probe["scroll_width"].get<int>(), 1280) << v.probe.dump();
  EXPECT_LE(v.probe["widest_right"].get<double>(), 1280.0) << v.probe.dump();
  EXPECT_FALSE(v.screenshot.empty());
  EXPECT_TRUE(fs::exists(v.screenshot));
  std::cout << "screenshot: " << v.screenshot.string() << "\n";
}

TEST(ReportBrowserTest, JudgeRunReport) {
  const fs::path out = testing::test_output_dir();
  const fs::path json_file = out / "judge-report.json", html = out / "judge-report.html";
  // The bundled task with hardware bounds of its own, so the roofline chart is drawn on any
  // machine (certified peaks exist only for some target classes).
  util::TempDir tmp("temper-report-browser");
  const fs::path task = tmp.path() / "swi_glu";
  fs::create_directories(task);
  for (const auto& e : fs::directory_iterator(kSource / "tasks/swi_glu")) {
    if (e.is_regular_file()) fs::copy_file(e.path(), task / e.path().filename());
  }
  std::ofstream(task / "temper.yaml", std::ios::app) << "hardware_bound_us:\n  1: 1000\n  15: 1000\n";
  // wrong_tail.cpp passes cases 1 and 15 (rows a multiple of 16) and fails case 11. Short,
  // warm-cache timing: the verdicts do not matter here, the pictures do.
  auto r = temper_cli({"judge", task.string(), (kSource / "tests/fixtures/swi_glu/wrong_tail.cpp").string(), "--reference",
                       (kSource / "tasks/swi_glu/reference.cpp").string(), "--cases", "1,15,11", "--measure-jobs", "1",
                       "--confirm-jobs", "1", "--cap", "0.3", "--min-time", "0.1", "--cache", "warm", "--json", json_file.string(),
                       "--html", html.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 1) << r.output; // one case failed
  ASSERT_TRUE(fs::exists(html)) << r.output;
  EXPECT_NE(r.output.find("HTML report: " + html.string()), std::string::npos) << r.output;
  // `temper report` renders the same page from the JSON.
  const fs::path again = out / "judge-report-again.html";
  auto rr = temper_cli({"report", json_file.string(), "-o", again.string()});
  ASSERT_EQ(rr.exit_code, 0) << rr.output;
  EXPECT_EQ(*util::read_file(again), *util::read_file(html));
  const json report = json::parse(*util::read_file(json_file));
  EXPECT_FALSE(report["context"].value("target_class", "").empty());

  auto v = open_in_browser(html, out, "judge-report",
                           {"#cases tr.case", "#speedup rect.bar", "#speedup line.whisker", "#samples text.value.reference",
                            "#samples text.value.candidate", "#samples circle.dot", "#mismatches table.mismatches",
                            "#mismatches table.mismatches tbody tr", "#roofline circle.achieved", "#roofline rect.bound",
                            "#context dt"});
  if (!v.skip_reason.empty()) GTEST_SKIP() << v.skip_reason;
  expect_clean_and_fitting(v);
  const json& p = v.probe;
  EXPECT_EQ(count_of(p, "#cases tr.case"), 3);
  EXPECT_EQ(count_of(p, "#speedup rect.bar"), 2); // the failed case has a row, no bar
  EXPECT_EQ(count_of(p, "#speedup line.whisker"), 2 * 3);
  EXPECT_EQ(count_of(p, "#samples text.value.reference"), 2);
  EXPECT_EQ(count_of(p, "#samples text.value.candidate"), 2);
  EXPECT_GE(count_of(p, "#samples circle.dot"), 2 * 2 * 10); // at least 10 samples per arm and case
  EXPECT_EQ(count_of(p, "#mismatches table.mismatches"), 1);
  EXPECT_GE(count_of(p, "#mismatches table.mismatches tbody tr"), 1);
  EXPECT_GE(count_of(p, "#context dt"), 8);
  EXPECT_EQ(p["sections"]["cases"], 3);
  EXPECT_EQ(p["sections"]["speedup"], 3);
  EXPECT_EQ(p["sections"]["samples"], 2);
  EXPECT_EQ(p["sections"]["mismatches"], 1);
  EXPECT_EQ(p["sections"]["roofline"], 2);
  EXPECT_EQ(count_of(p, "#roofline circle.achieved"), 2);
  EXPECT_EQ(count_of(p, "#roofline rect.bound"), 2);
}

TEST(ReportBrowserTest, ScriptedCampaignReport) {
  util::TempDir tmp("temper-report-browser");
  const fs::path dir = testing::run_scripted_campaign(tmp.path());
  const fs::path out = testing::test_output_dir();
  const fs::path html = out / "campaign-report.html";
  auto r = temper_cli({"report", dir.string(), "-o", html.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Piped, --watch prints plain lines; on a finished campaign it prints once and ends.
  auto w = temper_cli({"status", dir.string(), "--watch", "--interval", "0.1"}, 30);
  EXPECT_EQ(w.exit_code, 0) << w.output;
  EXPECT_EQ(w.output.find('\033'), std::string::npos) << w.output;
  EXPECT_NE(w.output.find("phase done"), std::string::npos) << w.output;
  // On a terminal (util-linux `script` gives it one) the snapshot is drawn in place.
  if (const std::string script = util::find_program("script"); !script.empty()) {
    util::Command cmd;
    cmd.argv = {script, "-qec", kBinary.string() + " status '" + dir.string() + "' --watch --interval 0.1", "/dev/null"};
    cmd.timeout = std::chrono::seconds(30);
    auto tty = util::default_process_runner().run(cmd);
    EXPECT_EQ(tty.exit_code, 0) << tty.output;
    EXPECT_NE(tty.output.find("\033[H\033[2J"), std::string::npos) << tty.output;
    EXPECT_NE(tty.output.find("reference R1\033[K"), std::string::npos) << tty.output;
  }

  const size_t events = (*campaign::campaign_timeline(dir))["events"].size();
  auto v = open_in_browser(html, out, "campaign-report",
                           {"#timeline circle.event", "#timeline polyline.best", "#costs rect.cost", "#rounds tr.round",
                            "#cases tr.case", "#speedup rect.bar", "#context dt"});
  if (!v.skip_reason.empty()) GTEST_SKIP() << v.skip_reason;
  expect_clean_and_fitting(v);
  const json& p = v.probe;
  EXPECT_EQ(count_of(p, "#timeline circle.event"), static_cast<int>(events));
  EXPECT_EQ(p["sections"]["timeline"], events);
  EXPECT_EQ(count_of(p, "#timeline polyline.best"), 1);
  EXPECT_EQ(count_of(p, "#costs rect.cost"), 6);
  EXPECT_EQ(count_of(p, "#rounds tr.round"), 2);
  EXPECT_EQ(count_of(p, "#cases tr.case"), 2); // the final judgement: the campaign's cases 1 and 2
  EXPECT_EQ(count_of(p, "#speedup rect.bar"), 2);
  EXPECT_GE(count_of(p, "#context dt"), 3);
}

TEST(ReportCliTest, RefusesWhatItCannotRender) {
  util::TempDir tmp("temper-report-cli");
  auto r = temper_cli({"report", (tmp.path() / "none.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  std::ofstream(tmp.path() / "probe.json") << R"({"schema_version": 1, "kind": "temper.probe.report"})";
  r = temper_cli({"report", (tmp.path() / "probe.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("not a judge report"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(tmp.path() / "probe.html"));
  r = temper_cli({"report", tmp.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("not a campaign"), std::string::npos) << r.output;
}

} // namespace
} // namespace temper::report::report_browser_test
