// `temper task show DIR` and `temper task check DIR` (`task golden` and `task init` have their own files).
#include "cli/commands.h"
#include "core/task_loader.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace temper::cli {

namespace {

namespace fs = std::filesystem;
using core::Task;

struct TaskArgs {
  std::string dir;
  bool json = false;
};

// Columns a string occupies on a terminal: CJK and other wide characters take two. Notes in
// CANN-Bench are often Chinese, and the table must stay aligned.
int char_width(char32_t c) {
  bool wide = (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) ||
              (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
              (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
              (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x20000 && c <= 0x3FFFD);
  return wide ? 2 : 1;
}

// Decodes one UTF-8 sequence at s[i]; returns its length (1 for a stray byte).
size_t utf8_next(const std::string& s, size_t i, char32_t& c) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
  if (i + len > s.size())
    len = 1;
  c = len == 1 ? b : static_cast<char32_t>(b & (0xFF >> (len + 1)));
  for (size_t k = 1; k < len; ++k)
    c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return len;
}

int display_width(const std::string& s) {
  int w = 0;
  char32_t c = 0;
  for (size_t i = 0; i < s.size(); i += utf8_next(s, i, c))
    w += char_width(c);
  return w;
}

// Cuts at a character boundary so the result fits in `max` columns, marking the cut with "…".
std::string truncate(const std::string& s, int max) {
  if (display_width(s) <= max)
    return s;
  std::string out;
  int w = 0;
  char32_t c = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8_next(s, i, c);
    if (w + char_width(c) > max - 1)
      break;
    w += char_width(c);
    out.append(s, i, len);
    i += len;
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out + "…";
}

std::string pad(const std::string& s, int width) {
  return s + std::string(static_cast<size_t>(std::max(0, width - display_width(s))), ' ');
}

std::string dtypes_text(const std::vector<core::Dtype>& ds) {
  std::string s;
  for (auto d : ds)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", core::dtype_name(d));
  return s;
}

std::string tolerance_text(const core::ToleranceSpec& t) {
  std::string nums;
  auto add = [&](const char* name, const std::optional<double>& v) {
    if (v)
      nums += fmt::format("{}{}={}", nums.empty() ? "" : ", ", name, *v);
  };
  add("atol", t.atol);
  add("rtol", t.rtol);
  add("matched_ratio", t.matched_ratio);
  add("factor", t.factor);
  // The operator's own thresholds (proto.yaml), which cann-bench applies under any rtol.
  if (t.standard == "cann-bench" && !t.thresholds.empty() && !t.rtol) {
    std::vector<std::string> th;
    for (const auto& [d, v] : t.thresholds)
      th.push_back(fmt::format("{} {}", core::dtype_name(d), v));
    nums += fmt::format("{}operator thresholds: {}", nums.empty() ? "" : ", ", fmt::join(th, ", "));
  }
  return nums.empty() ? t.standard : fmt::format("{} ({})", t.standard, nums);
}

std::string path_text(const Task& task, const fs::path& p) {
  if (p.empty())
    return "none";
  return p.lexically_relative(task.dir).string();
}

// A task without a C++ golden in temper.yaml may still bring the official golden.py.
std::string golden_text(const Task& task) {
  std::error_code ec;
  if (task.config.golden.empty() && fs::exists(task.dir / "golden.py", ec))
    return "golden.py (the official PyTorch golden; temper does not run it yet)";
  return path_text(task, task.config.golden);
}

void print_operator(const Task& task) {
  const auto& op = task.op;
  auto row = [](const char* key, const std::string& value) {
    std::cout << fmt::format("{:<13}{}\n", key, value);
  };
  std::string kind = op.category;
  if (!op.difficulty.empty())
    kind += (kind.empty() ? "" : ", ") + op.difficulty;
  row("operator", kind.empty() ? op.name : fmt::format("{} ({})", op.name, kind));
  if (!op.formula.empty()) {
    // Multi-line formulas keep their lines, indented under the first.
    std::string f = op.formula;
    while (!f.empty() && (f.back() == '\n' || f.back() == ' '))
      f.pop_back();
    size_t start = 0;
    bool first = true;
    while (start <= f.size()) {
      size_t end = f.find('\n', start);
      if (end == std::string::npos)
        end = f.size();
      row(first ? "formula" : "", f.substr(start, end - start));
      first = false;
      start = end + 1;
    }
  }
  if (!op.schema.empty())
    row("schema", op.schema);
  for (size_t i = 0; i < op.inputs.size(); ++i)
    row(i == 0 ? "inputs" : "",
        fmt::format("{}: {}{}{}{}", op.inputs[i].name, dtypes_text(op.inputs[i].dtypes),
                    op.inputs[i].is_list ? " (list)" : "", op.inputs[i].optional ? " (optional)" : "",
                    op.inputs[i].shape.empty() ? "" : "  " + op.inputs[i].shape));
  for (size_t i = 0; i < op.outputs.size(); ++i)
    row(i == 0 ? "outputs" : "",
        fmt::format("{}: {}{}", op.outputs[i].name, dtypes_text(op.outputs[i].dtypes),
                    op.outputs[i].shape.empty() ? "" : "  " + op.outputs[i].shape));
  if (op.attrs.empty())
    row("attrs", "none");
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    const auto& a = op.attrs[i];
    std::string def = a.default_value ? " = " + a.default_value->to_string()
                      : a.required    ? " (required)"
                                      : "";
    row(i == 0 ? "attrs" : "", fmt::format("{}: {}{}", a.name, core::attr_kind_name(a.kind), def));
  }
  const auto& cfg = task.config;
  std::string tol = tolerance_text(cfg.tolerance);
  for (const auto& [name, spec] : cfg.output_tolerance)
    tol += fmt::format("; {}: {}", name, tolerance_text(spec));
  row("tolerance", tol);
  row("golden", golden_text(task));
  std::string refs;
  for (const auto& [backend, p] : cfg.reference)
    refs += fmt::format("{}{}: {}", refs.empty() ? "" : ", ", backend, path_text(task, p));
  row("reference", refs.empty() ? "none" : refs);
  row("run", fmt::format("threads {}, trials {}{}", cfg.threads, cfg.trials,
                         cfg.in_place ? ", in place" : ""));
  if (!cfg.constraints.empty()) {
    for (size_t i = 0; i < cfg.constraints.size(); ++i)
      row(i == 0 ? "constraints" : "", cfg.constraints[i].check.source());
  }
  if (cfg.cost) {
    row("cost", "bytes = " + (cfg.cost->bytes.empty() ? std::string("-") : cfg.cost->bytes));
    row("", "flops = " + (cfg.cost->flops.empty() ? std::string("-") : cfg.cost->flops));
  }
  row("cases", fmt::format("{} from {}", task.cases.size(), task.cases_file));
}

std::string number_text(double v) {
  return fmt::format("{}", v);
}

// The case's ranges: once when every tensor shares one, else one per tensor.
std::string ranges_text(const core::Case& c) {
  std::vector<std::string> parts;
  for (const auto& r : c.ranges)
    parts.push_back(fmt::format("[{}, {}]", number_text(r.lo), number_text(r.hi)));
  if (!parts.empty() && std::all_of(parts.begin(), parts.end(), [&](const std::string& p) { return p == parts[0]; }))
    parts.resize(1);
  return fmt::format("{}", fmt::join(parts, " "));
}

void print_cases(const Task& task) {
  constexpr int kNoteWidth = 48;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"id", "dtypes", "shapes", "attrs", "range", "note"});
  for (const auto& c : task.cases) {
    std::string shapes, attrs;
    // Per declared input: a shape, {a list's shapes}, or - for an absent input.
    for (const auto& slot : c.input_slots()) {
      std::string one = slot.kind == core::InputKind::Absent ? "-" : "";
      for (size_t j = 0; j < slot.count; ++j)
        one += (j ? ", " : "") + core::shape_string(c.input_shapes[slot.first + j]);
      if (slot.kind == core::InputKind::List)
        one = "{" + one + "}";
      shapes += (shapes.empty() ? "" : " ") + one;
    }
    for (const auto& [name, v] : c.attrs)
      attrs += fmt::format("{}{}={}", attrs.empty() ? "" : " ", name, v.to_string());
    // One dtype for every input is the common case; say it once.
    bool uniform =
        c.dtypes.size() > 1 && std::all_of(c.dtypes.begin(), c.dtypes.end(),
                                           [&](core::Dtype d) { return d == c.dtypes[0]; });
    std::string dtypes = uniform
                             ? fmt::format("{} ×{}", core::dtype_name(c.dtypes[0]), c.dtypes.size())
                             : dtypes_text(c.dtypes);
    rows.push_back({std::to_string(c.id), dtypes, shapes, attrs, ranges_text(c),
                    truncate(c.note, kNoteWidth)});
  }
  std::vector<int> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i)
      width[i] = std::max(width[i], display_width(r[i]));
  for (const auto& r : rows) {
    std::string line = std::string(static_cast<size_t>(width[0] - display_width(r[0])), ' ') + r[0];
    for (size_t i = 1; i < r.size(); ++i)
      line += "  " + (i + 1 == r.size() ? r[i] : pad(r[i], width[i]));
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    std::cout << line << "\n";
  }
}

