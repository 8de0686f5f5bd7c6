#include "agent/harness_cli.h"

#include "agent/harness_protocol.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

namespace temper::agent {

namespace {

namespace fs = std::filesystem;

// Files travel as absolute paths: the workspace has the same path inside and outside the
// sandbox, so the orchestrator can check that the file lies inside the workspace.
std::string absolute_file(const std::string& file) {
  std::error_code ec;
  fs::path p = fs::absolute(file, ec);
  return ec ? file : p.lexically_normal().string();
}

} // namespace

int harness_cli_main(int argc, char** argv) {
  CLI::App app{"harness: the agent's way to the temper judge. Run it inside a temper agent turn;\n"
               "it talks to the orchestrator over the socket named by $TEMPER_HARNESS_SOCKET.",
               "harness"};
  app.require_subcommand(1);
  bool as_json = false;
  app.add_flag("--json", as_json, "print the response body as JSON instead of the message");

  HarnessRequest request;
  std::string file;
  int64_t case_id = -1;
  std::vector<std::string> words;

  auto add_case = [&](CLI::App* sub) {
    sub->add_option("--case", case_id, "one case id of the task")->check(CLI::NonNegativeNumber);
  };
  auto* probe = app.add_subcommand("probe", "exploration run of a candidate: correctness and time vs the reference");
  probe->add_option("FILE", file, "candidate source file in the workspace")->required();
  add_case(probe);
  probe->add_option("--cases", request.cases, "several case ids at once, e.g. 2,15,18 (instead of --case)")->delimiter(',');
  probe->add_option("--grid", request.grid, "knob axis NAME=v1,v2,... (repeatable)");
  std::vector<std::string> variant_texts;
  probe->add_option("--variant", variant_texts, "one variant NAME=v,NAME2=w (repeatable; instead of --grid)");
  auto* submit = app.add_subcommand("submit", "submit a candidate for the current milestone's acceptance");
  submit->add_option("FILE", file, "candidate source file in the workspace")->required();
  auto* escalate = app.add_subcommand("escalate", "say that only an architecture change can help, and why");
  escalate->add_option("REASON", words, "why (quote it, or give several words)")->required();
  app.add_subcommand("status", "the current milestone, attempts and budget");
  add_case(app.add_subcommand("ref-time", "Teacher: time the sealed reference"));
  add_case(app.add_subcommand("ref-profile", "Teacher: profile the sealed reference"));
  add_case(app.add_subcommand("ref-disasm", "Teacher: disassembly summary of the sealed reference"));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kHarnessExitUsage;
  }

  request.op = app.get_subcommands().front()->get_name();
  if (!file.empty()) request.file = absolute_file(file);
  if (case_id >= 0) request.case_id = case_id;
  if (request.case_id && !request.cases.empty()) {
    std::cerr << "harness: give --case or --cases, not both\n";
    return kHarnessExitUsage;
  }
  for (const auto& w : words) request.text += (request.text.empty() ? "" : " ") + w;
  for (const auto& axis : request.grid) {
    if (auto ok = validate_grid_axis(axis); !ok) {
      std::cerr << "harness: " << ok.error().message << "\n";
      return kHarnessExitUsage;
    }
  }

  for (const auto& text : variant_texts) {
    auto v = parse_variant(text);
    if (!v) {
      std::cerr << "harness: --variant " << v.error().message << "\n";
      return kHarnessExitUsage;
    }
    request.variants.push_back(std::move(*v));
  }
  if (!request.grid.empty() && !request.variants.empty()) {
    std::cerr << "harness: give --grid or --variant, not both\n";
    return kHarnessExitUsage;
  }

  const char* socket = std::getenv("TEMPER_HARNESS_SOCKET");
  if (socket == nullptr || *socket == '\0') {
    std::cerr << "harness: TEMPER_HARNESS_SOCKET is unset; the harness works only inside a temper agent turn\n";
    return kHarnessExitUsage;
  }
  auto response = harness_call(socket, request);
  if (!response) {
    std::cerr << "harness: the orchestrator is unreachable at TEMPER_HARNESS_SOCKET=" << socket << ": "
              << response.error().message << "\n";
    return kHarnessExitUsage;
  }
  if (as_json) {
    std::cout << response->body.dump(2) << "\n";
  } else {
    std::cout << response->message << (response->message.empty() || response->message.back() == '\n' ? "" : "\n");
  }
  return response->ok ? kHarnessExitOk : kHarnessExitNotOk;
}

} // namespace temper::agent
