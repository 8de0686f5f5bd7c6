#include "judge/boundary_phase.h"
#include "judge/common.h"
#include "judge/probe.h"
#include "judge/kernel_backend.h"

#include "build/compile_cache.h"
#include "core/inputs.h"
#include "core/task_loader.h"
#include "judge/correctness.h"
#include "judge/golden.h"
#include "judge/report.h"
#include "judge/timing_phase.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/host.h"
#include "util/progress.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <ctime>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace temper::judge {

namespace fs = std::filesystem;

// ---- Grid ----------------------------------------------------------------------------------

Expected<KnobAxis> parse_knob_axis(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail("--grid {}: expected NAME=v1,v2 ({})", text, why);
  };
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) return bad("no '='");
  KnobAxis axis;
  axis.name = std::string(text.substr(0, eq));
  if (axis.name.empty()) return bad("the name before '=' is empty");
  auto ident_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  if (std::isdigit(static_cast<unsigned char>(axis.name[0])) || !std::all_of(axis.name.begin(), axis.name.end(), ident_char)) {
    return bad(fmt::format("'{}' is not a macro name: letters, digits and _, not starting with a digit", axis.name));
  }
  // temper's own macros (per-case specialization) must keep their meaning in every variant.
  if (axis.name.starts_with("TEMPER_")) return bad("names starting with TEMPER_ are temper's own macros");
  std::string_view rest = text.substr(eq + 1);
  if (rest.empty()) return bad("no values after '='");
  std::set<std::string> seen;
  for (size_t start = 0;;) {
    size_t comma = rest.find(',', start);
    std::string value(rest.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (value.empty()) return bad("an empty value");
    if (std::any_of(value.begin(), value.end(), [](char ch) { return std::isspace(static_cast<unsigned char>(ch)); })) {
      return bad(fmt::format("value '{}' contains whitespace", value));
    }
    if (!seen.insert(value).second) return bad(fmt::format("value '{}' is listed twice", value));
    axis.values.push_back(std::move(value));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return axis;
}

Expected<std::vector<std::vector<build::Define>>> expand_grid(const std::vector<KnobAxis>& axes) {
  if (axes.empty()) return fail("no --grid given: a probe needs at least one knob, e.g. --grid TILE=32,64");
  std::set<std::string> names;
  double count = 1; // a double: the message must show the size even where it overflows an int
  std::vector<std::string> sizes;
  for (const auto& a : axes) {
    if (!names.insert(a.name).second) return fail("knob {} is given by two --grid options; list all its values in one", a.name);
    if (a.values.empty()) return fail("--grid {}: no values", a.name);
    count *= static_cast<double>(a.values.size());
    sizes.push_back(std::to_string(a.values.size()));
  }
  if (count > static_cast<double>(kMaxProbeVariants)) {
    return fail("the grid has {:.0f} variants ({}); a probe takes at most {}: give fewer values or fewer knobs", count,
                fmt::join(sizes, " x "), kMaxProbeVariants);
  }
  std::vector<std::vector<build::Define>> out(1);
  for (const auto& a : axes) {
    std::vector<std::vector<build::Define>> next;
    for (const auto& prefix : out) {
      for (const auto& v : a.values) {
        next.push_back(prefix);
        next.back().emplace_back(a.name, v);
      }
    }
    out = std::move(next);
  }
  return out;
}

Expected<std::vector<std::vector<build::Define>>> check_variants(const std::vector<build::KnobValues>& variants,
                                                                 std::string_view source, const core::ExprScope& case_scope) {
  if (variants.empty()) return fail("no variant given");
  if (variants.size() > kMaxProbeVariants) {
    return fail("{} variants given; a probe takes at most {}", variants.size(), kMaxProbeVariants);
  }
  TEMPER_TRY_ASSIGN(build::KnobSpace space, build::parse_knobs(source));
  if (space.empty()) return fail("the candidate declares no knobs (`// temper: knob NAME = D in {{...}}`), so it takes no variants");
  std::set<std::string> seen;
  std::vector<std::vector<build::Define>> out;
  for (const auto& given : variants) {
    build::KnobValues v = space.defaults();
    for (const auto& [name, value] : given) v[name] = value;
    if (auto ok = build::validate_values(space, given); !ok) return fail("variant {}: {}", build::knob_label(given), ok.error().message);
    const std::string label = build::knob_label(v);
    TEMPER_TRY_ASSIGN(bool valid, build::satisfies(space, v, &case_scope));
    if (!valid) return fail("variant {} breaks a knob-constraint of the kernel on this case", label);
    if (!seen.insert(label).second) return fail("variant {} is listed twice", label);
    out.push_back(build::knob_defines(v));
  }
  return out;
}

// ---- Variants and report -------------------------------------------------------------------

bool ProbeVariant::timed() const {
  return result.status == CaseStatus::Passed && result.timing && !result.timing->jobs.empty() &&
         result.timing->jobs.front().result.paired.status == PairedStatus::Measured;
}

std::string ProbeVariant::label() const {
  std::vector<std::string> parts;
  for (const auto& [name, value] : knobs) parts.push_back(name + "=" + value);
  return fmt::format("{}", fmt::join(parts, ","));
}

namespace {

const CaseTiming& first_job(const ProbeVariant& v) { return v.result.timing->jobs.front().result; }

} // namespace

bool ProbeVariant::behind() const { return timed() && first_job(*this).check_skipped; }

int ProbeReport::timed_count() const {
  return static_cast<int>(std::count_if(variants.begin(), variants.end(), [](const auto& v) { return v.timed(); }));
}

int ProbeReport::behind_count() const {
  return static_cast<int>(std::count_if(variants.begin(), variants.end(), [](const auto& v) { return v.behind(); }));
}

namespace {

// Timed variants fastest first (by the median speedup), then the rest in grid order.
void rank_variants(std::vector<ProbeVariant>& variants) {
  std::stable_sort(variants.begin(), variants.end(), [](const ProbeVariant& a, const ProbeVariant& b) {
    if (a.timed() != b.timed()) return a.timed();
    if (!a.timed()) return false;
    double sa = a.result.timing->speedup, sb = b.result.timing->speedup;
    if (std::isnan(sa) || std::isnan(sb)) return !std::isnan(sa) && std::isnan(sb);
    return sa > sb;
  });
  int rank = 0;
  for (auto& v : variants) v.rank = v.timed() ? ++rank : 0;
}

// How many variants share a timing job: at most the options' variants_per_job, and no more than
// a quarter of the memory available now holds arenas for (each arm maps one of its own, and a
// renewal maps a new one before it lets the old go). SwiGLU's case 4 maps 402 MB per arm.
size_t variants_per_job(const ProbeOptions& opt, const core::Task& task, const core::Case& c, const MeasurementProtocol& p,
                        GoldenRunner& golden) {
  const size_t wanted = static_cast<size_t>(std::max(opt.variants_per_job, 1));
  size_t per_set = 0;
  for (const auto& spec : c.input_specs(task.op)) per_set += spec.bytes();
  size_t arena = per_set * static_cast<size_t>(input_set_count(p, per_set));
  if (auto outputs = golden.output_specs(c)) {
    for (const auto& o : *outputs) arena += o.bytes();
  } else {
    arena += per_set;
  }
  const uint64_t available = util::available_memory_bytes();
  const uint64_t budget = available > 0 ? available / 4 : uint64_t{1} << 30;
  const size_t fit = static_cast<size_t>(budget / std::max<size_t>(arena, 1));
  return std::clamp<size_t>(fit > 1 ? fit - 1 : 1, 1, wanted); // the reference's arena too
}

std::string first_error_line(const std::string& diagnostics) {
  auto at = diagnostics.find("error");
  if (at == std::string::npos) return "the compiler failed";
  return diagnostics.substr(at, diagnostics.find('\n', at) - at);
}

} // namespace

Expected<ProbeReport> run_probe(const ProbeOptions& opt, util::ProcessRunner& runner) {
  auto t0 = std::chrono::steady_clock::now();
  util::Progress progress(opt.progress);
  TEMPER_TRY_ASSIGN(core::Task task, core::load_task(opt.task_dir));
  if (opt.threads) task.config.threads = *opt.threads;
  const core::Case* c = task.find_case(opt.case_id);
  if (!c) {
    return fail("task {} has no case {} (it has cases {}..{})", task.op.name, opt.case_id, task.cases.front().id,
                task.cases.back().id);
  }
  if (!opt.grid.empty() && !opt.variants.empty()) return fail("a probe takes a grid or a list of variants, not both");

  std::error_code ec;
  if (!fs::is_regular_file(opt.candidate, ec)) return fail("candidate {} is not a file", opt.candidate.string());
  TEMPER_TRY_ASSIGN(std::string source_text, util::read_file(opt.candidate));
  std::vector<std::vector<build::Define>> grid;
  if (opt.variants.empty()) {
    TEMPER_TRY_ASSIGN(grid, expand_grid(opt.grid));
  } else {
    TEMPER_TRY_ASSIGN(grid, check_variants(opt.variants, source_text, core::make_case_scope(task.op, *c)));
  }
  // A sealed reference (opt.timing.sealed) is used by its artifacts, as in the judge; its source
  // stays in the vault.
  const SealedRef* sealed = opt.timing.sealed ? &*opt.timing.sealed : nullptr;
  fs::path reference = opt.timing.reference;
  std::string ref_text;
  if (sealed) {
    if (sealed->task != task.op.name) {
      return fail("the sealed reference '{}' was sealed for task {}, not {}", sealed->name, sealed->task, task.op.name);
    }
  } else {
    if (reference.empty()) {
      auto it = task.config.reference.find(opt.backend);
      if (it == task.config.reference.end()) return fail("task {} names no {} reference: pass --reference FILE", task.op.name, opt.backend);
      reference = it->second;
    }
    if (!fs::is_regular_file(reference, ec)) return fail("reference {} is not a file", reference.string());
    TEMPER_TRY_ASSIGN(ref_text, util::read_file(reference));
  }
  if (opt.backend == "pypto") return fail("probes build knob variants: the pypto backend runs source files unbuilt");
  BackendRequest backend_request{opt.backend, opt.compiler, opt.cuda_arch, opt.worker_exe, {}, &task.op};
  TEMPER_TRY_ASSIGN(const KernelBackend backend, prepare_backend(backend_request, runner));
  const fs::path& worker_exe = backend.worker_exe;
  if (!fs::is_regular_file(worker_exe, ec)) return fail("the worker binary {} is missing; rebuild temper", worker_exe.string());
  const std::vector<std::string> reference_flags =
      sealed ? sealed->flags : opt.timing.reference_flags.empty() ? backend.compiler.flags : opt.timing.reference_flags;
  // One protocol for both arms, as in the judge: builds made differently are not compared.
  if (reference_flags != backend.compiler.flags) {
    return fail("refusing to compare measurements taken under different protocols: flags differ (reference: {}, candidate: {}); "
                "build both the same way",
                fmt::join(reference_flags, " "), fmt::join(backend.compiler.flags, " "));
  }
  if (sealed) TEMPER_TRY(check_sealed_target(*sealed, backend.compiler));

  const int jobs = job_count(opt.jobs);
  const uint64_t job_seed = opt.seed ? *opt.seed : opt.fresh_seed ? random_seed() : machine_secret_seed();
  const int trials = std::max(3, opt.trials);

  build::CompileCache cache(util::cache_root() / "compile", backend.compiler, runner);
  build::CompileCache host_cache(util::cache_root() / "compile", backend.host_compiler, runner); // the golden
  TEMPER_TRY_ASSIGN(build::CompilerIdentity compiler_id, build::identify_compiler(backend.compiler.program, runner));
  if (sealed && sealed->compiler_version != compiler_id.version) {
    return fail("refusing to compare measurements taken under different protocols: the sealed reference '{}' was built with {}, "
                "the candidate with {}",
                sealed->name, sealed->compiler_version, compiler_id.version);
  }
  GoldenRunner golden(task, host_cache, runner, util::cache_root() / "golden");

  // 1. Build every variant, the reference and the golden, through the cache, in parallel.
  std::vector<ProbeVariant> variants(grid.size());
  std::vector<build::CompileRequest> reqs;
  const bool specialized = build::wants_specialization(source_text);
  for (size_t i = 0; i < grid.size(); ++i) {
    variants[i].knobs = grid[i];
    build::CompileRequest r;
    r.source = opt.candidate;
    if (specialized) r.defines = build::specialization_defines(task.op, *c);
    r.defines.insert(r.defines.end(), grid[i].begin(), grid[i].end());
    r.label = "variant " + variants[i].label();
    reqs.push_back(std::move(r));
  }
  if (!sealed) {
    build::CompileRequest r;
    r.source = reference;
    r.flags = reference_flags;
    if (build::wants_specialization(ref_text)) r.defines = build::specialization_defines(task.op, *c);
    r.label = "reference";
    reqs.push_back(std::move(r));
  }
  progress.status(fmt::format("compiling {} variant(s), the reference and the golden", grid.size()));
  auto golden_ready = std::async(std::launch::async, [&] { return golden.prepare(); });
  std::atomic<int> compiled{0};
  auto builds = cache.compile_all(reqs, jobs, [&](const build::CompileResult& r) {
    progress.status(fmt::format("compiling {}/{}: {}{}", ++compiled, reqs.size(), r.label, r.cache_hit ? " [cached]" : ""));
  });
  TEMPER_TRY(golden_ready.get());
  for (auto& b : builds)
    if (!b) return tl::unexpected(b.error());
  build::CompileResult ref_build;
  if (sealed) {
    TEMPER_TRY_ASSIGN(ref_build.artifact, sealed_artifact(*sealed, c->id));
    ref_build.ok = true;
    ref_build.key = sealed->content_hash;
    ref_build.label = fmt::format("sealed reference {} case {}", sealed->name, c->id);
  } else {
    ref_build = *builds.back();
    if (!ref_build.ok) return fail("the reference {} does not compile:\n{}", reference.string(), ref_build.diagnostics);
  }

  for (size_t i = 0; i < variants.size(); ++i) {
    CaseResult& r = variants[i].result;
    const build::CompileResult& b = *builds[i];
    r.case_id = c->id;
    r.dtypes = c->dtypes;
    r.shapes = c->input_shapes;
    r.attrs = c->attrs;
    r.compile_seconds = b.seconds;
    r.compile_cache_hit = b.cache_hit;
    r.compile_diagnostics = b.diagnostics;
    if (!b.ok) {
      r.status = CaseStatus::CompileError;
      r.message = first_error_line(b.diagnostics);
    }
    attach_static_resources(backend, b, r);
  }
  // 1b. The boundary, as in judge: a variant that crosses it is rejected and never runs.
  {
    std::vector<const build::CompileResult*> variant_builds;
    for (size_t i = 0; i < variants.size(); ++i) variant_builds.push_back(&*builds[i]);
    TEMPER_TRY_ASSIGN(std::vector<BoundaryVerdict> verdicts,
                      check_boundary(task, opt.candidate, sealed ? std::vector<fs::path>{} : std::vector<fs::path>{reference},
                                     sealed ? std::vector<fs::path>{sealed->dir} : std::vector<fs::path>{}, variant_builds,
                                     {ref_build}, *c, cache, backend.name));
    for (size_t i = 0; i < variants.size(); ++i) {
      CaseResult& r = variants[i].result;
      if ((r.status != CaseStatus::Passed && r.status != CaseStatus::CompileError) || verdicts[i].ok()) continue;
      r.status = CaseStatus::RejectedCheat;
      r.reason_code = verdicts[i].reason_code();
      r.message = verdicts[i].message();
    }
  }
  // A backend that cannot run here (CUDA without a GPU): the builds and static checks above
  // are all a probe gives; every variant that got that far says why nothing ran.
  if (backend.unsupported) {
    for (auto& v : variants) {
      if (v.result.status != CaseStatus::Passed) continue;
      v.result.status = CaseStatus::Unsupported;
      v.result.message = *backend.unsupported;
    }
  }
  const bool any_built = std::any_of(variants.begin(), variants.end(),
                                     [](const ProbeVariant& v) { return v.result.status == CaseStatus::Passed; });

  // 2. Golden outputs of every trial, before any candidate code is loaded.
  if (any_built) {
    progress.status(fmt::format("golden outputs for case {}", c->id));
    for (int t = 0; t < trials; ++t) {
      auto inputs = core::generate_inputs(task.op, *c, job_seed, t);
      TEMPER_TRY_ASSIGN(GoldenResult g, golden.outputs(*c, inputs, GoldenPrecision::Fp64));
      if (always_needs_low_precision(task, g.outputs)) TEMPER_TRY(golden.outputs(*c, inputs, GoldenPrecision::LowPrecision));
    }
  }

  // 3. Correctness of every built variant, each in its own worker.
  CorrectnessConfig cc;
  cc.worker_exe = worker_exe;
  cc.worker_args = backend.worker_args;
  cc.worker_env = backend.worker_env;
  cc.threads = task.config.threads;
  cc.call_timeout = opt.call_timeout;
  cc.memory_limit_bytes = opt.memory_limit_bytes;
  cc.trials = trials;
  cc.job_seed = job_seed;
  cc.compared = opt.compared ? opt.compared : std::make_shared<ComparedOutputs>();
  std::mutex err_mu;
  std::optional<Error> first_error;
  std::atomic<int> checked{0};
  parallel_for(variants.size(), jobs, [&](size_t i) {
    CaseResult& r = variants[i].result;
    if (r.status != CaseStatus::Passed) return; // COMPILE_ERROR or REJECTED_CHEAT: nothing runs
    auto c0 = std::chrono::steady_clock::now();
    Status s = check_case(task, *c, builds[i]->artifact, golden, cc, r);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    if (!s) {
      std::lock_guard lock(err_mu);
      if (!first_error) first_error = s.error();
      return;
    }
    progress.status(fmt::format("checking {}/{}: {} {}", ++checked, variants.size(), variants[i].label(), status_name(r.status)));
  });
  progress.finish();
  if (first_error) return tl::unexpected(*first_error);

  // 4. Timing, one variant after another (never two measurements at once), every one against
  // the same reference build on the same inputs (the job seed), so their speedups compare.
  TimingConfig tc = make_timing_config(opt.timing, task, backend.compiler, compiler_id, worker_exe, opt.call_timeout,
                                       opt.memory_limit_bytes);
  tc.protocol.check_fraction = kProbeCheckFraction;
  if (any_built) TEMPER_TRY(apply_backend_to_timing(backend, opt.timing, false, cache, tc, progress));
  tc.protocol.stop_when_decided = false; // variants are ranked by their speedups
  TimingOptions to = opt.timing;
  to.reference = reference;
  to.tier = "probe";
  to.measure_jobs = 1;
  to.confirm_jobs = 0;
  to.calibrate = false;

  ProbeReport report;
  report.protocol = tc.protocol.to_json();
  report.timing_notes = {{"noise_floor", to.noise_floor}, {"calibration", "none"}};
  const int correct = static_cast<int>(std::count_if(variants.begin(), variants.end(), [](const ProbeVariant& v) {
    return v.result.status == CaseStatus::Passed;
  }));
  // The race: the lower end of the best interval a checked variant has shown so far. A variant
  // clearly behind it stops early and is not checked (TimingConfig::race_behind); the threshold
  // comes only from checked variants, so a kernel that is fast because it is wrong when timed
  // is caught before it can push honest variants out of the race.
  double race_best_lo = 0;
  report.timing_notes["race"] = opt.race;
  tc.race = opt.race;
  // Every variant's job runs on the same values (the job seed): an output one variant proved
  // proves the same bytes from another (most knobs move data and leave the arithmetic alone).
  tc.proved = opt.timing.proved ? opt.timing.proved : std::make_shared<ProvedOutputs>();
  // Variants share a job and the reference's calls in it, in groups in the order given, so the
  // likeliest winners go first and set the race's threshold for the rest.
  std::vector<size_t> timed;
  for (size_t i = 0; i < variants.size(); ++i)
    if (variants[i].result.status == CaseStatus::Passed) timed.push_back(i);
  const size_t per_job = timed.empty() ? 1 : variants_per_job(opt, task, *c, tc.protocol, golden);
  report.timing_notes["variants_per_job"] = per_job;
  for (size_t first = 0; first < timed.size(); first += per_job) {
    const size_t last = std::min(first + per_job, timed.size());
    std::vector<std::string> labels;
    for (size_t g = first; g < last; ++g) labels.push_back(variants[timed[g]].label());
    progress.line(last - first == 1 ? fmt::format("timing variant {}/{}: {}", first + 1, correct, labels.front())
                                    : fmt::format("timing variants {}-{}/{} in one job: {}", first + 1, last, correct,
                                                  fmt::join(labels, " | ")));
    tc.race_behind = opt.race ? race_best_lo : 0;
    // The judge's timing phase on one-case reports: its status folding (a timed output that
    // fails its recheck, TOO_SLOW, ...) and calibration lookup apply to probes unchanged.
    std::vector<JudgeReport> ones(last - first);
    std::vector<JudgeReport*> ptrs;
    TimingPhaseInput in;
    in.task = &task;
    in.cases = {c};
    in.reference_artifacts = {ref_build.artifact};
    in.reference_key = ref_build.key;
    in.job_seed = job_seed;
    for (size_t g = first; g < last; ++g) {
      JudgeReport& one = ones[g - first];
      one.cases.push_back(std::move(variants[timed[g]].result));
      in.candidate_artifacts.push_back(builds[timed[g]]->artifact);
      ptrs.push_back(&one);
    }
    Status s = run_shared_timing_phase(in, to, tc, golden, ptrs, progress, labels);
    for (size_t g = first; g < last; ++g) {
      JudgeReport& one = ones[g - first];
      ProbeVariant& v = variants[timed[g]];
      v.result = std::move(one.cases.front());
      if (!one.timing_overall.is_null()) report.timing_notes["calibration"] = one.timing_overall.value("calibration", "none");
      if (s && v.timed() && !first_job(v).check_skipped && first_job(v).paired.estimate.ci_determined)
        race_best_lo = std::max(race_best_lo, first_job(v).paired.estimate.speedup_lo);
    }
    if (!s) return tl::unexpected(s.error());
  }
  progress.finish();

  rank_variants(variants);
  report.variants = std::move(variants);
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : opt.grid) axes.push_back({{"name", a.name}, {"values", a.values}});
  report.context = job_context({opt.temper_version, &backend.compiler, &compiler_id, specialized, job_seed, trials, &task,
                                 opt.call_timeout, opt.candidate, util::hash_hex(source_text)});
  report.context["case"] = c->to_json();
  report.context["backend"] = backend.facts;
  report.context["reference"] = sealed ? nlohmann::json{{"sealed", sealed->name}, {"content_hash", sealed->content_hash}, {"date", sealed->date}}
                                       : nlohmann::json{{"path", reference.string()}, {"sha", util::hash_hex(ref_text)}, {"build_key", ref_build.key}};
  report.context["grid"] = axes;
  if (!opt.variants.empty()) {
    nlohmann::json listed = nlohmann::json::array();
    for (const auto& defines : grid) {
      nlohmann::json knobs = nlohmann::json::object();
      for (const auto& [name, value] : defines) knobs[name] = value;
      listed.push_back(knobs);
    }
    report.context["variants"] = listed;
  }
  return report;
}

