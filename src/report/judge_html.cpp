#include "report/judge_html.h"

#include "report/html_page.h"
#include "report/roofline_chart.h"
#include "report/speedup_chart.h"
#include "report/strip_chart.h"

#include <fmt/format.h>

namespace temper::report {

using nlohmann::json;

namespace {

std::string error_text(const std::optional<double>& v) {
  if (!v) return "-";
  if (*v == 0) return "0";
  return fmt::format("{:.2e}", *v);
}

std::string summary_text(const JudgeView& v) {
  std::string s = fmt::format("{} of {} cases passed.", v.passed, v.cases.size());
  if (!v.timed()) return s + " Not timed against a reference.";
  const json geo = v.timing.value("geomean_speedup", json());
  const json ci = v.timing.value("geomean_ci", json());
  const json verdicts = v.timing.value("verdicts", json::object());
  s += geo.is_number() ? fmt::format(" Geometric mean speedup {:.3f}x", geo.get<double>()) : std::string(" No geometric mean");
  if (ci.is_array() && ci.size() == 2 && ci[0].is_number()) s += fmt::format(" [{:.3f}, {:.3f}]", ci[0].get<double>(), ci[1].get<double>());
  s += fmt::format("; FASTER {}, SLOWER {}, SAME {}, AMBIGUOUS {}.", verdicts.value("FASTER", 0), verdicts.value("SLOWER", 0),
                   verdicts.value("SAME", 0), verdicts.value("AMBIGUOUS", 0));
  return s;
}

std::string verdict_text(const CaseView& c) {
  if (c.verdict.empty()) return "";
  return c.verdict + (c.confirmed ? "" : "?");
}

std::string cases_table(const JudgeView& v) {
  std::string rows;
  for (const auto& c : v.cases) {
    std::string status = c.status + (c.reason_code.empty() ? "" : " [" + c.reason_code + "]");
    std::string speedup = c.speedup ? fmt::format("{:.3f}x", *c.speedup) : "-";
    std::string interval = c.speedup_lo ? fmt::format("[{:.3f}, {:.3f}]", *c.speedup_lo, *c.speedup_hi) : "-";
    std::string roof = c.roofline_fraction ? fmt::format("{:.1f}%", 100 * *c.roofline_fraction) : "-";
    rows += fmt::format("<tr class=\"case\" data-case=\"{}\"><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td>"
                        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                        "<td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
                        c.id, c.id, escape_xml(c.dtype), escape_xml(c.shape), c.status == "PASSED" ? "status-PASSED" : "status-fail",
                        escape_xml(status), error_text(c.max_abs), error_text(c.max_rel), escape_xml(seconds_text(c.kernel_seconds)),
                        speedup, interval, escape_xml(verdict_text(c)), roof);
    if (!c.message.empty()) rows += fmt::format("<tr class=\"message\"><td></td><td colspan=\"10\">{}</td></tr>\n", escape_xml(c.message));
  }
  return fmt::format("<div class=\"table-wrap\"><table class=\"cases\">\n<thead><tr><th>case</th><th>dtype</th><th>shape</th>"
                     "<th>status</th><th>max abs err</th><th>max rel err</th><th>kernel time</th><th>speedup</th>"
                     "<th>95% interval</th><th>verdict</th><th>roofline</th></tr></thead>\n<tbody>\n{}</tbody></table></div>\n",
                     rows);
}

std::string speedup_section(const JudgeView& v) {
  if (!v.timed()) return section("speedup", "Speedup per case", 0, paragraph("Not timed: judge with --reference to compare speed."));
  std::vector<SpeedupRow> rows;
  for (const auto& c : v.cases) {
    rows.push_back({fmt::format("case {}", c.id), c.speedup, c.speedup_lo, c.speedup_hi, verdict_text(c),
                    c.status == "PASSED" ? "not timed" : "not timed: " + c.status});
  }
  std::string body = paragraph("Bars run from 1x to the paired speedup (reference time / candidate time) on a log scale; the "
                               "whisker is the 95% interval; green FASTER, red SLOWER, grey SAME, amber AMBIGUOUS; ? marks a "
                               "verdict the confirmation jobs did not confirm.");
  body += draw_speedup_chart(layout_speedup_chart(rows, kChartWidth));
  return section("speedup", "Speedup per case", rows.size(), body);
}

std::string roofline_section(const JudgeView& v) {
  std::vector<RooflineRow> rows;
  for (const auto& c : v.cases) {
    if (c.bound_s && c.achieved_s) rows.push_back({fmt::format("case {}", c.id), *c.achieved_s, *c.bound_s, c.limiter});
  }
  if (rows.empty()) {
    std::string why = v.timed() ? v.timing.value("cann_bench_score_note", std::string("no hardware bound for these cases"))
                                : std::string("not timed: a bound is compared with measured times only");
    return section("roofline", "Roofline", 0, paragraph("No roofline: " + why));
  }
  std::string body = paragraph("Per case, the hardware lower bound (black bar: max(bytes / bandwidth, flops / peak) from "
                               "certified figures, or temper.yaml's) and the candidate's median time (orange dot) on a log "
                               "time axis; the limiter is the side of the bound that binds.");
  body += draw_roofline_chart(layout_roofline_chart(rows, kChartWidth));
  return section("roofline", "Roofline", rows.size(), body);
}

std::string samples_section(const JudgeView& v) {
  std::vector<StripRow> rows;
  for (const auto& c : v.cases) {
    if (!c.reference_samples.empty() || !c.candidate_samples.empty()) {
      rows.push_back({fmt::format("case {}", c.id), c.reference_samples, c.candidate_samples});
    }
  }
  if (rows.empty()) return section("samples", "Timing samples", 0, paragraph("No timing samples in this report."));
  std::string body = "<p class=\"legend note\"><span><i class=\"swatch\" style=\"background:#2f6fd0\"></i>reference</span>"
                     "<span><i class=\"swatch\" style=\"background:#e8731a\"></i>candidate</span> one dot per timed call, "
                     "every job of the case; the bar is the median. Each case has its own linear time axis.</p>\n";
  body += draw_strip_chart(layout_strip_chart(rows, kChartWidth));
  return section("samples", "Timing samples", rows.size(), body);
}

std::string mismatches_section(const JudgeView& v) {
  std::string body;
  size_t count = 0;
  for (const auto& c : v.cases) {
    if (c.mismatches.empty()) continue;
    ++count;
    std::string rows;
    for (const auto& m : c.mismatches) {
      rows += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n", escape_xml(m.output),
                          escape_xml(m.index), escape_xml(m.got), escape_xml(m.expected));
    }
    body += fmt::format("<h3>case {}: {}</h3>\n<div class=\"table-wrap\"><table class=\"mismatches\" data-case=\"{}\">\n"
                        "<thead><tr><th>output</th><th>index</th><th>got</th><th>expected</th></tr></thead>\n<tbody>\n{}"
                        "</tbody></table></div>\n",
                        c.id, escape_xml(c.status), c.id, rows);
  }
  if (count == 0) return "";
  return section("mismatches", "First mismatches", count, body);
}

} // namespace

std::string judge_sections(const JudgeView& v) {
  std::string out = section("cases", "Cases", v.cases.size(), cases_table(v));
  out += speedup_section(v);
  out += roofline_section(v);
  out += samples_section(v);
  out += mismatches_section(v);
  return out;
}

std::string judge_report_html(const JudgeView& v, const std::string& title) {
  std::string body = fmt::format("<h1>{}</h1>\n", escape_xml(title));
  body += paragraph(summary_text(v), "summary");
  body += section("context", "Context", 1, context_block(v.context, v.timing));
  body += judge_sections(v);
  return html_page(title, body);
}

} // namespace temper::report
