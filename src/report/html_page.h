// The frame of a self-contained HTML report: one file, inline CSS, no script, no external
// resource, a layout that fits a 1280 px window (charts scale down below that).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace temper::report {

// The charts' drawing width in pixels (the page's content column).
inline constexpr double kChartWidth = 1000;

// <!DOCTYPE html> ... <main>{body}</main> ... with the report's CSS.
std::string html_page(std::string_view title, std::string_view body);

// <section id="{id}" data-count="{count}"><h2>{heading}</h2>{content}</section>; data-count is
// the number of cases (or events) the section shows, for tests and tools.
std::string section(std::string_view id, std::string_view heading, size_t count, std::string_view content);

// A paragraph of escaped text with a class.
std::string paragraph(std::string_view text, std::string_view cls = "note");

// The context block: temper version, date, host, target class, compiler, flags, task,
// candidate, reference, protocol, roofline figures, as a definition list. Missing entries are
// left out. `timing`: the report's timing block (protocol, roofline), may be null.
std::string context_block(const nlohmann::json& context, const nlohmann::json& timing);

// "key: value; key: value" for a flat JSON object (nested values dumped).
std::string flat_text(const nlohmann::json& object);

} // namespace temper::report
