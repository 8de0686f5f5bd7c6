// `temper report INPUT [-o FILE]`: a self-contained HTML report of a judge report (JSON) or a
// campaign directory (docs/reports.md).
#include "cli/commands.h"
#include "report/render.h"

#include <iostream>
#include <memory>

namespace temper::cli {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string input;
  std::string output;
};

// Beside the input: report.json -> report.html; CAMPAIGN -> CAMPAIGN/report.html.
fs::path default_output(const fs::path& input) {
  std::error_code ec;
  if (fs::is_directory(input, ec)) return input / "report.html";
  fs::path out = input;
  return out.replace_extension(".html");
}

int run(const ReportArgs& a) {
  const fs::path output = a.output.empty() ? default_output(a.input) : fs::path(a.output);
  if (auto st = report::write_report(a.input, output); !st) {
    std::cerr << "temper: error: " << st.error().message << "\n";
    return kExitUsage;
  }
  std::cout << "report: " << output.string() << "\n";
  return kExitOk;
}

} // namespace

void register_report_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Write a self-contained HTML report (charts, tables, context) of a judge report or a campaign");
  cmd->add_option("input", a->input, "A judge report (temper judge --json FILE) or a campaign directory")->required();
  cmd->add_option("-o,--output", a->output, "The HTML file (default: beside the input, report.html in a campaign)");
  cmd->callback([a, &action] { action = [a] { return run(*a); }; });
}

} // namespace temper::cli
