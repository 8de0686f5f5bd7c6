// Reading and validating task directories.
#pragma once

#include "core/task.h"
#include "util/error.h"

#include <filesystem>
#include <string>
#include <vector>

namespace temper::core {

struct Diagnostic {
  std::string file; // path as given (task dir + file name)
  int line = 0;     // 1-based; 0 when the problem is not tied to a line
  std::string message;

  std::string to_string() const; // "dir/cases.yaml:12: unknown dtype 'float8'"
};

// Loads a task: proto.yaml, then cases.yaml (or cases.csv when there is no cases.yaml), then
// temper.yaml when present (a plain CANN-Bench task has none; defaults apply). Fails with every
// problem found, one per line, each with file and line.
Expected<Task> load_task(const std::filesystem::path& dir);

// Every problem in a task directory: bad YAML or CSV, unknown dtype, odd split size, missing
// required attr, unknown attr, wrong number of shapes or dtypes, dtype not allowed by the
// operator, shape mismatch between inputs, missing golden or reference file. Empty when valid.
std::vector<Diagnostic> check_task(const std::filesystem::path& dir);

} // namespace temper::core
