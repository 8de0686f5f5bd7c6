#include "core/task_loader.h"

#include "core/task_parse.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <tuple>

namespace temper::core {

namespace fs = std::filesystem;
using detail::Diagnostics;
using detail::report;

std::string Diagnostic::to_string() const {
  if (line > 0)
    return fmt::format("{}:{}: {}", file, line, message);
  return fmt::format("{}: {}", file, message);
}

namespace {

constexpr const char* kVariableHelp =
    "a case defines in<k>.shape[i], in<k>.rank, in<k>.numel, in<k>.bytes, in<k>.elem_bytes, "
    "in<k>.dtype, in<k>.is_float, the same under each input's name, attr.<name>, case.id and "
    "the dtype constants float16, bfloat16, float32, ...";

// Constraints and cost expressions, per case. A variable no case defines is a mistake in
// temper.yaml and is reported once there; anything else is reported at the case.
void check_expressions(const Task& task, Diagnostics& diags) {
  if (task.cases.empty())
    return;
  std::vector<ExprScope> scopes;
  std::set<std::string> known;
  for (const auto& c : task.cases) {
    scopes.push_back(make_case_scope(task.op, c));
    for (const auto& [name, v] : scopes.back().values)
      known.insert(name);
    for (const auto& [name, v] : scopes.back().lists)
      known.insert(name);
  }
  auto unknown_names = [&](const Expr& e) {
    std::string out;
    for (const auto& v : e.variables())
      if (!known.count(v))
        out += fmt::format("{}'{}'", out.empty() ? "" : ", ", v);
    return out;
  };

  for (const auto& con : task.config.constraints) {
    if (auto bad = unknown_names(con.check); !bad.empty()) {
      report(diags, con.where.file, con.where.line,
             fmt::format("constraint '{}' reads unknown variable {} ({})", con.check.source(), bad,
                         kVariableHelp));
      continue;
    }
    for (size_t i = 0; i < task.cases.size(); ++i) {
      const Case& c = task.cases[i];
      auto ok = con.check.test(scopes[i]);
      if (!ok)
        report(diags, c.where.file, c.where.line,
               fmt::format("case {}: constraint '{}' ({}:{}) cannot be evaluated: {}", c.id,
                           con.check.source(), fs::path(con.where.file).filename().string(),
                           con.where.line, ok.error().message));
      else if (!*ok)
        report(diags, c.where.file, c.where.line, fmt::format("case {}: {}", c.id, con.message));
    }
  }

  if (!task.config.cost)
    return;
  for (auto [key, text] : {std::pair{"bytes", &task.config.cost->bytes},
                           std::pair{"flops", &task.config.cost->flops}}) {
    if (text->empty())
      continue;
    auto expr = parse_expr(*text); // already checked to parse when temper.yaml was read
    if (!expr)
      continue;
    std::string config_file = (task.dir / "temper.yaml").string();
    if (auto bad = unknown_names(*expr); !bad.empty()) {
      report(diags, config_file, 0,
             fmt::format("cost.{} '{}' reads unknown variable {} ({})", key, *text, bad,
                         kVariableHelp));
      continue;
    }
    for (size_t i = 0; i < task.cases.size(); ++i) {
      const Case& c = task.cases[i];
      auto v = expr->eval(scopes[i]);
      if (!v)
        report(
            diags, c.where.file, c.where.line,
            fmt::format("case {}: cost.{} cannot be evaluated: {}", c.id, key, v.error().message));
      else if (!std::isfinite(*v) || *v < 0)
        report(diags, c.where.file, c.where.line,
               fmt::format("case {}: cost.{} is {}, not a non-negative number", c.id, key, *v));
    }
  }
}

// A note's description of the case, without the " | baseline_kernels: ..." tail CANN-Bench's
// CSV export appends to some notes its cases.yaml lacks (the baseline kernels are hardware
// metadata, kept in metadata/ upstream): the tail alone is no drift between the two files.
std::string note_without_baseline(const std::string& note) {
  size_t at = note.find(" | baseline_kernels:");
  return at == std::string::npos ? note : note.substr(0, at);
}

// CANN-Bench ships each case list twice; a drift between the two means one is stale.
void compare_case_files(const std::vector<Case>& yaml,
                        const std::vector<Case>& csv,
                        Diagnostics& diags) {
  std::map<int64_t, const Case*> by_id;
  for (const auto& c : csv)
    by_id[c.id] = &c;
  for (const auto& y : yaml) {
    auto it = by_id.find(y.id);
    if (it == by_id.end()) {
      std::string csv_file = csv.empty() ? "cases.csv" : csv.front().where.file;
      report(diags, csv_file, 0,
             fmt::format("case {} of {}:{} is missing here", y.id,
                         fs::path(y.where.file).filename().string(), y.where.line));
      continue;
    }
    const Case& c = *it->second;
    nlohmann::json a = y.to_json(), b = c.to_json();
    a["note"] = note_without_baseline(a["note"].get<std::string>());
    b["note"] = note_without_baseline(b["note"].get<std::string>());
    for (const char* key : {"input_shape", "dtype", "attrs", "value_range", "note"}) {
      if (a[key] == b[key])
        continue;
      report(diags, c.where.file, c.where.line,
             fmt::format("case {}: {} is {} here but {} in {}:{}", c.id, key, b[key].dump(),
                         a[key].dump(), fs::path(y.where.file).filename().string(), y.where.line));
    }
    by_id.erase(it);
  }
  for (const auto& [id, c] : by_id)
    report(diags, c->where.file, c->where.line, fmt::format("case {} is not in cases.yaml", id));
}

struct Loaded {
  Task task;
  Diagnostics diags;
};

Loaded load_all(const fs::path& dir, bool compare_csv) {
  Loaded out;
  Task& task = out.task;
  Diagnostics& diags = out.diags;
  task.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    report(diags, dir.string(), 0, "not a directory");
    return out;
  }
  fs::path proto = dir / "proto.yaml";
  if (!fs::exists(proto, ec)) {
    report(diags, proto.string(), 0, "not a task directory: proto.yaml is missing");
    return out;
  }
  try {
    auto op = detail::parse_proto(proto, diags);
    if (!op)
      return out; // without an operator the cases cannot be checked
    task.op = std::move(*op);

    fs::path config = dir / "temper.yaml";
    if (fs::exists(config, ec))
      task.config = detail::parse_temper_yaml(config, dir, task.op, diags);
    // The operator's own thresholds are CANN-Bench's T for its outputs; an rtol in temper.yaml
    // still overrides them.
    task.config.tolerance.thresholds = task.op.precision_thresholds;
    for (auto& [name, spec] : task.config.output_tolerance)
      spec.thresholds = task.op.precision_thresholds;
    // CANN-Bench ships every operator's golden as golden.py: it is the golden unless temper.yaml
    // names another (judge/python_golden.h runs it).
    if (task.config.golden.empty() && fs::is_regular_file(dir / "golden.py", ec))
      task.config.golden = dir / "golden.py";

    fs::path yaml = dir / "cases.yaml", csv = dir / "cases.csv";
    bool has_yaml = fs::exists(yaml, ec), has_csv = fs::exists(csv, ec);
    if (has_yaml) {
      size_t before = diags.size();
      task.cases = detail::parse_cases_yaml(yaml, task.op, diags);
      task.cases_file = "cases.yaml";
      if (compare_csv && has_csv) {
        auto csv_cases = detail::parse_cases_csv(csv, task.op, diags);
        // Compare only complete lists: a case left out for its own error is already reported.
        if (diags.size() == before)
          compare_case_files(task.cases, csv_cases, diags);
      }
    } else if (has_csv) {
      task.cases = detail::parse_cases_csv(csv, task.op, diags);
      task.cases_file = "cases.csv";
    } else {
      report(diags, dir.string(), 0, "no cases: the task has neither cases.yaml nor cases.csv");
    }
    check_expressions(task, diags);
  } catch (const std::exception& e) {
    // yaml-cpp throws for shapes of documents its API does not expect; never let that escape.
    report(diags, dir.string(), 0, fmt::format("cannot read the task: {}", e.what()));
  }
  // By file, then line: the order a reader fixes them in, whatever order the checks ran in.
  std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  return out;
}

} // namespace

Expected<Task> load_task(const fs::path& dir) {
  Loaded l = load_all(dir, /*compare_csv=*/false);
  if (l.diags.empty())
    return std::move(l.task);
  std::string msg;
  for (const auto& d : l.diags)
    msg += fmt::format("{}{}", msg.empty() ? "" : "\n", d.to_string());
  return tl::unexpected(Error{msg});
}

std::vector<Diagnostic> check_task(const fs::path& dir) {
  return load_all(dir, /*compare_csv=*/true).diags;
}

} // namespace temper::core
