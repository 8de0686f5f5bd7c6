// The util/core/build error model: recoverable operations return temper::Expected<T>, an
// expected value or an Error with a message a user can act on. Errors become exceptions only at
// the CLI boundary. A candidate kernel's failure is never an Error: it is a status in a report.
#pragma once

#include <fmt/format.h>
#include <tl/expected.hpp>

#include <string>
#include <utility>

namespace temper {

struct Error {
  std::string message;
};

template <typename T>
using Expected = tl::expected<T, Error>;

using Status = tl::expected<void, Error>;

template <typename... Args>
tl::unexpected<Error> fail(fmt::format_string<Args...> f, Args&&... args) {
  return tl::unexpected<Error>(Error{fmt::format(f, std::forward<Args>(args)...)});
}

// Thrown only at layer boundaries (CLI) to turn an Error into an exit status.
struct UsageError {
  std::string message;
};

} // namespace temper

// Propagates an error from an Expected expression, else yields nothing.
#define TEMPER_TRY(expr)                                                                           \
  do {                                                                                             \
    auto temper_try_result_ = (expr);                                                              \
    if (!temper_try_result_) return tl::unexpected<temper::Error>(temper_try_result_.error());     \
  } while (false)

#define TEMPER_CONCAT_INNER_(a, b) a##b
#define TEMPER_CONCAT_(a, b) TEMPER_CONCAT_INNER_(a, b)

// Declares or assigns `lhs` (e.g. `std::string text` or `x`) from an Expected expression, or
// propagates its error.
#define TEMPER_TRY_ASSIGN(lhs, expr) TEMPER_TRY_ASSIGN_IMPL_(TEMPER_CONCAT_(temper_try_, __LINE__), lhs, expr)
#define TEMPER_TRY_ASSIGN_IMPL_(tmp, lhs, expr)                                                    \
  auto tmp = (expr);                                                                               \
  if (!tmp) return tl::unexpected<temper::Error>(tmp.error());                                     \
  lhs = std::move(*tmp)
