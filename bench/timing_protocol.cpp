// The timing benchmark: how often the judge's paired protocol (judge::time_case) gives a false
// verdict when both arms are the same artifact (A/A), how often it resolves a candidate that
// is exactly 3% slower (bench/kernels/swiglu_slower.cpp), how the field's common sequential
// protocol (10 warm-up calls, mean of 50, reference phase then candidate phase) does on the
// same two pairs with the same workers, flush and input rotation, and what a sample costs the
// judge beyond the kernel itself.
//
// All experiments run interleaved in one process (a seeded shuffle of every job), so slow
// drift of a shared machine falls on all of them alike. Goldens come from the compile/golden
// cache under $TEMPER_CACHE_DIR; job seeds are drawn from a small pool per case so that most
// jobs find their goldens cached (a golden per input set would otherwise cost about as much
// as the measurement). Usage: timing_protocol --help.
#include "backend/arena.h"
#include "backend/worker.h"
#include "build/compile_cache.h"
#include "build/compiler.h"
#include "core/inputs.h"
#include "core/task_loader.h"
#include "judge/golden.h"
#include "judge/stats.h"
#include "judge/timing.h"
#include "util/fs.h"
#include "util/host.h"
#include "util/process.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#ifndef TEMPER_BENCH_WORKER_EXE
#define TEMPER_BENCH_WORKER_EXE ""
#endif
#ifndef TEMPER_BENCH_SOURCE_DIR
#define TEMPER_BENCH_SOURCE_DIR "."
#endif

namespace temper::bench {

namespace fs = std::filesystem;
using judge::Verdict;

struct Options {
  fs::path task_dir = fs::path(TEMPER_BENCH_SOURCE_DIR) / "tasks/swi_glu";
  fs::path reference;       // default: <task>/reference.cpp
  fs::path slower = fs::path(TEMPER_BENCH_SOURCE_DIR) / "bench/kernels/swiglu_slower.cpp";
  std::vector<int64_t> cases = {1, 2, 15, 18};
  int aa = 200;             // paired A/A judgements
  int slower_jobs = 100;    // paired judgements of the 3%-slower candidate
  int control = 0;          // paired judgements of the slower source built with 0% slowdown
  int variant_aa = 0;       // paired A/A judgements under the variant protocol (below)
  int variant_slower = 0;   // paired 3%-slower judgements under the variant protocol
  std::string variant_clock;  // the variant's clock (empty: the main protocol's)
  std::string variant_cpus;   // the variant's CPU set: "all", or a list such as 1 (empty: the main's)
  std::string clock;          // main protocol's clock (empty: the judge's default)
  std::string cpus;           // main protocol's CPU set: "all", or a list (empty: the judge's default)
  int lives = -1;             // main protocol's target lives (-1: the judge's default; 0: one life)
  int variant_lives = -1;     // the variant's (-1: the main protocol's)
  int life_warmup = -1;       // main protocol's unrecorded calls per arm after a renewal (-1: the judge's)
  int variant_life_warmup = -1; // the variant's (-1: the main protocol's)
  bool variant_asymmetric = false; // the variant leaves the reference's outputs unread (TimingConfig::symmetric_arms)
  std::string variant_content;     // the variant's MeasurementProtocol::content (fresh | pool; empty: the main's)
  std::string variant_idle_arm;    // the variant's MeasurementProtocol::idle_arm (frozen | running; empty: the main's)
  std::string decided;             // main protocol's MeasurementProtocol::stop_when_decided (on | off; empty: the judge's)
  std::string variant_decided;     // the variant's (empty: the main's)
  std::string decided_min_time;    // main protocol's StopRule::decided_waits_for_min_time (on | off; empty: the judge's)
  std::string variant_decided_min_time; // the variant's (empty: the main's)
  int decided_min_samples = -1;         // main protocol's StopRule::decided_min_samples (-1: the judge's; 0: min_samples)
  int variant_decided_min_samples = -1; // the variant's (-1: the main's)
  double variant_pool_cap_mb = -1;      // the variant's MeasurementProtocol::pool_cap_bytes in MiB (-1: the main's)
  std::string cold_step;           // main protocol's MeasurementProtocol::cold_step (empty: the judge's, evict)
  std::string variant_cold_step;   // the variant's (empty: the main's)
  int common_aa = 100;      // common-protocol runs, A/A
  int common_slower = 100;  // common-protocol runs, 3% slower
  int common_warmup = 10;
  int common_calls = 50;
  double cap_s = 2;
  int seed_pool = 8;        // job seeds per case
  std::vector<int64_t> overhead_cases = {3}; // extra A/A judgements on a large case, for overhead only
  int overhead_jobs = 2;
  double overhead_cap_s = 4;
  double max_minutes = 25;  // stop starting jobs after this
  uint64_t seed = 0;        // 0: random
  fs::path worker;
  fs::path out;             // summary JSON
  fs::path raw;             // one JSON line per job
  bool raw_samples = false; // the raw lines also carry every round's kernel times
};

// ---- Small statistics helpers -----------------------------------------------------------

double quantile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return judge::quantile_sorted(v, p);
}