// ---- Rendering -----------------------------------------------------------------------------

namespace {

nlohmann::json arm_summary(const ArmResult& a) {
  return {{"n", a.stats.n}, {"median_s", a.stats.median}, {"q1_s", a.stats.q1}, {"q3_s", a.stats.q3},
          {"min_s", a.stats.min}, {"rel_spread", a.stats.rel_spread}};
}

nlohmann::json variant_json(const ProbeVariant& v) {
  const CaseResult& r = v.result;
  nlohmann::json knobs = nlohmann::json::object();
  for (const auto& [name, value] : v.knobs) knobs[name] = value;
  nlohmann::json j = {
      {"rank", v.rank > 0 ? nlohmann::json(v.rank) : nlohmann::json()},
      {"label", v.label()},
      {"knobs", knobs},
      {"status", status_name(r.status)},
      {"compile", {{"seconds", r.compile_seconds}, {"cache_hit", r.compile_cache_hit}}},
      {"correctness", {{"trials", r.trials_run}, {"max_abs_error", json_number(r.max_abs)}, {"max_rel_error", json_number(r.max_rel)},
                       {"mismatches", r.mismatches}, {"nondeterministic", r.nondeterministic}, {"kernel_seconds", r.kernel_seconds},
                       {"comparisons_reused", r.comparisons_reused}}},
      {"timing", nullptr},
  };
  if (!r.message.empty()) j["message"] = r.message;
  if (!r.reason_code.empty()) j["reason_code"] = r.reason_code;
  if (r.status == CaseStatus::CompileError) j["compile"]["diagnostics"] = r.compile_diagnostics;
  if (!r.first_mismatches.empty()) {
    const auto& m = r.first_mismatches.front();
    j["correctness"]["first_mismatch"] = {{"output", m.output}, {"index", m.at.index}, {"got", json_number(m.at.got)},
                                          {"expected", json_number(m.at.expected)}};
  }
  if (r.timing && !r.timing->jobs.empty()) {
    const CaseTimingSummary& t = *r.timing;
    const CaseTiming& job = first_job(v);
    const PairedEstimate& e = job.paired.estimate;
    j["timing"] = {
        {"status", paired_status_name(job.paired.status)},
        {"verdict", verdict_name(t.verdict)},
        {"speedup", json_number(t.speedup)},
        {"ci", e.ci_determined ? nlohmann::json::array({e.speedup_lo, e.speedup_hi}) : nlohmann::json()},
        {"ci_level", e.confidence},
        {"noise_threshold", t.delta},
        {"calibrated", t.calibrated},
        {"seed_id", t.jobs.front().seed_id},
        {"rounds", job.paired.rounds},
        {"stop_reason", stop_reason_name(job.paired.stop_reason)},
        {"input_sets", job.input_sets},
        {"rechecks", job.rechecks},
        {"checked", !job.check_skipped},
        {"check_seconds", job.check_seconds},
        {"proved_by_identity", job.proved_by_identity},
        {"proved_by_reference", job.proved_by_reference},
        {"suspicious_samples", job.paired.suspicious_samples},
        {"candidate", arm_summary(job.paired.candidate)},
        {"reference", arm_summary(job.paired.reference)},
        {"wall_seconds", job.paired.wall_seconds},
    };
    if (t.roofline_fraction) j["timing"]["roofline_fraction"] = *t.roofline_fraction;
  }
  return j;
}

std::string seconds_text(double s) {
  if (!std::isfinite(s) || s <= 0) return "-";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

} // namespace

nlohmann::json probe_report_to_json(const ProbeReport& r) {
  std::map<std::string, int> counts;
  for (const auto& v : r.variants) counts[std::string(status_name(v.result.status))]++;
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : r.variants) variants.push_back(variant_json(v));
  const ProbeVariant* best = r.variants.empty() || !r.variants.front().timed() ? nullptr : &r.variants.front();
  return {
      {"schema_version", kReportSchemaVersion},
      {"kind", kProbeReportKind},
      {"context", r.context},
      {"protocol", r.protocol},
      {"timing", {{"tier", "probe"}, {"measurement_jobs", 1}, {"confirmation_jobs", 0},
                  {"noise_floor", r.timing_notes.value("noise_floor", kDefaultNoiseFloor)},
                  {"calibration", r.timing_notes.value("calibration", "none")},
                  {"race", r.timing_notes.value("race", false)},
                  {"variants_per_job", r.timing_notes.value("variants_per_job", 1)}}},
      {"summary", {{"variants", r.variants.size()}, {"timed", r.timed_count()}, {"behind", r.behind_count()}, {"status_counts", counts},
                   {"best", best ? nlohmann::json(best->label()) : nlohmann::json()}, {"wall_seconds", r.wall_seconds}}},
      {"variants", variants},
  };
}

