// A small expression language over a case's shapes, dtypes and attrs, used by task constraints,
// cost models and knowledge-base conditions. Expressions are parsed once into an immutable AST
// and evaluated against a scope of named numbers and number lists.
//
// Grammar, lowest precedence first:
//   expr    := or ('?' expr ':' expr)?
//   or      := and ('||' and)*          and := cmp ('&&' cmp)*
//   cmp     := rel (('==' | '!=') rel)*  rel := sum (('<' | '<=' | '>' | '>=') sum)*
//   sum     := prod (('+' | '-') prod)*  prod := unary (('*' | '/' | '%') unary)*
//   unary   := ('-' | '+' | '!') unary | primary
//   primary := number | 'true' | 'false' | '(' expr ')' | func '(' expr (',' expr)* ')'
//            | name ('[' expr ']')?      name := ident ('.' ident)*
// Functions: min, max (two or more arguments), abs, ceil, floor, log2, sqrt, pow(x, y).
// Values are doubles; comparisons and logic yield 1 or 0; && || and ?: evaluate lazily, so
// `in0.rank > 2 && in0.shape[2] > 0` is safe. % is C's fmod (sign of the left operand).
#pragma once

#include "util/error.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace temper::core {

struct Operator;
struct Case;

// Named values an expression can read. `values` holds scalars ("in0.rank", "attr.dim",
// "case.id"); `lists` holds indexable lists ("in0.shape"), read as `in0.shape[i]` where a
// negative i counts from the end. Callers may add their own names (e.g. "hw.l2_bytes").
struct ExprScope {
  std::map<std::string, double, std::less<>> values;
  std::map<std::string, std::vector<double>, std::less<>> lists;

  bool has(std::string_view name) const { return values.count(name) || lists.count(name); }
};

struct ExprNode; // defined in expr.cpp

class Expr {
public:
  Expr() = default; // evaluates to an error until assigned from parse_expr

  // The value, or an error naming the problem: unknown variable, index out of range, division
  // by zero, wrong argument count.
  Expected<double> eval(const ExprScope& scope) const;

  // Convenience for conditions: nonzero is true.
  Expected<bool> test(const ExprScope& scope) const;

  const std::string& source() const { return m_source; }

  // Every variable name the expression reads ("in0.shape", "attr.dim"), sorted, without
  // duplicates; lets callers report unknown names once instead of per evaluation.
  std::vector<std::string> variables() const;

private:
  friend Expected<Expr> parse_expr(std::string_view text);
  std::shared_ptr<const ExprNode> m_root; // immutable, so copies share it
  std::string m_source;
};

// Parses `text`. Errors read "column N: expected ')' but found 'x'" (1-based column).
Expected<Expr> parse_expr(std::string_view text);

// Scope for one case of an operator: for each input k (also under its proto name when that is
// an identifier): in<k>.shape (list), in<k>.rank, in<k>.numel, in<k>.bytes, in<k>.elem_bytes,
// in<k>.dtype (a code, compared with the constants float16, bfloat16, float32, ... also in
// scope), in<k>.is_float; attr.<name> for numeric and bool attrs (bools 0/1; int and float
// lists as lists); case.id.
ExprScope make_case_scope(const Operator& op, const Case& c);

} // namespace temper::core
