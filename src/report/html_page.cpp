#include "report/html_page.h"

#include "report/svg.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace temper::report {

using nlohmann::json;

namespace {

// Colours: verdicts green (FASTER), red (SLOWER), grey (SAME), amber (AMBIGUOUS); the two arms
// blue (reference) and orange (candidate), as in the strip plots' legend.
constexpr std::string_view kCss = R"css(
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2430; background: #fff; margin: 0; }
main { max-width: 1040px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde6; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
p.summary { font-size: 15px; margin: 4px 0 12px; }
p.note, .note { color: #5b6575; }
table { border-collapse: collapse; margin: 6px 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e3e7ee; padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { font-weight: 600; }
td.num { text-align: right; white-space: nowrap; }
.table-wrap { overflow-x: auto; max-width: 100%; }
dl.context { display: grid; grid-template-columns: 170px 1fr; gap: 2px 12px; margin: 6px 0; }
dl.context dt { font-weight: 600; }
dl.context dd { margin: 0; overflow-wrap: anywhere; }
.status-PASSED { color: #1a7f37; }
.status-fail { color: #c62828; font-weight: 600; }
svg { display: block; margin: 6px 0; }
svg text { font: 12px system-ui, sans-serif; fill: #1d2430; }
svg text.tick, svg text.note { fill: #5b6575; font-size: 11px; }
svg .grid { stroke: #e6e9ef; stroke-width: 1; }
svg .unity { stroke: #1d2430; stroke-width: 1.5; }
svg .bar.faster { fill: #2e9d4f; } svg .bar.slower { fill: #d64545; }
svg .bar.same { fill: #9aa3b0; } svg .bar.ambiguous { fill: #e0a030; } svg .bar.none { fill: #9aa3b0; }
svg .whisker { stroke: #1d2430; stroke-width: 1.5; }
svg .bound { fill: #1d2430; } svg .achieved { fill: #e8731a; } svg .gap { stroke: #b8c0cc; stroke-width: 2; }
svg .dot.reference { fill: #2f6fd0; fill-opacity: .55; } svg .dot.candidate { fill: #e8731a; fill-opacity: .55; }
svg text.reference { fill: #2f6fd0; } svg text.candidate { fill: #b5530a; }
svg .median { stroke: #1d2430; stroke-width: 2; }
svg .best { fill: none; stroke: #2e9d4f; stroke-width: 2.5; }
svg .lane { stroke: #e6e9ef; } svg .round { stroke: #9aa3b0; stroke-dasharray: 4 3; }
svg .event { stroke: #fff; stroke-width: 1; fill: #9aa3b0; }
svg .event.accepted, svg .event.promoted { fill: #2e9d4f; } svg .event.rejected, svg .event.error, svg .event.interrupted { fill: #d64545; }
svg .event.probe { fill: #2f6fd0; } svg .event.not-promoted { fill: #5b6575; } svg .event.escalation { fill: #e0a030; }
svg .cost { fill: #2f6fd0; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 4px; vertical-align: baseline; }
)css";

void add_row(std::string& out, std::string_view name, const std::string& value) {
  if (value.empty()) return;
  out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", escape_xml(name), escape_xml(value));
}

std::string text_of(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  if (j.is_array()) {
    std::vector<std::string> parts;
    for (const auto& v : j) parts.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    return fmt::format("{}", fmt::join(parts, " "));
  }
  return j.dump();
}

} // namespace

std::string flat_text(const json& object) {
  if (!object.is_object()) return text_of(object);
  std::vector<std::string> parts;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it->is_null()) continue;
    parts.push_back(fmt::format("{}: {}", it.key(), it->is_object() ? it->dump() : text_of(*it)));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string html_page(std::string_view title, std::string_view body) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<meta name=\"generator\" content=\"temper\">\n<title>{}</title>\n<style>{}</style>\n</head>\n"
                     "<body>\n<main>\n{}</main>\n</body>\n</html>\n",
                     escape_xml(title), kCss, body);
}

std::string section(std::string_view id, std::string_view heading, size_t count, std::string_view content) {
  return fmt::format("<section id=\"{}\" data-count=\"{}\">\n<h2>{}</h2>\n{}</section>\n", id, count, escape_xml(heading), content);
}

std::string paragraph(std::string_view text, std::string_view cls) {
  return fmt::format("<p class=\"{}\">{}</p>\n", cls, escape_xml(text));
}

std::string context_block(const json& context, const json& timing) {
  std::string rows;
  const json host = context.value("host", json::object());
  add_row(rows, "temper version", context.value("temper_version", ""));
  add_row(rows, "date", context.value("date", ""));
  if (host.is_object() && !host.empty()) {
    add_row(rows, "host", fmt::format("{} ({}, {} logical CPUs, {} GiB)", host.value("hostname", ""), host.value("cpu_model", ""),
                                      host.value("logical_cpus", 0), host.value("memory_bytes", uint64_t{0}) >> 30));
  }
  add_row(rows, "target class", context.value("target_class", ""));
  const json compiler = context.value("compiler", json::object());
  if (compiler.is_object() && !compiler.empty()) add_row(rows, "compiler", compiler.value("version", compiler.value("program", "")));
  add_row(rows, "flags", text_of(context.value("flags", json())));
  const json task = context.value("task", json::object());
  if (task.is_object() && !task.empty()) {
    add_row(rows, "task", fmt::format("{} ({}; tolerance {})", task.value("name", ""), task.value("dir", ""), task.value("tolerance", "")));
  }
  const json cand = context.value("candidate", json::object());
  if (cand.is_object()) add_row(rows, "candidate", cand.value("path", ""));
  if (context.contains("reference")) add_row(rows, "reference", flat_text(context["reference"]));
  add_row(rows, "job seed id", text_of(context.value("job_seed_id", json())));
  add_row(rows, "threads", text_of(context.value("threads", json())));
  if (timing.is_object()) {
    add_row(rows, "timing tier", fmt::format("{} ({} measurement + {} confirmation jobs per case)", timing.value("tier", ""),
                                             timing.value("measurement_jobs", 0), timing.value("confirmation_jobs", 0)));
    add_row(rows, "protocol", flat_text(timing.value("protocol", json())));
    add_row(rows, "noise floor", text_of(timing.value("noise_floor", json())));
    add_row(rows, "calibration", text_of(timing.value("calibration", json())));
    if (timing.contains("roofline") && timing["roofline"].is_object()) add_row(rows, "roofline figures", flat_text(timing["roofline"]));
  }
  return fmt::format("<dl class=\"context\">\n{}</dl>\n", rows);
}

} // namespace temper::report
