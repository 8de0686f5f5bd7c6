// The HTML report of one judge run: summary, context, the cases table, the speedup chart, the
// roofline chart, the timing samples of both arms and the first mismatches of failing cases.
#pragma once

#include "report/judge_view.h"

#include <string>

namespace temper::report {

// The sections alone (the campaign report embeds its final judgement with them).
std::string judge_sections(const JudgeView& view);

// A whole page: `title` heads it.
std::string judge_report_html(const JudgeView& view, const std::string& title);

} // namespace temper::report
