// The temper command line: parse, dispatch, map failures to exit statuses (see commands.h).
#include "cli/commands.h"
#include "util/error.h"

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  using namespace temper::cli;
  CLI::App app{"temper: judges and optimizes compute kernels (CPU, CUDA, Ascend)", "temper"};
  app.require_subcommand(1);
  Action action;
  register_all(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e); // prints help, the version, or the usage error
    return status == 0 ? kExitOk : kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const temper::UsageError& e) {
    std::cerr << "temper: error: " << e.message << "\n";
  } catch (const std::exception& e) {
    std::cerr << "temper: error: " << e.what() << "\n";
  }
  return kExitUsage;
}
