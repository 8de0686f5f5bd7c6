// One temper command run as a Slurm job instead of here (`temper kb bootstrap|certify
// --executor slurm`): on a node of the class it is about, which is the only place its
// measurements mean anything (docs/scale-out.md).
#pragma once

#include "exec/slurm_client.h"

#include <filesystem>
#include <string>
#include <vector>

namespace temper::cli {

// Runs `argv` (a temper command line, this temper's path first) as one Slurm job in `job_dir`
// (created; on a filesystem the nodes see), with `--result FILE` appended, which the command
// writes when it ends. Prints the job's output and returns the exit status the command had on
// the node; kExitFailed when the job brought no result, kExitUsage when it could not be
// submitted. A signal while the job is out cancels it first.
int run_command_on_cluster(const exec::ExecutorSettings& settings, const std::filesystem::path& job_dir, std::vector<std::string> argv,
                           const std::string& label, bool quiet);

// What `--result FILE` writes: the command's exit status and the node it ran on.
int write_command_result(const std::string& file, int exit_code);

// This temper's own executable (what a node runs: the same path on a shared filesystem).
std::filesystem::path self_executable();

} // namespace temper::cli
