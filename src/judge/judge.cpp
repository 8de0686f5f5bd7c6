#include "judge/common.h"
#include "judge/judge.h"

#include "build/compile_cache.h"
#include "backend/forkserver.h"
#include "build/elf.h"
#include "core/inputs.h"
#include "core/task_loader.h"
#include "judge/boundary_phase.h"
#include "judge/correctness.h"
#include "judge/golden.h"
#include "judge/kernel_backend.h"
#include "judge/python_golden.h"
#include "judge/timing_phase.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/host.h"
#include "util/progress.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <fcntl.h>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace temper::judge {

namespace fs = std::filesystem;

bool JudgeReport::all_passed() const {
  for (const auto& c : cases)
    if (c.status != CaseStatus::Passed) return false;
  return !cases.empty();
}

uint64_t machine_secret_seed() {
  fs::path file = util::cache_root() / "secret-seed";
  if (auto text = util::read_file(file); text && text->size() >= 16) {
    try {
      return std::stoull(text->substr(0, 16), nullptr, 16);
    } catch (...) {
    }
  }
  uint64_t seed = random_seed();
  if (util::make_dirs(file.parent_path())) {
    std::string text = fmt::format("{:016x}\n", seed);
    fs::path tmp = file;
    tmp += fmt::format(".{}", ::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      // link() fails if another process created it first; then theirs wins and we reread it.
      if (ok && ::link(tmp.c_str(), file.c_str()) != 0) {
        ::unlink(tmp.c_str());
        return machine_secret_seed();
      }
      ::unlink(tmp.c_str());
    }
  }
  return seed;
}

fs::path default_worker_exe() {
  if (const char* w = std::getenv("TEMPER_WORKER"); w && *w) return w;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path() / "temper-worker";
}

