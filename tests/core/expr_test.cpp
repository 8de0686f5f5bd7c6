#include "core/expr.h"
#include "core/task.h"

#include <cmath>
#include <gtest/gtest.h>

namespace temper::core::expr_test {
namespace {

TensorDecl f16_decl(const std::string& name) {
  TensorDecl t;
  t.name = name;
  t.dtypes = {Dtype::F16};
  return t;
}

double eval_ok(std::string_view text, const ExprScope& scope = {}) {
  auto e = parse_expr(text);
  EXPECT_TRUE(e.has_value()) << text << ": " << (e ? "" : e.error().message);
  if (!e)
    return NAN;
  auto v = e->eval(scope);
  EXPECT_TRUE(v.has_value()) << text << ": " << (v ? "" : v.error().message);
  return v ? *v : NAN;
}

std::string parse_error(std::string_view text) {
  auto e = parse_expr(text);
  EXPECT_FALSE(e.has_value()) << text << " parsed";
  return e ? "" : e.error().message;
}

std::string eval_error(std::string_view text, const ExprScope& scope) {
  auto e = parse_expr(text);
  EXPECT_TRUE(e.has_value()) << text;
  if (!e)
    return "";
  auto v = e->eval(scope);
  EXPECT_FALSE(v.has_value()) << text << " evaluated to " << (v ? *v : 0);
  return v ? "" : v.error().message;
}

TEST(Expr, ArithmeticAndPrecedence) {
  EXPECT_EQ(eval_ok("1 + 2 * 3"), 7);
  EXPECT_EQ(eval_ok("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval_ok("10 - 4 - 3"), 3); // left-associative
  EXPECT_EQ(eval_ok("24 / 4 / 2"), 3);
  EXPECT_EQ(eval_ok("7 % 4"), 3);
  EXPECT_EQ(eval_ok("-7 % 4"), -3); // C semantics
  EXPECT_EQ(eval_ok("-2 * -3"), 6);
  EXPECT_EQ(eval_ok("--2"), 2);
  EXPECT_EQ(eval_ok("+5"), 5);
  EXPECT_DOUBLE_EQ(eval_ok("1.5e3 + .5 + 2."), 1502.5);
  EXPECT_DOUBLE_EQ(eval_ok("1e-6 * 1e6"), 1);
}

TEST(Expr, ComparisonsAndLogic) {
  EXPECT_EQ(eval_ok("1 < 2"), 1);
  EXPECT_EQ(eval_ok("2 <= 2"), 1);
  EXPECT_EQ(eval_ok("2 > 3"), 0);
  EXPECT_EQ(eval_ok("3 >= 4"), 0);
  EXPECT_EQ(eval_ok("4 == 4"), 1);
  EXPECT_EQ(eval_ok("4 != 4"), 0);
  EXPECT_EQ(eval_ok("1 + 1 == 2 && 3 > 2"), 1);
  EXPECT_EQ(eval_ok("0 || 0"), 0);
  EXPECT_EQ(eval_ok("0 || 5"), 1);
  EXPECT_EQ(eval_ok("!0"), 1);
  EXPECT_EQ(eval_ok("!3"), 0);
  EXPECT_EQ(eval_ok("1 || 0 && 0"), 1); // && binds tighter than ||
  EXPECT_EQ(eval_ok("true && !false"), 1);
}

TEST(Expr, ConditionalIsRightAssociativeAndLazy) {
  EXPECT_EQ(eval_ok("1 ? 10 : 20"), 10);
  EXPECT_EQ(eval_ok("0 ? 10 : 20"), 20);
  EXPECT_EQ(eval_ok("0 ? 1 : 0 ? 2 : 3"), 3);
  EXPECT_EQ(eval_ok("1 ? 1 / 1 : 1 / 0"), 1); // the untaken branch is not evaluated
  EXPECT_EQ(eval_ok("0 && 1 / 0"), 0);
  EXPECT_EQ(eval_ok("1 || 1 / 0"), 1);
}

TEST(Expr, Functions) {
  EXPECT_EQ(eval_ok("min(3, 1, 2)"), 1);
  EXPECT_EQ(eval_ok("max(3, 7)"), 7);
  EXPECT_EQ(eval_ok("abs(-4)"), 4);
  EXPECT_EQ(eval_ok("ceil(1.2)"), 2);
  EXPECT_EQ(eval_ok("floor(-1.2)"), -2);
  EXPECT_EQ(eval_ok("log2(1024)"), 10);
  EXPECT_EQ(eval_ok("sqrt(16)"), 4);
  EXPECT_EQ(eval_ok("pow(2, 10)"), 1024);
  EXPECT_EQ(eval_ok("max(min(5, 9), abs(-2)) * 2"), 10);
}

TEST(Expr, VariablesAndIndexing) {
  ExprScope s;
  s.values["attr.dim"] = -1;
  s.values["in0.rank"] = 3;
  s.lists["in0.shape"] = {2, 3, 8};
  EXPECT_EQ(eval_ok("in0.shape[0]", s), 2);
  EXPECT_EQ(eval_ok("in0.shape[-1]", s), 8);
  EXPECT_EQ(eval_ok("in0.shape[attr.dim]", s), 8);
  EXPECT_EQ(eval_ok("in0.shape[in0.rank - 2]", s), 3);
  EXPECT_EQ(eval_ok("in0.shape[attr.dim] % 2 == 0", s), 1);
  EXPECT_EQ(eval_ok("in0.rank > 5 && in0.shape[5] > 0", s), 0); // guarded index
}

TEST(Expr, EvaluationErrorsAreClear) {
  ExprScope s;
  s.values["in0.rank"] = 2;
  s.lists["in0.shape"] = {4, 6};
  EXPECT_NE(eval_error("in1.rank", s).find("unknown variable 'in1.rank'"), std::string::npos);
  EXPECT_NE(eval_error("in0.shape[2]", s).find("index 2 out of range for in0.shape (size 2)"),
            std::string::npos);
  EXPECT_NE(eval_error("in0.shape[-3]", s).find("out of range"), std::string::npos);
  EXPECT_NE(eval_error("in0.shape[0.5]", s).find("not an integer"), std::string::npos);
  EXPECT_NE(eval_error("in0.shape", s).find("is a list"), std::string::npos);
  EXPECT_NE(eval_error("in0.rank[0]", s).find("cannot be indexed"), std::string::npos);
  EXPECT_NE(eval_error("1 / (in0.rank - 2)", s).find("division by zero"), std::string::npos);
  EXPECT_NE(eval_error("5 % 0", s).find("division by zero"), std::string::npos);
  EXPECT_NE(eval_error("log2(0)", s).find("log2"), std::string::npos);
  EXPECT_FALSE(Expr().eval(s).has_value()); // a default Expr is not a value
}

TEST(Expr, ParseErrorsShowTheColumn) {
  EXPECT_EQ(parse_error("1 +"),
            "column 4: expected a number, a name or '(' but the expression ended");
  EXPECT_EQ(parse_error("(1 + 2"), "column 7: expected ')' but the expression ended");
  EXPECT_EQ(parse_error("1 2"), "column 3: expected end of expression but found '2'");
  EXPECT_EQ(parse_error("a = 1"), "column 3: unexpected '=' (did you mean '=='?)");
  EXPECT_EQ(parse_error("a & b"), "column 3: unexpected '&' (did you mean '&&'?)");
  EXPECT_EQ(parse_error("1 $ 2"), "column 3: unexpected character '$'");
  EXPECT_EQ(
      parse_error("foo(1)"),
      "column 1: unknown function 'foo' (known: abs, ceil, floor, log2, max, min, pow, sqrt)");
  EXPECT_EQ(parse_error("min(1)"), "column 1: wrong number of arguments to min: 1");
  EXPECT_EQ(parse_error("abs(1, 2)"), "column 1: wrong number of arguments to abs: 2");
  EXPECT_EQ(parse_error("x[1"), "column 4: expected ']' but the expression ended");
  EXPECT_EQ(parse_error("1 ? 2"), "column 6: expected ':' but the expression ended");
  EXPECT_EQ(parse_error("12abc"), "column 1: bad number '12a'");
  EXPECT_EQ(parse_error("   "), "column 1: empty expression");
}

TEST(Expr, KeepsSourceAndListsVariables) {
  auto e =
      parse_expr("in0.shape[attr.dim] % 2 == 0 && attr.dim < in0.rank && max(query.numel, 1) > 0");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->source(),
            "in0.shape[attr.dim] % 2 == 0 && attr.dim < in0.rank && max(query.numel, 1) > 0");
  EXPECT_EQ(e->variables(),
            (std::vector<std::string>{"attr.dim", "in0.rank", "in0.shape", "query.numel"}));
  Expr copy = *e; // copies share the parsed tree
  EXPECT_EQ(copy.variables().size(), 4u);
}

Operator gqa_like() {
  Operator op;
  op.name = "GQA";
  op.inputs = {f16_decl("query"), f16_decl("key")};
  return op;
}

TEST(Expr, CaseScope) {
  Operator op = gqa_like();
  Case c;
  c.id = 7;
  c.input_shapes = {{2, 128, 32, 64}, {2, 256, 8, 64}};
  c.dtypes = {Dtype::F16, Dtype::BF16};
  AttrValue scale;
  scale.kind = AttrKind::Float;
  scale.f = 0.125;
  AttrValue causal;
  causal.kind = AttrKind::Bool;
  causal.i = 1;
  AttrValue dims;
  dims.kind = AttrKind::IntList;
  dims.ints = {1, -1};
  AttrValue mode;
  mode.kind = AttrKind::String;
  mode.s = "fast";
  c.attrs = {{"scale", scale}, {"is_causal", causal}, {"dims", dims}, {"mode", mode}};

  ExprScope s = make_case_scope(op, c);
  EXPECT_EQ(eval_ok("in0.rank", s), 4);
  EXPECT_EQ(eval_ok("in0.numel", s), 2.0 * 128 * 32 * 64);
  EXPECT_EQ(eval_ok("in0.bytes", s), 2.0 * 128 * 32 * 64 * 2);
  EXPECT_EQ(eval_ok("in1.elem_bytes", s), 2);
  EXPECT_EQ(eval_ok("key.shape[1]", s), 256);
  EXPECT_EQ(eval_ok("query.shape[-2] / key.shape[-2]", s), 4);
  EXPECT_EQ(eval_ok("attr.scale * 8", s), 1);
  EXPECT_EQ(eval_ok("attr.is_causal", s), 1);
  EXPECT_EQ(eval_ok("attr.dims[1]", s), -1);
  EXPECT_EQ(eval_ok("case.id", s), 7);
  EXPECT_EQ(eval_ok("in0.dtype == float16 && in1.dtype == bfloat16", s), 1);
  EXPECT_EQ(eval_ok("in0.dtype == in1.dtype", s), 0);
  EXPECT_EQ(eval_ok("in0.is_float", s), 1);
  EXPECT_NE(eval_error("attr.mode", s).find("unknown variable 'attr.mode'"), std::string::npos);
}

} // namespace
} // namespace temper::core::expr_test
