#include "judge/profile/profiler.h"

#include "backend/arena.h"
#include "backend/worker.h"
#include "core/inputs.h"
#include "judge/judge.h"
#include "judge/profile/cache_sim.h"
#include "judge/profile/perf_counters.h"
#include "judge/profile/remarks.h"
#include "judge/profile/static_mix.h"
#include "judge/stats.h"
#include "judge/timing.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <cstring>
#include <unistd.h>

namespace temper::judge::profile {

namespace fs = std::filesystem;

namespace {

void restore_and_poison(backend::SharedArena& arena, const std::vector<core::HostTensor>& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k) std::memcpy(arena.input(0, k), inputs[k].buffer.data(), inputs[k].spec.bytes());
  const auto& outs = arena.layout().outputs;
  for (size_t k = 0; k < outs.size(); ++k) std::memset(arena.output(k), 0xFF, outs[k].bytes());
}

Status write_arena(const backend::SharedArena& arena, const fs::path& file) {
  std::string bytes(arena.size(), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pread(arena.fd(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) return fail("cannot read the arena back: {}", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return util::write_file_atomic(file, bytes);
}

// time.*, sw.*, hw.*: cold calls in a fresh worker.
void run_calls(const ProfileOptions& o, const backend::WorkerOptions& wo, backend::SharedArena& arena,
               const std::vector<core::HostTensor>& inputs, MetricSet& out) {
  auto [worker, loaded] = backend::Worker::start(wo, arena);
  std::string failure;
  if (!loaded.ok()) failure = fmt::format("the kernel could not be loaded: {}", loaded.message);
  std::vector<double> times;
  std::vector<std::pair<std::vector<std::optional<uint64_t>>, std::vector<std::optional<uint64_t>>>> readings;
  std::optional<ProcessCounters> counters;
  if (worker && loaded.ok()) {
    counters.emplace(worker->pid());
    for (int k = 0; k < o.calls; ++k) {
      restore_and_poison(arena, inputs);
      worker->flush();
      auto before = counters->read();
      backend::CallResult r = worker->run(0);
      auto after = counters->read();
      if (!r.ok()) {
        failure = fmt::format("the kernel failed while profiled ({}): {}", backend::call_outcome_name(r.outcome), r.message);
        break;
      }
      times.push_back(r.kernel_seconds * 1e6);
      readings.emplace_back(std::move(before), std::move(after));
    }
  }
  if (!failure.empty()) {
    for (const char* p : {"time.", "sw.", "hw."}) out.unsupported_prefix(p, failure);
    return;
  }
  ArmStats s = summarize(times);
  out.set("time.median_us", s.median);
  out.set("time.mean_us", s.mean);
  out.set("time.min_us", s.min);
  out.set("time.max_us", s.max);
  out.set("time.rel_spread", s.rel_spread);
  out.set("time.samples", s.n);
  out.attachments()["per_call"]["time.median_us"] = times;
  out.unsupported("time.speedup", "measured only by the judge's paired timing against a reference");
  counters->add_metrics(readings, out);
}

void run_cache_sim(const ProfileTarget& t, const ProfileOptions& o, backend::WorkerOptions wo, backend::SharedArena& arena,
                   const std::vector<core::HostTensor>& inputs, util::ProcessRunner& runner, MetricSet& out) {
  auto failed = [&](const std::string& why) { out.unsupported_prefix("cg.", why); };
  fs::path driver = o.driver_exe.empty() ? wo.worker_exe.parent_path() / "temper-profile-driver" : o.driver_exe;
  std::error_code ec;
  if (!fs::is_regular_file(driver, ec)) return failed(fmt::format("the driver {} is missing; rebuild temper", driver.string()));
  util::TempDir dir("temper-cachesim");
  restore_and_poison(arena, inputs);
  wo.artifact = fs::absolute(t.artifact, ec);
  auto load = backend::encoded_load_command(wo, arena);
  if (!load) return failed(load.error().message);
  if (auto w = util::write_file_atomic(dir.path() / "load.bin", *load); !w) return failed(w.error().message);
  if (auto w = write_arena(arena, dir.path() / "arena.bin"); !w) return failed(w.error().message);
  CacheSimRequest rq;
  rq.driver_exe = driver;
  rq.load_file = dir.path() / "load.bin";
  rq.arena_file = dir.path() / "arena.bin";
  rq.work_dir = dir.path();
  rq.timeout = o.cache_sim_timeout;
  auto run = run_cache_simulation(rq, runner);
  if (!run) return failed(run.error().message);
  add_cache_sim_metrics(run->totals, out);
  out.attachments()["cache_simulation"] = {{"tool", "valgrind --tool=callgrind --cache-sim=yes, one call"},
                                           {"caches", std::string(kCacheConfig)},
                                           {"sandbox", run->sandboxed ? "bubblewrap" : "none"}};
}

} // namespace

Expected<MetricSet> profile_artifact(const ProfileTarget& t, const core::Task& task, const core::Case& c, GoldenRunner& golden,
                                     const ProfileOptions& o, util::ProcessRunner& runner) {
  MetricSet out;
  std::error_code ec;
  if (!fs::is_regular_file(t.artifact, ec)) return fail("artifact {} is not a file", t.artifact.string());

  std::vector<core::HostTensor> inputs = core::generate_inputs(task.op, c, o.job_seed, 0);
  TEMPER_TRY_ASSIGN(GoldenResult gold, golden.outputs(c, inputs, GoldenPrecision::Fp64));
  backend::ArenaLayout layout;
  for (const auto& in : inputs) layout.inputs.push_back(in.spec);
  for (const auto& g : gold.outputs) layout.outputs.push_back(core::TensorSpec{g.name, g.dtype, g.shape});
  TEMPER_TRY_ASSIGN(backend::SharedArena arena, backend::SharedArena::create(layout));

  backend::WorkerOptions wo;
  wo.worker_exe = o.worker_exe.empty() ? default_worker_exe() : o.worker_exe;
  if (!fs::is_regular_file(wo.worker_exe, ec)) return fail("the worker binary {} is missing; rebuild temper", wo.worker_exe.string());
  wo.artifact = t.artifact;
  wo.threads = o.threads > 0 ? o.threads : task.config.threads;
  wo.call_timeout = o.call_timeout;
  wo.memory_limit_bytes = o.memory_limit_bytes;
  wo.attrs = c.attrs;
  wo.input_slots = c.slots;
  wo.flush_bytes = o.flush_bytes > 0 ? o.flush_bytes : default_flush_bytes();

  run_calls(o, wo, arena, inputs, out);
  out.attachments()["profile"] = {{"case", c.id},          {"calls", o.calls},     {"cache_mode", "cold"},
                                  {"flush_bytes", wo.flush_bytes}, {"threads", wo.threads},
                                  {"counters", "perf_event_open on the worker around each RUN (inherit: the kernel's threads count)"}};

  if (auto mix = analyze_artifact(t.artifact, runner)) add_static_metrics(*mix, out);
  else out.unsupported_prefix("static.", mix.error().message);

  if (t.compile_seconds) out.set("compile.seconds", *t.compile_seconds);
  else out.unsupported("compile.seconds", "a prebuilt artifact: its compile time is not known");
  if (t.source) {
    if (auto remarks = collect_remarks(t.compiler, *t.source, runner)) add_remarks(*remarks, out);
    else out.unsupported("compile.vectorized_loops", remarks.error().message);
  } else {
    out.unsupported("compile.vectorized_loops", "a prebuilt artifact: no source to ask the compiler about");
  }

  if (o.cachegrind) run_cache_sim(t, o, wo, arena, inputs, runner, out);
  else out.unsupported_prefix("cg.", "opt-in: pass --with cachegrind");
  out.unsupported_prefix("cuda.", "the CPU backend has no CUDA build");
  return out;
}

} // namespace temper::judge::profile
