// Rendering a judge report: the JSON document (schema_version, context, summary, cases) and the
// terminal table.
#pragma once

#include "judge/judge.h"

#include <nlohmann/json.hpp>

#include <ostream>

namespace temper::judge {

// 2: timing jobs report the sampled check and each arm's activity instead of fingerprint counts.
inline constexpr int kReportSchemaVersion = 2;

nlohmann::json case_to_json(const CaseResult& c);
nlohmann::json report_to_json(const JudgeReport& r);

// One row per case: id, dtype, shape, status, max abs and rel error, kernel seconds; then the
// failing cases' reasons and a summary line.
void print_table(const JudgeReport& r, std::ostream& out, bool color);

// A double for JSON: finite numbers as numbers, NaN and infinities as the strings "nan", "inf",
// "-inf" (JSON has no such numbers).
nlohmann::json json_number(double v);

} // namespace temper::judge