void print_probe_table(const ProbeReport& r, std::ostream& out, bool color) {
  auto paint = [&](CaseStatus s, const std::string& text) {
    if (!color) return text;
    return fmt::format("{}{}\033[0m", s == CaseStatus::Passed ? "\033[32m" : "\033[31m", text);
  };
  size_t knob_w = 5;
  for (const auto& v : r.variants) knob_w = std::max(knob_w, v.label().size());
  knob_w = std::min<size_t>(knob_w, 48);
  out << fmt::format("{:>4}  {:<{}}  {:<20} {:>8} {:>17}  {:<10} {:>12}\n", "rank", "knobs", knob_w, "status", "speedup",
                     "95% interval", "verdict", "cand_median");
  for (const auto& v : r.variants) {
    std::string label = v.label();
    if (label.size() > knob_w) label = label.substr(0, knob_w - 3) + "...";
    std::string status(status_name(v.result.status));
    if (v.result.nondeterministic && v.result.status == CaseStatus::Passed) status += "*";
    out << fmt::format("{:>4}  {:<{}}  {}", v.rank > 0 ? std::to_string(v.rank) : "-", label, knob_w,
                       paint(v.result.status, v.timed() ? fmt::format("{:<20}", status) : status));
    if (v.timed()) {
      const CaseTimingSummary& t = *v.result.timing;
      const PairedEstimate& e = first_job(v).paired.estimate;
      std::string ci = e.ci_determined ? fmt::format("[{:>6.3f}, {:>6.3f}]", e.speedup_lo, e.speedup_hi) : "[undetermined]";
      out << fmt::format(" {:>8.3f} {:>17}  {:<10} {:>12}", t.speedup, ci, v.behind() ? "behind" : verdict_name(t.verdict),
                         seconds_text(first_job(v).paired.candidate.stats.median));
    }
    out << "\n";
  }
  bool any_note = false;
  for (const auto& v : r.variants) {
    if (v.result.message.empty() || v.timed()) continue;
    if (!any_note) out << "\n";
    any_note = true;
    std::string reason = v.result.reason_code.empty() ? "" : fmt::format(" [{}]", v.result.reason_code);
    out << fmt::format("{}: {}{}: {}\n", v.label(), status_name(v.result.status), reason, v.result.message);
  }
  const int timed = r.timed_count();
  std::string best;
  if (timed > 0) {
    const ProbeVariant& b = r.variants.front();
    best = fmt::format("; best {} (speedup {:.3f}, {})", b.label(), b.result.timing->speedup, verdict_name(b.result.timing->verdict));
  }
  out << fmt::format("\n{} of {} variants timed against the reference on case {} ({:.1f} s){}\n", timed, r.variants.size(),
                     r.context.contains("case") ? r.context["case"].value("case_id", int64_t{0}) : int64_t{0}, r.wall_seconds, best);
  if (const int behind = r.behind_count(); behind > 0) {
    out << fmt::format("{} variant(s) marked 'behind' stopped once clearly slower than a checked variant: their timed outputs "
                       "were not checked, so their speedups rank them and prove nothing (--no-race to time every variant in full)\n",
                       behind);
  }
}

} // namespace temper::judge
