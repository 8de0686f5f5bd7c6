#include "judge/profile/profile_phase.h"

#include "judge/stats.h"
#include "judge/status.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <algorithm>

namespace temper::judge::profile {

nlohmann::json CaseProfile::to_json() const {
  nlohmann::json ex = nlohmann::json::array();
  for (const auto& r : expectations) ex.push_back(r.to_json());
  return {{"candidate", candidate.to_json()},
          {"baseline", baseline ? baseline->to_json() : nlohmann::json(nullptr)},
          {"baseline_source", baseline_source},
          {"expectations", ex},
          {"mechanism", {{"verdict", mechanism.code}, {"message", mechanism.message}}}};
}

Expected<std::map<int64_t, MetricSet>> load_baseline_report(const std::filesystem::path& file) {
  TEMPER_TRY_ASSIGN(std::string text, util::read_file(file));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("cases") || !j["cases"].is_array()) {
    return fail("{} is not a temper judge report (no \"cases\" list)", file.string());
  }
  std::map<int64_t, MetricSet> out;
  for (const auto& c : j["cases"]) {
    if (!c.contains("metrics") || !c["metrics"].contains("candidate") || !c.contains("case_id")) continue;
    auto set = MetricSet::from_json(c["metrics"]["candidate"]);
    if (!set) return fail("{}: case {}: {}", file.string(), c["case_id"].dump(), set.error().message);
    out[c["case_id"].get<int64_t>()] = std::move(*set);
  }
  if (out.empty()) return fail("{} has no case with a metrics block (judge it with --profile)", file.string());
  return out;
}

namespace {

// The paired timing's arms replace the profile's own time.* (they are the judge's measurement).
void use_paired_timing(const CaseResult& r, MetricSet& cand, std::optional<MetricSet>& ref) {
  if (!r.timing || r.timing->jobs.empty()) return;
  const PairedResult& p = r.timing->jobs.front().result.paired;
  if (p.candidate.stats.n == 0) return;
  auto put = [](MetricSet& m, const ArmStats& s) {
    m.set("time.median_us", s.median * 1e6);
    m.set("time.mean_us", s.mean * 1e6);
    m.set("time.min_us", s.min * 1e6);
    m.set("time.max_us", s.max * 1e6);
    m.set("time.rel_spread", s.rel_spread);
    m.set("time.samples", s.n);
    m.attachments()["time_source"] = "paired timing, first measurement job";
    // The profile's own call times no longer back time.median_us.
    if (m.attachments().contains("per_call")) m.attachments()["per_call"].erase("time.median_us");
  };
  put(cand, p.candidate.stats);
  cand.set("time.speedup", r.timing->speedup);
  if (ref && p.reference.stats.n > 0) {
    put(*ref, p.reference.stats);
    ref->set("time.speedup", 1.0);
  }
}

} // namespace

Status run_profile_phase(const ProfilePhaseInput& in, const ProfilePhaseOptions& po, GoldenRunner& golden,
                         std::vector<CaseResult>& results, util::ProcessRunner& runner, util::Progress& progress) {
  std::vector<size_t> chosen;
  if (po.case_ids.empty()) {
    chosen.push_back(0);
  } else {
    for (int64_t id : po.case_ids) {
      auto it = std::find_if(in.cases.begin(), in.cases.end(), [&](const core::Case* c) { return c->id == id; });
      if (it == in.cases.end()) return fail("--profile names case {}, which is not among the judged cases (add it to --cases)", id);
      chosen.push_back(static_cast<size_t>(it - in.cases.begin()));
    }
  }
  ProfileOptions opt = in.options;
  opt.cachegrind = po.cachegrind;
  opt.calls = po.calls;
  for (size_t i : chosen) {
    CaseResult& r = results[i];
    CaseProfile prof;
    if (r.status != CaseStatus::Passed) {
      std::string why = fmt::format("case {} did not pass ({}), so it was not profiled", r.case_id, status_name(r.status));
      for (const auto& m : metric_registry()) prof.candidate.unsupported(m.name, why);
    } else {
      progress.status(fmt::format("profiling case {} (candidate{})", r.case_id, po.cachegrind ? ", with cache simulation" : ""));
      TEMPER_TRY_ASSIGN(prof.candidate, profile_artifact(in.candidates[i], *in.task, *in.cases[i], golden, opt, runner));
      if (auto b = po.baseline.find(r.case_id); b != po.baseline.end()) {
        prof.baseline = b->second;
        prof.baseline_source = po.baseline_source;
      } else if (!in.references.empty()) {
        progress.status(fmt::format("profiling case {} (reference)", r.case_id));
        TEMPER_TRY_ASSIGN(prof.baseline, profile_artifact(in.references[i], *in.task, *in.cases[i], golden, opt, runner));
        prof.baseline_source = "reference";
      }
      use_paired_timing(r, prof.candidate, prof.baseline);
    }
    for (const auto& e : po.expectations) {
      prof.expectations.push_back(evaluate(e, prof.candidate, prof.baseline ? &*prof.baseline : nullptr));
    }
    std::optional<bool> faster;
    if (r.timing) faster = r.timing->verdict == Verdict::Faster;
    prof.mechanism = mechanism_verdict(prof.expectations, faster);
    r.profile = std::move(prof);
  }
  return {};
}

} // namespace temper::judge::profile
