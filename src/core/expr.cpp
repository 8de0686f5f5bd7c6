#include "core/expr.h"

#include "core/task.h"
#include "util/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

namespace temper::core {

struct ExprNode {
  enum class Kind { Number, Var, Index, Unary, Binary, Cond, Call };
  Kind kind = Kind::Number;
  double number = 0;
  std::string name; // variable, function or operator
  std::vector<std::shared_ptr<const ExprNode>> args;
  int column = 0;
};

namespace {

using NodePtr = std::shared_ptr<const ExprNode>;

enum class Tok { Number, Name, Op, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  double number = 0;
  int column = 0; // 1-based
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

Expected<std::vector<Token>> tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    int col = static_cast<int>(i) + 1;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    bool digit_next = i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]));
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && digit_next)) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
        ++j;
      if (j < s.size() && s[j] == '.') {
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
          ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-'))
          ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])))
            ++k;
          j = k;
        }
      }
      Token t{Tok::Number, std::string(s.substr(i, j - i)), 0, col};
      auto [p, ec] = std::from_chars(s.data() + i, s.data() + j, t.number);
      if (ec != std::errc() || p != s.data() + j)
        return fail("column {}: bad number '{}'", col, t.text);
      if (j < s.size() && ident_char(s[j]))
        return fail("column {}: bad number '{}'", col, s.substr(i, j - i + 1));
      out.push_back(std::move(t));
      i = j;
      continue;
    }
    if (ident_start(c)) {
      // A dotted name ("in0.shape") is one token: the parts mean nothing alone.
      size_t j = i;
      while (true) {
        while (j < s.size() && ident_char(s[j]))
          ++j;
        if (j + 1 < s.size() && s[j] == '.' && ident_start(s[j + 1])) {
          ++j;
          continue;
        }
        break;
      }
      out.push_back(Token{Tok::Name, std::string(s.substr(i, j - i)), 0, col});
      i = j;
      continue;
    }
    static constexpr std::string_view two[] = {"<=", ">=", "==", "!=", "&&", "||"};
    std::string_view rest = s.substr(i);
    bool matched = false;
    for (std::string_view op : two) {
      if (rest.substr(0, 2) == op) {
        out.push_back(Token{Tok::Op, std::string(op), 0, col});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched)
      continue;
    if (std::string_view("+-*/%<>!?:()[],").find(c) != std::string_view::npos) {
      out.push_back(Token{Tok::Op, std::string(1, c), 0, col});
      ++i;
      continue;
    }
    if (c == '=' || c == '&' || c == '|')
      return fail("column {}: unexpected '{}' (did you mean '{}{}'?)", col, c, c, c);
    return fail("column {}: unexpected character '{}'", col, c);
  }
  out.push_back(Token{Tok::End, "", 0, static_cast<int>(s.size()) + 1});
  return out;
}

const std::set<std::string, std::less<>>& function_names() {
  static const std::set<std::string, std::less<>> names = {"min",   "max",  "abs",  "ceil",
                                                           "floor", "log2", "sqrt", "pow"};
  return names;
}

class Parser {
public:
  explicit Parser(std::vector<Token> toks) : m_toks(std::move(toks)) {}

  Expected<NodePtr> parse_all() {
    auto e = parse_cond();
    if (!e)
      return e;
    if (peek().kind != Tok::End)
      return unexpected("end of expression");
    return e;
  }

private:
  const Token& peek() const { return m_toks[m_pos]; }
  bool is_op(std::string_view op) const { return peek().kind == Tok::Op && peek().text == op; }
  const Token& take() { return m_toks[m_pos++]; }

  tl::unexpected<Error> unexpected(std::string_view wanted) const {
    const Token& t = peek();
    if (t.kind == Tok::End)
      return fail("column {}: expected {} but the expression ended", t.column, wanted);
    return fail("column {}: expected {} but found '{}'", t.column, wanted, t.text);
  }

