#include "campaign/expectations.h"

#include "campaign/judge_service.h"
#include "judge/profile/expectation.h"
#include "judge/profile/profile_job.h"
#include "judge/seal.h"

#include <fmt/format.h>

namespace temper::campaign {

namespace fs = std::filesystem;
using nlohmann::json;
namespace profile = judge::profile;

std::vector<ExpectationResult> unevaluated(const std::vector<std::string>& expectations, const std::string& why) {
  std::vector<ExpectationResult> out;
  for (const auto& e : expectations) out.push_back({e, "unsupported", why});
  return out;
}

namespace {

// The case to profile: the report's first case that passed (the gate's cases come first).
std::optional<int64_t> profiled_case(const json& report) {
  for (const auto& c : report.value("cases", json::array())) {
    if (c.value("status", "") == "PASSED" && c.contains("case_id")) return c["case_id"].get<int64_t>();
  }
  return std::nullopt;
}

std::string status_of(profile::ExpectationOutcome o) {
  switch (o) {
  case profile::ExpectationOutcome::Passed: return "passed";
  case profile::ExpectationOutcome::Failed: return "failed";
  case profile::ExpectationOutcome::Unverifiable: break;
  }
  return "unsupported";
}

} // namespace

std::vector<ExpectationResult> ProfilingExpectationEvaluator::evaluate(const ExpectationRequest& request) {
  std::vector<ExpectationResult> out(request.expectations.size());
  // Parse first: prose or a misspelt metric is reported with how to write it, and not profiled.
  std::vector<profile::Expectation> parsed;
  std::vector<size_t> where;
  bool relative = false, cache_sim = false;
  for (size_t i = 0; i < request.expectations.size(); ++i) {
    out[i].expectation = request.expectations[i];
    auto e = profile::parse_expectation(request.expectations[i]);
    if (!e) {
      out[i].status = "unsupported";
      out[i].detail = "not a metric expectation: " + e.error().message;
      continue;
    }
    relative = relative || e->relative;
    cache_sim = cache_sim || e->metric.rfind("cg.", 0) == 0;
    parsed.push_back(*e);
    where.push_back(i);
  }
  if (parsed.empty()) return out;
  auto fail_all = [&](const std::string& why) {
    for (size_t i : where) {
      out[i].status = "unsupported";
      out[i].detail = why;
    }
    return out;
  };
  const auto case_id = profiled_case(request.report);
  if (!case_id) return fail_all("not evaluated: no case of the submission passed");

  profile::ProfileJobOptions o;
  o.task_dir = request.task_dir;
  o.candidate = request.candidate;
  o.case_id = *case_id;
  o.compiler = compiler_spec(m_settings);
  o.cachegrind = cache_sim;
  o.expectations = parsed;
  o.worker_exe = m_worker_exe;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(m_settings.call_timeout_s * 1000));
  o.progress = false;
  if (relative) {
    if (!request.reference) return fail_all("not evaluated: a relative expectation needs the sealed reference as its baseline");
    auto sealed = judge::find_sealed(request.reference->store, request.reference->id);
    if (!sealed) return fail_all("not evaluated: " + sealed.error().message);
    auto artifact = judge::sealed_artifact(*sealed, *case_id);
    if (!artifact) return fail_all("not evaluated: " + artifact.error().message);
    o.reference = *artifact; // an ELF file: profiled as a prebuilt artifact, its source stays in the vault
  }
  auto job = profile::run_profile_job(o, m_runner);
  if (!job) return fail_all("not evaluated: the profiler could not run: " + job.error().message);
  if (!job->ran) return fail_all(fmt::format("not evaluated: the candidate was not profiled ({})", job->status));
  for (size_t k = 0; k < where.size() && k < job->profile.expectations.size(); ++k) {
    const profile::ExpectationResult& r = job->profile.expectations[k];
    out[where[k]].status = status_of(r.outcome);
    out[where[k]].detail = fmt::format("case {}: {}", *case_id, r.detail);
  }
  return out;
}

} // namespace temper::campaign
