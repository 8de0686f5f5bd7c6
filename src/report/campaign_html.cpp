#include "report/campaign_html.h"

#include "campaign/campaign_state.h"
#include "campaign/orchestrator.h"
#include "campaign/timeline.h"
#include "report/html_page.h"
#include "report/judge_html.h"
#include "report/svg.h"
#include "report/timeline_chart.h"
#include "util/fs.h"

#include <fmt/format.h>

namespace temper::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string status_text(const json& st) {
  std::string s = fmt::format("Round {} of {}, phase {}, reference {}. ", st.value("round", 0), st.value("rounds", 0),
                              st.value("phase", ""), st.value("reference", ""));
  const json best = st.value("best_verified_speedup", json());
  s += best.is_number() ? fmt::format("Best verified speedup {:.3f}x over the starting reference.", best.get<double>())
                        : std::string("No verified speedup yet.");
  if (!st.value("end_reason", "").empty()) s += " Ended: " + st.value("end_reason", "") + ".";
  return s;
}

std::string rounds_table(const json& st) {
  std::string rows;
  size_t n = 0;
  for (const auto& r : st.value("rounds_done", json::array())) {
    ++n;
    const json sp = r.value("speedup", json());
    rows += fmt::format("<tr class=\"round\"><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                        r.value("round", 0), r.value("promoted", false) ? "promoted" : "not promoted",
                        escape_xml(r.value("reference_after", "")),
                        sp.is_number() && sp.get<double>() > 0 ? fmt::format("{:.3f}x", sp.get<double>()) : "-",
                        escape_xml(r.value("note", "")));
  }
  if (n == 0) return section("rounds", "Rounds", 0, paragraph("No round has finished yet."));
  return section("rounds", "Rounds", n,
                 fmt::format("<div class=\"table-wrap\"><table class=\"rounds\">\n<thead><tr><th>round</th><th>outcome</th>"
                             "<th>reference after</th><th>speedup</th><th>note</th></tr></thead>\n<tbody>\n{}</tbody></table></div>\n",
                             rows));
}

std::string costs_section(const json& st) {
  const json costs = st.value("costs", json::object());
  const json counts = st.value("counts", json::object());
  std::string body = paragraph(fmt::format("Wall time {:.0f} s: the six categories add up to it. Agent turns {:.1f} s, of which {:.1f} s "
                                           "judge runs through the harness; ${:.2f}, {} tokens. {} judge runs, {} compiles ({} cache "
                                           "hits), {} agent turns.",
                                           costs.value("wall_s", 0.0), costs.value("agent_s", 0.0), costs.value("agent_judge_s", 0.0),
                                           costs.value("agent_cost_usd", 0.0), costs.value("tokens", int64_t{0}),
                                           counts.value("judge_runs", 0), counts.value("compiles", 0),
                                           counts.value("compile_cache_hits", 0), counts.value("agent_turns", 0)));
  body += draw_cost_chart(costs, kChartWidth);
  return section("costs", "Costs by category", 6, body);
}

std::string timeline_section(const json& timeline) {
  const json events = timeline.value("events", json::array());
  if (events.empty()) return section("timeline", "Timeline", 0, paragraph("No attempt yet."));
  std::string body = paragraph("Events in order (evenly spaced; hover a marker for its details): green accepted or promoted, red "
                               "rejected, blue probe, grey other. The line is the best verified speedup over the starting "
                               "reference after each event.");
  body += draw_timeline_chart(layout_timeline_chart(events, kChartWidth));
  // The same events as a table: readable without hovering, and searchable.
  std::string rows;
  for (const auto& e : events) {
    const json sp = e.value("speedup", json()), best = e.value("best_speedup", json());
    rows += fmt::format("<tr class=\"event\"><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
                        "<td class=\"num\">{}</td></tr>\n",
                        e.value("seq", 0), escape_xml(e.value("time", "")), escape_xml(e.value("kind", "")), escape_xml(e.value("label", "")),
                        escape_xml(e.value("outcome", "")), sp.is_number() ? fmt::format("{:.3f}x", sp.get<double>()) : "-",
                        best.is_number() ? fmt::format("{:.3f}x", best.get<double>()) : "-");
  }
  body += fmt::format("<details><summary>events as a table</summary><div class=\"table-wrap\"><table class=\"events\">\n"
                      "<thead><tr><th>#</th><th>time</th><th>kind</th><th>event</th><th>outcome</th><th>speedup</th>"
                      "<th>best</th></tr></thead>\n<tbody>\n{}</tbody></table></div></details>\n",
                      rows);
  return section("timeline", "Timeline", events.size(), body);
}

} // namespace

