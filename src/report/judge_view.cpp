#include "report/judge_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace temper::report {

using nlohmann::json;

namespace {

std::optional<double> number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string value_text(const json& v) {
  if (v.is_number()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_string()) return v.get<std::string>(); // "nan", "inf"
  return v.dump();
}

void append_samples(const json& arm, std::vector<double>& out) {
  for (const auto& s : arm.value("samples", json::array())) {
    if (s.is_number()) out.push_back(s.get<double>());
  }
}

void read_timing(const json& t, CaseView& c) {
  c.speedup = number(t, "speedup");
  if (const json ci = t.value("ci", json()); ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number()) {
    c.speedup_lo = ci[0].get<double>();
    c.speedup_hi = ci[1].get<double>();
  }
  c.verdict = t.value("verdict", "");
  c.confirmed = t.value("confirmed", false);
  if (auto us = number(t, "hardware_bound_us")) c.bound_s = *us * 1e-6;
  c.roofline_fraction = number(t, "roofline_fraction");
  c.limiter = limiter_from_source(t.value("hardware_bound_source", ""));
  bool first = true;
  for (const auto& job : t.value("jobs", json::array())) {
    const json cand = job.value("candidate", json::object());
    if (first && job.value("kind", "") == "measurement") {
      if (auto m = number(cand, "median"); m && *m > 0) c.achieved_s = *m;
      first = false;
    }
    append_samples(job.value("reference", json::object()), c.reference_samples);
    append_samples(cand, c.candidate_samples);
  }
}

CaseView read_case(const json& j) {
  CaseView c;
  c.id = j.value("case_id", int64_t{0});
  c.status = j.value("status", "");
  c.reason_code = j.value("reason_code", "");
  c.message = j.value("message", "");
  std::vector<std::string> dtypes = j.value("dtypes", std::vector<std::string>());
  const bool same = std::all_of(dtypes.begin(), dtypes.end(), [&](const auto& d) { return d == dtypes.front(); });
  c.dtype = same && !dtypes.empty() ? dtypes.front() : fmt::format("{}", fmt::join(dtypes, ","));
  std::vector<std::string> shapes;
  for (const auto& s : j.value("shapes", json::array())) shapes.push_back(s.dump());
  c.shape = fmt::format("{}", fmt::join(shapes, " "));
  c.max_abs = number(j, "max_abs_error");
  c.max_rel = number(j, "max_rel_error");
  c.kernel_seconds = j.value("kernel_seconds", 0.0);
  if (j.contains("timing") && j["timing"].is_object()) read_timing(j["timing"], c);
  for (const auto& m : j.value("first_mismatches", json::array())) {
    std::vector<int64_t> index = m.value("index", std::vector<int64_t>());
    c.mismatches.push_back({m.value("output", ""), fmt::format("[{}]", fmt::join(index, ", ")), value_text(m.value("got", json())),
                            value_text(m.value("expected", json()))});
  }
  return c;
}

} // namespace

std::string limiter_from_source(const std::string& source) {
  if (source == "temper.yaml") return "given in temper.yaml";
  const std::string key = "limiter: ";
  if (auto at = source.find(key); at != std::string::npos) {
    const auto start = at + key.size();
    return source.substr(start, source.find(';', start) - start);
  }
  return source;
}

Expected<JudgeView> read_judge_view(const json& report) {
  if (!report.is_object() || report.value("kind", "") != "temper.judge.report" || !report.contains("cases") ||
      !report["cases"].is_array()) {
    return fail("not a judge report (kind temper.judge.report with a cases array){}",
                report.is_object() && report.contains("kind") ? ": this is " + report["kind"].dump() : std::string());
  }
  JudgeView v;
  v.context = report.value("context", json::object());
  v.timing = report.value("timing", json());
  for (const auto& c : report["cases"]) {
    v.cases.push_back(read_case(c));
    v.passed += v.cases.back().status == "PASSED";
  }
  return v;
}

} // namespace temper::report
