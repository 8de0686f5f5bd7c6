#include "campaign/stagnation.h"

#include <fmt/format.h>

#include <algorithm>

namespace temper::campaign {

std::optional<Stagnation> check_stagnation(const CampaignState& s, const Triggers& t, const Milestone& m) {
  if (s.accepted.count(m.id)) return std::nullopt;
  if (t.rejections > 0 && s.consecutive_rejected >= t.rejections) {
    return Stagnation{"rejections", fmt::format("{} consecutive submissions for {} were not accepted", s.consecutive_rejected, m.id)};
  }
  if (t.plateau > 1 && static_cast<int>(s.window.size()) >= t.plateau) {
    double lo = 0, hi = 0;
    bool all = true;
    for (size_t i = s.window.size() - static_cast<size_t>(t.plateau); i < s.window.size(); ++i) {
      const auto& a = s.window[i];
      if (!a.speedup || !(*a.speedup > 0)) {
        all = false;
        break;
      }
      lo = lo == 0 ? *a.speedup : std::min(lo, *a.speedup);
      hi = std::max(hi, *a.speedup);
    }
    if (all && hi / lo - 1 <= t.plateau_noise) {
      return Stagnation{"plateau", fmt::format("the last {} probes and submissions for {} lie within {:.1f}% of each other (speedups {:.3f} to {:.3f})",
                                               t.plateau, m.id, t.plateau_noise * 100, lo, hi)};
    }
  }
  if (s.milestone_submissions >= m.budget.attempts) {
    return Stagnation{"budget", fmt::format("{} submissions used the budget of {} for {}", s.milestone_submissions, m.budget.attempts, m.id)};
  }
  if (s.milestone_seconds >= m.budget.seconds) {
    return Stagnation{"budget", fmt::format("{:.0f} s spent on {} (budget {:.0f} s)", s.milestone_seconds, m.id, m.budget.seconds)};
  }
  // A Student that ends turns without submitting would never trip the others.
  if (s.milestone_student_turns >= m.budget.attempts + 2) {
    return Stagnation{"budget", fmt::format("{} Student turns on {} (budget {} submissions)", s.milestone_student_turns, m.id, m.budget.attempts)};
  }
  return std::nullopt;
}

} // namespace temper::campaign