// A directory without proto.yaml is not a task at all: say what is missing, exit 2.
bool is_task_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::cerr << fmt::format("temper: {} is not a directory\n", dir);
    return false;
  }
  if (!fs::exists(fs::path(dir) / "proto.yaml", ec)) {
    std::cerr << fmt::format(
        "temper: {} is not a task: proto.yaml is missing (a task has proto.yaml, cases.yaml "
        "or cases.csv, and optionally temper.yaml)\n",
        dir);
    return false;
  }
  return true;
}

int run_show(const TaskArgs& a) {
  if (!is_task_dir(a.dir))
    return kExitUsage;
  auto task = core::load_task(a.dir);
  if (!task) {
    std::cerr << task.error().message << "\n"
              << fmt::format("temper: {} has problems; `temper task check {}` lists them\n", a.dir,
                             a.dir);
    return kExitUsage;
  }
  if (a.json) {
    std::cout << task->to_json().dump(2) << "\n";
    return kExitOk;
  }
  print_operator(*task);
  std::cout << "\n";
  print_cases(*task);
  return kExitOk;
}

int run_check(const TaskArgs& a) {
  if (!is_task_dir(a.dir))
    return kExitUsage;
  auto diags = core::check_task(a.dir);
  for (const auto& d : diags)
    std::cout << d.to_string() << "\n";
  if (!diags.empty()) {
    std::cout << fmt::format("{} problem{}\n", diags.size(), diags.size() == 1 ? "" : "s");
    return kExitFailed;
  }
  auto task = core::load_task(a.dir);
  if (!task) { // check and load agree; this only guards against a file changing in between
    std::cout << task.error().message << "\n";
    return kExitFailed;
  }
  std::cout << fmt::format("ok: {} cases\n", task->cases.size());
  // Name the golden when it is not a C++ one from temper.yaml: golden.py, or none (fine for
  // checking; judging needs a golden).
  if (task->config.golden.empty() || task->config.golden.extension() == ".py")
    std::cout << "golden: " << golden_text(*task) << "\n";
  return kExitOk;
}

} // namespace

void register_task_commands(CLI::App& app, Action& action) {
  CLI::App* task = app.add_subcommand("task", "Inspect and validate task directories");
  task->require_subcommand(1);

  auto show_args = std::make_shared<TaskArgs>();
  CLI::App* show =
      task->add_subcommand("show", "Print a task's operator, tolerance, files and cases");
  show->add_option("dir", show_args->dir,
                   "Task directory (proto.yaml, cases.yaml or cases.csv, temper.yaml)")
      ->required();
  show->add_flag("--json", show_args->json, "Print a JSON document instead of tables");
  show->callback([show_args, &action] { action = [show_args] { return run_show(*show_args); }; });

  auto check_args = std::make_shared<TaskArgs>();
  CLI::App* check =
      task->add_subcommand("check", "List every problem in a task directory, with file and line");
  check->add_option("dir", check_args->dir, "Task directory")->required();
  check->callback(
      [check_args, &action] { action = [check_args] { return run_check(*check_args); }; });

  register_task_golden_command(*task, action);
  register_task_init_command(*task, action);
}

} // namespace temper::cli
