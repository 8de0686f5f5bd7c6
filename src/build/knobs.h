// A kernel's tunable parameters, declared in its source so the judge, `temper probe` and the
// tuner Student read them from one place:
//
//   // temper: knob UNROLL = 2 in {1, 2, 4}
//   // temper: knob TILE = 64 in {32, 64, 128, 256}
//   // temper: knob-constraint TILE * UNROLL <= 512
//
// The kernel reads each knob as a macro with the declared default (`#ifndef TILE` /
// `#define TILE 64`); a variant is built with -DNAME=VALUE. Constraints are expressions of the
// expression language (core/expr.h) over the knob values and, when a case is given, the case's
// shapes, dtypes and attrs; a variant is valid when every constraint holds.
#pragma once

#include "build/compiler.h"
#include "core/expr.h"
#include "util/error.h"

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace temper::build {

struct Knob {
  std::string name;
  std::string default_value;
  std::vector<std::string> values; // in declared order; contains the default
  int line = 0;                    // 1-based line of the declaration
};

// One value per knob, by name.
using KnobValues = std::map<std::string, std::string, std::less<>>;

struct KnobSpace {
  std::vector<Knob> knobs;               // in declaration order
  std::vector<core::Expr> constraints;

  bool empty() const { return knobs.empty(); }
  const Knob* find(std::string_view name) const;
  // Number of combinations before constraints (saturates at SIZE_MAX).
  size_t size() const;
  KnobValues defaults() const;
  // Every combination in order (the last knob varies fastest), before constraints.
  std::vector<KnobValues> enumerate() const;
};

// Reads the declarations. Errors name the line: "line 12: knob TILE: default 48 is not one of
// its values {32, 64}", a name declared twice, a malformed declaration or constraint, or a
// constraint naming something that is neither a knob nor a case variable.
Expected<KnobSpace> parse_knobs(std::string_view source);

// Whether `values` satisfies every constraint. `case_scope` supplies the case's variables
// (null: only knob values are in scope; a constraint that needs the case is then an error).
// Knob values that are not numbers cannot appear in constraints.
Expected<bool> satisfies(const KnobSpace& space, const KnobValues& values, const core::ExprScope* case_scope);

// Checks that `values` names only declared knobs with declared values.
Expected<void> validate_values(const KnobSpace& space, const KnobValues& values);

// -DNAME=VALUE macros for a variant, in name order.
std::vector<Define> knob_defines(const KnobValues& values);

// "TILE=64,UNROLL=2" in name order; the key the tuner caches results under.
std::string knob_label(const KnobValues& values);

} // namespace temper::build
