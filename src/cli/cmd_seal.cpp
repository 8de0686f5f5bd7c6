// `temper seal TASK SOURCE --name NAME`: turns a reference kernel into a sealed black box.
#include "cli/commands.h"
#include "cli/timing_flags.h"
#include "judge/seal.h"
#include "util/process.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>

namespace temper::cli {

namespace {

struct SealArgs {
  std::string task;
  std::string source;
  std::string name;
  std::string store;
  std::string compiler = "g++";
  std::string flags;
  std::string origin;
  bool keep_source = false;
  int jobs = 0;
};

int run_seal(const SealArgs& a) {
  judge::SealOptions o;
  o.task_dir = a.task;
  o.source = a.source;
  o.name = a.name;
  o.store = a.store;
  o.compiler.program = a.compiler;
  if (!a.flags.empty()) o.compiler.flags = split_flags(a.flags);
  o.origin = a.origin;
  o.keep_source = a.keep_source;
  o.jobs = a.jobs;
  auto ref = judge::seal(o, util::default_process_runner());
  if (!ref) {
    std::cerr << "temper: error: " << ref.error().message << "\n";
    return kExitUsage;
  }
  size_t artifacts = 0;
  std::string last;
  for (const auto& [id, path] : ref->case_artifacts) {
    if (path.string() != last) ++artifacts;
    last = path.string();
  }
  std::cout << fmt::format("sealed '{}' for task {}: {} case(s), {} artifact(s){}\n", ref->name, ref->task,
                           ref->case_artifacts.size(), artifacts, ref->specialized ? " (specialized per case)" : "");
  std::cout << fmt::format("  content hash {}\n  compiler {} ({}), flags {}\n  store {}\n", ref->content_hash,
                           ref->compiler, ref->compiler_version, fmt::join(ref->flags, " "), ref->dir.string());
  std::cout << (a.keep_source ? "  the source was copied into the vault\n" : "  the source was moved into the vault\n");
  return kExitOk;
}

} // namespace

void register_seal_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<SealArgs>();
  CLI::App* cmd = app.add_subcommand("seal", "Seal a reference kernel: build it for every case of the task into a store, "
                                             "move its source into the vault; later commands use it by name only");
  cmd->add_option("task", a->task, "Task directory")->required();
  cmd->add_option("source", a->source, "Reference kernel source (moved into the vault)")->required();
  cmd->add_option("--name", a->name, "Name of the sealed reference (letters, digits, '.', '_', '-')")->required();
  cmd->add_option("--store", a->store, "Store of sealed references (default: $TEMPER_HOME/refs, ~/.temper/refs)");
  cmd->add_option("--compiler", a->compiler, "C++ compiler")->capture_default_str();
  cmd->add_option("--flags", a->flags, "Optimization flags (default: \"-O3 -march=native\"); candidates are judged with the same");
  cmd->add_option("--origin", a->origin, "Where the reference came from, for the manifest (default: the source path)");
  cmd->add_flag("--keep-source", a->keep_source, "Copy the source into the vault instead of moving it");
  cmd->add_option("--jobs,-j", a->jobs, "Parallel compiles (default: one per core)")->check(CLI::PositiveNumber);
  cmd->callback([a, &action] { action = [a] { return run_seal(*a); }; });
}

} // namespace temper::cli
