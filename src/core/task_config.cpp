// temper.yaml (schema version 1): what temper adds to a CANN-Bench task.
#include "core/task_parse.h"
#include "core/thread_count.h"
#include "core/tolerance.h"

#include <cmath>
#include <fmt/format.h>

namespace temper::core::detail {

namespace {

constexpr int kSchemaVersion = 1;
constexpr int kMinTrials = 3; // fewer fresh-input trials miss input-dependent bugs

class ConfigParser {
public:
  ConfigParser(const std::filesystem::path& path,
               const std::filesystem::path& dir,
               const Operator& op,
               Diagnostics& diags)
      : m_file(path.string()), m_dir(dir), m_op(op), m_diags(diags) {}

  TemperConfig parse(const YAML::Node& root) {
    m_cfg.present = true;
    if (!root.IsMap()) {
      error(root, "temper.yaml must be a map that starts with 'schema_version: 1'");
      return m_cfg;
    }
    check_keys(root,
               {"schema_version", "golden", "reference", "tolerance", "threads", "trials",
                "in_place", "allowed_libraries", "allowed_cuda_features", "timing", "constraints", "cost", "hardware_bound_us", "executor"},
               "temper.yaml", m_file, m_diags);
    read_version(root);
    if (const YAML::Node n = root["golden"]; n.IsDefined())
      m_cfg.golden = read_path(n, "golden");
    if (const YAML::Node n = root["reference"]; n.IsDefined())
      read_reference(n);
    if (const YAML::Node n = root["tolerance"]; n.IsDefined())
      read_tolerance(n);
    if (const YAML::Node n = root["threads"]; n.IsDefined()) {
      auto count = n.IsScalar() ? parse_thread_count(n.Scalar()) : parse_thread_count("");
      if (!count)
        error(n, count.error().message);
      else {
        m_cfg.threads = *count;
        m_cfg.threads_all = n.Scalar() == "all";
      }
    }
    if (auto v = read_int(root, "trials")) {
      if (*v < kMinTrials || *v > 1000)
        error(root["trials"], fmt::format("trials must be {} to 1000, got {}", kMinTrials, *v));
      else
        m_cfg.trials = static_cast<int>(*v);
    }
    if (const YAML::Node n = root["in_place"]; n.IsDefined()) {
      auto j = yaml_to_json(n);
      if (!j.is_boolean())
        error(n, "in_place must be true or false");
      else
        m_cfg.in_place = j.get<bool>();
    }
    if (const YAML::Node n = root["allowed_libraries"]; n.IsDefined())
      read_libraries(n);
    if (const YAML::Node n = root["allowed_cuda_features"]; n.IsDefined())
      read_cuda_features(n);
    if (const YAML::Node n = root["timing"]; n.IsDefined()) {
      if (!n.IsMap())
        error(n, "timing must be a map of timing overrides");
      else
        m_cfg.timing = yaml_to_json(n);
    }
    if (const YAML::Node n = root["constraints"]; n.IsDefined())
      read_constraints(n);
    if (const YAML::Node n = root["executor"]; n.IsDefined())
      read_executor(n);
    if (const YAML::Node n = root["cost"]; n.IsDefined())
      read_cost(n);
    if (const YAML::Node n = root["hardware_bound_us"]; n.IsDefined())
      read_hardware_bounds(n);
    return m_cfg;
  }

private:
  void error(const YAML::Node& at, std::string msg) {
    report(m_diags, m_file, line_of(at), std::move(msg));
  }

  void read_executor(const YAML::Node& n) {
    if (!n.IsMap()) {
      error(n, "executor must be a map, e.g. {kind: slurm, partition: cpu, max_jobs: 8}");
      return;
    }
    check_keys(n, {"kind", "partition", "account", "constraint", "max_jobs"}, "executor", m_file, m_diags);
    nlohmann::json e = nlohmann::json::object();
    if (const YAML::Node k = n["kind"]; k.IsDefined()) {
      auto kind = read_text(k, "executor.kind");
      if (kind && *kind != "local" && *kind != "slurm")
        error(k, fmt::format("executor.kind must be local or slurm, not '{}'", *kind));
      else if (kind)
        e["kind"] = *kind;
    }
    for (const char* key : {"partition", "account", "constraint"}) {
      if (const YAML::Node v = n[key]; v.IsDefined()) {
        if (auto text = read_text(v, fmt::format("executor.{}", key))) e[key] = *text;
      }
    }
    if (auto jobs = read_int(n, "max_jobs")) {
      if (*jobs < 1 || *jobs > 1000)
        error(n["max_jobs"], fmt::format("executor.max_jobs must be 1 to 1000, got {}", *jobs));
      else
        e["max_jobs"] = *jobs;
    }
    m_cfg.executor = e;
  }

