#include "judge/common.h"
#include "judge/timing.h"

#include "backend/arena.h"
#include "backend/worker.h"
#include "core/inputs.h"
#include "core/tolerance.h"
#include "judge/boundary.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/host.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <thread>

#include <pthread.h>
#include <sched.h>

namespace temper::judge {

namespace fs = std::filesystem;

nlohmann::json MeasurementProtocol::to_json() const {
  return {{"cache_mode", cache_mode},
          {"flush_bytes", flush_bytes},
          {"threads", threads},
          {"cpus", cpus},
          {"clock", clock},
          {"min_input_sets", min_input_sets},
          {"overhead_allowance_s", rule.overhead_allowance_s},
          {"wall_limit_factor", rule.wall_limit_factor},
          {"pool_cap_bytes", pool_cap_bytes},
          {"warmup_s", rule.warmup_s},
          {"min_samples", rule.min_samples},
          {"min_time_s", rule.min_time_s},
          {"target_half_width", rule.target_half_width},
          {"cap_s", rule.cap_s},
          {"max_samples", rule.max_samples},
          {"target_lives", rule.target_lives},
          {"min_lives", rule.min_lives},
          {"life_warmup_calls", rule.life_warmup_calls},
          {"compiler", compiler},
          {"flags", flags}};
}

std::optional<std::string> protocol_difference(const nlohmann::json& a, const nlohmann::json& b) {
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (!b.contains(it.key())) return fmt::format("{}: {} vs (absent)", it.key(), it.value().dump());
    if (b[it.key()] != it.value()) return fmt::format("{}: {} vs {}", it.key(), it.value().dump(), b[it.key()].dump());
  }
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!a.contains(it.key())) return fmt::format("{}: (absent) vs {}", it.key(), it.value().dump());
  }
  return std::nullopt;
}

size_t default_flush_bytes() {
  uint64_t llc = util::host_info().llc_bytes;
  return llc > 0 ? static_cast<size_t>(2 * llc) : size_t{256} << 20;
}

std::vector<int> default_timing_cpus(int threads) {
  if (threads != 1) return {};
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return {};
  for (int cpu = CPU_SETSIZE - 1; cpu >= 0; --cpu)
    if (CPU_ISSET(cpu, &set)) return {cpu};
  return {};
}

std::string default_timing_clock(int threads) {
  return std::string(threads == 1 ? kClockThreadCpu : kClockMonotonic);
}

Status validate_clock(const std::string& clock, int threads) {
  if (clock == kClockMonotonic) return {};
  if (clock == kClockThreadCpu) {
    if (threads != 1) return fail("the thread_cpu clock times single-threaded kernels only (this task uses {} threads)", threads);
    return {};
  }
  return fail("unknown clock '{}': use monotonic or thread_cpu", clock);
}

int input_set_count(const MeasurementProtocol& p, size_t bytes_per_set) {
  if (bytes_per_set == 0) return std::max(1, p.min_input_sets);
  size_t fit = p.pool_cap_bytes / bytes_per_set;
  return static_cast<int>(std::clamp<size_t>(fit, 1, static_cast<size_t>(std::max(1, p.min_input_sets))));
}