Expected<std::string> campaign_report_html(const fs::path& dir) {
  TEMPER_TRY_ASSIGN(campaign::CampaignFile file, campaign::load_campaign(dir));
  TEMPER_TRY_ASSIGN(json st, campaign::campaign_status(dir));
  TEMPER_TRY_ASSIGN(json timeline, campaign::campaign_timeline(dir));
  const std::string title = fmt::format("temper campaign: {}", file.config.task_name);
  std::string body = fmt::format("<h1>{}</h1>\n", escape_xml(title));
  body += paragraph(status_text(st), "summary");

  // The final judgement, when the campaign has one.
  std::optional<JudgeView> final_view;
  if (auto text = util::read_file(dir / "final" / "report.json")) {
    json report = json::parse(*text, nullptr, false);
    if (auto v = read_judge_view(report)) final_view = *v;
  }
  json context = final_view ? final_view->context : json::object();
  if (!context.contains("target_class") && file.config.target.is_object()) {
    context["target_class"] = file.config.target.value("target_class", "");
  }
  std::string campaign_rows = fmt::format("<dl class=\"context\">\n<dt>campaign</dt><dd>{}</dd>\n<dt>teacher / student</dt><dd>{} / {}</dd>\n</dl>\n",
                                          escape_xml(fs::absolute(dir).lexically_normal().string()), escape_xml(file.config.teacher),
                                          escape_xml(file.config.student));
  body += section("context", "Context", 1, campaign_rows + context_block(context, final_view ? final_view->timing : json()));
  body += timeline_section(timeline);
  body += costs_section(st);
  body += rounds_table(st);
  if (final_view) {
    body += "<h2 id=\"final\">Final kernel against the starting reference</h2>\n";
    body += paragraph(fmt::format("{} of {} cases passed.", final_view->passed, final_view->cases.size()), "summary");
    body += judge_sections(*final_view);
    // The same kernel against the task's PyTorch function, when the final report timed it: at
    // one thread, then at PyTorch's default thread count.
    for (const auto& [report_file, prefix] : {std::pair<std::string, std::string>{"torch_report.json", "torch-"}, {"torch_default_report.json", "torch-default-"}}) {
      auto text = util::read_file(dir / "final" / report_file);
      if (!text) continue;
      json report = json::parse(*text, nullptr, false);
      if (auto v = read_judge_view(report)) {
        const json ref = v->context.value("reference", json::object());
        body += fmt::format("<h2 id=\"final-{}\">Final kernel against PyTorch ({})</h2>\n", prefix.substr(0, prefix.size() - 1),
                            escape_xml(ref.is_object() ? ref.value("torch", "PyTorch") : std::string("PyTorch")));
        body += paragraph(fmt::format("{} of {} cases passed.", v->passed, v->cases.size()), "summary");
        // Its sections under ids of their own: a page's ids are unique.
        std::string sections = judge_sections(*v);
        for (size_t at = 0; (at = sections.find("<section id=\"", at)) != std::string::npos; at += 13) sections.insert(at + 13, prefix);
        body += sections;
      }
    }
  } else {
    body += paragraph(st.value("phase", "") == "done" ? "No final judgement: no round promoted a kernel, or it was not judged yet."
                                                      : "The final judgement comes once the campaign is done.");
  }
  return html_page(title, body);
}

} // namespace temper::report