  static NodePtr
  make(ExprNode::Kind k, std::string name, std::vector<NodePtr> args, int col, double number = 0) {
    auto n = std::make_shared<ExprNode>();
    n->kind = k;
    n->name = std::move(name);
    n->args = std::move(args);
    n->column = col;
    n->number = number;
    return n;
  }

  Expected<NodePtr> parse_cond() {
    auto c = parse_binary(0);
    if (!c || !is_op("?"))
      return c;
    int col = take().column;
    auto a = parse_cond();
    if (!a)
      return a;
    if (!is_op(":"))
      return unexpected("':'");
    take();
    auto b = parse_cond();
    if (!b)
      return b;
    return make(ExprNode::Kind::Cond, "?:", {*c, *a, *b}, col);
  }

  // Binary levels by precedence, loosest first; all left-associative.
  Expected<NodePtr> parse_binary(size_t level) {
    static const std::vector<std::vector<std::string_view>> levels = {
        {"||"}, {"&&"}, {"==", "!="}, {"<", "<=", ">", ">="}, {"+", "-"}, {"*", "/", "%"}};
    if (level == levels.size())
      return parse_unary();
    auto lhs = parse_binary(level + 1);
    if (!lhs)
      return lhs;
    while (peek().kind == Tok::Op) {
      const auto& ops = levels[level];
      if (std::find(ops.begin(), ops.end(), peek().text) == ops.end())
        break;
      const Token& op = take();
      auto rhs = parse_binary(level + 1);
      if (!rhs)
        return rhs;
      lhs = make(ExprNode::Kind::Binary, op.text, {*lhs, *rhs}, op.column);
    }
    return lhs;
  }

  Expected<NodePtr> parse_unary() {
    if (is_op("-") || is_op("+") || is_op("!")) {
      const Token& op = take();
      auto a = parse_unary();
      if (!a)
        return a;
      return make(ExprNode::Kind::Unary, op.text, {*a}, op.column);
    }
    return parse_primary();
  }

  Expected<NodePtr> parse_primary() {
    const Token& t = peek();
    if (t.kind == Tok::Number) {
      take();
      return make(ExprNode::Kind::Number, "", {}, t.column, t.number);
    }
    if (is_op("(")) {
      take();
      auto e = parse_cond();
      if (!e)
        return e;
      if (!is_op(")"))
        return unexpected("')'");
      take();
      return e;
    }
    if (t.kind != Tok::Name)
      return unexpected("a number, a name or '('");
    const Token& name = take();
    if (name.text == "true" || name.text == "false")
      return make(ExprNode::Kind::Number, "", {}, name.column, name.text == "true" ? 1 : 0);
    if (is_op("(")) {
      if (!function_names().count(name.text))
        return fail("column {}: unknown function '{}' (known: abs, ceil, floor, log2, max, min, "
                    "pow, sqrt)",
                    name.column, name.text);
      take();
      std::vector<NodePtr> args;
      while (true) {
        auto a = parse_cond();
        if (!a)
          return a;
        args.push_back(*a);
        if (is_op(",")) {
          take();
          continue;
        }
        if (is_op(")"))
          break;
        return unexpected("',' or ')'");
      }
      take();
      size_t n = args.size();
      bool ok = (name.text == "min" || name.text == "max") ? n >= 2
                : name.text == "pow"                       ? n == 2
                                                           : n == 1;
      if (!ok)
        return fail("column {}: wrong number of arguments to {}: {}", name.column, name.text, n);
      return make(ExprNode::Kind::Call, name.text, std::move(args), name.column);
    }
    if (is_op("[")) {
      take();
      auto idx = parse_cond();
      if (!idx)
        return idx;
      if (!is_op("]"))
        return unexpected("']'");
      take();
      return make(ExprNode::Kind::Index, name.text, {*idx}, name.column);
    }
    return make(ExprNode::Kind::Var, name.text, {}, name.column);
  }

  std::vector<Token> m_toks;
  size_t m_pos = 0;
};

Expected<double> eval_node(const ExprNode& n, const ExprScope& scope);

