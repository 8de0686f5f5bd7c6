#include "backend/device_time.h"

#include "core/csv_reader.h"
#include "util/fs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

namespace temper::backend {

namespace fs = std::filesystem;

std::string_view profile_format_name(ProfileFormat f) {
  switch (f) {
  case ProfileFormat::KernelDetails: return "kernel_details";
  case ProfileFormat::OpSummary: return "op_summary";
  case ProfileFormat::OpBasicInfo: return "OpBasicInfo";
  }
  return "?";
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool contains_any(std::string_view text, const std::vector<std::string>& tokens) {
  return std::any_of(tokens.begin(), tokens.end(), [&](const std::string& t) { return !t.empty() && text.find(t) != std::string_view::npos; });
}

// Header names as the profilers write them, with stray spaces and a tab-padded variant trimmed.
std::string clean(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::optional<double> to_number(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

struct Columns {
  int name = -1;
  int duration = -1;
  int task_type = -1; // Accelerator Core (kernel_details) or Task Type (op_summary)
  int step = -1;      // Step Id (kernel_details with a schedule)
};

} // namespace

Expected<DeviceTime> parse_device_time(std::string_view csv_text, const DeviceTimeOptions& opt) {
  core::CsvResult csv = core::parse_csv(csv_text);
  if (!csv.ok()) return fail("line {}: {}", csv.error_line, csv.error);
  if (csv.records.empty()) return fail("the profile CSV is empty (no header row)");

  const auto& header = csv.records.front().fields;
  std::map<std::string, int> col;
  for (size_t i = 0; i < header.size(); ++i) col.emplace(clean(header[i]), static_cast<int>(i));
  auto find = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (auto it = col.find(n); it != col.end()) return it->second;
    return -1;
  };

  DeviceTime out;
  Columns c;
  if (int d = find({"Duration(us)"}); d >= 0) {
    out.format = ProfileFormat::KernelDetails;
    out.duration_column = "Duration(us)";
    c.duration = d;
    c.name = find({"Name"});
    c.task_type = find({"Accelerator Core"});
    c.step = find({"Step Id"});
  } else if (int td = find({"Task Duration(us)"}); td >= 0) {
    out.duration_column = "Task Duration(us)";
    c.duration = td;
    c.name = find({"Op Name"});
    c.task_type = find({"Task Type"});
    // OpBasicInfo (msprof op) has no task-type column and no task start time: one row per launch.
    out.format = c.task_type >= 0 || find({"Task Start Time(us)"}) >= 0 ? ProfileFormat::OpSummary : ProfileFormat::OpBasicInfo;
  } else {
    std::vector<std::string> names;
    for (const auto& h : header) names.push_back(clean(h));
    return fail("no duration column: expected 'Duration(us)' (kernel_details.csv) or 'Task Duration(us)' "
                "(op_summary, OpBasicInfo.csv); the header has: {}",
                fmt::join(names, ", "));
  }
  if (c.name < 0) {
    return fail("no kernel name column: expected '{}' beside '{}'", out.format == ProfileFormat::KernelDetails ? "Name" : "Op Name",
                out.duration_column);
  }

  struct Row {
    int line;
    std::string name;
    double us;
    std::string step;
  };
  // Steps are told apart by cache-clean rows when there are any, else by Step Id, else (msprof
  // op) one launch per step. Rows before the first delimiter are warm-up and not counted.
  std::vector<std::vector<Row>> steps;
  bool any_delimiter = false;
  for (size_t r = 1; r < csv.records.size(); ++r) {
    if (contains_any(csv.records[r].fields.size() > static_cast<size_t>(c.name) ? csv.records[r].fields[static_cast<size_t>(c.name)] : "",
                     opt.delimiter_tokens)) {
      any_delimiter = true;
      break;
    }
  }
  const size_t ncols = header.size();
  for (size_t r = 1; r < csv.records.size(); ++r) {
    const core::CsvRecord& rec = csv.records[r];
    if (rec.fields.size() == 1 && clean(rec.fields[0]).empty()) continue;
    if (rec.fields.size() != ncols) {
      return fail("line {}: {} fields where the header has {}", rec.line, rec.fields.size(), ncols);
    }
    const std::string name = clean(rec.fields[static_cast<size_t>(c.name)]);
    if (contains_any(name, opt.delimiter_tokens)) {
      ++out.delimiters;
      steps.emplace_back();
      continue;
    }
    if (contains_any(name, opt.warmup_tokens)) {
      ++out.skipped_rows;
      continue;
    }
    if (c.task_type >= 0) {
      std::string type = clean(rec.fields[static_cast<size_t>(c.task_type)]);
      if (std::find(opt.kernel_types.begin(), opt.kernel_types.end(), type) == opt.kernel_types.end()) {
        ++out.skipped_rows;
        continue;
      }
    }
    const std::string text = clean(rec.fields[static_cast<size_t>(c.duration)]);
    auto us = to_number(text);
    if (!us || *us < 0) return fail("line {}: '{}' is '{}', not a duration in microseconds", rec.line, out.duration_column, text);
    Row row{rec.line, name, *us, c.step >= 0 ? clean(rec.fields[static_cast<size_t>(c.step)]) : std::string{}};
    if (any_delimiter) {
      if (steps.empty()) {
        ++out.skipped_rows; // before the first cache-clean: not a timed step
        continue;
      }
      steps.back().push_back(std::move(row));
    } else if (c.step >= 0) {
      if (steps.empty() || steps.back().front().step != row.step) steps.emplace_back();
      steps.back().push_back(std::move(row));
    } else if (opt.whole_file_is_one_step) {
      if (steps.empty()) steps.emplace_back();
      steps.back().push_back(std::move(row));
    } else if (out.format == ProfileFormat::OpBasicInfo) {
      steps.push_back({std::move(row)});
    } else {
      return fail("cannot tell the timed steps apart: no cache-clean kernel (a name containing {}) and no 'Step Id' column",
                  fmt::join(opt.delimiter_tokens, " or "));
    }
  }
  out.step_rule = any_delimiter              ? "cache-clean delimiters"
                  : c.step >= 0                ? "Step Id"
                  : opt.whole_file_is_one_step ? "one call per file"
                                               : "one row per launch";

  // A delimiter after the last step (the harness cleans once more) leaves an empty step behind.
  while (!steps.empty() && steps.back().empty() && any_delimiter) steps.pop_back();
  if (steps.empty() && !any_delimiter && opt.whole_file_is_one_step) {
    return fail("the profile holds no kernel of the counted task types ({}): the call ran nothing on the NPU's cores",
                fmt::join(opt.kernel_types, ", "));
  }
  if (steps.empty()) return fail("no timed step: the file has no kernel rows after the first cache-clean kernel");
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].empty()) {
      return fail("step {} has no candidate kernel between two cache-clean kernels (the harness ran but the candidate did not)", s + 1);
    }
  }
  if (opt.expected_steps && static_cast<int>(steps.size()) != *opt.expected_steps) {
    return fail("expected {} timed steps, found {} ({})", *opt.expected_steps, steps.size(), out.step_rule);
  }

  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> per_kernel; // name -> per-step sums
  std::map<std::string, int> launches;
  for (size_t s = 0; s < steps.size(); ++s) {
    double total = 0;
    std::map<std::string, double> sums;
    for (const Row& row : steps[s]) {
      if (!per_kernel.count(row.name)) {
        order.push_back(row.name);
        per_kernel[row.name].assign(steps.size(), 0.0); // a kernel missing from a step took 0 there
      }
      sums[row.name] += row.us;
      ++launches[row.name];
      total += row.us;
    }
    for (const auto& [name, sum] : sums) per_kernel[name][s] = sum;
    out.step_us.push_back(total);
  }
  for (const std::string& name : order) {
    KernelTime k{name, median(per_kernel[name]), launches[name]};
    out.elapsed_us += k.median_us;
    out.kernels.push_back(std::move(k));
  }
  out.median_step_us = median(out.step_us);
  return out;
}

Expected<DeviceTime> read_device_time(const fs::path& csv_file, const DeviceTimeOptions& options) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(csv_file));
  auto t = parse_device_time(text, options);
  if (!t) return fail("{}: {}", csv_file.string(), t.error().message);
  return t;
}

Expected<fs::path> find_profile_csv(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fail("{} is not a directory", dir.string());
  std::vector<fs::path> details, summary, basic;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string name = it->path().filename().string();
    if (name == "kernel_details.csv") details.push_back(it->path());
    else if (name.rfind("op_summary", 0) == 0 && it->path().extension() == ".csv") summary.push_back(it->path());
    else if (name.rfind("OpBasicInfo", 0) == 0 && it->path().extension() == ".csv") basic.push_back(it->path());
  }
  for (auto* list : {&details, &summary, &basic}) {
    if (!list->empty()) {
      std::sort(list->begin(), list->end());
      return list->back(); // the newest when names carry timestamps
    }
  }
  return fail("no profiler export under {}: looked for kernel_details.csv, op_summary_*.csv and OpBasicInfo*.csv", dir.string());
}

} // namespace temper::backend
