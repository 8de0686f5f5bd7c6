#include "campaign/timeline.h"

#include "campaign/ledger.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Event {
  int round = 0;
  int position = 0; // attempts: their number; revisions: the attempt they followed; promotions: last
  int rank = 0;     // attempts 0, revisions 1, promotions 2
  int number = 0;   // attempt or revision number
  std::string time;
  json body;
};

json read_json_or_null(const fs::path& file) {
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
      const json intent = read_json_or_null(a.path() / "intent.json");
      const json result = read_json_or_null(a.path() / "result.json");
      if (!intent.is_object() || !result.is_object()) continue; // unfinished: not history yet
      const std::string op = intent.value("op", "");
      std::string kind = op == "probe" ? "probe" : op == "escalate" ? "escalation" : result.value("tier", "") == "gate" ? "gate" : "submission";
      const int number = intent.value("number", 0);
      Event e{round, number, 0, number, intent.value("time", ""), json()};
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
    // The attempt it followed, as the revision record says; records from before it did, by time
    // (1 s resolution: attempts of the same second count as before it).
    const json record = read_json_or_null(dir / "rounds" / fmt::format("R{}", r.round) / "revisions" / fmt::format("{:03}.json", r.number));
    int position = 0;
    if (record.is_object() && record.contains("after_attempt")) {
      position = record.value("after_attempt", 0);
    } else {
      for (const auto& e : events) position += e.rank == 0 && e.round == r.round && e.time <= time;
    }
    events.push_back({r.round, position, 1, r.number, time,
                      {{"kind", "revision"},
                       {"label", fmt::format("R{} revision {} ({}, {})", r.round, r.number, r.kind, r.trigger)},
                       {"outcome", r.trigger},
                       {"speedup", json()}}});
  }
  TEMPER_TRY_ASSIGN(auto promotions, ledger.promotions());
  for (const auto& [time, p] : promotions) {
    events.push_back({p.round, std::numeric_limits<int>::max(), 2, 0, time,
                      {{"kind", "promotion"},
                       {"label", p.promoted ? fmt::format("R{} promotes #{} as {}", p.round, p.attempt, p.reference_id)
                                            : fmt::format("R{} ends without a promotion", p.round)},
                       {"outcome", p.promoted ? "promoted" : "not promoted"},
                       {"speedup", p.promoted && p.speedup > 0 ? json(p.speedup) : json()},
                       {"promoted", p.promoted}}});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.round, a.position, a.rank, a.number) < std::tie(b.round, b.position, b.rank, b.number);
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
