// The campaign's final report: once a campaign is done, its final reference (the last promoted
// kernel) is judged against the reference it started from, on the campaign's cases at the gate
// tier, so the summary states per case what the whole campaign gained, with verdicts and the
// fraction of the roofline. Where the task has a PyTorch function, the final kernel is also timed
// against it (the "vs PyTorch" column: what a user runs today). Written to
// CAMPAIGN/final/report.json and final/torch_report.json (the judge's reports) and
// CAMPAIGN/final/summary.json; each is computed once: a later `temper run`/`resume` reads them
// back, also after a crash between the two judgements.
#pragma once

#include "campaign/judge_service.h"
#include "campaign/reference_store.h"
#include "judge/roofline.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace temper::campaign {

inline constexpr int kFinalSummarySchemaVersion = 1;

struct FinalReportOptions {
  std::optional<judge::Roofline> roofline; // bounds per case from certified machine figures
  // Time the final kernel against the task's PyTorch function too. A failure there (no PyTorch
  // environment, say) is a note in the summary, not a failed report.
  bool vs_torch = false;
  // With vs_torch, also time it against PyTorch at PyTorch's default thread count (the
  // "torch_default" arm) besides one thread ("torch"). Worth it where more than one CPU is there.
  bool torch_default_threads = false;
};

// Judges the final reference against R0 (unless final/summary.json already covers the current
// final reference) and returns the summary document (kind temper.campaign.summary). Errors:
// the campaign is not done, its references are missing, or the judge fails as a harness.
Expected<nlohmann::json> ensure_final_report(const std::filesystem::path& dir, ReferenceStore& references, JudgeService& judge,
                                             const FinalReportOptions& options);

// The summary for a terminal: per-case speedup against the starting reference with verdicts
// (and against PyTorch, when it was timed), the geometric mean, the fraction of the roofline per case, costs by category, and where the
// campaign directory and the report are.
std::string format_final_summary(const nlohmann::json& summary);

} // namespace temper::campaign
