// Case statuses, with the names DESIGN.md gives them.
#pragma once

#include <string_view>

namespace temper::judge {

enum class CaseStatus {
  Passed,
  IncorrectShape,
  IncorrectDtype,
  IncorrectNumerical,
  RuntimeError,
  Crashed,
  Timeout,
  CompileError,
  RejectedCheat,
  TooSlow,
  Unsupported, // the backend cannot run kernels on this machine (CUDA without a GPU); nothing ran
  Unchecked, // the backend mode computes no output values (PyPTO RunMode.SIM): nothing to compare
};

std::string_view status_name(CaseStatus s); // PASSED, INCORRECT_NUMERICAL, ...

} // namespace temper::judge
