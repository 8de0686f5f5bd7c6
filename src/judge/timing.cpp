#include "judge/common.h"
#include "judge/timing.h"

#include "backend/arena.h"
#include "backend/device_content.h"
#include "backend/worker.h"
#include "core/inputs.h"
#include "judge/output_check.h"
#include "core/tolerance.h"
#include "judge/boundary.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/host.h"
#include "util/streaming_copy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <pthread.h>
#include <sched.h>

namespace temper::judge {

namespace fs = std::filesystem;

nlohmann::json MeasurementProtocol::to_json() const {
  nlohmann::json j = {{"cache_mode", cache_mode},
          {"flush_bytes", flush_bytes},
          {"cold_step", cold_step},
          {"threads", threads},
          {"cpus", cpus},
          {"clock", clock},
          {"min_input_sets", min_input_sets},
          {"content", content},
          {"idle_arm", idle_arm},
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
          {"decided_confidence", stop_when_decided ? rule.decided_confidence : 0.0},
          {"compiler", compiler},
          {"flags", flags}};
  if (content_maker != "host") j["content_maker"] = content_maker;
  // Only the old rule is named, so protocols recorded before it (calibrations) still compare equal.
  if (stop_when_decided && rule.decided_waits_for_min_time) j["decided_waits_for_min_time"] = true;
  if (stop_when_decided && rule.decided_min_samples != StopRule{}.decided_min_samples)
    j["decided_min_samples"] = rule.decided_min_samples;
  return j;
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

Status validate_cold_step(const std::string& step) {
  if (step.empty() || step == "evict" || step == "buffer") return {};
  return fail("unknown cold-cache step '{}': use evict or buffer", step);
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

int check_sample_size(double fraction, double confidence) {
  if (!(fraction > 0 && fraction < 1) || !(confidence > 0 && confidence < 1)) return 0;
  return static_cast<int>(std::ceil(std::log(1 - confidence) / std::log(1 - fraction) - 1e-9));
}

int check_sample_size(double fraction, double confidence, int recorded, int unproven) {
  const int unbounded = check_sample_size(fraction, confidence);
  if (unbounded == 0 || recorded <= 0 || unproven <= 0) return 0;
  unproven = std::min(unproven, recorded);
  const int wrong = std::max(1, static_cast<int>(std::ceil(fraction * recorded - 1e-9)));
  if (wrong > unproven) return 0;
  double miss = 1;
  for (int n = 1; n <= unproven; ++n) {
    miss *= static_cast<double>(unproven - wrong - (n - 1)) / static_cast<double>(unproven - (n - 1));
    if (miss <= 1 - confidence + 1e-12) return std::min(n, unbounded);
  }
  return std::min(unproven, unbounded);
}

double work_outside_allowance(double kernel_seconds_total) { return 2e-3 + 0.02 * std::max(kernel_seconds_total, 0.0); }

namespace {

// The outputs' hash: on the host's hash, or on the device-content library's (the hash the
// worker computes on the device) when timed calls hash there.
uint64_t hash_buffers(const std::vector<std::pair<const unsigned char*, size_t>>& buffers, bool device_hash) {
  uint64_t h = 0;
  for (const auto& [p, n] : buffers) {
    h = device_hash ? backend::device_content::combine(h, backend::device_content::hash_bytes(p, n), n) : util::hash64(p, n, h);
  }
  return h;
}

uint64_t hash_outputs(const backend::SharedArena& arena, bool device_hash) {
  auto& a = const_cast<backend::SharedArena&>(arena);
  std::vector<std::pair<const unsigned char*, size_t>> buffers;
  for (size_t k = 0; k < arena.layout().outputs.size(); ++k) buffers.emplace_back(a.output(k), arena.layout().outputs[k].bytes());
  return hash_buffers(buffers, device_hash);
}

// The values of one call; their hash only where the sampled check needs it (copy_of).
struct CallValues {
  std::vector<core::HostTensor> inputs;
  uint64_t hash = 0;
};

// Runs the calling thread (and the threads it starts) on a CPU set while alive, then restores
// its affinity. Best effort: a set the thread may not use leaves it where it was (the workers'
// own affinity is enforced). The judge pins itself to the workers' CPUs while it measures, and
// widens back to every CPU it may use to generate a call's values between calls.
class ScopedAffinity {
public:
  explicit ScopedAffinity(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus)
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    apply(set);
  }
  explicit ScopedAffinity(const cpu_set_t& set) {
    if (CPU_COUNT(&set) > 0) apply(set);
  }
  ~ScopedAffinity() {
    if (m_active) ::pthread_setaffinity_np(::pthread_self(), sizeof m_saved, &m_saved);
  }
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;

private:
  void apply(const cpu_set_t& set) {
    if (::pthread_getaffinity_np(::pthread_self(), sizeof m_saved, &m_saved) != 0 || CPU_EQUAL(&m_saved, &set)) return;
    m_active = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
  }
  cpu_set_t m_saved{};
  bool m_active = false;
};

// The values of a job's calls, generated on demand from the job seed and the call's content id
// (paired.h), outside either arm's cap and wall clock. Both arms of a step ask for the same id
// one after the other: the last few are kept, and their buffers are refilled in place.
class ContentSource {
  static uint64_t case_key_of(const core::Operator& op, const core::Case& c) {
    const std::string text = op.name + '\n' + c.to_json().dump();
    return util::hash64(text.data(), text.size());
  }

public:
  // The two draws a device mixes (the arena's sets 0 and 1), as values ids no call uses.
  static constexpr int kDeviceDraw[2] = {1 << 30, (1 << 30) + 1};

  ContentSource(const core::Operator& op, const core::Case& c, uint64_t job_seed, bool fresh, int pool_sets, bool on_device)
      : m_op(op), m_case(c), m_fresh(fresh), m_pool_sets(std::max(pool_sets, 1)),
        // Apart from the correctness trials of the same seed: a timing job never repeats them.
        m_seed(core::derive_seed(job_seed, c.id, -1, -1)), m_job_seed(job_seed), m_on_device(on_device),
        m_case_key(case_key_of(op, c)) {
    m_slots.resize(static_cast<size_t>(fresh ? 2 : m_pool_sets));
    CPU_ZERO(&m_cpus);
    if (::pthread_getaffinity_np(::pthread_self(), sizeof m_cpus, &m_cpus) != 0) CPU_ZERO(&m_cpus);
  }

  // The values for content id `content`.
  const CallValues& get(int content) {
    const int values = m_fresh ? content : content % m_pool_sets;
    for (auto& slot : m_slots)
      if (slot.values == values && slot.filled) return slot.data;
    Slot& slot = *std::min_element(m_slots.begin(), m_slots.end(), [](const Slot& a, const Slot& b) { return a.used < b.used; });
    const util::SteadyClock clock;
    const double t0 = clock.now();
    {
      const ScopedAffinity wide(m_cpus);
      if (!slot.filled) slot.data.inputs = core::generate_inputs(m_op, m_case, m_seed, values);
      else core::regenerate_inputs(slot.data.inputs, m_case, m_seed, values);
    }
    slot.values = values;
    slot.filled = true;
    slot.used = ++m_tick;
    m_seconds += clock.now() - t0;
    return slot.data;
  }

  const std::vector<core::HostTensor>& any() { return get(0).inputs; }

  // The values of `content` in buffers of their own, with their hash (the sampled check holds
  // several at once). On the device, the two draws mixed under the call's seed, as the device
  // mixed them.
  CallValues copy_of(int content) {
    CallValues v;
    if (m_on_device) {
      // The draws stay in the two slots: nothing else is asked of the source on the device.
      const auto& a = get(kDeviceDraw[0]).inputs;
      const auto& b = get(kDeviceDraw[1]).inputs;
      const uint64_t seed = device_seed(content);
      for (size_t k = 0; k < b.size(); ++k) {
        auto& t = v.inputs.emplace_back(b[k].spec);
        backend::device_content::mix(t.buffer.data(), a[k].buffer.data(), b[k].buffer.data(), t.spec.bytes(),
                                     core::dtype_size(t.spec.dtype), seed);
      }
    } else {
      v = copy_of_values(m_fresh ? content : content % m_pool_sets);
    }
    set_hash(v);
    return v;
  }
  // copy_of into `v`, refilling its buffers in place when it held values of this case (a large
  // case's are hundreds of MB: fresh pages cost more than the values).
  void copy_into(int content, CallValues& v) {
    if (m_on_device || v.inputs.empty()) {
      v = copy_of(content);
      return;
    }
    const ScopedAffinity wide(m_cpus);
    core::regenerate_inputs(v.inputs, m_case, m_seed, m_fresh ? content : content % m_pool_sets);
    set_hash(v);
  }
  // Which values call `content` computes on, without making them: equal keys, equal values
  // (generation is a function of the job's content seed and the values' index; on the device,
  // of the call's mixing seed). A proof keyed on it needs no values generated (ProvedOutputs).
  uint64_t values_key(int content) const {
    const uint64_t parts[4] = {m_case_key, m_seed,
                               m_on_device ? device_seed(content) : static_cast<uint64_t>(m_fresh ? content : content % m_pool_sets),
                               m_on_device ? 1u : 0u};
    return util::hash64(parts, sizeof parts, 0x76616c756573ULL);
  }
  // The case as the values are generated for it (operator, shapes, dtypes, ranges, attributes).
  uint64_t case_key() const { return m_case_key; }
  // The seed a device mixes call `content`'s inputs under.
  uint64_t device_seed(int content) const { return backend::device_content::call_seed(m_job_seed, m_case.id, content); }
  bool on_device() const { return m_on_device; }
  double seconds() const { return m_seconds; }

private:
  static void set_hash(CallValues& v) {
    v.hash = 0;
    for (const auto& t : v.inputs) v.hash = util::hash64(t.buffer.data(), t.spec.bytes(), v.hash);
  }
  CallValues copy_of_values(int values) {
    CallValues v;
    v.inputs = core::generate_inputs(m_op, m_case, m_seed, values);
    return v;
  }

  struct Slot {
    CallValues data;
    int values = -1;
    bool filled = false;
    uint64_t used = 0;
  };
  const core::Operator& m_op;
  const core::Case& m_case;
  bool m_fresh;
  int m_pool_sets;
  uint64_t m_seed;
  uint64_t m_job_seed;
  bool m_on_device;
  uint64_t m_case_key;
  std::vector<Slot> m_slots;
  uint64_t m_tick = 0;
  double m_seconds = 0;
  cpu_set_t m_cpus; // the CPUs the judge may use, before it pins itself
};

// One timed call as the judge remembers it for the sampled check.
struct TimedCall {
  int content = 0;
  int slot = 0;
  uint64_t outputs_hash = 0;
};

// One arm: a worker on its own arena. Each sample takes the call's values, runs the cold-cache
// step, writes the values into the call's slot around the caches and poisons the outputs while
// the worker is frozen, then times one call and freezes the worker again. So the worker runs
// only during its own commands: never while the other arm is timed, and never while values it
// has not been called on sit in its arena.
class WorkerArm final : public TimedArm {
public:
  WorkerArm(ContentSource& content, backend::SharedArena arena, bool cold, bool hash_outputs, bool cpu_clock, bool freeze)
      : m_content(content), m_arena(std::move(arena)), m_cold(cold), m_hash(hash_outputs), m_cpu_clock(cpu_clock),
        m_freeze(freeze), m_device(content.on_device()) {}

  Expected<backend::CallResult> start(const backend::WorkerOptions& options) {
    m_options = options;
    write_draws();
    auto [w, loaded] = backend::Worker::start(options, m_arena);
    if (loaded.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", loaded.message);
    m_worker = std::move(w);
    if (loaded.ok()) idle();
    return loaded;
  }

  // A new life: a new process (code placement: its own address space layout) on a new arena
  // (data placement: new pages), the same kernel.
  bool renewable() const override { return true; }
  Status renew() override {
    m_worker.reset();
    // The new arena is mapped before the old one is released, so it cannot get the old pages back.
    TEMPER_TRY_ASSIGN(backend::SharedArena fresh, backend::SharedArena::create(m_arena.layout()));
    m_arena = std::move(fresh);
    write_draws();
    auto [w, loaded] = backend::Worker::start(m_options, m_arena);
    if (loaded.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", loaded.message);
    if (!loaded.ok()) return fail("the kernel no longer loads in a new worker: {}", loaded.message);
    m_worker = std::move(w);
    idle();
    return {};
  }

  // The cold-cache step, then the values written around the caches (the kernel finds them in
  // memory, and the judge's own thread, pinned to the workers' CPUs while it measures, leaves
  // nothing of them cached), then the call.
  Expected<TimedSample> sample(CallContent call) override {
    TimedSample out;
    const util::SteadyClock clock;
    double t = clock.now();
    const CallValues* values = m_device ? nullptr : &m_content.get(call.content);
    out.judge_seconds += clock.now() - t;
    if (m_cold) {
      const auto before = other_cpu();
      backend::CallResult f = m_worker->flush();
      if (f.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", f.message);
      if (!f.ok()) return failed(f);
      idle();
      add_outside(before, other_cpu());
    }
    if (values != nullptr) restore(call.input_set, *values);
    const auto before = other_cpu();
    backend::CallResult r = m_device ? m_worker->run(0, backend::DeviceCall{m_content.device_seed(call.content), false})
                                     : m_worker->run(call.input_set);
    if (r.outcome == backend::CallOutcome::HarnessError) return fail("worker: {}", r.message);
    if (!r.ok()) return failed(r);
    idle();
    // On the thread's CPU clock, what other threads did during the call is time the clock
    // does not see: it counts as work outside the call.
    if (m_cpu_clock) add_outside(before, other_cpu());
    ++m_activity.timed_calls;
    m_activity.max_threads = std::max(m_activity.max_threads, m_worker->thread_count());
    out.kernel_seconds = m_cpu_clock ? r.cpu_seconds : r.kernel_seconds;
    // The round-trip cross-check compares host times: with device time (the NPU profiler) the
    // runner's host wall time of the same call.
    out.kernel_wall_seconds = r.time_kind == "device" && r.wall_seconds > 0 ? r.wall_seconds : r.kernel_seconds;
    out.round_trip_seconds = r.round_trip_seconds;
    if (m_hash) {
      t = clock.now();
      if (m_device && !r.outputs_hash) return fail("worker: a device-content call came back without its outputs' hash");
      m_calls.push_back({call.content, call.input_set, m_device ? *r.outputs_hash : hash_outputs(m_arena, false)});
      out.judge_seconds += clock.now() - t;
    }
    return out;
  }

  // Runs the kernel once more, untimed, on `values` in `slot`, as a timed call runs (the
  // cold-cache step first), so that a re-run looks like any other call; the outputs stay in the
  // arena.
  backend::CallResult rerun(const CallValues& values, const TimedCall& call) {
    if (m_cold) {
      backend::CallResult f = m_worker->flush();
      if (!f.ok()) return f;
      idle();
    }
    if (!m_device) restore(call.slot, values);
    backend::CallResult r = m_device ? m_worker->run(0, backend::DeviceCall{m_content.device_seed(call.content), true})
                                     : m_worker->run(call.slot);
    if (r.ok()) idle();
    return r;
  }
  // The arena's outputs, on the hash the timed calls used.
  uint64_t outputs_hash() const { return hash_outputs(m_arena, m_device); }
  uint64_t hash_of(const std::vector<std::pair<const unsigned char*, size_t>>& buffers) const { return hash_buffers(buffers, m_device); }
  // Lets a frozen worker run for `ms` (a thread that finishes the outputs late shows itself).
  void run_briefly(int ms) {
    m_worker->thaw();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    idle();
  }

  backend::SharedArena& arena() { return m_arena; }
  std::string loaded_description() const { return m_worker ? m_worker->sandbox() : std::string(); }
  const std::vector<TimedCall>& calls() const { return m_calls; }
  const ArmActivity& activity() const { return m_activity; }
  std::optional<backend::CallOutcome> failure() const { return m_failure; }
  const std::string& failure_reason() const { return m_failure_reason; }

private:
  // Between its commands a worker is frozen (unless the protocol keeps both running).
  void idle() {
    if (m_freeze) m_worker->freeze();
  }

  std::optional<double> other_cpu() const { return m_worker ? m_worker->other_threads_cpu_seconds() : std::nullopt; }
  void add_outside(std::optional<double> before, std::optional<double> after) {
    if (before && after && *after > *before) m_activity.outside_call_cpu_seconds += *after - *before;
  }

  // Device content: the arena's sets 0 and 1 hold the two draws the worker uploads at LOAD.
  void write_draws() {
    if (!m_device) return;
    for (int d = 0; d < 2; ++d) {
      const auto& inputs = m_content.get(ContentSource::kDeviceDraw[d]).inputs;
      for (size_t k = 0; k < inputs.size(); ++k) std::memcpy(m_arena.input(d, k), inputs[k].buffer.data(), inputs[k].spec.bytes());
    }
  }

  void restore(int set, const CallValues& values) {
    const auto& inputs = values.inputs;
    for (size_t k = 0; k < inputs.size(); ++k) util::copy_streaming(m_arena.input(set, k), inputs[k].buffer.data(), inputs[k].spec.bytes());
    const auto& outs = m_arena.layout().outputs;
    for (size_t k = 0; k < outs.size(); ++k) util::fill_streaming(m_arena.output(k), 0xFF, outs[k].bytes());
  }

  TimedSample failed(const backend::CallResult& r) {
    m_failure = r.outcome;
    m_failure_reason = r.reason_code;
    TimedSample s;
    s.ok = false;
    s.message = r.message;
    return s;
  }

  ContentSource& m_content;
  backend::SharedArena m_arena;
  bool m_cold;
  bool m_hash;
  bool m_cpu_clock;
  bool m_freeze;
  bool m_device; // inputs made and outputs hashed on the device (ContentSource::on_device)
  std::unique_ptr<backend::Worker> m_worker;
  backend::WorkerOptions m_options;
  std::vector<TimedCall> m_calls;
  ArmActivity m_activity;
  std::optional<backend::CallOutcome> m_failure;
  std::string m_failure_reason; // a runtime boundary check's reason code, if one stopped the arm
};

// The sampled check of a job's timed calls (timing.h): a secret random sample of the
// candidate's recorded calls (the rounds; warm-ups count for nothing) is run again on the same
// values; each must give the bytes it gave when timed
// and pass the golden. A call is proved without a re-run when its inputs and outputs equal a
// checked call's (constant inputs repeat), or when its output is byte for byte the trusted
// reference's on the same values (the reference timed against itself, or a kernel that computes
// what it computes); neither counts towards the sample. The goldens of a batch of sampled calls
// run in parallel, one per core: the measurement is over, the cores are free. Fills the check's
// fields of `out`; errors are the harness's (a golden that fails).
Status check_timed_calls(const core::Task& task, const core::Case& c, WorkerArm& cand, const WorkerArm& ref,
                         ContentSource& content, GoldenRunner& golden, const MeasurementProtocol& p, uint64_t job_seed,
                         ProvedOutputs& checked, CaseTiming& out) {
  const util::SteadyClock clock;
  const double t0 = clock.now();
  const std::vector<TimedCall>& calls = cand.calls();
  // The hash of an output that was never written (the poison), and how often each output hash
  // occurs: a failing output that another call on other values also gave is a remembered result.
  const auto& layout = cand.arena().layout();
  std::vector<std::vector<unsigned char>> poisoned;
  std::vector<std::pair<const unsigned char*, size_t>> poison_buffers;
  for (const auto& o : layout.outputs) poisoned.emplace_back(o.bytes(), 0xFF);
  for (const auto& b : poisoned) poison_buffers.emplace_back(b.data(), b.size());
  const uint64_t poison = cand.hash_of(poison_buffers);
  poisoned.clear();
  std::map<uint64_t, std::vector<const TimedCall*>> by_output;
  for (const auto& call : calls) by_output[call.outputs_hash].push_back(&call);
  // Only on a failing call: the values of another call with the same output are generated
  // again to see whether they differ (inputs that are constant repeat).
  auto remembered = [&](const TimedCall& call, uint64_t values_hash) -> const TimedCall* {
    if (call.outputs_hash == poison) return nullptr;
    for (const TimedCall* other : by_output[call.outputs_hash])
      if (other->content != call.content && content.copy_of(other->content).hash != values_hash) return other;
    return nullptr;
  };
  std::map<int, uint64_t> reference_output; // content id -> the reference's output hash
  for (const auto& call : ref.calls()) reference_output[call.content] = call.outputs_hash;

  // The sample is drawn from the calls whose times the statistics use: the rounds. Warm-up calls
  // (the first, a renewal's, a second look) are timed but count for nothing, so what they
  // computed proves or disproves nothing about the speed reported; on slow calls they are half
  // of an arm's calls (a life of one round has one warm-up).
  std::vector<size_t> order;
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].content < kContentWarmupBase) order.push_back(i);
  // The job seed is secret, so is the sample: the kernel cannot tell which calls are checked.
  std::mt19937_64 rng(core::derive_seed(job_seed, c.id, -2, -2));
  std::shuffle(order.begin(), order.end(), rng);
  // How many calls the sample needs depends on how many are still unproven, so the proofs that
  // cost no values are found first, for every recorded call (the reference's output; a proof
  // found by generation key, an earlier job's on the same values). One found later by the
  // values' hash only makes the sample larger than it had to be.
  std::vector<size_t> unproven;
  for (size_t i : order) {
    const TimedCall& call = calls[i];
    if (auto it = reference_output.find(call.content); it != reference_output.end() && it->second == call.outputs_hash)
      ++out.proved_by_reference;
    else if (checked.contains(content.case_key(), content.values_key(call.content), call.outputs_hash))
      ++out.proved_by_identity;
    else
      unproven.push_back(i);
  }
  out.check_target = check_sample_size(p.check_fraction, p.check_confidence, static_cast<int>(order.size()),
                                       static_cast<int>(unproven.size()));
  order = std::move(unproven);
  auto differs = [&](std::string why, std::string_view reason = {}) {
    out.behaviour_differs = true;
    out.cheat_reason_code = std::string(reason);
    out.paired.status = PairedStatus::ArmFailed;
    out.paired.failed_arm = Arm::Candidate;
    out.paired.failure_message = why;
    out.message = std::move(why);
    out.check_seconds = clock.now() - t0;
    return Status{};
  };

  struct Sampled {
    const TimedCall* call = nullptr;
    uint64_t values_key = 0;
    CallValues values;
    Expected<GoldenRunner::Pair> golden = fail("not computed");
  };
  // Which precisions the comparison needs depends on the outputs' standards only.
  std::vector<GoldenOutput> output_names;
  for (const auto& o : layout.outputs) output_names.push_back(GoldenOutput{o.name, o.dtype, o.shape, {}});
  // The same-precision run where every comparison needs it; else only for an output that asks
  // (core::Comparison::wants_lowp: a passing kernel's outputs never do).
  const bool low_precision = always_needs_low_precision(task, output_names);
  // Once one call's outputs wanted it, the next ones will too (the same kernel on values drawn
  // alike): later batches compute it beside the fp64 golden, in parallel.
  bool lowp_wanted = false;
  // A batch's goldens run as one process per core (GoldenRunner::outputs_uncached_pairs): a
  // process start costs more than a small case's golden. Its values are held until checked, so
  // a batch is bounded by their bytes too (a large case's batch is a call per core).
  const size_t cores = static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency()));
  constexpr size_t kBatchBytes = size_t{256} << 20;
  size_t next = 0;
  // A checked call's outputs as it gave them, and widened: one set of buffers for the whole
  // check (a large case's are hundreds of MB, and fresh pages cost more than the copy).
  std::vector<std::vector<unsigned char>> snap;
  std::vector<std::vector<double>> vals;
  std::vector<CallValues> spare; // a checked batch's values, refilled for the next batch
  while (out.rechecks < out.check_target && next < order.size()) {
    // The next calls that need a re-run, up to a batch.
    std::vector<Sampled> batch;
    size_t batch_bytes = 0;
    while (next < order.size() && (batch.size() < cores || batch_bytes < kBatchBytes) &&
           out.rechecks + static_cast<int>(batch.size()) < out.check_target) {
      const TimedCall& call = calls[order[next++]];
      Sampled sm;
      sm.call = &call;
      sm.values_key = content.values_key(call.content);
      // Proved by a call checked since the first pass (constant inputs repeat).
      if (checked.contains(content.case_key(), sm.values_key, call.outputs_hash)) {
        ++out.proved_by_identity;
        continue;
      }
      if (!spare.empty()) {
        sm.values = std::move(spare.back());
        spare.pop_back();
      }
      content.copy_into(call.content, sm.values);
      if (checked.contains(content.case_key(), sm.values.hash, call.outputs_hash)) {
        ++out.proved_by_identity;
        spare.push_back(std::move(sm.values));
        continue;
      }
      for (const auto& t : sm.values.inputs) batch_bytes += t.spec.bytes();
      batch.push_back(std::move(sm));
    }
    if (batch.empty()) break;
    const double g0 = clock.now();
    {
      // Consecutive slices, one per core.
      const size_t slices = std::min(cores, batch.size());
      std::vector<std::thread> threads;
      for (size_t k = 0; k < slices; ++k) {
        const size_t begin = batch.size() * k / slices, end = batch.size() * (k + 1) / slices;
        threads.emplace_back([&c, &golden, &batch, begin, end, both = low_precision || lowp_wanted] {
          std::vector<const std::vector<core::HostTensor>*> sets;
          for (size_t i = begin; i < end; ++i) sets.push_back(&batch[i].values.inputs);
          auto pairs = golden.outputs_uncached_pairs(c, sets, both);
          for (size_t i = begin; i < end; ++i) {
            if (pairs) batch[i].golden = std::move((*pairs)[i - begin]);
            else batch[i].golden = tl::unexpected(pairs.error());
          }
        });
      }
      for (auto& t : threads) t.join();
    }
    out.golden_seconds += clock.now() - g0;
    for (auto& sm : batch) {
      const TimedCall& call = *sm.call;
      ++out.rechecks;
      if (!sm.golden) return tl::unexpected(sm.golden.error());
      backend::CallResult r = cand.rerun(sm.values, call);
      if (!r.ok()) return differs(fmt::format("a timed call's values, run again untimed, fail: {}", r.message));
      backend::SharedArena& arena = cand.arena();
      snap.resize(layout.outputs.size());
      for (size_t k = 0; k < layout.outputs.size(); ++k) snap[k].assign(arena.output(k), arena.output(k) + layout.outputs[k].bytes());
      std::vector<std::pair<const unsigned char*, size_t>> snap_buffers;
      for (const auto& b : snap) snap_buffers.emplace_back(b.data(), b.size());
      const uint64_t got = cand.hash_of(snap_buffers);
      // Fetched from the device, the outputs must be what the device hashed: else the library or
      // the copy is broken, and no output could be proved.
      if (r.outputs_hash && *r.outputs_hash != got)
        return fail("the outputs fetched from the device do not hash to what the device computed: the device-content library is broken");
      auto stale = [&] { return remembered(call, sm.values.hash) != nullptr; }; // failing calls only
      if (got != call.outputs_hash) {
        // Once more: a kernel that gives other bytes every time is nondeterministic, and then no
        // timed output can be matched to a checked one. Its measurement proves nothing, so it
        // gives no verdict (never a false one): the kernel is not accused, and a kernel that made
        // itself nondeterministic to hide what it does when timed gains nothing.
        backend::CallResult again = cand.rerun(sm.values, call);
        if (again.ok() && cand.outputs_hash() != got) {
          out.unprovable = true;
          out.message = "the candidate gives different bytes for the same values (nondeterministic), so its timed outputs "
                        "cannot be matched to checked ones: no speed verdict";
          out.check_seconds = clock.now() - t0;
          return {};
        }
        if (stale()) {
          return differs("a timed call's output is byte for byte the output of an earlier call on other values (a remembered "
                         "result); run again on its own values it gives other bytes",
                         kStaleOutput);
        }
        return differs("a timed call's output differs from the output the same values give when run again untimed: "
                       "the kernel computes differently when timed");
      }
      const GoldenResult& g = sm.golden->fp64;
      std::string why;
      vals.resize(g.outputs.size());
      for (size_t k = 0; k < g.outputs.size(); ++k) {
        const auto& spec = layout.outputs[k];
        vals[k].resize(static_cast<size_t>(spec.numel()));
        core::widen_to_double(snap[k].data(), spec.dtype, vals[k].size(), vals[k].data());
      }
      TEMPER_TRY_ASSIGN(std::vector<OutputCheck> checks,
                        check_outputs_lowp_on_demand(task, c, sm.values.inputs, g, sm.golden->lowp, vals, [&] {
                          lowp_wanted = true;
                          const double l0 = clock.now();
                          auto computed = golden.outputs_uncached(c, sm.values.inputs, GoldenPrecision::LowPrecision);
                          out.golden_seconds += clock.now() - l0;
                          return computed;
                        }));
      for (const OutputCheck& check : checks) {
        if (!check.cmp.passed && why.empty()) why = fmt::format("a timed call's output '{}' fails the golden check: {}", check.name, check.cmp.reason);
      }
      if (why.empty()) {
        checked.insert(content.case_key(), sm.values.hash, call.outputs_hash);
        checked.insert(content.case_key(), sm.values_key, call.outputs_hash);
        continue;
      }
      // Only a failing output is watched: a thread that finishes it late shows itself once the
      // worker may run again.
      cand.run_briefly(20);
      if (cand.outputs_hash() != got)
        return differs(why + "; the output changed after the call returned: the kernel left work to a thread", kDeferredWork);
      if (stale())
        return differs(why + "; the output is byte for byte the output of an earlier call on other values (a remembered result)",
                       kStaleOutput);
      return differs(why);
    }
    for (auto& sm : batch) spare.push_back(std::move(sm.values));
  }
  out.check_seconds = clock.now() - t0;
  return {};
}

} // namespace

namespace {

// What every arm of one job shares: the calls' values, the arenas' layout, the protocol's
// switches and the workers' options (a reference in a runner of its own aside).
struct JobSetup {
  std::unique_ptr<ContentSource> content;
  backend::ArenaLayout layout;
  int input_sets = 0;
  bool cold = false;
  bool cpu_clock = false;
  bool freeze = false;
  backend::WorkerOptions wo;
};

Expected<JobSetup> prepare_job(const core::Task& task, const core::Case& c, GoldenRunner& golden, const TimingConfig& config,
                               uint64_t job_seed) {
  const MeasurementProtocol& p = config.protocol;
  if (p.content != "fresh" && p.content != "pool") return fail("unknown content '{}': use fresh or pool", p.content);
  if (p.idle_arm != "frozen" && p.idle_arm != "running") return fail("unknown idle_arm '{}': use frozen or running", p.idle_arm);
  JobSetup job;
  size_t per_set = 0;
  for (const auto& spec : c.input_specs(task.op)) per_set += spec.bytes();
  // On the device the arena holds the two draws the worker mixes; the device's buffers do not
  // rotate (one per input).
  const bool on_device = !config.device_content.empty() && p.content == "fresh";
  if (!config.device_content.empty() && p.content != "fresh") return fail("device content makes fresh values only (content: fresh)");
  job.input_sets = on_device ? 2 : input_set_count(p, per_set);
  job.content = std::make_unique<ContentSource>(task.op, c, job_seed, p.content == "fresh", job.input_sets, on_device);
  // The outputs' layout as the correctness phase's goldens gave it, else from one golden run of
  // the first values (cached by content key).
  for (const auto& in : job.content->any()) job.layout.inputs.push_back(in.spec);
  if (auto known = golden.output_specs(c)) {
    job.layout.outputs = std::move(*known);
  } else {
    TEMPER_TRY_ASSIGN(GoldenResult shape_golden, golden.outputs(c, job.content->any(), GoldenPrecision::Fp64));
    for (const auto& o : shape_golden.outputs) job.layout.outputs.push_back(core::TensorSpec{o.name, o.dtype, o.shape});
  }
  job.layout.input_sets = job.input_sets;

  job.cold = p.cache_mode == "cold";
  TEMPER_TRY(validate_cold_step(p.cold_step));
  const std::string clock = p.clock.empty() ? default_timing_clock(p.threads) : p.clock;
  // A backend that times on its own clock (CUDA events, the PyPTO runner) names it in the
  // protocol and reports it as the kernel time; only the CPU clocks have rules to check.
  if (clock == kClockMonotonic || clock == kClockThreadCpu) TEMPER_TRY(validate_clock(clock, p.threads));
  job.cpu_clock = clock == kClockThreadCpu;
  job.freeze = p.idle_arm == "frozen";

  backend::WorkerOptions& wo = job.wo;
  wo.worker_exe = config.worker_exe;
  wo.worker_args = config.worker_args;
  wo.worker_env = config.worker_env;
  wo.device_profiles = config.device_profiles;
  wo.threads = p.threads;
  wo.call_timeout = config.call_timeout;
  wo.memory_limit_bytes = config.memory_limit_bytes;
  wo.attrs = c.attrs;
  wo.input_slots = c.slots;
  wo.evict_cold = job.cold && p.cold_step == "evict";
  wo.flush_bytes = job.cold && !wo.evict_cold ? p.flush_bytes : 0;
  wo.cpus = p.cpus;
  if (on_device) wo.device_content = config.device_content;
  return job;
}

// A reference's worker: the candidate's, or a runner of its own (the PyTorch arm).
backend::WorkerOptions reference_options(const backend::WorkerOptions& wo, const ReferenceArm& ref) {
  backend::WorkerOptions o = wo;
  o.artifact = ref.artifact;
  if (!ref.command.empty()) {
    o.worker_exe = ref.command.front();
    o.worker_args.assign(ref.command.begin() + 1, ref.command.end());
    o.device_content.clear();
    o.forkserver = ref.forkserver;
  }
  if (ref.threads) o.threads = *ref.threads;
  return o;
}

ReferenceArm configured_reference(const fs::path& artifact, const TimingConfig& config) {
  return {artifact, config.reference_command, config.reference_forkserver, config.reference_threads};
}

// The case status of a candidate whose worker failed with `outcome`.
CaseStatus failure_status_of(std::optional<backend::CallOutcome> outcome) {
  return outcome == backend::CallOutcome::Crashed            ? CaseStatus::Crashed
         : outcome == backend::CallOutcome::TimedOut         ? CaseStatus::Timeout
         : outcome == backend::CallOutcome::SandboxViolation ? CaseStatus::RejectedCheat
                                                             : CaseStatus::RuntimeError;
}

// A candidate that does not load: its verdict, and no part in the measurement.
void record_load_failure(CaseTiming& out, const backend::CallResult& r) {
  out.paired.status = PairedStatus::ArmFailed;
  out.paired.failed_arm = Arm::Candidate;
  out.message = "the candidate does not load: " + r.message;
  out.failure_status = r.outcome == backend::CallOutcome::Crashed            ? CaseStatus::Crashed
                       : r.outcome == backend::CallOutcome::SandboxViolation ? CaseStatus::RejectedCheat
                                                                             : CaseStatus::RuntimeError;
  if (out.failure_status == CaseStatus::RejectedCheat) out.failure_reason_code = std::string(kForbiddenSyscall);
}

// A candidate whose arm failed while timed.
void record_arm_failure(CaseTiming& out, const WorkerArm& cand) {
  out.message = out.paired.failure_message;
  out.failure_status = failure_status_of(cand.failure());
  if (out.failure_status == CaseStatus::RejectedCheat)
    out.failure_reason_code = cand.failure_reason().empty() ? std::string(kForbiddenSyscall) : cand.failure_reason();
}

// The reference runs the same worker harness: its threads' count is the baseline (a stop and
// a continue wake every thread, the worker's watchdog included, which costs each some
// microseconds per call). A reference in another runner (the PyTorch arm) has threads of its
// runtime instead, whose spinning is no baseline for the candidate's: the harness's share is
// then the fixed kHarnessOutsideCallPerCall (26 us measured on an Ice Lake VM).
double harness_outside_per_call(const ArmActivity& ref, bool same_harness) {
  if (!same_harness) return kHarnessOutsideCallPerCall;
  return ref.timed_calls > 0 ? ref.outside_call_cpu_seconds / ref.timed_calls : 0.0;
}

// The trusted reference's own work outside its calls over `kernel_total` of its kernel time:
// reported, not judged.
std::string reference_warning(const ArmActivity& ref, double kernel_total) {
  if (ref.outside_call_cpu_seconds <= work_outside_allowance(kernel_total) + kHarnessOutsideCallPerCall * ref.timed_calls) return {};
  return fmt::format("the reference's threads used {:.1f} ms of CPU time outside its calls", ref.outside_call_cpu_seconds * 1e3);
}

// The candidate's work outside its calls against its allowance.
void judge_work_outside(CaseTiming& out, const TimingConfig& config, double kernel_total, double ref_per_call) {
  const double allowance = work_outside_allowance(kernel_total) + 2 * ref_per_call * out.candidate_activity.timed_calls;
  if (config.judge_work_outside_call) out.outside_allowance_seconds = allowance;
  if (config.judge_work_outside_call && !out.behaviour_differs && out.candidate_activity.outside_call_cpu_seconds > allowance) {
    out.work_outside_call = true;
    out.message = fmt::format("the candidate's threads used {:.1f} ms of CPU time outside its calls (allowed {:.1f} ms)",
                              out.candidate_activity.outside_call_cpu_seconds * 1e3, allowance * 1e3);
  }
}

} // namespace

Expected<std::vector<CaseTiming>> time_case_shared(const core::Task& task, const core::Case& c, const fs::path& reference_artifact,
                                                   std::span<const fs::path> candidate_artifacts, GoldenRunner& golden,
                                                   const TimingConfig& config, uint64_t job_seed,
                                                   std::optional<double> calibrated_noise, bool reference_first_start) {
  const size_t n_cands = candidate_artifacts.size();
  if (n_cands == 0) return fail("a timing job needs at least one candidate");
  const MeasurementProtocol& p = config.protocol;
  TEMPER_TRY_ASSIGN(JobSetup job, prepare_job(task, c, golden, config, job_seed));
  ContentSource& content = *job.content;
  std::vector<CaseTiming> outs(n_cands);
  for (CaseTiming& out : outs) {
    out.seed = job_seed;
    out.content = p.content;
    out.delta = noise_threshold(calibrated_noise, config.noise_floor);
    out.input_sets = job.input_sets;
  }
  // Every arm on an arena of its own: a candidate never sees another's memory.
  TEMPER_TRY_ASSIGN(backend::SharedArena ref_arena, backend::SharedArena::create(job.layout));
  WorkerArm ref(content, std::move(ref_arena), job.cold, config.symmetric_arms, job.cpu_clock, job.freeze);
  std::vector<std::unique_ptr<WorkerArm>> cands;
  for (size_t k = 0; k < n_cands; ++k) {
    TEMPER_TRY_ASSIGN(backend::SharedArena arena, backend::SharedArena::create(job.layout));
    cands.push_back(std::make_unique<WorkerArm>(content, std::move(arena), job.cold, true, job.cpu_clock, job.freeze));
  }
  const backend::WorkerOptions ref_opts = reference_options(job.wo, configured_reference(reference_artifact, config));

  std::string reference_worker;
  auto start_ref = [&]() -> Status {
    TEMPER_TRY_ASSIGN(backend::CallResult r, ref.start(ref_opts));
    if (!r.ok()) return fail("the reference does not load on case {}: {}", c.id, r.message);
    reference_worker = ref.loaded_description();
    return {};
  };
  // A candidate that does not load has its verdict now and takes no part in the measurement.
  std::vector<bool> loaded(n_cands, false);
  auto start_cands = [&]() -> Status {
    for (size_t k = 0; k < n_cands; ++k) {
      backend::WorkerOptions cand_opts = job.wo;
      cand_opts.artifact = candidate_artifacts[k];
      TEMPER_TRY_ASSIGN(backend::CallResult r, cands[k]->start(cand_opts));
      loaded[k] = r.ok();
      if (!r.ok()) record_load_failure(outs[k], r);
    }
    return {};
  };
  if (reference_first_start) {
    TEMPER_TRY(start_ref());
    TEMPER_TRY(start_cands());
  } else {
    TEMPER_TRY(start_cands());
    TEMPER_TRY(start_ref());
  }
  for (CaseTiming& out : outs) out.reference_worker = reference_worker;
  std::vector<size_t> measured; // the candidates that loaded, by index
  std::vector<TimedArm*> arms;
  for (size_t k = 0; k < n_cands; ++k) {
    if (!loaded[k]) continue;
    measured.push_back(k);
    arms.push_back(cands[k].get());
  }
  if (measured.empty()) return outs;

  util::SteadyClock steady;
  StopRule rule = p.rule;
  if (p.stop_when_decided) rule.decided_band = std::log1p(noise_threshold(calibrated_noise, config.noise_floor));
  if (config.race_behind > 0) rule.behind_below = std::log(config.race_behind);
  {
    ScopedAffinity pinned(p.cpus);
    std::vector<PairedResult> paired =
        measure_shared(ref, arms, steady, rule, job_seed ^ static_cast<uint64_t>(c.id), job.input_sets, config.cross_check);
    for (size_t i = 0; i < measured.size(); ++i) outs[measured[i]].paired = std::move(paired[i]);
  }
  for (size_t k : measured) {
    CaseTiming& out = outs[k];
    out.content_seconds = content.seconds();
    out.reference_activity = ref.activity();
    out.candidate_activity = cands[k]->activity();
    if (out.paired.status == PairedStatus::ArmFailed && out.paired.failed_arm == Arm::Reference)
      return fail("the reference failed while timed on case {}: {}", c.id, out.paired.failure_message);
  }

  // The sampled checks, fastest candidate first: in a race, one clearly behind a candidate
  // whose outputs were proved is left unchecked (TimingConfig::race), as if timed after it.
  std::vector<size_t> check_order = measured;
  std::stable_sort(check_order.begin(), check_order.end(), [&](size_t a, size_t b) {
    const auto& ea = outs[a].paired.estimate;
    const auto& eb = outs[b].paired.estimate;
    return (ea.n > 0 ? ea.speedup : 0.0) > (eb.n > 0 ? eb.speedup : 0.0);
  });
  double race_behind = config.race_behind;
  for (size_t k : check_order) {
    CaseTiming& out = outs[k];
    WorkerArm& cand = *cands[k];
    if (out.paired.status == PairedStatus::ArmFailed) {
      record_arm_failure(out, cand);
    } else if (behind_in_race(out.paired, race_behind)) {
      out.check_target = check_sample_size(p.check_fraction, p.check_confidence);
      out.check_skipped = true;
    } else {
      // The measurement stands only if what was timed is proved (the check may fail the arm).
      ProvedOutputs own;
      TEMPER_TRY(check_timed_calls(task, c, cand, ref, content, golden, p, job_seed, config.proved ? *config.proved : own, out));
      if (out.behaviour_differs) out.failure_status = CaseStatus::IncorrectNumerical;
      const PairedEstimate& e = out.paired.estimate;
      if (config.race && !out.behaviour_differs && !out.unprovable && out.paired.status == PairedStatus::Measured && e.ci_determined)
        race_behind = std::max(race_behind, e.speedup_lo);
    }
  }

  const double ref_per_call = harness_outside_per_call(ref.activity(), config.reference_command.empty());
  // The reference's own allowance is over all its rounds, which served every candidate: the
  // longest pair's.
  double ref_kernel_total = 0;
  for (size_t k : measured) ref_kernel_total = std::max(ref_kernel_total, outs[k].paired.reference.kernel_seconds_total);
  const std::string warning = reference_warning(ref.activity(), ref_kernel_total);
  for (size_t k : measured) {
    CaseTiming& out = outs[k];
    judge_work_outside(out, config, out.paired.candidate.kernel_seconds_total, ref_per_call);
    out.warning = warning;
    out.verdict = out.unprovable || out.check_skipped ? Verdict::Ambiguous : paired_verdict(out.paired, out.delta);
  }
  return outs;
}

Expected<std::vector<Expected<CaseTiming>>> time_case_against(const core::Task& task, const core::Case& c, const fs::path& candidate_artifact,
                                                              std::span<const ReferenceArm> refs, GoldenRunner& golden,
                                                              const TimingConfig& config, uint64_t job_seed,
                                                              std::span<const std::optional<double>> calibrated_noise,
                                                              bool reference_first_start) {
  const size_t n_refs = refs.size();
  if (n_refs == 0) return fail("a timing job needs at least one reference");
  const MeasurementProtocol& p = config.protocol;
  TEMPER_TRY_ASSIGN(JobSetup job, prepare_job(task, c, golden, config, job_seed));
  ContentSource& content = *job.content;
  auto noise_of = [&](size_t k) { return k < calibrated_noise.size() ? calibrated_noise[k] : std::nullopt; };
  std::vector<CaseTiming> outs(n_refs);
  for (size_t k = 0; k < n_refs; ++k) {
    outs[k].seed = job_seed;
    outs[k].content = p.content;
    outs[k].delta = noise_threshold(noise_of(k), config.noise_floor);
    outs[k].input_sets = job.input_sets;
  }
  // A reference that does not load or fails while timed fails its own result only.
  std::vector<std::optional<Error>> errors(n_refs);
  TEMPER_TRY_ASSIGN(backend::SharedArena cand_arena, backend::SharedArena::create(job.layout));
  WorkerArm cand(content, std::move(cand_arena), job.cold, true, job.cpu_clock, job.freeze);
  std::vector<std::unique_ptr<WorkerArm>> ref_arms;
  for (size_t k = 0; k < n_refs; ++k) {
    TEMPER_TRY_ASSIGN(backend::SharedArena arena, backend::SharedArena::create(job.layout));
    ref_arms.push_back(std::make_unique<WorkerArm>(content, std::move(arena), job.cold, config.symmetric_arms, job.cpu_clock, job.freeze));
  }
  auto start_refs = [&]() -> Status {
    for (size_t k = 0; k < n_refs; ++k) {
      TEMPER_TRY_ASSIGN(backend::CallResult r, ref_arms[k]->start(reference_options(job.wo, refs[k])));
      if (!r.ok()) errors[k] = Error{fmt::format("the reference does not load on case {}: {}", c.id, r.message)};
      else outs[k].reference_worker = ref_arms[k]->loaded_description();
    }
    return {};
  };
  bool cand_loaded = false;
  auto start_cand = [&]() -> Status {
    backend::WorkerOptions cand_opts = job.wo;
    cand_opts.artifact = candidate_artifact;
    TEMPER_TRY_ASSIGN(backend::CallResult r, cand.start(cand_opts));
    cand_loaded = r.ok();
    if (!r.ok())
      for (CaseTiming& out : outs) record_load_failure(out, r);
    return {};
  };
  if (reference_first_start) {
    TEMPER_TRY(start_refs());
    TEMPER_TRY(start_cand());
  } else {
    TEMPER_TRY(start_cand());
    TEMPER_TRY(start_refs());
  }
  auto results = [&] {
    std::vector<Expected<CaseTiming>> r;
    for (size_t k = 0; k < n_refs; ++k) {
      if (errors[k]) r.emplace_back(tl::unexpected(*errors[k]));
      else r.emplace_back(std::move(outs[k]));
    }
    return r;
  };
  std::vector<size_t> measured; // the references that loaded, by index
  std::vector<TimedArm*> arms;
  for (size_t k = 0; k < n_refs; ++k) {
    if (errors[k]) continue;
    measured.push_back(k);
    arms.push_back(ref_arms[k].get());
  }
  if (!cand_loaded || measured.empty()) return results();

  util::SteadyClock steady;
  // One decided band for the job: the narrowest of the references' noise thresholds.
  StopRule rule = p.rule;
  if (p.stop_when_decided) {
    double delta = INFINITY;
    for (size_t k : measured) delta = std::min(delta, outs[k].delta);
    rule.decided_band = std::log1p(delta);
  }
  {
    ScopedAffinity pinned(p.cpus);
    std::vector<PairedResult> paired = measure_shared(cand, arms, steady, rule, job_seed ^ static_cast<uint64_t>(c.id), job.input_sets,
                                                      config.cross_check, SharedSide::Candidate);
    for (size_t i = 0; i < measured.size(); ++i) outs[measured[i]].paired = std::move(paired[i]);
  }
  std::vector<size_t> timed; // the references that were timed to the end
  for (size_t k : measured) {
    CaseTiming& out = outs[k];
    out.content_seconds = content.seconds();
    out.reference_activity = ref_arms[k]->activity();
    out.candidate_activity = cand.activity();
    if (out.paired.status == PairedStatus::ArmFailed && out.paired.failed_arm == Arm::Reference) {
      errors[k] = Error{fmt::format("the reference failed while timed on case {}: {}", c.id, out.paired.failure_message)};
      continue;
    }
    timed.push_back(k);
  }
  if (timed.empty()) return results();

  // The candidate's timed calls served every pair: one sampled check proves them for all. A
  // reference in the candidate's own harness (a compiled kernel, not a runner's) proves outputs
  // that are byte for byte its own.
  size_t proof = timed.front();
  for (size_t k : timed)
    if (refs[k].command.empty()) {
      proof = k;
      break;
    }
  // A candidate that failed while timed (which ended every pair still measuring) fails them all.
  const auto failed = std::find_if(timed.begin(), timed.end(), [&](size_t k) { return outs[k].paired.status == PairedStatus::ArmFailed; });
  if (failed != timed.end()) {
    const std::string why = outs[*failed].paired.failure_message;
    for (size_t k : timed) {
      PairedResult& pr = outs[k].paired;
      pr.status = PairedStatus::ArmFailed;
      pr.failed_arm = Arm::Candidate;
      pr.failure_message = why;
      record_arm_failure(outs[k], cand);
    }
  } else {
    ProvedOutputs own;
    CaseTiming check = outs[timed.front()];
    TEMPER_TRY(check_timed_calls(task, c, cand, *ref_arms[proof], content, golden, p, job_seed, config.proved ? *config.proved : own, check));
    for (size_t k : timed) {
      CaseTiming& out = outs[k];
      out.rechecks = check.rechecks;
      out.check_target = check.check_target;
      out.proved_by_identity = check.proved_by_identity;
      out.proved_by_reference = check.proved_by_reference;
      out.check_seconds = check.check_seconds;
      out.golden_seconds = check.golden_seconds;
      out.behaviour_differs = check.behaviour_differs;
      out.cheat_reason_code = check.cheat_reason_code;
      out.unprovable = check.unprovable;
      if (check.behaviour_differs || check.unprovable) out.message = check.message;
      if (check.behaviour_differs) {
        out.paired.status = PairedStatus::ArmFailed;
        out.paired.failed_arm = Arm::Candidate;
        out.paired.failure_message = check.paired.failure_message;
        out.failure_status = CaseStatus::IncorrectNumerical;
      }
    }
  }

  // The candidate's work outside its calls, over every call it made for all the pairs; the
  // harness's share from a reference in the same harness where one was timed.
  double cand_kernel_total = 0;
  for (size_t k : timed) cand_kernel_total = std::max(cand_kernel_total, outs[k].paired.candidate.kernel_seconds_total);
  const bool same_harness = refs[proof].command.empty();
  const double ref_per_call = harness_outside_per_call(ref_arms[proof]->activity(), same_harness);
  for (size_t k : timed) {
    CaseTiming& out = outs[k];
    judge_work_outside(out, config, cand_kernel_total, ref_per_call);
    out.warning = reference_warning(out.reference_activity, out.paired.reference.kernel_seconds_total);
    out.verdict = out.unprovable ? Verdict::Ambiguous : paired_verdict(out.paired, out.delta);
  }
  return results();
}

Expected<CaseTiming> time_case(const core::Task& task, const core::Case& c, const fs::path& reference_artifact,
                               const fs::path& candidate_artifact, GoldenRunner& golden, const TimingConfig& config,
                               uint64_t job_seed, std::optional<double> calibrated_noise, bool reference_first_start) {
  const fs::path cands[1] = {candidate_artifact};
  TEMPER_TRY_ASSIGN(std::vector<CaseTiming> outs,
                    time_case_shared(task, c, reference_artifact, cands, golden, config, job_seed, calibrated_noise, reference_first_start));
  return std::move(outs.front());
}

bool behind_in_race(const PairedResult& paired, double race_behind) {
  if (!(race_behind > 0) || paired.status != PairedStatus::Measured || !paired.estimate.ci_determined) return false;
  return paired.estimate.log_hi < std::log(race_behind);
}

} // namespace temper::judge