namespace {

uint64_t fingerprint(const backend::SharedArena& arena) {
  uint64_t h = 0;
  auto& a = const_cast<backend::SharedArena&>(arena);
  for (size_t k = 0; k < arena.layout().outputs.size(); ++k) {
    h = util::hash64(a.output(k), arena.layout().outputs[k].bytes(), h);
  }
  return h;
}

struct SetData {
  std::vector<core::HostTensor> inputs;
  GoldenResult golden;
  std::optional<GoldenResult> lowp;
};

// What the judge does with an arm's outputs after each timed call. The candidate's are
// rechecked; the reference's are fingerprinted the same way (a change is counted, never
// judged), so that the judge's work between calls is the same for both arms. When only the
// candidate's outputs were read, the same kernel in both arms timed 0.35% faster as the
// candidate on a quiet host (docs/benchmarks.md, 4.7 and 4.8).
enum class AfterCall { Nothing, Fingerprint, Recheck };

// One arm: a worker on its own arena holding every input set. Each sample restores the set's
// inputs, poisons the outputs, runs the cold-cache step, then times one call.
//
// The values rotate among the slots: the k-th visit to slot s holds the values of set
// (s + k) % sets, so the same address sees different values over a job and a cache keyed by
// input pointer returns another set's output. Both arms visit slots in the same order (paired.h),
// so they see the same values.
class WorkerArm final : public TimedArm {
public:
  WorkerArm(const core::Task& task, const std::vector<SetData>& sets, backend::SharedArena arena, bool cold,
            AfterCall after, bool cpu_clock)
      : m_task(task), m_sets(sets), m_arena(std::move(arena)), m_cold(cold), m_after(after), m_cpu_clock(cpu_clock) {}