namespace {

// What the report says of a PyTorch reference: what the runner said when it loaded ("torch
// 2.15.0, 1 thread", and float32 where torch's CPU kernels lack the case's dtype), the function,
// the threads.
nlohmann::json torch_reference_context(const JudgeReport& report, const fs::path& function, int threads) {
  std::string loaded;
  for (const auto& c : report.cases)
    if (c.timing)
      for (const auto& job : c.timing->jobs)
        if (loaded.empty()) loaded = job.result.reference_worker;
  return {{"torch", loaded.substr(0, loaded.find(';'))},
          {"function", function.string()},
          {"threads", threads == 0 ? nlohmann::json("default") : nlohmann::json(threads)}};
}

// The PyTorch arm's timing configuration on top of the judgement's (run_judge): its runner, its
// threads and, at more threads than the kernel's, every CPU on the wall clock.
void use_torch_reference(TimingConfig& tc, const TorchReference& torch, int torch_threads, const TimingOptions& options, int kernel_threads) {
  tc.reference_command = torch.argv;
  // torch is imported once for the whole judgement, not once per worker life (seconds each).
  tc.reference_forkserver = std::make_shared<backend::Forkserver>();
  tc.reference_threads = torch_threads;
  // PyTorch on more threads than the kernel needs the CPUs for them: both arms then share
  // every CPU temper may use, timed by the wall clock (unless the flags chose otherwise).
  if (torch_threads != 1 && torch_threads != kernel_threads) {
    if (options.protocol.cpus.empty()) tc.protocol.cpus = {};
    if (options.protocol.clock.empty()) tc.protocol.clock = std::string(kClockMonotonic);
  }
}

// Arms share jobs only under the very same protocol, the cold step included: the buffer step
// leaves the caches full of dirty lines, whose write-back a fast memory-bound kernel may pay
// more of than a slow reference, so a column keeps the protocol it would have alone
// (docs/benchmarks.md, lever 22).
bool same_protocol(const TimingConfig& a, const TimingConfig& b) { return a.protocol.to_json() == b.protocol.to_json(); }

// Everything the timing phase needs from run_judge to set up further references' arms.
struct AlsoSetup {
  const core::Task* task = nullptr;
  const KernelBackend* backend = nullptr;
  build::CompileCache* cache = nullptr;
  const build::CompilerIdentity* compiler_id = nullptr;
  const JudgeOptions* opt = nullptr;
};

// The timing phase with TimingOptions::also_torch_threads: arms under the same protocol in the
// same jobs (the PyTorch arms together where they agree; beside the reference only where it
// flushes with a buffer too), each group after the other, each arm into its JudgeReport::also
// entry. Errors are the reference's; a PyTorch arm's is its entry's.
Status run_timing_with_also(const AlsoSetup& setup, const TimingPhaseInput& in, TimingConfig tc, const ReferenceArm& primary,
                            bool primary_is_torch, GoldenRunner& golden, JudgeReport& report,
                            util::Progress& progress) {
  const TimingOptions& options = *setup.opt->timing;
  const core::Task& task = *setup.task;
  struct Group {
    TimingConfig config;
    std::vector<AgainstReference> refs;
  };
  std::vector<Group> groups(1);
  AgainstReference first;
  first.artifacts = in.reference_artifacts;
  first.arm = primary;
  first.key = in.reference_key;
  first.label = primary_is_torch ? "PyTorch" : "reference";
  first.report = &report;
  first.required = true;
  groups[0].refs.push_back(std::move(first));
  groups[0].config = std::move(tc);
  for (int threads : options.also_torch_threads) {
    JudgeReport::Also& also = report.also.emplace_back();
    also.torch_threads = threads;
    auto torch = prepare_torch_reference(task, threads);
    if (!torch) {
      also.error = torch.error().message;
      continue;
    }
    also.torch_function = torch->source;
    TimingConfig t = make_timing_config(options, task, setup.backend->compiler, *setup.compiler_id, setup.backend->worker_exe,
                                        setup.opt->call_timeout, setup.opt->memory_limit_bytes);
    use_torch_reference(t, *torch, threads, options, task.config.threads);
    if (options.tier == "probe") t.protocol.check_fraction = kProbeCheckFraction;
    t.proved = options.proved;
    if (Status st = apply_backend_to_timing(*setup.backend, options, true, *setup.cache, t, progress); !st) {
      also.error = st.error().message;
      continue;
    }
    also.report = std::make_shared<JudgeReport>(report);
    also.report->also.clear();
    AgainstReference ref;
    ref.artifacts.assign(in.cases.size(), torch->source);
    ref.arm = {torch->source, t.reference_command, t.reference_forkserver, t.reference_threads};
    ref.key = torch->key;
    ref.label = threads == 0 ? "PyTorch (default threads)" : fmt::format("PyTorch, {} thread{}", threads, threads == 1 ? "" : "s");
    ref.report = also.report.get();
    auto group = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return same_protocol(g.config, t); });
    if (group == groups.end()) group = groups.insert(groups.end(), Group{t, {}});
    group->refs.push_back(std::move(ref));
  }
  for (Group& g : groups) TEMPER_TRY(run_timing_phase_against(in, options, g.config, golden, g.refs, progress));
  // Each PyTorch arm's outcome into its entry: a failed one keeps only why.
  for (Group& g : groups)
    for (AgainstReference& ref : g.refs) {
      if (ref.report == &report || !ref.error) continue;
      for (auto& also : report.also)
        if (also.report.get() == ref.report) {
          also.error = ref.error->message;
          also.report.reset();
        }
    }
  return {};
}

} // namespace

