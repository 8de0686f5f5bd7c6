#include "judge/profile/profile_job.h"

#include "build/compile_cache.h"
#include "core/task_loader.h"
#include "judge/boundary_phase.h"
#include "judge/common.h"
#include "judge/golden.h"
#include "judge/judge.h"
#include "judge/profile/profiler.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/progress.h"

#include <fmt/format.h>

#include <fstream>

namespace temper::judge::profile {

namespace fs = std::filesystem;

inline constexpr int kProfileSchemaVersion = 1;

bool is_elf_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

bool ProfileJobReport::all_expectations_passed() const {
  for (const auto& r : profile.expectations)
    if (!r.passed()) return false;
  return true;
}

nlohmann::json ProfileJobReport::to_json() const {
  return {{"schema_version", kProfileSchemaVersion},
          {"kind", "temper.profile.report"},
          {"context", context},
          {"case_id", case_id},
          {"status", status},
          {"message", message},
          {"metrics", profile.to_json()}};
}

Expected<ProfileJobReport> run_profile_job(const ProfileJobOptions& opt, util::ProcessRunner& runner) {
  util::Progress progress(opt.progress);
  TEMPER_TRY_ASSIGN(core::Task task, core::load_task(opt.task_dir));
  const core::Case* c = task.find_case(opt.case_id);
  if (!c) return fail("task {} has no case {}", task.op.name, opt.case_id);
  std::error_code ec;
  if (!fs::is_regular_file(opt.candidate, ec)) return fail("candidate {} is not a file", opt.candidate.string());
  if (!opt.reference.empty() && !fs::is_regular_file(opt.reference, ec)) {
    return fail("reference {} is not a file (a kernel source or a built artifact)", opt.reference.string());
  }
  TEMPER_TRY_ASSIGN(std::string source_text, util::read_file(opt.candidate));
  const uint64_t seed = opt.seed ? *opt.seed : machine_secret_seed();

  build::CompileCache cache(util::cache_root() / "compile", opt.compiler, runner);
  TEMPER_TRY_ASSIGN(build::CompilerIdentity compiler_id, build::identify_compiler(opt.compiler.program, runner));
  GoldenRunner golden(task, cache, runner, util::cache_root() / "golden");
  auto request_for = [&](const fs::path& source, const std::string& text, const std::string& label) {
    build::CompileRequest r;
    r.source = source;
    r.label = label;
    if (build::wants_specialization(text)) r.defines = build::specialization_defines(task.op, *c);
    return r;
  };
  progress.status("compiling the candidate, the reference and the golden");
  TEMPER_TRY(golden.prepare());
  build::CompileRequest cand_req = request_for(opt.candidate, source_text, "candidate");
  TEMPER_TRY_ASSIGN(build::CompileResult cand, cache.compile(cand_req));
  std::optional<ProfileTarget> ref_target;
  std::vector<build::CompileResult> ref_builds;
  if (!opt.reference.empty()) {
    if (is_elf_file(opt.reference)) {
      ref_target = ProfileTarget{fs::absolute(opt.reference), std::nullopt, std::nullopt, opt.compiler};
    } else {
      TEMPER_TRY_ASSIGN(std::string ref_text, util::read_file(opt.reference));
      build::CompileRequest rq = request_for(opt.reference, ref_text, "reference");
      TEMPER_TRY_ASSIGN(build::CompileResult rb, cache.compile(rq));
      if (!rb.ok) return fail("the reference {} does not compile:\n{}", opt.reference.string(), rb.diagnostics);
      ref_target = ProfileTarget{rb.artifact, rb.seconds, rq, opt.compiler};
      ref_builds.push_back(rb);
    }
  }

  ProfileJobReport report;
  report.case_id = c->id;
  report.context = job_context({opt.temper_version, &opt.compiler, &compiler_id, !cand_req.defines.empty(), seed, 1, &task,
                                opt.call_timeout, opt.candidate, util::hash_hex(source_text)});
  report.context["reference"] = opt.reference.empty() ? "" : opt.reference.string();
  if (!cand.ok) {
    report.status = "COMPILE_ERROR";
    report.message = cand.diagnostics;
    return report;
  }
  std::vector<fs::path> protected_refs;
  if (!opt.reference.empty()) protected_refs.push_back(opt.reference);
  TEMPER_TRY_ASSIGN(std::vector<BoundaryVerdict> verdicts,
                    check_boundary(task, opt.candidate, protected_refs, {}, {&cand}, ref_builds, *c, cache));
  if (!verdicts.front().ok()) {
    report.status = "REJECTED_CHEAT";
    report.message = fmt::format("[{}] {}", verdicts.front().reason_code(), verdicts.front().message());
    return report;
  }

  ProfileOptions po;
  po.cachegrind = opt.cachegrind;
  po.calls = opt.calls;
  po.worker_exe = opt.worker_exe;
  po.call_timeout = opt.call_timeout;
  po.job_seed = seed;
  progress.status(fmt::format("profiling the candidate on case {}{}", c->id, opt.cachegrind ? " (with cache simulation)" : ""));
  TEMPER_TRY_ASSIGN(report.profile.candidate, profile_artifact(ProfileTarget{cand.artifact, cand.seconds, cand_req, opt.compiler},
                                                               task, *c, golden, po, runner));
  if (ref_target) {
    progress.status(fmt::format("profiling the reference on case {}", c->id));
    TEMPER_TRY_ASSIGN(report.reference, profile_artifact(*ref_target, task, *c, golden, po, runner));
  }
  progress.finish();
  report.ran = true;
  report.status = "PROFILED";
  if (opt.baseline) {
    report.profile.baseline = opt.baseline;
    report.profile.baseline_source = opt.baseline_label;
  } else if (report.reference) {
    report.profile.baseline = report.reference;
    report.profile.baseline_source = "reference";
  }
  for (const auto& e : opt.expectations) {
    const MetricSet* base = report.profile.baseline ? &*report.profile.baseline : nullptr;
    report.profile.expectations.push_back(evaluate(e, report.profile.candidate, base));
  }
  report.profile.mechanism = mechanism_verdict(report.profile.expectations, std::nullopt);
  return report;
}

} // namespace temper::judge::profile
