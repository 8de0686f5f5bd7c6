#include "judge/profile/metrics_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cmath>
#include <map>
#include <vector>

namespace temper::judge::profile {

namespace {

std::string cell(const MetricValue* v) {
  if (!v) return "-";
  return v->supported() ? v->text() : "unsupported";
}

} // namespace

void print_metrics(const MetricSet& cand, const MetricSet* base, const std::string& base_label, std::ostream& out) {
  out << fmt::format("{:<26} {:>14} {:>14} {:>9}  {:<6} {}\n", "metric", "candidate", base ? base_label : "", base ? "change" : "",
                     "unit", "better");
  std::vector<std::string> reasons; // "reason" -> listed once, with the metrics it covers
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& m : metric_registry()) {
    const MetricValue* c = cand.find(m.name);
    const MetricValue* b = base ? base->find(m.name) : nullptr;
    if (!c && !b) continue;
    std::string change;
    if (c && b && c->supported() && b->supported() && *b->number != 0) {
      change = fmt::format("{:+.1f}%", 100.0 * (*c->number - *b->number) / std::fabs(*b->number));
    }
    out << fmt::format("{:<26} {:>14} {:>14} {:>9}  {:<6} {}\n", m.name, cell(c), base ? cell(b) : "", change, m.unit,
                       direction_name(m.direction));
    for (const MetricValue* v : {c, b}) {
      if (!v || v->supported()) continue;
      auto& names = by_reason[v->reason];
      if (names.empty()) reasons.push_back(v->reason);
      if (names.empty() || names.back() != m.name) names.emplace_back(m.name);
    }
  }
  if (!reasons.empty()) out << "\nunsupported:\n";
  for (const auto& r : reasons) {
    const auto& names = by_reason[r];
    std::string list = names.size() > 3 ? fmt::format("{}, {} ... ({} metrics)", names[0], names[1], names.size())
                                        : fmt::format("{}", fmt::join(names, ", "));
    out << fmt::format("  {}: {}\n", list, r);
  }
  if (const auto& rem = cand.attachments(); rem.contains("vectorization_remarks")) {
    const auto& lines = rem["vectorization_remarks"]["lines"];
    out << fmt::format("\ncandidate vectorization remarks ({}): {} line(s)\n",
                       fmt::join(rem["vectorization_remarks"]["flags"].get<std::vector<std::string>>(), " "), lines.size());
    size_t shown = 0;
    for (const auto& l : lines) {
      if (shown++ == 10) {
        out << "  ... (all of them in the JSON report)\n";
        break;
      }
      out << "  " << l.get<std::string>() << "\n";
    }
  }
}

void print_expectations(const CaseProfile& p, int64_t case_id, std::ostream& out) {
  if (p.expectations.empty()) return;
  out << fmt::format("\ncase {}: mechanism expectations (baseline: {})\n", case_id,
                     p.baseline_source.empty() ? "none" : p.baseline_source);
  for (const auto& r : p.expectations) {
    std::string outcome(outcome_name(r.outcome));
    for (auto& ch : outcome) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out << fmt::format("  {:<13} {:<34} {}\n", outcome, r.expectation.text, r.detail);
  }
  out << fmt::format("  => {}: {}\n", p.mechanism.code, p.mechanism.message);
}

} // namespace temper::judge::profile
