// Internal to the task loader: one parser per file of a task directory, and the YAML helpers
// they share. Each parser reports every problem it finds, with file and line, and returns what
// it could read; task_loader.cpp puts the pieces together and runs the cross-file checks.
#pragma once

#include "core/task.h"
#include "core/task_loader.h"

#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace temper::core::detail {

using Diagnostics = std::vector<Diagnostic>;

void report(Diagnostics& diags, const std::string& file, int line, std::string message);

// 1-based line of a node, 0 when yaml-cpp has none (a node built in code).
int line_of(const YAML::Node& node);

// Reads and parses a YAML file; a syntax error becomes a diagnostic with its line.
std::optional<YAML::Node> load_yaml(const std::filesystem::path& path, Diagnostics& diags);

// YAML to JSON with the YAML 1.2 core schema: a plain scalar becomes null, a bool (true/false),
// an integer, a float (.inf, .nan included) or a string; a quoted scalar is always a string.
nlohmann::json yaml_to_json(const YAML::Node& node);

// Reports a key that appears twice in `map` (yaml-cpp keeps both and reads the first).
void check_duplicate_keys(const YAML::Node& map, const std::string& file, Diagnostics& diags);

// Reports each key of `map` that is not in `known`, and each duplicate, at the key's line.
void check_keys(const YAML::Node& map,
                std::initializer_list<std::string_view> known,
                std::string_view where,
                const std::string& file,
                Diagnostics& diags);

// A JSON number, or one of the strings CANN-Bench's CSV uses for special values ("inf", "-inf",
// "nan", also ".inf" and ".nan"); nullopt for anything else.
std::optional<double> json_number(const nlohmann::json& value);

// A JSON value as a typed attr, or nullopt when it is of another kind.
std::optional<AttrValue> json_to_attr(AttrKind kind, const nlohmann::json& value);

// proto.yaml. Returns nullopt when there is no usable operator (no name or no inputs).
std::optional<Operator> parse_proto(const std::filesystem::path& path, Diagnostics& diags);

// cases.yaml or cases.csv, validated against the operator. Cases with problems are left out.
std::vector<Case>
parse_cases_yaml(const std::filesystem::path& path, const Operator& op, Diagnostics& diags);
std::vector<Case>
parse_cases_csv(const std::filesystem::path& path, const Operator& op, Diagnostics& diags);

// temper.yaml; paths resolved against `dir` and checked to exist.
TemperConfig parse_temper_yaml(const std::filesystem::path& path,
                               const std::filesystem::path& dir,
                               const Operator& op,
                               Diagnostics& diags);

} // namespace temper::core::detail