  void read_version(const YAML::Node& root) {
    const YAML::Node n = root["schema_version"];
    if (!n.IsDefined()) {
      error(root, fmt::format("temper.yaml has no schema_version (this temper reads {})",
                              kSchemaVersion));
      return;
    }
    auto j = yaml_to_json(n);
    if (!j.is_number_integer() || j.get<int64_t>() != kSchemaVersion)
      error(n, fmt::format("unsupported schema_version {} (this temper reads {})", j.dump(),
                           kSchemaVersion));
  }

  std::optional<int64_t> read_int(const YAML::Node& map, const char* key) {
    const YAML::Node n = map[key];
    if (!n.IsDefined())
      return std::nullopt;
    auto j = yaml_to_json(n);
    if (!j.is_number_integer()) {
      error(n, fmt::format("{} must be an integer, got {}", key, j.dump()));
      return std::nullopt;
    }
    return j.get<int64_t>();
  }

  std::optional<std::string> read_text(const YAML::Node& n, std::string_view what) {
    if (!n.IsScalar() || n.Scalar().empty()) {
      error(n, fmt::format("{} must be text", what));
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::filesystem::path read_path(const YAML::Node& n, std::string_view what) {
    auto text = read_text(n, fmt::format("{} (a file path)", what));
    if (!text)
      return {};
    std::filesystem::path p = m_dir / *text; // an absolute path stays as it is
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec))
      error(n, fmt::format("{} file '{}' not found (looked for {})", what, *text, p.string()));
    return p;
  }

  void read_reference(const YAML::Node& n) {
    if (!n.IsMap()) {
      error(n, "reference must be a map of backend to kernel source, e.g. cpu: reference.cpp");
      return;
    }
    check_duplicate_keys(n, m_file, m_diags);
    for (const auto& kv : n) {
      const std::string backend = kv.first.Scalar();
      // torch: the task's PyTorch function (a golden.py-style file) for --reference torch.
      if (backend != "cpu" && backend != "cuda" && backend != "pypto" && backend != "torch") {
        error(kv.first,
              fmt::format("unknown backend '{}' in reference (known: cpu, cuda, pypto, torch)", backend));
        continue;
      }
      auto p = read_path(kv.second, fmt::format("reference.{}", backend));
      if (!p.empty())
        m_cfg.reference[backend] = p;
    }
  }

  std::optional<ToleranceSpec>
  read_spec(const YAML::Node& n, const ToleranceSpec& base, bool top, std::string_view where) {
    if (!n.IsMap()) {
      error(n, fmt::format("{} must be a map with 'standard' and optional numbers", where));
      return std::nullopt;
    }
    if (top)
      check_keys(n, {"standard", "atol", "rtol", "matched_ratio", "factor", "outputs"}, where,
                 m_file, m_diags);
    else
      check_keys(n, {"standard", "atol", "rtol", "matched_ratio", "factor"}, where, m_file,
                 m_diags);
    // A new standard starts from its own defaults; numbers alone refine the inherited spec.
    ToleranceSpec spec = base;
    if (const YAML::Node s = n["standard"]; s.IsDefined()) {
      auto text = read_text(s, fmt::format("standard in {}", where));
      if (!text)
        return std::nullopt;
      spec = ToleranceSpec{};
      spec.standard = *text;
    }
    bool ok = true;
    auto number = [&](const char* key, std::optional<double>& out) {
      const YAML::Node v = n[key];
      if (!v.IsDefined())
        return;
      auto d = json_number(yaml_to_json(v));
      if (!d || !std::isfinite(*d)) {
        error(v, fmt::format("{} in {} must be a finite number", key, where));
        ok = false;
        return;
      }
      out = *d;
    };
    number("atol", spec.atol);
    number("rtol", spec.rtol);
    number("matched_ratio", spec.matched_ratio);
    number("factor", spec.factor);
    if (!ok)
      return std::nullopt;
    if (std::string why = validate_tolerance(spec); !why.empty()) {
      error(n["standard"].IsDefined() ? n["standard"] : n, fmt::format("{}: {}", where, why));
      return std::nullopt;
    }
    return spec;
  }

  void read_tolerance(const YAML::Node& n) {
    auto spec = read_spec(n, ToleranceSpec{}, true, "tolerance");
    if (spec)
      m_cfg.tolerance = *spec;
    if (!n.IsMap())
      return;
    const YAML::Node outs = n["outputs"];
    if (!outs.IsDefined())
      return;
    if (!outs.IsMap()) {
      error(outs, "tolerance.outputs must be a map of output name to tolerance");
      return;
    }
    check_duplicate_keys(outs, m_file, m_diags);
    for (const auto& kv : outs) {
      const std::string name = kv.first.Scalar();
      bool known = false;
      for (const auto& o : m_op.outputs)
        known = known || o.name == name;
      if (!known) {
        std::string list;
        for (const auto& o : m_op.outputs)
          list += fmt::format("{}{}", list.empty() ? "" : ", ", o.name);
        error(kv.first,
              fmt::format("tolerance.outputs names '{}', which is not an output (outputs: {})",
                          name, list));
        continue;
      }
      auto out = read_spec(kv.second, m_cfg.tolerance, false,
                           fmt::format("tolerance for output '{}'", name));
      if (out)
        m_cfg.output_tolerance[name] = *out;
    }
  }