Expected<JudgeReport> run_judge(const JudgeOptions& opt, util::ProcessRunner& runner) {
  auto t0 = std::chrono::steady_clock::now();
  util::Progress progress(opt.progress);
  TEMPER_TRY_ASSIGN(core::Task task, core::load_task(opt.task_dir));
  if (opt.threads) task.config.threads = *opt.threads;

  std::vector<const core::Case*> cases;
  if (opt.case_ids.empty()) {
    for (const auto& c : task.cases) cases.push_back(&c);
  } else {
    for (int64_t id : opt.case_ids) {
      const core::Case* c = task.find_case(id);
      if (!c) return fail("task {} has no case {} (it has cases {}..{})", task.op.name, id, task.cases.front().id, task.cases.back().id);
      cases.push_back(c);
    }
  }
  if (cases.empty()) return fail("task {} has no cases", task.dir.string());

  std::error_code ec;
  const SealedRef* sealed_candidate = opt.sealed_candidate ? &*opt.sealed_candidate : nullptr;
  std::string source_text;
  if (!sealed_candidate) {
    if (!fs::is_regular_file(opt.candidate, ec)) return fail("candidate {} is not a file", opt.candidate.string());
    TEMPER_TRY_ASSIGN(source_text, util::read_file(opt.candidate));
  }
  BackendRequest backend_request{opt.backend, opt.compiler, opt.cuda_arch, opt.worker_exe, opt.pypto, &task.op};
  TEMPER_TRY_ASSIGN(const KernelBackend backend, prepare_backend(backend_request, runner));
  const fs::path& worker_exe = backend.worker_exe;
  // pypto: candidates are Python files run by temper's PyPTO runner; nothing is built for them,
  // so there are no artifacts to seal, profile or check as ELF (kernel_backend.h).
  const bool builds_kernels = backend.builds_kernels;
  if (!builds_kernels && (sealed_candidate || (opt.timing && opt.timing->sealed))) {
    return fail("sealed references hold compiled artifacts; the {} backend judges source files, so give the reference as a file",
                backend.name);
  }
  if (!builds_kernels && opt.profile) {
    return fail("--profile measures compiled kernels; the {} backend runs source files in its runner", backend.name);
  }
  if (!fs::is_regular_file(worker_exe, ec)) return fail("the worker binary {} is missing; rebuild temper", worker_exe.string());

  const int jobs = job_count(opt.jobs);
  const uint64_t job_seed = opt.seed ? *opt.seed : opt.fresh_seed ? random_seed() : machine_secret_seed();
  const int trials = std::max(3, opt.trials.value_or(task.config.trials));

  build::CompileCache cache(util::cache_root() / "compile", backend.compiler, runner);
  build::CompileCache host_cache(util::cache_root() / "compile", backend.host_compiler, runner); // goldens
  TEMPER_TRY_ASSIGN(build::CompilerIdentity compiler_id, build::identify_compiler(backend.compiler.program, runner));
  GoldenRunner golden(task, host_cache, runner, util::cache_root() / "golden");

  // 1. Build: the golden, the candidate and the reference (each once, or once per case when
  // its source asks to be specialized), all through the cache, in parallel.
  auto requests_for = [&](const fs::path& source, const std::string& text, const std::vector<std::string>& flags,
                          const std::string& what) {
    std::vector<build::CompileRequest> out;
    if (build::wants_specialization(text)) {
      for (const auto* c : cases) {
        build::CompileRequest r;
        r.source = source;
        r.flags = flags;
        r.defines = build::specialization_defines(task.op, *c);
        r.label = fmt::format("{} case {}", what, c->id);
        out.push_back(std::move(r));
      }
    } else {
      build::CompileRequest r;
      r.source = source;
      r.flags = flags;
      r.label = what;
      out.push_back(std::move(r));
    }
    return out;
  };
  const bool specialized = sealed_candidate ? sealed_candidate->specialized : builds_kernels && build::wants_specialization(source_text);
  std::vector<build::CompileRequest> reqs;
  if (!sealed_candidate && builds_kernels) reqs = requests_for(opt.candidate, source_text, {}, "candidate");
  const size_t candidate_builds = reqs.size();
  std::vector<std::string> reference_flags;
  std::string reference_text;
  std::optional<TorchReference> torch_ref; // --reference torch: no build, a Python worker
  const int torch_threads = opt.timing && opt.timing->torch_threads >= 0 ? opt.timing->torch_threads : task.config.threads;
  bool reference_specialized = false;
  if (opt.timing && opt.timing->sealed) {
    // A sealed reference was built once, under its own protocol: the candidate must match it.
    const SealedRef& sealed = *opt.timing->sealed;
    if (sealed.task != task.op.name) {
      return fail("the sealed reference '{}' was sealed for task {}, not {}", sealed.name, sealed.task, task.op.name);
    }
    if (sealed.flags != backend.compiler.flags || sealed.compiler_version != compiler_id.version) {
      return fail("refusing to compare measurements taken under different protocols: the sealed reference '{}' was built with "
                  "{} {} and the candidate with {} {}; judge with --compiler {} --flags \"{}\"",
                  sealed.name, sealed.compiler_version, fmt::join(sealed.flags, " "), compiler_id.version,
                  fmt::join(backend.compiler.flags, " "), sealed.compiler, fmt::join(sealed.flags, " "));
    }
    TEMPER_TRY(check_sealed_target(sealed, backend.compiler));
    reference_specialized = sealed.specialized;
  } else if (opt.timing && opt.timing->torch_reference) {
    if (backend.name != "cpu") return fail("--reference torch times PyTorch on the CPU: use it with the cpu backend");
    TEMPER_TRY_ASSIGN(torch_ref, prepare_torch_reference(task, torch_threads));
  } else if (opt.timing) {
    const fs::path& ref = opt.timing->reference;
    if (!fs::is_regular_file(ref, ec)) return fail("reference {} is not a file", ref.string());
    TEMPER_TRY_ASSIGN(std::string ref_text, util::read_file(ref));
    reference_flags = opt.timing->reference_flags.empty() ? backend.compiler.flags : opt.timing->reference_flags;
    // One protocol for both arms: the judge refuses to compare builds made differently.
    if (reference_flags != backend.compiler.flags) {
      return fail("refusing to compare measurements taken under different protocols: flags differ (reference: {}, candidate: {}); "
                  "build both the same way",
                  fmt::join(reference_flags, " "), fmt::join(backend.compiler.flags, " "));
    }
    reference_specialized = builds_kernels && build::wants_specialization(ref_text);
    if (builds_kernels) {
      auto ref_reqs = requests_for(ref, ref_text, reference_flags, "reference");
      reqs.insert(reqs.end(), ref_reqs.begin(), ref_reqs.end());
    } else {
      reference_text = ref_text;
    }
  }
  progress.status(fmt::format("compiling {} build(s) and the golden", reqs.size()));
  auto golden_ready = std::async(std::launch::async, [&] { return golden.prepare(); });
  std::atomic<int> compiled{0};
  auto all_builds = cache.compile_all(reqs, jobs, [&](const build::CompileResult& r) {
    progress.status(fmt::format("compiled {} ({}/{}){}", r.label, ++compiled, reqs.size(), r.cache_hit ? " [cached]" : ""));
  });
  TEMPER_TRY(golden_ready.get());
  for (auto& b : all_builds)
    if (!b) return tl::unexpected(b.error());
  std::vector<Expected<build::CompileResult>> builds(all_builds.begin(), all_builds.begin() + static_cast<long>(candidate_builds));
  if (sealed_candidate) {
    // A sealed reference judged as the candidate (`temper ref run|time`): its artifacts, trusted.
    for (const auto* c : cases) {
      TEMPER_TRY_ASSIGN(fs::path artifact, sealed_artifact(*sealed_candidate, c->id));
      build::CompileResult b;
      b.ok = true;
      b.cache_hit = true;
      b.artifact = artifact;
      b.key = sealed_candidate->content_hash;
      b.label = fmt::format("sealed {} case {}", sealed_candidate->name, c->id);
      builds.emplace_back(std::move(b));
      if (!specialized) break;
    }
  }
  std::vector<build::CompileResult> ref_builds;
  if (opt.timing && opt.timing->sealed) {
    // The sealed artifacts stand in for reference builds: the boundary check reads their
    // exports, the timing phase runs them. Their source stays in the vault.
    const SealedRef& sealed = *opt.timing->sealed;
    for (const auto* c : cases) {
      TEMPER_TRY_ASSIGN(fs::path artifact, sealed_artifact(sealed, c->id));
      build::CompileResult rb;
      rb.ok = true;
      rb.artifact = artifact;
      rb.key = sealed.content_hash;
      rb.label = fmt::format("sealed reference {} case {}", sealed.name, c->id);
      ref_builds.push_back(std::move(rb));
      if (!sealed.specialized) break;
    }
  }
  if (!builds_kernels) {
    // The source file itself is the artifact; its content hash stands for the build key.
    auto as_artifact = [](const fs::path& file, const std::string& text, const char* label) {
      build::CompileResult r;
      r.ok = true;
      r.artifact = fs::absolute(file);
      r.key = util::hash_hex(text);
      r.label = label;
      r.cache_hit = true;
      return r;
    };
    builds.emplace_back(as_artifact(opt.candidate, source_text, "candidate"));
    if (opt.timing) ref_builds.push_back(as_artifact(opt.timing->reference, reference_text, "reference"));
  }
  if (torch_ref) {
    // The PyTorch function's file stands for the reference's build; its key names the runner,
    // the environment and the thread count too.
    build::CompileResult r;
    r.ok = true;
    r.artifact = torch_ref->source;
    r.key = torch_ref->key;
    r.label = "PyTorch reference";
    r.cache_hit = true;
    ref_builds.push_back(std::move(r));
  }
  for (size_t k = candidate_builds; k < all_builds.size(); ++k) {
    if (!all_builds[k]->ok) {
      return fail("the reference {} does not compile:\n{}", opt.timing->reference.string(), all_builds[k]->diagnostics);
    }
    ref_builds.push_back(*all_builds[k]);
  }

  JudgeReport report;
  report.golden_compile_seconds = golden.compile_seconds();
  for (auto& b : builds) report.compile_seconds += b->cache_hit ? 0.0 : b->seconds;
  report.cases.resize(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    CaseResult& r = report.cases[i];
    const core::Case& c = *cases[i];
    const build::CompileResult& b = *builds[specialized ? i : 0];
    r.case_id = c.id;
    r.dtypes = c.dtypes;
    r.shapes = c.input_shapes;
    r.attrs = c.attrs;
    r.compile_seconds = b.seconds;
    r.compile_cache_hit = b.cache_hit;
    r.compile_diagnostics = b.diagnostics;
    attach_static_resources(backend, b, r);
    if (!b.ok) {
      r.status = CaseStatus::CompileError;
      auto first_line = b.diagnostics.find("error");
      r.message = first_line == std::string::npos ? "the compiler failed"
                                                  : b.diagnostics.substr(first_line, b.diagnostics.find('\n', first_line) - first_line);
    }
  }

  // 1b. Boundary checks, before any candidate code runs (boundary_phase.h). A sealed reference
  // is trusted: it passed them, or was written by whoever owns the task, when it was sealed.
  // They read ELF artifacts; a PyPTO candidate has none (docs/pypto.md says what that leaves open).
  if (!sealed_candidate && builds_kernels) {
    std::vector<fs::path> protected_refs;
    std::vector<fs::path> protected_dirs;
    if (opt.timing && opt.timing->sealed) protected_dirs.push_back(opt.timing->sealed->dir);
    else if (torch_ref) protected_refs.push_back(torch_ref->source);
    else if (opt.timing) protected_refs.push_back(opt.timing->reference);
    std::vector<const build::CompileResult*> built;
    for (auto& b : builds) built.push_back(&*b);
    // The PyTorch reference has no shared object whose exports a candidate could bind to.
    const std::vector<build::CompileResult> no_refs;
    TEMPER_TRY_ASSIGN(std::vector<BoundaryVerdict> verdicts,
                      check_boundary(task, opt.candidate, protected_refs, protected_dirs, built, torch_ref ? no_refs : ref_builds,
                                                   *cases.front(), cache, backend.name));
    for (size_t i = 0; i < cases.size(); ++i) {
      CaseResult& r = report.cases[i];
      const BoundaryVerdict& v = verdicts[specialized ? i : 0];
      if ((r.status != CaseStatus::Passed && r.status != CaseStatus::CompileError) || v.ok()) continue;
      r.status = CaseStatus::RejectedCheat;
      r.reason_code = v.reason_code();
      r.message = v.message();
    }
  }
  // 1c. A backend that cannot run here (CUDA without a GPU) ends the job after the static
  // checks: every case that got this far says why, and nothing else runs.
  if (backend.unsupported) {
    for (auto& r : report.cases) {
      if (r.status != CaseStatus::Passed) continue;
      r.status = CaseStatus::Unsupported;
      r.message = *backend.unsupported;
    }
  }

  // 2. Golden outputs of every trial of every case, before any candidate code is loaded. They
  // land in the on-disk cache, which the checks below read back; cached ones are not read here
  // (reading them twice cost a third of a warm run).
  std::vector<GoldenOutput> output_names;
  for (const auto& o : task.op.outputs) {
    output_names.emplace_back();
    output_names.back().name = o.name;
  }
  // The same-precision run only where every comparison needs it; else a check computes it for
  // the output that asks (core::Comparison::wants_lowp).
  const bool low_precision = always_needs_low_precision(task, output_names);
  std::mutex err_mu;
  std::optional<Error> first_error;
  std::atomic<int> goldens_done{0};
  parallel_for(cases.size(), jobs, [&](size_t i) {
    CaseResult& r = report.cases[i];
    if (r.status != CaseStatus::Passed) return; // COMPILE_ERROR or REJECTED_CHEAT: nothing runs
    auto sets = golden.ensure_sets(
        *cases[i], trials, [&](int t) { return core::generate_inputs(task.op, *cases[i], job_seed, t); }, low_precision);
    if (!sets) {
      std::lock_guard lock(err_mu);
      if (!first_error) first_error = sets.error();
      return;
    }
    for (const GoldenResult& g : *sets) {
      r.golden_seconds += g.seconds;
      r.golden_cache_hits += g.cache_hit ? 1 : 0;
    }
    progress.status(fmt::format("golden outputs: case {} done ({}/{})", cases[i]->id, ++goldens_done, cases.size()));
  });
  if (first_error) return tl::unexpected(*first_error);

  // 3. Candidate checks, one fresh worker per case.
  CorrectnessConfig cc;
  cc.worker_exe = worker_exe;
  cc.worker_args = backend.worker_args;
  cc.worker_env = backend.worker_env;
  cc.device_profiles = backend.device_profiles;
  cc.threads = task.config.threads;
  cc.call_timeout = opt.call_timeout;
  cc.memory_limit_bytes = opt.memory_limit_bytes;
  cc.trials = trials;
  cc.job_seed = job_seed;
  cc.compared = opt.compared;
  std::atomic<int> checked{0};
  parallel_for(cases.size(), jobs, [&](size_t i) {
    CaseResult& r = report.cases[i];
    if (r.status != CaseStatus::Passed) return; // COMPILE_ERROR or REJECTED_CHEAT: nothing runs
    auto c0 = std::chrono::steady_clock::now();
    const build::CompileResult& b = *builds[specialized ? i : 0];
    Status s = check_case(task, *cases[i], b.artifact, golden, cc, r);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    if (!s) {
      std::lock_guard lock(err_mu);
      if (!first_error) first_error = s.error();
      return;
    }
    progress.status(fmt::format("checked case {}: {} ({}/{})", r.case_id, status_name(r.status), ++checked, cases.size()));
  });
  progress.finish();
  if (first_error) return tl::unexpected(*first_error);

  // 4. Timing against the reference, cases one at a time (never two measurements at once).
  if (opt.timing) {
    TimingConfig tc = make_timing_config(*opt.timing, task, backend.compiler, compiler_id, worker_exe, opt.call_timeout,
                                         opt.memory_limit_bytes);
    if (torch_ref) use_torch_reference(tc, *torch_ref, torch_threads, *opt.timing, task.config.threads);
    if (opt.timing->tier == "probe") tc.protocol.check_fraction = kProbeCheckFraction;
    tc.proved = opt.timing->proved;
    TEMPER_TRY(apply_backend_to_timing(backend, *opt.timing, torch_ref.has_value(), cache, tc, progress));
    TimingPhaseInput in;
    in.task = &task;
    in.cases = cases;
    in.job_seed = job_seed;
    in.reference_key = ref_builds.front().key;
    for (size_t i = 0; i < cases.size(); ++i) {
      in.candidate_artifacts.push_back(builds[specialized ? i : 0]->artifact);
      in.reference_artifacts.push_back(ref_builds[reference_specialized ? i : 0].artifact);
    }
    if (opt.timing->also_torch_threads.empty()) {
      TEMPER_TRY(run_timing_phase(in, *opt.timing, tc, golden, report, progress));
    } else {
      if (!builds_kernels || backend.name != "cpu") return fail("PyTorch arms beside the reference time a CPU kernel: use the cpu backend");
      const ReferenceArm primary{{}, tc.reference_command, tc.reference_forkserver, tc.reference_threads};
      TEMPER_TRY(run_timing_with_also({&task, &backend, &cache, &compiler_id, &opt}, in, tc, primary, torch_ref.has_value(), golden, report,
                                      progress));
    }
    progress.finish();
  }

  // 5. Metrics and mechanism expectations (judge/profile/profile_phase.h), cases one at a time.
  if (opt.profile) {
    profile::ProfilePhaseInput pin;
    pin.task = &task;
    pin.cases = cases;
    auto target = [&](const build::CompileResult& b, const build::CompileRequest& rq) {
      return profile::ProfileTarget{b.artifact, b.seconds, rq, opt.compiler};
    };
    for (size_t i = 0; i < cases.size(); ++i) {
      size_t k = specialized ? i : 0;
      pin.candidates.push_back(target(*builds[k], reqs[k]));
      if (opt.timing && !torch_ref) {
        size_t rk = reference_specialized ? i : 0;
        pin.references.push_back(target(ref_builds[rk], reqs[candidate_builds + rk]));
      }
    }
    pin.options.worker_exe = worker_exe;
    pin.options.call_timeout = opt.call_timeout;
    pin.options.memory_limit_bytes = opt.memory_limit_bytes;
    pin.options.job_seed = job_seed;
    TEMPER_TRY(profile::run_profile_phase(pin, *opt.profile, golden, report.cases, runner, progress));
    progress.finish();
  }

  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report.context = job_context({opt.temper_version, &backend.compiler, &compiler_id, specialized, job_seed, trials, &task,
                                 opt.call_timeout,
                                 sealed_candidate ? fs::path("sealed:" + sealed_candidate->name) : opt.candidate,
                                 sealed_candidate ? sealed_candidate->content_hash : util::hash_hex(source_text)});
  // What the workers' sandbox enforced (docs/security.md): a judgement made without Landlock says so.
  report.context["sandbox"] = nullptr;
  for (const auto& c : report.cases) {
    if (!c.sandbox.empty()) {
      report.context["sandbox"] = c.sandbox;
      break;
    }
  }
  if (opt.timing && opt.timing->sealed) {
    const SealedRef& s = *opt.timing->sealed;
    report.context["reference"] = {{"sealed", s.name}, {"content_hash", s.content_hash}, {"date", s.date}};
  }
  if (torch_ref) report.context["reference"] = torch_reference_context(report, torch_ref->source, torch_threads);
  report.context["backend"] = backend.facts;
  // Each further reference's report: the judgement's context, its own reference.
  for (JudgeReport::Also& also : report.also) {
    if (!also.report) continue;
    also.report->wall_seconds = report.wall_seconds;
    also.report->context = report.context;
    also.report->context["reference"] = torch_reference_context(*also.report, also.torch_function, also.torch_threads);
  }
  return report;
}

} // namespace temper::judge
