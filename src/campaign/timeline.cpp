#include "campaign/timeline.h"

#include "campaign/ledger.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Event {
  int round = 0;
  std::string time;
  int rank = 0;   // attempts 0, revisions 1, promotions 2: the order within one second
  int number = 0; // attempt or revision number
  json body;
};

json read_json(const fs::path& file) {
  auto text = util::read_file(file);
  return text ? json::parse(*text, nullptr, false) : json();
}

void add_attempts(const fs::path& dir, std::vector<Event>& events) {
  std::error_code ec;
  for (const auto& round_entry : fs::directory_iterator(dir / "rounds", ec)) {
    const std::string name = round_entry.path().filename().string();
    if (name.size() < 2 || name[0] != 'R') continue;
    const int round = std::atoi(name.c_str() + 1);
    for (const auto& a : fs::directory_iterator(round_entry.path() / "attempts", ec)) {
      const json intent = read_json(a.path() / "intent.json");
      const json result = read_json(a.path() / "result.json");
      if (!intent.is_object() || !result.is_object()) continue; // unfinished: not history yet
      const std::string op = intent.value("op", "");
      std::string kind = op == "probe" ? "probe" : op == "escalate" ? "escalation" : result.value("tier", "") == "gate" ? "gate" : "submission";
      Event e{round, intent.value("time", ""), 0, intent.value("number", 0), json()};
      const json speedup = result.value("speedup", json());
      e.body = {{"kind", kind},
                {"label", fmt::format("R{} #{} {}{}", round, e.number, op,
                                      intent.value("milestone", "").empty() ? "" : " " + intent.value("milestone", ""))},
                {"outcome", result.value("status", "")},
                {"speedup", speedup.is_number() ? speedup : json()},
                {"gate_faster", result.value("gate_faster", false)}};
      events.push_back(std::move(e));
    }
  }
}

} // namespace

Expected<json> campaign_timeline(const fs::path& dir) {
  if (!fs::exists(dir / "campaign.json")) return fail("{} is not a campaign directory (no campaign.json)", dir.string());
  std::vector<Event> events;
  add_attempts(dir, events);
  TEMPER_TRY_ASSIGN(Ledger ledger, Ledger::open(dir / "ledger.sqlite"));
  TEMPER_TRY_ASSIGN(auto revisions, ledger.revisions());
  for (const auto& [time, r] : revisions) {
    events.push_back({r.round, time, 1, r.number,
                      {{"kind", "revision"},
                       {"label", fmt::format("R{} revision {} ({}, {})", r.round, r.number, r.kind, r.trigger)},
                       {"outcome", r.trigger},
                       {"speedup", json()}}});
  }
  TEMPER_TRY_ASSIGN(auto promotions, ledger.promotions());
  for (const auto& [time, p] : promotions) {
    events.push_back({p.round, time, 2, 0,
                      {{"kind", "promotion"},
                       {"label", p.promoted ? fmt::format("R{} promotes #{} as {}", p.round, p.attempt, p.reference_id)
                                            : fmt::format("R{} ends without a promotion", p.round)},
                       {"outcome", p.promoted ? "promoted" : "not promoted"},
                       {"speedup", p.promoted && p.speedup > 0 ? json(p.speedup) : json()},
                       {"promoted", p.promoted}}});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.round, a.time, a.rank, a.number) < std::tie(b.round, b.time, b.rank, b.number);
  });
  // Best verified speedup over R0: the promoted rounds' chain times the round's best
  // confirmed-FASTER gate (each gate is against the round's reference).
  double chain = 1, round_best = 0;
  int round = 0;
  json out = json::array();
  int seq = 0;
  for (auto& e : events) {
    if (e.round != round) {
      round = e.round;
      round_best = 0;
    }
    const json& sp = e.body["speedup"];
    if (e.body["kind"] == "promotion") {
      if (e.body.value("promoted", false) && sp.is_number()) chain *= sp.get<double>();
      round_best = 0;
    } else if (e.body.value("gate_faster", false) && sp.is_number()) {
      round_best = std::max(round_best, sp.get<double>());
    }
    const double best = chain * (round_best > 0 ? round_best : 1);
    e.body["seq"] = ++seq;
    e.body["round"] = e.round;
    e.body["time"] = e.time;
    e.body["best_speedup"] = best > 1 ? json(best) : json();
    out.push_back(e.body);
  }
  return json{{"schema_version", 1}, {"kind", "temper.campaign.timeline"}, {"events", out}};
}

} // namespace temper::campaign
