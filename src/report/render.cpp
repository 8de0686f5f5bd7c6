#include "report/render.h"

#include "report/campaign_html.h"
#include "report/judge_html.h"
#include "util/fs.h"

#include <fmt/format.h>

namespace temper::report {

namespace fs = std::filesystem;
using nlohmann::json;

Expected<std::string> render_judge_report(const json& report) {
  TEMPER_TRY_ASSIGN(JudgeView view, read_judge_view(report));
  const json task = view.context.value("task", json::object());
  std::string title = "temper judge report";
  if (task.is_object() && !task.value("name", "").empty()) title += ": " + task.value("name", "");
  return judge_report_html(view, title);
}

Expected<std::string> render_report(const fs::path& input) {
  std::error_code ec;
  if (fs::is_directory(input, ec)) {
    if (!fs::exists(input / "campaign.json")) return fail("{} is a directory but not a campaign (no campaign.json)", input.string());
    return campaign_report_html(input);
  }
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(input));
  json report = json::parse(text, nullptr, false);
  if (report.is_discarded()) return fail("{} is not JSON", input.string());
  // A campaign's final/summary.json stands for its campaign.
  if (report.is_object() && report.value("kind", "") == "temper.campaign.summary") {
    const fs::path dir = input.parent_path().parent_path();
    if (fs::exists(dir / "campaign.json")) return campaign_report_html(dir);
  }
  auto page = render_judge_report(report);
  if (!page) return fail("{}: {}", input.string(), page.error().message);
  return page;
}

Status write_report(const fs::path& input, const fs::path& output) {
  TEMPER_TRY_ASSIGN(std::string page, render_report(input));
  return util::write_file_atomic(output, page);
}

} // namespace temper::report