Expected<double> eval_call(const ExprNode& n, const ExprScope& scope) {
  std::vector<double> v;
  for (const auto& a : n.args) {
    auto x = eval_node(*a, scope);
    if (!x)
      return x;
    v.push_back(*x);
  }
  const std::string& f = n.name;
  if (f == "min")
    return *std::min_element(v.begin(), v.end());
  if (f == "max")
    return *std::max_element(v.begin(), v.end());
  if (f == "abs")
    return std::fabs(v[0]);
  if (f == "ceil")
    return std::ceil(v[0]);
  if (f == "floor")
    return std::floor(v[0]);
  if (f == "sqrt") {
    if (v[0] < 0)
      return fail("sqrt of a negative number ({})", v[0]);
    return std::sqrt(v[0]);
  }
  if (f == "log2") {
    if (v[0] <= 0)
      return fail("log2 of a non-positive number ({})", v[0]);
    return std::log2(v[0]);
  }
  if (f == "pow")
    return std::pow(v[0], v[1]);
  return fail("unknown function '{}'", f);
}

Expected<double> eval_binary(const ExprNode& n, const ExprScope& scope) {
  const std::string& op = n.name;
  auto a = eval_node(*n.args[0], scope);
  if (!a)
    return a;
  // Short-circuit, so a guard can protect an index or a division on its right.
  if (op == "&&" && *a == 0)
    return 0.0;
  if (op == "||" && *a != 0)
    return 1.0;
  auto b = eval_node(*n.args[1], scope);
  if (!b)
    return b;
  double x = *a, y = *b;
  if (op == "&&" || op == "||")
    return y != 0 ? 1.0 : 0.0;
  if (op == "+")
    return x + y;
  if (op == "-")
    return x - y;
  if (op == "*")
    return x * y;
  if (op == "/" || op == "%") {
    if (y == 0)
      return fail("division by zero in '{}' (column {})", op, n.column);
    return op == "/" ? x / y : std::fmod(x, y);
  }
  if (op == "<")
    return x < y ? 1.0 : 0.0;
  if (op == "<=")
    return x <= y ? 1.0 : 0.0;
  if (op == ">")
    return x > y ? 1.0 : 0.0;
  if (op == ">=")
    return x >= y ? 1.0 : 0.0;
  if (op == "==")
    return x == y ? 1.0 : 0.0;
  if (op == "!=")
    return x != y ? 1.0 : 0.0;
  return fail("unknown operator '{}'", op);
}

Expected<double> lookup_error(const ExprNode& n, const ExprScope& scope) {
  if (n.kind == ExprNode::Kind::Var && scope.lists.count(n.name))
    return fail("'{}' is a list; index it, as in {}[0]", n.name, n.name);
  if (n.kind == ExprNode::Kind::Index && scope.values.count(n.name))
    return fail("'{}' is a number and cannot be indexed", n.name);
  return fail("unknown variable '{}'", n.name);
}

Expected<double> eval_node(const ExprNode& n, const ExprScope& scope) {
  switch (n.kind) {
  case ExprNode::Kind::Number:
    return n.number;
  case ExprNode::Kind::Var: {
    auto it = scope.values.find(n.name);
    if (it == scope.values.end())
      return lookup_error(n, scope);
    return it->second;
  }
  case ExprNode::Kind::Index: {
    auto it = scope.lists.find(n.name);
    if (it == scope.lists.end())
      return lookup_error(n, scope);
    auto idx = eval_node(*n.args[0], scope);
    if (!idx)
      return idx;
    if (*idx != std::floor(*idx))
      return fail("index {} into {} is not an integer", *idx, n.name);
    auto size = static_cast<double>(it->second.size());
    double i = *idx < 0 ? *idx + size : *idx;
    if (i < 0 || i >= size)
      return fail("index {} out of range for {} (size {})", *idx, n.name, it->second.size());
    return it->second[static_cast<size_t>(i)];
  }
  case ExprNode::Kind::Unary: {
    auto a = eval_node(*n.args[0], scope);
    if (!a)
      return a;
    if (n.name == "-")
      return -*a;
    if (n.name == "!")
      return *a == 0 ? 1.0 : 0.0;
    return *a;
  }
  case ExprNode::Kind::Binary:
    return eval_binary(n, scope);
  case ExprNode::Kind::Cond: {
    auto c = eval_node(*n.args[0], scope);
    if (!c)
      return c;
    return eval_node(*n.args[*c != 0 ? 1 : 2], scope);
  }
  case ExprNode::Kind::Call:
    return eval_call(n, scope);
  }
  return fail("bad expression node");
}