nlohmann::json quantiles_json(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return {{"n", v.size()},
          {"min", quantile(v, 0)},
          {"p05", quantile(v, 0.05)},
          {"p25", quantile(v, 0.25)},
          {"median", quantile(v, 0.5)},
          {"p75", quantile(v, 0.75)},
          {"p90", quantile(v, 0.9)},
          {"p95", quantile(v, 0.95)},
          {"max", quantile(v, 1)}};
}

// P(X <= k) for X ~ Binomial(n, p).
double binom_cdf(int k, int n, double p) {
  if (k < 0) return 0;
  if (k >= n) return 1;
  if (p <= 0) return 1;
  if (p >= 1) return 0;
  double s = 0;
  for (int i = 0; i <= k; ++i) {
    double lg = std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0);
    s += std::exp(lg + i * std::log(p) + (n - i) * std::log1p(-p));
  }
  return std::min(s, 1.0);
}

// Clopper-Pearson 95% interval of a proportion k/n (exact, conservative).
std::pair<double, double> clopper_pearson(int k, int n) {
  if (n == 0) return {0, 1};
  auto solve = [&](auto pred) { // smallest p in [0,1] with pred(p) true; pred monotone
    double lo = 0, hi = 1;
    for (int i = 0; i < 60; ++i) {
      double mid = (lo + hi) / 2;
      (pred(mid) ? hi : lo) = mid;
    }
    return hi;
  };
  double lower = k == 0 ? 0 : solve([&](double p) { return 1 - binom_cdf(k - 1, n, p) >= 0.025; });
  double upper = k == n ? 1 : solve([&](double p) { return binom_cdf(k, n, p) <= 0.025; });
  return {lower, upper};
}

nlohmann::json proportion_json(int k, int n) {
  auto [lo, hi] = clopper_pearson(k, n);
  return {{"count", k}, {"n", n}, {"rate", n ? static_cast<double>(k) / n : NAN}, {"ci95", {lo, hi}}};
}

