#include "cli/ref_profile.h"

#include "build/compile_cache.h"
#include "cli/commands.h"
#include "core/task_loader.h"
#include "judge/golden.h"
#include "judge/judge.h"
#include "judge/profile/metrics_table.h"
#include "judge/profile/profiler.h"
#include "util/fs.h"
#include "util/process.h"

#include <fmt/format.h>

namespace temper::cli {

// Profiles the sealed artifact as a black box: the same collectors as `temper profile`, on the
// artifact the judge times, never on the source (which stays in the vault).
int profile_sealed(const judge::SealedRef& ref, int64_t case_id, const std::filesystem::path& artifact,
                   std::ostream& out, std::ostream& err, int threads) {
  auto fail_with = [&](const std::string& message) {
    err << fmt::format("temper: ref profile {} --case {}: {}\n", ref.name, case_id, message);
    return kExitUsage;
  };
  util::ProcessRunner& runner = util::default_process_runner();
  auto task = core::load_task(ref.task_dir);
  if (!task) return fail_with(task.error().message);
  const core::Case* c = task->find_case(case_id);
  if (!c) return fail_with(fmt::format("task {} has no case {}", task->op.name, case_id));

  build::CompilerSpec compiler;
  compiler.program = ref.compiler;
  compiler.flags = ref.flags;
  build::CompileCache cache(util::cache_root() / "compile", compiler, runner);
  judge::GoldenRunner golden(*task, cache, runner, util::cache_root() / "golden");
  if (auto prepared = golden.prepare(); !prepared) return fail_with(prepared.error().message);

  judge::profile::ProfileOptions po;
  po.job_seed = judge::machine_secret_seed();
  po.threads = threads;
  auto metrics = judge::profile::profile_artifact(judge::profile::ProfileTarget{artifact, std::nullopt, std::nullopt, compiler},
                                                  *task, *c, golden, po, runner);
  if (!metrics) return fail_with(metrics.error().message);
  const int kernel_threads = threads > 0 ? threads : task->config.threads;
  out << fmt::format("sealed reference {} on case {} ({}), {} thread{}\n", ref.name, case_id, task->op.name, kernel_threads,
                     kernel_threads == 1 ? "" : "s");
  judge::profile::print_metrics(*metrics, nullptr, "", out);
  return kExitOk;
}

} // namespace temper::cli
