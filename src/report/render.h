// `temper report INPUT -o FILE`: INPUT is a judge report (JSON, kind temper.judge.report), a
// campaign directory or its final/summary.json; the output is one self-contained HTML file.
#pragma once

#include "report/judge_view.h"
#include "util/error.h"

#include <filesystem>
#include <string>

namespace temper::report {

// The page for a judge report or a campaign directory. Errors: neither, or unreadable.
Expected<std::string> render_report(const std::filesystem::path& input);

// Renders and writes atomically.
Status write_report(const std::filesystem::path& input, const std::filesystem::path& output);

// A judge report's page from its JSON (`temper judge --html`).
Expected<std::string> render_judge_report(const nlohmann::json& report);

} // namespace temper::report
