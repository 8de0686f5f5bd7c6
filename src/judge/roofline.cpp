#include "judge/roofline.h"

#include "core/expr.h"

#include <fmt/format.h>

#include <cmath>

namespace temper::judge {

nlohmann::json Roofline::to_json() const {
  return {{"bytes_per_s", bytes_per_s}, {"flops_per_s", flops_per_s}, {"source", source}};
}

namespace {

// 0 for an empty expression (the model leaves that side out).
Expected<double> evaluate(const std::string& text, const core::ExprScope& scope, const char* what) {
  if (text.empty()) return 0.0;
  TEMPER_TRY_ASSIGN(core::Expr e, core::parse_expr(text));
  auto v = e.eval(scope);
  if (!v) return fail("cost.{} cannot be evaluated: {}", what, v.error().message);
  if (!std::isfinite(*v) || *v < 0) return fail("cost.{} is {}, not a non-negative number", what, *v);
  return *v;
}

} // namespace

Expected<CaseBound> roofline_bound(const core::Task& task, const core::Case& c, const Roofline& roofline) {
  if (!task.config.cost) return fail("the task has no cost model (cost: {{bytes, flops}} in temper.yaml)");
  const core::ExprScope scope = core::make_case_scope(task.op, c);
  CaseBound b;
  TEMPER_TRY_ASSIGN(b.bytes, evaluate(task.config.cost->bytes, scope, "bytes"));
  TEMPER_TRY_ASSIGN(b.flops, evaluate(task.config.cost->flops, scope, "flops"));
  // Each side bounds the time on its own, so a side without a certified figure is left out and
  // the bound stays a lower bound, only a looser one.
  const double t_mem = b.bytes > 0 && roofline.bytes_per_s > 0 ? b.bytes / roofline.bytes_per_s : 0;
  const double t_flop = b.flops > 0 && roofline.flops_per_s > 0 ? b.flops / roofline.flops_per_s : 0;
  if (t_mem <= 0 && t_flop <= 0) {
    return fail("no bound for case {}: the cost model's work ({} bytes, {} flops) has no certified figure to divide by", c.id, b.bytes,
                b.flops);
  }
  b.seconds = std::max(t_mem, t_flop);
  b.limiter = t_mem >= t_flop ? "memory" : "compute";
  if ((b.bytes > 0 && t_mem <= 0) || (b.flops > 0 && t_flop <= 0)) b.limiter += t_mem <= 0 ? ", bytes unbounded" : ", flops unbounded";
  return b;
}

} // namespace temper::judge