void collect_variables(const ExprNode& n, std::set<std::string>& out) {
  if (n.kind == ExprNode::Kind::Var || n.kind == ExprNode::Kind::Index)
    out.insert(n.name);
  for (const auto& a : n.args)
    collect_variables(*a, out);
}

} // namespace

Expected<Expr> parse_expr(std::string_view text) {
  auto toks = tokenize(text);
  if (!toks)
    return tl::unexpected(toks.error());
  if (toks->size() == 1)
    return fail("column 1: empty expression");
  Parser p(std::move(*toks));
  auto root = p.parse_all();
  if (!root)
    return tl::unexpected(root.error());
  Expr e;
  e.m_root = *root;
  e.m_source = std::string(text);
  return e;
}

Expected<double> Expr::eval(const ExprScope& scope) const {
  if (!m_root)
    return fail("empty expression");
  return eval_node(*m_root, scope);
}

Expected<bool> Expr::test(const ExprScope& scope) const {
  auto v = eval(scope);
  if (!v)
    return tl::unexpected(v.error());
  return *v != 0;
}

std::vector<std::string> Expr::variables() const {
  std::set<std::string> names;
  if (m_root)
    collect_variables(*m_root, names);
  return {names.begin(), names.end()};
}

namespace {

void add_input(ExprScope& scope, const std::string& prefix, const TensorSpec& t) {
  std::vector<double> dims(t.shape.begin(), t.shape.end());
  scope.lists[prefix + ".shape"] = std::move(dims);
  scope.values[prefix + ".rank"] = static_cast<double>(t.shape.size());
  scope.values[prefix + ".numel"] = static_cast<double>(t.numel());
  scope.values[prefix + ".bytes"] = static_cast<double>(t.bytes());
  scope.values[prefix + ".elem_bytes"] = static_cast<double>(dtype_size(t.dtype));
  scope.values[prefix + ".dtype"] = static_cast<double>(t.dtype);
  scope.values[prefix + ".is_float"] = is_floating(t.dtype) ? 1 : 0;
}
} // namespace

ExprScope make_case_scope(const Operator& op, const Case& c) {
  ExprScope scope;
  auto specs = c.input_specs(op);
  for (size_t k = 0; k < specs.size(); ++k) {
    add_input(scope, "in" + std::to_string(k), specs[k]);
    // Proto names are a convenience; reserved prefixes keep their meaning.
    const std::string& name = specs[k].name;
    if (util::is_identifier(name) && name != "attr" && name != "case" && !scope.has(name + ".rank"))
      add_input(scope, name, specs[k]);
  }
  for (const auto& [name, v] : c.attrs) {
    std::string key = "attr." + name;
    switch (v.kind) {
    case AttrKind::Int:
    case AttrKind::Bool:
      scope.values[key] = static_cast<double>(v.i);
      break;
    case AttrKind::Float:
      scope.values[key] = v.f;
      break;
    case AttrKind::IntList:
      scope.lists[key] = std::vector<double>(v.ints.begin(), v.ints.end());
      break;
    case AttrKind::FloatList:
      scope.lists[key] = v.floats;
      break;
    case AttrKind::String:
      break; // not a number; an expression reading it gets "unknown variable"
    }
  }
  scope.values["case.id"] = static_cast<double>(c.id);
  // Dtype names as constants, so a check can read `in0.dtype == bfloat16`.
  for (Dtype d : {Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::F64, Dtype::I8, Dtype::I16,
                  Dtype::I32, Dtype::I64, Dtype::U8, Dtype::Bool})
    scope.values[std::string(dtype_name(d))] = static_cast<double>(d);
  return scope;
}

} // namespace temper::core