  void read_libraries(const YAML::Node& n) {
    if (!n.IsSequence()) {
      error(n, "allowed_libraries must be a list of library names");
      return;
    }
    for (const auto& item : n)
      if (auto t = read_text(item, "each allowed library"))
        m_cfg.allowed_libraries.push_back(*t);
  }

  void read_cuda_features(const YAML::Node& n) {
    if (!n.IsSequence()) {
      error(n, "allowed_cuda_features must be a list of: streams, l2_persistence");
      return;
    }
    for (const auto& item : n) {
      auto t = read_text(item, "each allowed CUDA feature");
      if (!t) continue;
      if (*t != "streams" && *t != "l2_persistence")
        error(item, fmt::format("unknown CUDA feature '{}' (known: streams, l2_persistence)", *t));
      else
        m_cfg.allowed_cuda_features.push_back(*t);
    }
  }

  void read_constraints(const YAML::Node& n) {
    if (!n.IsSequence()) {
      error(n, "constraints must be a list of {check, message}");
      return;
    }
    for (const auto& item : n) {
      // A bare string is a check without a message. (No Node reassignment: in yaml-cpp that
      // would overwrite the node it refers to.)
      const YAML::Node check_node = item.IsMap() ? item["check"] : item;
      std::string message;
      if (item.IsMap()) {
        check_keys(item, {"check", "message"}, "constraint", m_file, m_diags);
        if (!check_node.IsDefined()) {
          error(item, "constraint has no 'check' expression");
          continue;
        }
        if (const YAML::Node m = item["message"]; m.IsDefined())
          if (auto t = read_text(m, "constraint message"))
            message = *t;
      }
      auto text = read_text(check_node, "constraint check (an expression)");
      if (!text)
        continue;
      auto expr = parse_expr(*text);
      if (!expr) {
        error(check_node,
              fmt::format("constraint '{}' does not parse: {}", *text, expr.error().message));
        continue;
      }
      if (message.empty())
        message = fmt::format("constraint failed: {}", *text);
      m_cfg.constraints.push_back(
          Constraint{std::move(*expr), message, SourceLoc{m_file, line_of(check_node)}});
    }
  }

  // Per-case hardware lower bounds in microseconds (task metadata, as CANN-Bench's t_hw_us) for
  // the CANN-Bench score: {case id: microseconds}.
  void read_hardware_bounds(const YAML::Node& n) {
    if (!n.IsMap()) {
      error(n, "hardware_bound_us must be a map of case id to microseconds");
      return;
    }
    for (const auto& kv : n) {
      auto id = yaml_to_json(kv.first);
      auto us = yaml_to_json(kv.second);
      if (!id.is_number_integer() || !us.is_number() || us.get<double>() <= 0) {
        error(kv.first, "hardware_bound_us entries must be <case id>: <positive microseconds>");
        continue;
      }
      m_cfg.hardware_bound_us[id.get<int64_t>()] = us.get<double>();
    }
  }

  void read_cost(const YAML::Node& n) {
    if (!n.IsMap()) {
      error(n, "cost must be a map with 'bytes' and 'flops' expressions");
      return;
    }
    check_keys(n, {"bytes", "flops"}, "cost", m_file, m_diags);
    CostModel cost;
    for (auto [key, out] : {std::pair{"bytes", &cost.bytes}, std::pair{"flops", &cost.flops}}) {
      const YAML::Node v = n[key];
      if (!v.IsDefined())
        continue;
      auto text = read_text(v, fmt::format("cost.{} (an expression)", key));
      if (!text)
        continue;
      if (auto e = parse_expr(*text); !e) {
        error(v, fmt::format("cost.{} '{}' does not parse: {}", key, *text, e.error().message));
        continue;
      }
      *out = *text;
    }
    m_cfg.cost = cost;
  }

  std::string m_file;
  std::filesystem::path m_dir;
  const Operator& m_op;
  Diagnostics& m_diags;
  TemperConfig m_cfg;
};

} // namespace

TemperConfig parse_temper_yaml(const std::filesystem::path& path,
                               const std::filesystem::path& dir,
                               const Operator& op,
                               Diagnostics& diags) {
  auto doc = load_yaml(path, diags);
  if (!doc) {
    TemperConfig cfg;
    cfg.present = true;
    return cfg;
  }
  return ConfigParser(path, dir, op, diags).parse(*doc);
}

} // namespace temper::core::detail