  Expected<backend::CallResult> start(const backend::WorkerOptions& options) {
    m_options = options;
    m_visits.assign(static_cast<size_t>(m_arena.layout().input_sets), 0);
    for (int s = 0; s < m_arena.layout().input_sets; ++s) restore(s, s);
    auto [w, loaded] = backend::Worker::start(options, m_arena);
    if (loaded.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", loaded.message);
    m_worker = std::move(w);
    return loaded;
  }

  // A new life: a new process (code placement: its own address space layout) on a new arena
  // (data placement: new pages), the same kernel. The value rotation and the checked outputs'
  // fingerprints carry over, so verification and the rotation behave as in one life.
  bool renewable() const override { return true; }
  Status renew() override {
    m_worker.reset();
    // The new arena is mapped before the old one is released, so it cannot get the old pages back.
    TEMPER_TRY_ASSIGN(backend::SharedArena fresh, backend::SharedArena::create(m_arena.layout()));
    m_arena = std::move(fresh);
    const backend::ArenaLayout& layout = m_arena.layout();
    for (int s = 0; s < layout.input_sets; ++s) restore(s, s);
    auto [w, loaded] = backend::Worker::start(m_options, m_arena);
    if (loaded.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", loaded.message);
    if (!loaded.ok()) return fail("the kernel no longer loads in a new worker: {}", loaded.message);
    m_worker = std::move(w);
    return {};
  }

  // Restore, then the cold-cache step, then the call: nothing touches memory between the flush
  // and the timed call, and the judge's thread runs on the workers' CPU while it measures
  // (ScopedAffinity), so the flush also evicts what the restore left in that core's caches.
  Expected<TimedSample> sample(int set) override {
    const int sets = m_arena.layout().input_sets;
    const int values = (set + m_visits[static_cast<size_t>(set)]++) % sets;
    restore(set, values);
    TimedSample out;
    if (m_cold) {
      backend::CallResult f = m_worker->flush();
      if (f.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", f.message);
      if (!f.ok()) return failed(f);
    }
    backend::CallResult r = m_worker->run(set);
    if (r.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", r.message);
    if (!r.ok()) return failed(r);
    out.kernel_seconds = m_cpu_clock ? r.cpu_seconds : r.kernel_seconds;
    // The round-trip cross-check compares host times: with device time (the NPU profiler) the
    // runner's host wall time of the same call.
    out.kernel_wall_seconds = r.time_kind == "device" && r.wall_seconds > 0 ? r.wall_seconds : r.kernel_seconds;
    out.round_trip_seconds = r.round_trip_seconds;
    if (m_after != AfterCall::Nothing) {
      const util::SteadyClock clock;
      const double start = clock.now();
      std::string why;
      if (m_after == AfterCall::Recheck) why = verify(values);
      else note_fingerprint(values);
      out.judge_seconds = clock.now() - start;
      if (!why.empty()) {
        out.ok = false;
        out.message = why;
        m_behaviour_differs = true;
      }
    }
    return out;
  }

  int rechecks() const { return m_rechecks; }
  int fingerprint_changes() const { return m_fingerprint_changes; }
  bool behaviour_differs() const { return m_behaviour_differs; }
  const std::string& cheat_reason() const { return m_cheat_reason; } // stale_output, deferred_work or empty
  std::optional<backend::CallOutcome> failure() const { return m_failure; }
  const std::string& failure_reason() const { return m_failure_reason; }

private:
  void restore(int set, int values) {
    const auto& inputs = m_sets[static_cast<size_t>(values)].inputs;
    for (size_t k = 0; k < inputs.size(); ++k) std::memcpy(m_arena.input(set, k), inputs[k].buffer.data(), inputs[k].spec.bytes());
    const auto& outs = m_arena.layout().outputs;
    for (size_t k = 0; k < outs.size(); ++k) std::memset(m_arena.output(k), 0xFF, outs[k].bytes());
  }

  // Only a count: a reference may legitimately differ in its last bits from call to call.
  void note_fingerprint(int set) {
    const uint64_t fp = fingerprint(m_arena);
    auto [it, inserted] = m_known.try_emplace(set, fp);
    if (!inserted && it->second != fp) {
      ++m_fingerprint_changes;
      it->second = fp;
    }
  }

  TimedSample failed(const backend::CallResult& r) {
    m_failure = r.outcome;
    m_failure_reason = r.reason_code;
    TimedSample s;
    s.ok = false;
    s.message = r.message;
    return s;
  }

  // The first output of each set of values, and any output whose bytes differ from it, is
  // compared with the golden: identical bytes were already checked, different bytes must pass
  // again. The comparison reads a copy taken at once, and the output must not move after the
  // call returned (deferred_work); a failing output that is another set's checked output is a
  // cached result (stale_output).
  std::string verify(int set) {
    uint64_t fp = fingerprint(m_arena);
    auto it = m_known.find(set);
    if (it != m_known.end() && it->second == fp) return {};
    if (it != m_known.end()) ++m_fingerprint_changes;
    ++m_rechecks;
    std::vector<std::vector<unsigned char>> snap;
    for (size_t k = 0; k < m_arena.layout().outputs.size(); ++k) {
      snap.emplace_back(m_arena.output(k), m_arena.output(k) + m_arena.layout().outputs[k].bytes());
    }
    auto snap_fp = [&] {
      uint64_t h = 0;
      for (const auto& b : snap) h = util::hash64(b.data(), b.size(), h);
      return h;
    };
    auto deferred = [&] {
      m_cheat_reason = std::string(kDeferredWork);
      return fmt::format("a timed call's output (input set {}) changed after the call returned: the kernel left work to a thread", set);
    };
    if (snap_fp() != fp) return deferred();
    const SetData& d = m_sets[static_cast<size_t>(set)];
    std::string why;
    for (size_t k = 0; k < d.golden.outputs.size() && why.empty(); ++k) {
      const GoldenOutput& g = d.golden.outputs[k];
      const auto& spec = m_arena.layout().outputs[k];
      std::vector<double> got(static_cast<size_t>(spec.numel()));
      for (size_t i = 0; i < got.size(); ++i) got[i] = core::load_double(snap[k].data(), spec.dtype, i);
      core::OutputView view{g.dtype, g.shape, got.data(), g.values.data(), d.lowp ? d.lowp->outputs[k].values.data() : nullptr};
      core::Comparison cmp = core::compare_output(m_task.tolerance_for(g.name), view);
      if (!cmp.passed) why = fmt::format("a timed call's output '{}' (input set {}) fails the golden check: {}", g.name, set, cmp.reason);
    }
    if (fingerprint(m_arena) != fp) return deferred();
    if (why.empty()) {
      m_known[set] = fp;
      return {};
    }
    // Only a failing output is watched, so honest kernels never wait here.
    for (int waited = 0; waited < 100; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (fingerprint(m_arena) != fp) return deferred();
    }
    for (const auto& [other, other_fp] : m_known) {
      if (other == set || other_fp != fp) continue;
      m_cheat_reason = std::string(kStaleOutput);
      return why + fmt::format("; the output is byte for byte the checked output of input set {} (a cached result)", other);
    }
    return why;
  }

  const core::Task& m_task;
  const std::vector<SetData>& m_sets;
  backend::SharedArena m_arena;
  bool m_cold;
  AfterCall m_after;
  bool m_cpu_clock;
  std::unique_ptr<backend::Worker> m_worker;
  backend::WorkerOptions m_options;
  std::map<int, uint64_t> m_known;
  int m_rechecks = 0;
  int m_fingerprint_changes = 0;
  bool m_behaviour_differs = false;
  std::string m_cheat_reason;
  std::vector<int> m_visits; // per slot: samples taken there
  std::optional<backend::CallOutcome> m_failure;
  std::string m_failure_reason; // a runtime boundary check's reason code, if one stopped the arm
};

// Runs the calling thread on `cpus` while alive, then restores its affinity. Best effort: a CPU
// set the thread may not use leaves it where it was (the workers' own affinity is enforced).
class ScopedAffinity {
public:
  explicit ScopedAffinity(const std::vector<int>& cpus) {
    if (cpus.empty() || ::pthread_getaffinity_np(::pthread_self(), sizeof m_saved, &m_saved) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    m_active = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
  }
  ~ScopedAffinity() {
    if (m_active) ::pthread_setaffinity_np(::pthread_self(), sizeof m_saved, &m_saved);
  }
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;

private:
  cpu_set_t m_saved{};
  bool m_active = false;
};

} // namespace

Expected<CaseTiming> time_case(const core::Task& task, const core::Case& c, const fs::path& reference_artifact,
                               const fs::path& candidate_artifact, GoldenRunner& golden, const TimingConfig& config,
                               uint64_t job_seed, std::optional<double> calibrated_noise, bool reference_first_start) {
  CaseTiming out;
  out.seed = job_seed;
  const MeasurementProtocol& p = config.protocol;

  size_t per_set = 0;
  for (const auto& spec : c.input_specs(task.op)) per_set += spec.bytes();
  out.input_sets = input_set_count(p, per_set);

  // Inputs and goldens of every set, before either worker starts. Trials 0..K-1 of the job
  // seed: the correctness job's seed finds these goldens in the cache.
  std::vector<SetData> sets(static_cast<size_t>(out.input_sets));
  for (int s = 0; s < out.input_sets; ++s) {
    SetData& d = sets[static_cast<size_t>(s)];
    d.inputs = core::generate_inputs(task.op, c, job_seed, s);
    TEMPER_TRY_ASSIGN(d.golden, golden.outputs(c, d.inputs, GoldenPrecision::Fp64));
    if (needs_low_precision(task, d.golden.outputs)) {
      TEMPER_TRY_ASSIGN(d.lowp, golden.outputs(c, d.inputs, GoldenPrecision::LowPrecision));
    }
  }

  backend::ArenaLayout layout;
  for (const auto& in : sets[0].inputs) layout.inputs.push_back(in.spec);
  for (const auto& o : sets[0].golden.outputs) layout.outputs.push_back(core::TensorSpec{o.name, o.dtype, o.shape});
  layout.input_sets = out.input_sets;
  TEMPER_TRY_ASSIGN(backend::SharedArena ref_arena, backend::SharedArena::create(layout));
  TEMPER_TRY_ASSIGN(backend::SharedArena cand_arena, backend::SharedArena::create(layout));

  const bool cold = p.cache_mode == "cold";
  const std::string clock = p.clock.empty() ? default_timing_clock(p.threads) : p.clock;
  // A backend that times on its own clock (CUDA events, the PyPTO runner) names it in the
  // protocol and reports it as the kernel time; only the CPU clocks have rules to check.
  if (clock == kClockMonotonic || clock == kClockThreadCpu) TEMPER_TRY(validate_clock(clock, p.threads));
  const bool cpu_clock = clock == kClockThreadCpu;
  WorkerArm ref(task, sets, std::move(ref_arena), cold, config.symmetric_arms ? AfterCall::Fingerprint : AfterCall::Nothing,
                cpu_clock);
  WorkerArm cand(task, sets, std::move(cand_arena), cold, AfterCall::Recheck, cpu_clock);

  backend::WorkerOptions wo;
  wo.worker_exe = config.worker_exe;
  wo.worker_args = config.worker_args;
  wo.worker_env = config.worker_env;
  wo.device_profiles = config.device_profiles;
  wo.threads = p.threads;
  wo.call_timeout = config.call_timeout;
  wo.memory_limit_bytes = config.memory_limit_bytes;
  wo.attrs = c.attrs;
  wo.input_slots = c.slots;
  wo.flush_bytes = cold ? p.flush_bytes : 0;
  wo.cpus = p.cpus;
  backend::WorkerOptions ref_opts = wo, cand_opts = wo;
  ref_opts.artifact = reference_artifact;
  cand_opts.artifact = candidate_artifact;

  auto start_ref = [&]() -> Status {
    TEMPER_TRY_ASSIGN(backend::CallResult r, ref.start(ref_opts));
    if (!r.ok()) return fail("the reference does not load on case {}: {}", c.id, r.message);
    return {};
  };
  std::optional<backend::CallResult> cand_load;
  auto start_cand = [&]() -> Status {
    TEMPER_TRY_ASSIGN(backend::CallResult r, cand.start(cand_opts));
    cand_load = r;
    return {};
  };
  if (reference_first_start) {
    TEMPER_TRY(start_ref());
    TEMPER_TRY(start_cand());
  } else {
    TEMPER_TRY(start_cand());
    TEMPER_TRY(start_ref());
  }
  if (!cand_load->ok()) {
    out.paired.status = PairedStatus::ArmFailed;
    out.paired.failed_arm = Arm::Candidate;
    out.message = "the candidate does not load: " + cand_load->message;
    out.failure_status = cand_load->outcome == backend::CallOutcome::Crashed            ? CaseStatus::Crashed
                         : cand_load->outcome == backend::CallOutcome::SandboxViolation ? CaseStatus::RejectedCheat
                                                                                        : CaseStatus::RuntimeError;
    if (out.failure_status == CaseStatus::RejectedCheat) out.failure_reason_code = std::string(kForbiddenSyscall);
    return out;
  }

  util::SteadyClock steady;
  {
    ScopedAffinity pinned(p.cpus);
    out.paired = measure_paired(ref, cand, steady, p.rule, job_seed ^ static_cast<uint64_t>(c.id), out.input_sets,
                                config.cross_check);
  }
  out.rechecks = cand.rechecks();
  out.fingerprint_changes = cand.fingerprint_changes();
  out.reference_fingerprint_changes = ref.fingerprint_changes();
  out.behaviour_differs = cand.behaviour_differs();
  out.cheat_reason_code = cand.cheat_reason();
  if (out.paired.status == PairedStatus::ArmFailed) {
    if (out.paired.failed_arm == Arm::Reference) {
      return fail("the reference failed while timed on case {}: {}", c.id, out.paired.failure_message);
    }
    out.message = out.paired.failure_message;
    out.failure_status = out.behaviour_differs ? CaseStatus::IncorrectNumerical
                         : cand.failure() == backend::CallOutcome::Crashed ? CaseStatus::Crashed
                         : cand.failure() == backend::CallOutcome::TimedOut ? CaseStatus::Timeout
                         : cand.failure() == backend::CallOutcome::SandboxViolation ? CaseStatus::RejectedCheat
                                                                             : CaseStatus::RuntimeError;
    if (out.failure_status == CaseStatus::RejectedCheat) {
      out.failure_reason_code = cand.failure_reason().empty() ? std::string(kForbiddenSyscall) : cand.failure_reason();
    }
  }
  out.delta = noise_threshold(calibrated_noise, config.noise_floor);
  out.verdict = paired_verdict(out.paired, out.delta);
  return out;
}

} // namespace temper::judge