double load1() {
  std::ifstream in("/proc/loadavg");
  double l = NAN;
  in >> l;
  return l;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// ---- The common protocol ----------------------------------------------------------------

// One arm of the common protocol: a worker on its own arena with every input set, driven the
// way WorkerArm in judge/timing.cpp drives it (restore inputs, poison outputs, flush, run).
class CommonArm {
public:
  CommonArm(const std::vector<std::vector<core::HostTensor>>& sets, backend::SharedArena arena)
      : m_sets(sets), m_arena(std::move(arena)) {}

  Status start(const backend::WorkerOptions& options) {
    for (int s = 0; s < m_arena.layout().input_sets; ++s) restore(s);
    auto [w, loaded] = backend::Worker::start(options, m_arena);
    if (!loaded.ok()) return fail("worker does not load {}: {}", options.artifact.string(), loaded.message);
    m_worker = std::move(w);
    return {};
  }

  Expected<double> call(int set, bool cold) {
    restore(set);
    if (cold) {
      backend::CallResult f = m_worker->flush();
      if (!f.ok()) return fail("flush: {}", f.message);
    }
    backend::CallResult r = m_worker->run(set);
    if (!r.ok()) return fail("call: {}", r.message);
    return r.kernel_seconds;
  }

private:
  void restore(int set) {
    const auto& inputs = m_sets[static_cast<size_t>(set)];
    for (size_t k = 0; k < inputs.size(); ++k)
      std::memcpy(m_arena.input(set, k), inputs[k].buffer.data(), inputs[k].spec.bytes());
    const auto& outs = m_arena.layout().outputs;
    for (size_t k = 0; k < outs.size(); ++k) std::memset(m_arena.output(k), 0xFF, outs[k].bytes());
  }

  const std::vector<std::vector<core::HostTensor>>& m_sets;
  backend::SharedArena m_arena;
  std::unique_ptr<backend::Worker> m_worker;
};

struct CommonResult {
  double mean_ref = 0;
  double mean_cand = 0;
  double wall_seconds = 0;
};

// Reference phase (warm-up calls, then the mean of `calls` calls), then candidate phase, both
// workers alive throughout (as in time_case), same input rotation and cold-cache step.
Expected<CommonResult> run_common(const core::Task& task, const core::Case& c, const fs::path& ref_artifact,
                                  const fs::path& cand_artifact, judge::GoldenRunner& golden,
                                  const judge::TimingConfig& config, uint64_t seed, int warmup, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  const judge::MeasurementProtocol& p = config.protocol;
  size_t per_set = 0;
  for (const auto& spec : c.input_specs(task.op)) per_set += spec.bytes();
  const int nsets = judge::input_set_count(p, per_set);
  std::vector<std::vector<core::HostTensor>> sets;
  for (int s = 0; s < nsets; ++s) sets.push_back(core::generate_inputs(task.op, c, seed, s));
  TEMPER_TRY_ASSIGN(judge::GoldenResult g, golden.outputs(c, sets[0], judge::GoldenPrecision::Fp64));

  backend::ArenaLayout layout;
  for (const auto& in : sets[0]) layout.inputs.push_back(in.spec);
  for (const auto& o : g.outputs) layout.outputs.push_back(core::TensorSpec{o.name, o.dtype, o.shape});
  layout.input_sets = nsets;
  TEMPER_TRY_ASSIGN(backend::SharedArena ref_arena, backend::SharedArena::create(layout));
  TEMPER_TRY_ASSIGN(backend::SharedArena cand_arena, backend::SharedArena::create(layout));
  CommonArm ref(sets, std::move(ref_arena)), cand(sets, std::move(cand_arena));

  const bool cold = p.cache_mode == "cold";
  backend::WorkerOptions wo;
  wo.worker_exe = config.worker_exe;
  wo.threads = p.threads;
  wo.call_timeout = config.call_timeout;
  wo.memory_limit_bytes = config.memory_limit_bytes;
  wo.attrs = c.attrs;
  wo.flush_bytes = cold ? p.flush_bytes : 0;
  wo.cpus = p.cpus;
  backend::WorkerOptions ro = wo, co = wo;
  ro.artifact = ref_artifact;
  co.artifact = cand_artifact;
  TEMPER_TRY(ref.start(ro));
  TEMPER_TRY(cand.start(co));

  auto phase = [&](CommonArm& arm) -> Expected<double> {
    for (int i = 0; i < warmup; ++i) TEMPER_TRY(arm.call(i % nsets, cold));
    double sum = 0;
    for (int i = 0; i < calls; ++i) {
      TEMPER_TRY_ASSIGN(double k, arm.call(i % nsets, cold));
      sum += k;
    }
    return sum / calls;
  };
  CommonResult r;
  TEMPER_TRY_ASSIGN(r.mean_ref, phase(ref));
  TEMPER_TRY_ASSIGN(r.mean_cand, phase(cand));
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// ---- Jobs -------------------------------------------------------------------------------

enum class Kind { PairedAA, PairedSlower, PairedControl, VariantAA, VariantSlower, CommonAA, CommonSlower, OverheadAA };

const char* kind_name(Kind k) {
  switch (k) {
  case Kind::PairedAA: return "paired_aa";
  case Kind::PairedSlower: return "paired_slower";
  case Kind::PairedControl: return "paired_control";
  case Kind::VariantAA: return "variant_aa";
  case Kind::VariantSlower: return "variant_slower";
  case Kind::CommonAA: return "common_aa";
  case Kind::CommonSlower: return "common_slower";
  case Kind::OverheadAA: return "overhead_aa";
  }
  return "?";
}

struct Job {
  Kind kind;
  const core::Case* c;
  uint64_t seed;
};

struct PairedRecord {
  Verdict verdict;
  double speedup, lo, hi;
  int rounds;
  std::string stop;
};

struct Overhead { // per case and arm
  std::vector<double> kernel, rt_gap, call_gap, charged_gap, cpu_short;
};

int run(const Options& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  util::ProcessRunner& runner = util::default_process_runner();
  auto task_or = core::load_task(opt.task_dir);
  if (!task_or) {
    std::cerr << "timing_protocol: " << task_or.error().message << "\n";
    return 2;
  }
  const core::Task& task = *task_or;
  auto find = [&](int64_t id) -> const core::Case* {
    const core::Case* c = task.find_case(id);
    if (!c) {
      std::cerr << "timing_protocol: task has no case " << id << "\n";
      std::exit(2);
    }
    return c;
  };

  build::CompilerSpec compiler;
  build::CompileCache cache(util::cache_root() / "compile", compiler, runner);
  auto compiler_id = build::identify_compiler(compiler.program, runner);
  if (!compiler_id) {
    std::cerr << "timing_protocol: " << compiler_id.error().message << "\n";
    return 2;
  }
  auto compile = [&](const fs::path& source, std::vector<build::Define> defines, const std::string& label) -> fs::path {
    build::CompileRequest req;
    req.source = source;
    req.defines = std::move(defines);
    req.label = label;
    auto r = cache.compile(req);
    if (!r || !r->ok) {
      std::cerr << "timing_protocol: " << label << " does not compile: " << (r ? r->diagnostics : r.error().message) << "\n";
      std::exit(2);
    }
    std::cerr << fmt::format("{}: {} ({})\n", label, r->artifact.string(), r->cache_hit ? "cached" : fmt::format("{:.1f} s", r->seconds));
    return r->artifact;
  };
  const fs::path reference = opt.reference.empty() ? task.dir / "reference.cpp" : opt.reference;
  const fs::path ref_art = compile(reference, {}, "reference");
  const fs::path slow_art = compile(opt.slower, {}, "3%-slower candidate");
  const fs::path control_art = opt.control > 0 ? compile(opt.slower, {{"TEMPER_BENCH_SLOWDOWN", "0"}}, "0% control") : fs::path();

  judge::GoldenRunner golden(task, cache, runner, util::cache_root() / "golden");
  if (auto s = golden.prepare(); !s) {
    std::cerr << "timing_protocol: " << s.error().message << "\n";
    return 2;
  }

  judge::TimingConfig config;
  config.protocol.threads = task.config.threads;
  config.protocol.flush_bytes = judge::default_flush_bytes();
  config.protocol.compiler = compiler_id->version;
  config.protocol.flags = compiler.flags;
  config.protocol.rule.cap_s = opt.cap_s;
  config.worker_exe = opt.worker;
  // The judge's defaults (make_timing_config) unless overridden.
  auto cpus_from = [&](const std::string& text, std::vector<int> fallback) -> std::vector<int> {
    if (text.empty()) return fallback;
    if (text == "all") return {};
    std::vector<int> v;
    std::stringstream in(text);
    for (std::string x; std::getline(in, x, ',');) v.push_back(std::stoi(x));
    return v;
  };
  config.protocol.cpus = cpus_from(opt.cpus, judge::default_timing_cpus(config.protocol.threads));
  config.protocol.clock = opt.clock.empty() ? judge::default_timing_clock(config.protocol.threads) : opt.clock;
  if (opt.lives >= 0) config.protocol.rule.target_lives = opt.lives;
  if (opt.life_warmup >= 0) config.protocol.rule.life_warmup_calls = opt.life_warmup;
  if (!opt.decided.empty()) config.protocol.stop_when_decided = opt.decided == "on";
  if (!opt.decided_min_time.empty()) config.protocol.rule.decided_waits_for_min_time = opt.decided_min_time == "on";
  if (opt.decided_min_samples >= 0) config.protocol.rule.decided_min_samples = opt.decided_min_samples;
  config.protocol.cold_step = opt.cold_step.empty() ? "evict" : opt.cold_step;
  judge::TimingConfig overhead_config = config;
  overhead_config.protocol.rule.cap_s = opt.overhead_cap_s;
  judge::TimingConfig variant_config = config;
  variant_config.protocol.cpus = cpus_from(opt.variant_cpus, config.protocol.cpus);
  if (!opt.variant_clock.empty()) variant_config.protocol.clock = opt.variant_clock;
  if (opt.variant_lives >= 0) variant_config.protocol.rule.target_lives = opt.variant_lives;
  if (opt.variant_life_warmup >= 0) variant_config.protocol.rule.life_warmup_calls = opt.variant_life_warmup;
  if (opt.variant_asymmetric) variant_config.symmetric_arms = false;
  if (!opt.variant_content.empty()) variant_config.protocol.content = opt.variant_content;
  if (!opt.variant_idle_arm.empty()) variant_config.protocol.idle_arm = opt.variant_idle_arm;
  if (!opt.variant_decided.empty()) variant_config.protocol.stop_when_decided = opt.variant_decided == "on";
  if (!opt.variant_decided_min_time.empty())
    variant_config.protocol.rule.decided_waits_for_min_time = opt.variant_decided_min_time == "on";
  if (opt.variant_decided_min_samples >= 0) variant_config.protocol.rule.decided_min_samples = opt.variant_decided_min_samples;
  if (!opt.variant_cold_step.empty()) variant_config.protocol.cold_step = opt.variant_cold_step;
  if (opt.variant_pool_cap_mb > 0) variant_config.protocol.pool_cap_bytes = static_cast<size_t>(opt.variant_pool_cap_mb * 1048576.0);
  auto decided_text = [](const judge::MeasurementProtocol& p) {
    if (!p.stop_when_decided) return "off";
    return p.rule.decided_waits_for_min_time ? "on (after the minimum time)"
           : p.rule.decided_min_samples > 0  ? "on"
                                             : "on (after min_samples)";
  };
  std::cerr << fmt::format("protocol: clock {}, cpus [{}], lives {}, life warm-up {}, decided stop {}, cold step {}; variant: "
                           "clock {}, cpus [{}], lives {}, life warm-up {}, decided stop {}, cold step {}, reference outputs {}\n",
                           config.protocol.clock, fmt::join(config.protocol.cpus, ","), config.protocol.rule.target_lives,
                           config.protocol.rule.life_warmup_calls, decided_text(config.protocol),
                           config.protocol.cold_step, variant_config.protocol.clock, fmt::join(variant_config.protocol.cpus, ","),
                           variant_config.protocol.rule.target_lives, variant_config.protocol.rule.life_warmup_calls,
                           decided_text(variant_config.protocol), variant_config.protocol.cold_step,
                           variant_config.symmetric_arms ? "fingerprinted" : "unread");

  // Jobs: each kind round-robin over the cases, seeds from the case's pool; then one seeded
  // shuffle of everything so every kind is spread over the whole run.
  const uint64_t base = opt.seed ? opt.seed : std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  auto seed_for = [&](const core::Case& c, int j) {
    return mix(base ^ mix(static_cast<uint64_t>(c.id) * 1000003u + static_cast<uint64_t>(j % std::max(1, opt.seed_pool))));
  };
  std::vector<Job> jobs;
  auto add = [&](Kind k, int n, const std::vector<int64_t>& ids) {
    for (int j = 0; j < n; ++j) {
      const core::Case* c = find(ids[static_cast<size_t>(j) % ids.size()]);
      jobs.push_back({k, c, seed_for(*c, j / static_cast<int>(ids.size()))});
    }
  };
  add(Kind::PairedAA, opt.aa, opt.cases);
  add(Kind::PairedSlower, opt.slower_jobs, opt.cases);
  add(Kind::PairedControl, opt.control, opt.cases);
  add(Kind::VariantAA, opt.variant_aa, opt.cases);
  add(Kind::VariantSlower, opt.variant_slower, opt.cases);
  add(Kind::CommonAA, opt.common_aa, opt.cases);
  add(Kind::CommonSlower, opt.common_slower, opt.cases);
  if (!opt.overhead_cases.empty()) add(Kind::OverheadAA, opt.overhead_jobs * static_cast<int>(opt.overhead_cases.size()), opt.overhead_cases);
  std::mt19937_64 shuffle_rng(mix(base + 17));
  std::shuffle(jobs.begin(), jobs.end(), shuffle_rng);

  std::ofstream raw;
  if (!opt.raw.empty()) raw.open(opt.raw);

  std::map<Kind, std::vector<PairedRecord>> paired;
  std::map<Kind, std::vector<double>> common_diff; // mean_cand / mean_ref - 1
  std::map<Kind, std::vector<double>> paired_wall, common_wall;
  std::map<std::pair<int64_t, std::string>, Overhead> overhead; // (case, arm)
  std::map<int64_t, std::map<Kind, std::vector<PairedRecord>>> per_case;
  std::vector<double> loads;
  std::vector<int> gap_warnings; // per paired job: the candidate's gap count stood out
  const double l_start = load1();
  int done = 0, skipped = 0;
  for (const Job& job : jobs) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (elapsed > opt.max_minutes * 60) {
      ++skipped;
      continue;
    }
    const double l = load1();
    loads.push_back(l);
    nlohmann::json line = {{"kind", kind_name(job.kind)}, {"case", job.c->id}, {"seed_id", core::seed_id(job.seed)}, {"load1", l},
                           {"t", elapsed}};
    const bool is_common = job.kind == Kind::CommonAA || job.kind == Kind::CommonSlower;
    if (is_common) {
      const fs::path& cand = job.kind == Kind::CommonAA ? ref_art : slow_art;
      auto r = run_common(task, *job.c, ref_art, cand, golden, config, job.seed, opt.common_warmup, opt.common_calls);
      if (!r) {
        std::cerr << "timing_protocol: " << r.error().message << "\n";
        return 1;
      }
      const double d = r->mean_cand / r->mean_ref - 1;
      common_diff[job.kind].push_back(d);
      common_wall[job.kind].push_back(r->wall_seconds);
      line["mean_ref"] = r->mean_ref;
      line["mean_cand"] = r->mean_cand;
      line["diff"] = d;
      line["wall_s"] = r->wall_seconds;
      std::cerr << fmt::format("[{:4}/{}] {:14} case {:2}: diff {:+.2f}%  ({:.1f} s, load {:.2f})\n", done + 1, jobs.size(),
                               kind_name(job.kind), job.c->id, 100 * d, r->wall_seconds, l);
    } else {
      const bool slower = job.kind == Kind::PairedSlower || job.kind == Kind::VariantSlower;
      const fs::path& cand = slower ? slow_art : job.kind == Kind::PairedControl ? control_art : ref_art;
      const bool variant = job.kind == Kind::VariantAA || job.kind == Kind::VariantSlower;
      const judge::TimingConfig& cfg = job.kind == Kind::OverheadAA ? overhead_config : variant ? variant_config : config;
      auto t = judge::time_case(task, *job.c, ref_art, cand, golden, cfg, job.seed, std::nullopt, true);
      if (!t) {
        std::cerr << "timing_protocol: " << t.error().message << "\n";
        return 1;
      }
      const auto& e = t->paired.estimate;
      PairedRecord rec{t->verdict, e.speedup, e.speedup_lo, e.speedup_hi, t->paired.rounds,
                       std::string(judge::stop_reason_name(t->paired.stop_reason))};
      paired[job.kind].push_back(rec);
      per_case[job.c->id][job.kind].push_back(rec);
      paired_wall[job.kind].push_back(t->paired.wall_seconds);
      if (job.kind == Kind::PairedAA || job.kind == Kind::OverheadAA) {
        for (auto [arm, res] : {std::pair{"reference", &t->paired.reference}, std::pair{"candidate", &t->paired.candidate}}) {
          Overhead& o = overhead[{job.c->id, arm}];
          for (const auto& s : res->samples) {
            o.kernel.push_back(s.kernel_wall_seconds);
            o.rt_gap.push_back(s.round_trip_seconds - s.kernel_wall_seconds);
            o.call_gap.push_back(s.call_seconds - s.kernel_wall_seconds);
            o.charged_gap.push_back(s.charged_seconds - s.kernel_wall_seconds);
            o.cpu_short.push_back(s.kernel_wall_seconds - s.kernel_seconds);
          }
        }
      }
      line["status"] = judge::paired_status_name(t->paired.status);
      line["verdict"] = judge::verdict_name(t->verdict);
      line["speedup"] = e.speedup;
      line["ci"] = {e.speedup_lo, e.speedup_hi};
      line["rounds"] = t->paired.rounds;
      line["lives"] = t->paired.lives;
      line["life_rounds"] = t->paired.life_rounds;
      line["renew_s"] = t->paired.reference.renew_seconds + t->paired.candidate.renew_seconds;
      line["stop"] = rec.stop;
      line["input_sets"] = t->input_sets;
      line["ref_median_s"] = t->paired.reference.stats.median;
      line["cand_median_s"] = t->paired.candidate.stats.median;
      line["suspicious"] = t->paired.suspicious_samples;
      line["gap_warning"] = judge::gap_excess(t->paired);
      gap_warnings.push_back(judge::gap_excess(t->paired) ? 1 : 0);
      line["content"] = t->content;
      line["content_s"] = t->content_seconds;
      line["check_s"] = t->check_seconds;
      line["check_golden_s"] = t->golden_seconds;
      line["rechecks"] = t->rechecks;
      line["outside_cpu_ref_s"] = t->reference_activity.outside_call_cpu_seconds;
      line["outside_cpu_cand_s"] = t->candidate_activity.outside_call_cpu_seconds;
      {
        // The judge's own time per sample: each call's time in sample() beyond the kernel's.
        std::vector<double> own;
        for (const auto* res : {&t->paired.reference, &t->paired.candidate})
          for (const auto& x : res->samples) own.push_back(x.call_seconds - x.kernel_wall_seconds);
        std::sort(own.begin(), own.end());
        line["judge_per_sample_s"] = own.empty() ? 0.0 : own[own.size() / 2];
      }
      line["ref_spent_s"] = t->paired.reference.spent_seconds;
      line["ref_wall_s"] = t->paired.reference.wall_seconds;
      line["wall_s"] = t->paired.wall_seconds;
      if (opt.raw_samples) {
        std::vector<double> rk, ck;
        std::vector<int> ref_pos;
        for (const auto& x : t->paired.reference.samples) {
          rk.push_back(x.kernel_seconds);
          ref_pos.push_back(x.position);
        }
        std::vector<double> rw, cw;
        for (const auto& x : t->paired.candidate.samples) ck.push_back(x.kernel_seconds);
        for (const auto& x : t->paired.reference.samples) rw.push_back(x.kernel_wall_seconds);
        for (const auto& x : t->paired.candidate.samples) cw.push_back(x.kernel_wall_seconds);
        line["ref_kernel_s"] = rk;
        line["cand_kernel_s"] = ck;
        line["ref_wall_kernel_s"] = rw;
        line["cand_wall_kernel_s"] = cw;
        line["ref_position"] = ref_pos;
        std::vector<int> lives;
        for (const auto& x : t->paired.reference.samples) lives.push_back(x.life);
        line["life"] = lives;
      }
      std::cerr << fmt::format("[{:4}/{}] {:14} case {:2}: {:9} speedup {:.4f} [{:.4f}, {:.4f}] {:3} rounds {}  ({:.1f} s, load {:.2f})\n",
                               done + 1, jobs.size(), kind_name(job.kind), job.c->id, judge::verdict_name(t->verdict), e.speedup,
                               e.speedup_lo, e.speedup_hi, t->paired.rounds, rec.stop, t->paired.wall_seconds, l);
    }
    if (raw) raw << line.dump() << "\n" << std::flush;
    ++done;
  }

  // ---- Summary ----
  auto paired_json = [&](const std::vector<PairedRecord>& v, Verdict expected) {
    int counts[4] = {0, 0, 0, 0};
    std::vector<double> speedups, halfwidths, rounds;
    std::map<std::string, int> stops;
    for (const auto& r : v) {
      ++counts[static_cast<int>(r.verdict)];
      speedups.push_back(r.speedup);
      if (std::isfinite(r.lo) && std::isfinite(r.hi) && r.lo > 0) halfwidths.push_back((std::log(r.hi) - std::log(r.lo)) / 2);
      rounds.push_back(r.rounds);
      ++stops[r.stop];
    }
    const int n = static_cast<int>(v.size());
    nlohmann::json j = {{"n", n},
                        {"FASTER", counts[static_cast<int>(Verdict::Faster)]},
                        {"SLOWER", counts[static_cast<int>(Verdict::Slower)]},
                        {"SAME", counts[static_cast<int>(Verdict::Same)]},
                        {"AMBIGUOUS", counts[static_cast<int>(Verdict::Ambiguous)]},
                        {"speedup", quantiles_json(speedups)},
                        {"ci_half_width_log", quantiles_json(halfwidths)},
                        {"rounds", quantiles_json(rounds)},
                        {"stop_reasons", stops}};
    if (expected == Verdict::Same) {
      // A/A: the 95% interval should exclude a speedup of exactly 1 in at most ~5% of jobs.
      int excludes_one = 0;
      for (const auto& r : v) excludes_one += (r.lo > 1 || r.hi < 1) ? 1 : 0;
      j["ci_excludes_1"] = proportion_json(excludes_one, n);
      j["false_verdicts"] = proportion_json(counts[static_cast<int>(Verdict::Faster)] + counts[static_cast<int>(Verdict::Slower)], n);
    } else {
      j["detected"] = proportion_json(counts[static_cast<int>(expected)], n);
      j["wrong_direction"] = proportion_json(counts[static_cast<int>(Verdict::Faster)], n);
    }
    return j;
  };
  auto common_json = [&](const std::vector<double>& d) {
    int gt0 = 0, lt0 = 0, abs1 = 0, abs2 = 0, gt1 = 0, gt2 = 0;
    std::vector<double> pct;
    for (double x : d) {
      gt0 += x > 0;
      lt0 += x < 0;
      abs1 += std::fabs(x) > 0.01;
      abs2 += std::fabs(x) > 0.02;
      gt1 += x > 0.01;
      gt2 += x > 0.02;
      pct.push_back(100 * x);
    }
    const int n = static_cast<int>(d.size());
    return nlohmann::json{{"n", n},
                          {"called_slower", proportion_json(gt0, n)},
                          {"called_faster", proportion_json(lt0, n)},
                          {"abs_diff_over_1pct", proportion_json(abs1, n)},
                          {"abs_diff_over_2pct", proportion_json(abs2, n)},
                          {"slower_by_over_1pct", proportion_json(gt1, n)},
                          {"slower_by_over_2pct", proportion_json(gt2, n)},
                          {"diff_pct", quantiles_json(pct)}};
  };
  nlohmann::json summary;
  summary["benchmark"] = "timing_protocol";
  summary["date"] = utc_now();
  const auto& host = util::host_info();
  summary["host"] = {{"cpu_model", host.cpu_model}, {"logical_cpus", host.logical_cpus}, {"llc_bytes", host.llc_bytes}};
  summary["task"] = task.op.name;
  summary["cases"] = opt.cases;
  summary["seed_pool"] = opt.seed_pool;
  summary["protocol"] = config.protocol.to_json();
  summary["noise_floor"] = config.noise_floor;
  summary["common_protocol"] = {{"warmup_calls", opt.common_warmup}, {"calls", opt.common_calls}};
  summary["jobs_done"] = done;
  summary["jobs_skipped_for_time"] = skipped;
  summary["load1"] = {{"start", l_start}, {"end", load1()}, {"during", quantiles_json(loads)}};
  summary["wall_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  summary["paired_aa"] = paired_json(paired[Kind::PairedAA], Verdict::Same);
  summary["paired_aa"]["wall_s"] = quantiles_json(paired_wall[Kind::PairedAA]);
  summary["paired_slower"] = paired_json(paired[Kind::PairedSlower], Verdict::Slower);
  summary["paired_slower"]["wall_s"] = quantiles_json(paired_wall[Kind::PairedSlower]);
  if (opt.control > 0) summary["paired_control"] = paired_json(paired[Kind::PairedControl], Verdict::Same);
  if (opt.variant_aa > 0 || opt.variant_slower > 0) {
    summary["variant_protocol"] = variant_config.protocol.to_json();
    summary["variant_symmetric_arms"] = variant_config.symmetric_arms;
    summary["variant_aa"] = paired_json(paired[Kind::VariantAA], Verdict::Same);
    summary["variant_slower"] = paired_json(paired[Kind::VariantSlower], Verdict::Slower);
  }
  {
    int warned = 0, jobs_n = 0;
    for (int w : gap_warnings) warned += w, ++jobs_n;
    summary["gap_warnings"] = proportion_json(warned, jobs_n);
  }
  if (!paired[Kind::OverheadAA].empty()) summary["overhead_aa"] = paired_json(paired[Kind::OverheadAA], Verdict::Same);
  for (auto& [id, kinds] : per_case) {
    for (auto& [k, v] : kinds) {
      const bool slower = k == Kind::PairedSlower || k == Kind::VariantSlower;
      summary["per_case"][std::to_string(id)][kind_name(k)] = paired_json(v, slower ? Verdict::Slower : Verdict::Same);
    }
  }
  summary["common_aa"] = common_json(common_diff[Kind::CommonAA]);
  summary["common_aa"]["wall_s"] = quantiles_json(common_wall[Kind::CommonAA]);
  summary["common_slower"] = common_json(common_diff[Kind::CommonSlower]);
  summary["common_slower"]["wall_s"] = quantiles_json(common_wall[Kind::CommonSlower]);
  for (auto& [key, o] : overhead) {
    auto us = [](std::vector<double> v) {
      for (double& x : v) x *= 1e6;
      return quantiles_json(v);
    };
    summary["overhead"][std::to_string(key.first)][key.second] = {
        {"samples", o.kernel.size()},
        {"kernel_us", us(o.kernel)},
        {"round_trip_minus_kernel_us", us(o.rt_gap)},
        {"sample_call_minus_kernel_us", us(o.call_gap)},
        {"charged_minus_kernel_us", us(o.charged_gap)},
        {"wall_minus_cpu_kernel_us", us(o.cpu_short)}};
  }
  const std::string text = summary.dump(1) + "\n";
  if (!opt.out.empty()) {
    if (auto w = util::write_file_atomic(opt.out, text); !w) {
      std::cerr << "timing_protocol: " << w.error().message << "\n";
      return 1;
    }
    std::cerr << "summary: " << opt.out.string() << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}

} // namespace temper::bench

int main(int argc, char** argv) {
  temper::bench::Options opt;
  CLI::App app{"Timing benchmark of the judge: paired A/A false verdicts, sensitivity to a 3%-slower candidate, "
               "the common sequential protocol on the same pairs, per-sample overhead"};
  app.add_option("--task", opt.task_dir, "Task directory")->capture_default_str();
  app.add_option("--reference", opt.reference, "Reference source (default: <task>/reference.cpp)");
  app.add_option("--slower", opt.slower, "The 3%-slower candidate source")->capture_default_str();
  app.add_option("--cases", opt.cases, "Cases, round-robin")->delimiter(',')->capture_default_str();
  app.add_option("--aa", opt.aa, "Paired A/A judgements")->capture_default_str();
  app.add_option("--slower-jobs", opt.slower_jobs, "Paired judgements of the 3%-slower candidate")->capture_default_str();
  app.add_option("--control", opt.control, "Paired judgements of the slower source built with 0% slowdown")->capture_default_str();
  app.add_option("--lives", opt.lives, "Paired: target lives per job (0: one worker life; default: the judge's)");
  app.add_option("--variant-lives", opt.variant_lives, "Variant: target lives (default: the main protocol's)");
  app.add_option("--life-warmup", opt.life_warmup, "Paired: unrecorded calls per arm after each renewal (default: the judge's)");
  app.add_option("--variant-life-warmup", opt.variant_life_warmup, "Variant: calls after each renewal (default: the main protocol's)");
  app.add_option("--clock", opt.clock, "Paired: clock (monotonic, thread_cpu; default: the judge's)");
  app.add_option("--cpus", opt.cpus, "Paired and common: CPU set, 'all' or e.g. 1 (default: the judge's)");
  app.add_option("--variant-aa", opt.variant_aa, "Paired A/A judgements under the variant protocol")->capture_default_str();
  app.add_option("--variant-slower", opt.variant_slower, "Paired 3%-slower judgements under the variant protocol")->capture_default_str();
  app.add_option("--variant-clock", opt.variant_clock, "Variant: clock (default: the main protocol's)");
  app.add_flag("--variant-asymmetric", opt.variant_asymmetric,
               "Variant: leave the reference's outputs unread after its calls (the judge fingerprints both arms')");
  app.add_option("--variant-content", opt.variant_content, "Variant: values per call, fresh or pool (the protocol before fresh values)");
  app.add_option("--variant-idle-arm", opt.variant_idle_arm, "Variant: frozen or running (both workers run throughout)");
  app.add_option("--decided", opt.decided, "Paired: stop a job once its verdict is settled, on or off (default: the judge's, on)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--variant-decided", opt.variant_decided, "Variant: on or off (default: the main protocol's)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--decided-min-time", opt.decided_min_time,
                 "Paired: the decided rule also waits for the minimum kernel time, on or off (default: the judge's, off)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--variant-decided-min-time", opt.variant_decided_min_time, "Variant: on or off (default: the main protocol's)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--decided-min-samples", opt.decided_min_samples,
                 "Paired: rounds before the decided rule may stop a job (default: the judge's, 6; 0: --min-samples)");
  app.add_option("--variant-decided-min-samples", opt.variant_decided_min_samples, "Variant: the same (default: the main protocol's)");
  app.add_option("--cold-step", opt.cold_step, "Paired: cold-cache step, evict or buffer (default: the judge's, evict)")
      ->check(CLI::IsMember({"evict", "buffer"}));
  app.add_option("--variant-pool-cap-mb", opt.variant_pool_cap_mb,
                 "Variant: MiB of input sets per arm (the arena's rotation; default: the main protocol's)");
  app.add_option("--variant-cold-step", opt.variant_cold_step, "Variant: evict or buffer (default: the main protocol's)")
      ->check(CLI::IsMember({"evict", "buffer"}));
  app.add_option("--variant-cpus", opt.variant_cpus, "Variant: CPU set, 'all' or a list (default: the main protocol's)");
  app.add_option("--common-aa", opt.common_aa, "Common-protocol runs, A/A")->capture_default_str();
  app.add_option("--common-slower", opt.common_slower, "Common-protocol runs, 3% slower")->capture_default_str();
  app.add_option("--common-warmup", opt.common_warmup, "Common protocol: warm-up calls per arm")->capture_default_str();
  app.add_option("--common-calls", opt.common_calls, "Common protocol: timed calls per arm")->capture_default_str();
  app.add_option("--cap", opt.cap_s, "Paired: seconds per arm per judgement")->capture_default_str();
  app.add_option("--seed-pool", opt.seed_pool, "Job seeds per case (goldens are cached per seed)")->capture_default_str();
  app.add_option("--overhead-cases", opt.overhead_cases, "Extra A/A judgements on these cases, for the overhead figures")
      ->delimiter(',')->capture_default_str();
  app.add_option("--overhead-jobs", opt.overhead_jobs, "Judgements per overhead case")->capture_default_str();
  app.add_option("--overhead-cap", opt.overhead_cap_s, "Cap of the overhead judgements")->capture_default_str();
  app.add_option("--max-minutes", opt.max_minutes, "Start no job after this many minutes")->capture_default_str();
  app.add_option("--seed", opt.seed, "Base seed (default: random)");
  app.add_option("--worker", opt.worker, "temper-worker binary (default: $TEMPER_WORKER or the build's)");
  app.add_option("--out", opt.out, "Summary JSON (default: stdout)");
  app.add_option("--raw", opt.raw, "One JSON line per job");
  app.add_flag("--raw-samples", opt.raw_samples, "Raw lines carry every round's kernel times");
  CLI11_PARSE(app, argc, argv);
  if (opt.worker.empty()) {
    const char* w = std::getenv("TEMPER_WORKER");
    opt.worker = w && *w ? w : TEMPER_BENCH_WORKER_EXE;
  }
  if (opt.cases.empty()) {
    std::cerr << "timing_protocol: --cases is empty\n";
    return 2;
  }
  return temper::bench::run(opt);
}
