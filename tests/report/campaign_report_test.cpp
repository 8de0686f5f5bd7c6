// A scripted campaign's timeline and HTML page (no browser: report_browser_test.cpp opens it).
#include "campaign/timeline.h"
#include "report/campaign_html.h"
#include "report/render.h"
#include "scripted_campaign.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <set>

namespace temper::report::campaign_report_test {
namespace {

using nlohmann::json;

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

TEST(CampaignTimelineTest, EveryKindInOrderWithTheBestSpeedup) {
  util::TempDir tmp("temper-report-campaign");
  const auto dir = testing::run_scripted_campaign(tmp.path());
  auto t = campaign::campaign_timeline(dir);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  const json& events = (*t)["events"];
  std::set<std::string> kinds;
  double best = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    kinds.insert(events[i]["kind"].get<std::string>());
    EXPECT_EQ(events[i]["seq"], i + 1);
    // The best verified speedup never falls.
    const double b = events[i]["best_speedup"].is_number() ? events[i]["best_speedup"].get<double>() : 1.0;
    EXPECT_GE(b, best) << events[i].dump();
    best = b;
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"probe", "submission", "gate", "escalation", "revision", "promotion"}));
  EXPECT_DOUBLE_EQ(best, 2.2);
  // Round 1's first attempt is a correctness submission that failed; round 1 ends with its promotion.
  EXPECT_EQ(events[0]["kind"], "submission");
  EXPECT_EQ(events[0]["outcome"], "rejected");
  auto promotion = std::find_if(events.begin(), events.end(), [](const json& e) { return e["kind"] == "promotion"; });
  ASSERT_NE(promotion, events.end());
  EXPECT_EQ((*promotion)["outcome"], "promoted");
  EXPECT_EQ((*promotion)["round"], 1);
  // Each revision right after the attempt that triggered it: round 1's after the escalation,
  // round 2's after the second of two rejected gates.
  for (size_t i = 1; i < events.size(); ++i) {
    if (events[i]["kind"] != "revision") continue;
    if (events[i]["round"] == 1) EXPECT_EQ(events[i - 1]["kind"], "escalation") << events.dump(1);
    else EXPECT_EQ(events[i - 1]["outcome"], "rejected") << events.dump(1);
  }
  EXPECT_EQ(events.back()["kind"], "promotion");
  EXPECT_EQ(events.back()["outcome"], "not promoted");

  auto page = campaign_report_html(dir);
  ASSERT_TRUE(page.has_value()) << page.error().message;
  EXPECT_NE(page->find(fmt::format("<section id=\"timeline\" data-count=\"{}\">", events.size())), std::string::npos);
  EXPECT_EQ(count(*page, "<circle cx="), events.size()); // one marker per event; no other circles without samples
  EXPECT_EQ(count(*page, "<tr class=\"event\""), events.size());
  EXPECT_NE(page->find("<section id=\"costs\" data-count=\"6\">"), std::string::npos);
  EXPECT_EQ(count(*page, "<tr class=\"round\""), 2u);
  EXPECT_NE(page->find("<section id=\"speedup\" data-count=\"2\">"), std::string::npos); // the final judgement's cases
  EXPECT_NE(page->find("Best verified speedup 2.200x"), std::string::npos);
  // The same kernel against PyTorch, its sections under ids of their own.
  EXPECT_NE(page->find("Final kernel against PyTorch (torch 9.9.9, 1 thread)"), std::string::npos);
  EXPECT_NE(page->find("<section id=\"torch-speedup\" data-count=\"2\">"), std::string::npos);
  EXPECT_NE(page->find("Final kernel against PyTorch (torch 9.9.9, 2 threads (its default))"), std::string::npos);
  EXPECT_NE(page->find("<section id=\"torch-default-speedup\" data-count=\"2\">"), std::string::npos);
  std::set<std::string> ids;
  for (size_t at = page->find(" id=\""); at != std::string::npos; at = page->find(" id=\"", at + 1)) {
    const std::string id = page->substr(at + 5, page->find('"', at + 5) - at - 5);
    EXPECT_TRUE(ids.insert(id).second) << "id \"" << id << "\" twice";
  }
  EXPECT_EQ(page->find("<script"), std::string::npos);
  // `temper report` takes the campaign directory or its final/summary.json.
  auto by_dir = render_report(dir);
  auto by_summary = render_report(dir / "final" / "summary.json");
  ASSERT_TRUE(by_dir.has_value() && by_summary.has_value());
  EXPECT_EQ(*by_dir, *page);
  EXPECT_EQ(*by_summary, *page);
  // Anything else is refused with the reason.
  auto not_json = render_report(dir / "rounds" / "R1" / "attempts" / "0001" / "candidate.cpp");
  ASSERT_FALSE(not_json.has_value());
  EXPECT_NE(not_json.error().message.find("is not JSON"), std::string::npos);
  auto other = render_report(dir / "campaign.json");
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message.find("not a judge report"), std::string::npos) << other.error().message;
}

TEST(CampaignTimelineTest, NotACampaign) {
  util::TempDir tmp("temper-report-campaign");
  EXPECT_FALSE(campaign::campaign_timeline(tmp.path()).has_value());
  EXPECT_FALSE(campaign_report_html(tmp.path()).has_value());
}

} // namespace
} // namespace temper::report::campaign_report_test
