// A small plan for end-to-end campaigns on tasks/swi_glu with command-line agents: D1 (the rows
// kernel); M0 correct on the campaign's cases (plus `m0_expectations`); M1 a gate on case 13
// that any measured speed meets (the tests are about the path, not the speed).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace temper_e2e {

inline nlohmann::json rows_plan(const std::vector<std::string>& m0_expectations = {}) {
  using nlohmann::json;
  json d1 = {{"id", "D1"}, {"title", "rows"}, {"choice", "one streaming pass over rows"}, {"rationale", "memory-bound"},
             {"evidence", {{"measurements", {"ref-time --case 13"}}}}};
  auto milestone = [](const std::string& id, json acceptance) {
    return json{{"id", id}, {"title", "milestone " + id}, {"requirements", {"the rows kernel"}}, {"contract", "kernel.h ABI"},
                {"acceptance", acceptance}, {"budget", {{"attempts", 3}, {"seconds", 3600}}}, {"depends_on", {"D1"}}};
  };
  json m0 = {{"correctness", {{"cases", "all"}}}};
  if (!m0_expectations.empty()) m0["expectations"] = m0_expectations;
  return {{"schema_version", 1},
          {"kind", "temper.plan"},
          {"decisions", {d1}},
          {"milestones",
           {milestone("M0", m0),
            milestone("M1", {{"correctness", {{"cases", "all"}}},
                             {"performance", {{"tier", "gate"}, {"cases", {13}}, {"min_speedup", 0.01}, {"against", "reference"}}}})}}};
}

} // namespace temper_e2e
