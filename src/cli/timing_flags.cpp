#include "cli/timing_flags.h"
#include "core/thread_count.h"

#include "cli/case_list.h"
#include "core/task_loader.h"
#include "judge/kernel_backend.h"
#include "kb/gpu_target.h"
#include "kb/store.h"
#include "kb/target.h"
#include "util/process.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace temper::cli {

namespace {

Expected<std::vector<int>> parse_cpus(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) return out;
  auto ids = parse_case_list(text); // same syntax: 0,1 or 0-3
  if (!ids) return fail("--cpus '{}': use a list such as 0,1 or 0-3", text);
  for (auto v : *ids) out.push_back(static_cast<int>(v));
  return out;
}

} // namespace

std::vector<std::string> split_flags(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

Expected<judge::TimingOptions> timing_options(const TimingArgs& a, bool calibrate) {
  judge::TimingOptions t;
  t.reference = a.reference;
  t.reference_flags = split_flags(a.reference_flags);
  if (a.tier != "probe" && a.tier != "gate") return fail("--tier must be probe or gate, not '{}'", a.tier);
  t.tier = a.tier;
  t.measure_jobs = a.measure_jobs;
  t.confirm_jobs = a.confirm_jobs;
  t.calibrate = calibrate;
  t.use_calibration = !a.no_calibration;
  t.noise_floor = a.noise_floor_pct / 100.0;
  auto& p = t.protocol;
  if (a.cache_mode != "cold" && a.cache_mode != "warm") return fail("--cache must be cold or warm, not '{}'", a.cache_mode);
  p.cache_mode = a.cache_mode;
  p.flush_bytes = static_cast<size_t>(a.flush_mb * 1024 * 1024);
  p.cold_step = a.cold_step;
  TEMPER_TRY_ASSIGN(p.cpus, parse_cpus(a.cpus));
  if (!a.clock.empty() && a.clock != judge::kClockMonotonic && a.clock != judge::kClockThreadCpu)
    return fail("--clock must be monotonic or thread_cpu, not '{}'", a.clock);
  p.clock = a.clock;
  if (!a.content_maker.empty() && a.content_maker != "host" && a.content_maker != "device")
    return fail("--content-maker must be host or device, not '{}'", a.content_maker);
  t.content_maker = a.content_maker;
  if (!a.torch_threads.empty()) {
    if (a.reference != "torch") return fail("--torch-threads applies to --reference torch");
    if (a.torch_threads == "default") {
      t.torch_threads = 0;
    } else {
      auto n = core::parse_thread_count(a.torch_threads);
      if (!n) return fail("--torch-threads: give N or default, not '{}'", a.torch_threads);
      t.torch_threads = *n;
    }
  }
  if (!a.also_torch.empty()) {
    if (a.reference.empty()) return fail("--also-torch times PyTorch beside a reference: add --reference");
    std::stringstream list(a.also_torch);
    for (std::string item; std::getline(list, item, ',');) {
      if (item == "default") {
        t.also_torch_threads.push_back(0);
        continue;
      }
      auto n = core::parse_thread_count(item);
      if (!n) return fail("--also-torch: give thread counts, N or default, separated by commas, not '{}'", a.also_torch);
      t.also_torch_threads.push_back(*n);
    }
  }
  p.rule.cap_s = a.tier == "probe" ? std::min(a.cap_s, 3.0) : a.cap_s;
  p.rule.target_half_width = std::log1p(a.target_pct / 100.0);
  p.rule.min_samples = a.min_samples;
  p.rule.target_lives = a.lives;
  p.rule.min_time_s = a.min_time_s;
  p.rule.warmup_s = a.warmup_s;
  p.stop_when_decided = !a.until_target;
  TEMPER_TRY(judge::validate_stop_rule(p.rule));
  if (t.measure_jobs < 1 || t.confirm_jobs < 0) return fail("--measure-jobs must be at least 1 and --confirm-jobs at least 0");
  return t;
}

Expected<std::optional<int>> threads_flag(const std::string& text) {
  if (text.empty()) return std::optional<int>();
  auto n = core::parse_thread_count(text);
  if (!n) return fail("--threads: {}", n.error().message);
  return std::optional<int>(*n);
}

void add_timing_options(CLI::App* cmd, TimingArgs& a, TimingFlagSet set) {
  cmd->add_option("--threads", a.threads,
                  "Threads the kernel may use, N or all (every CPU temper may run on); both arms get the same (default: temper.yaml's threads)");
  const char* group = "Timing against a reference";
  if (!cmd->get_option_no_throw("--reference")) {
    cmd->add_option("--reference", a.reference, "Reference kernel source, or a sealed reference's name (temper ref list): also time the candidate against it")->group(group);
  }
  cmd->add_option("--torch-threads", a.torch_threads,
                  "With --reference torch: PyTorch's threads, N or default (PyTorch's own choice, every CPU) (default: the kernel's threads)")
      ->group(group);
  if (set == TimingFlagSet::WithTiers) {
    cmd->add_option("--also-torch", a.also_torch,
                    "Also time the candidate against the task's PyTorch function at these thread counts (N or default, comma-separated), "
                    "in the same judgement as --reference (arms under the same protocol share their jobs): one report each")
        ->group(group);
  }
  cmd->add_option("--reference-flags", a.reference_flags, "Optimization flags for the reference (must equal the candidate's)")->group(group);
  if (set == TimingFlagSet::WithTiers) {
    cmd->add_option("--tier", a.tier, "probe (first case, short cap) or gate (every case, measurement + confirmation jobs)")->capture_default_str()->group(group);
    cmd->add_option("--measure-jobs", a.measure_jobs, "Gate: independent measurement jobs")->capture_default_str()->group(group)->check(CLI::PositiveNumber);
    cmd->add_option("--confirm-jobs", a.confirm_jobs, "Gate: confirmation jobs (fresh processes, new seeds, reversed order)")->capture_default_str()->group(group)->check(CLI::NonNegativeNumber);
  }
  cmd->add_option("--cap", a.cap_s, "Seconds of measurement per arm per case per job")->capture_default_str()->group(group)->check(CLI::PositiveNumber);
  cmd->add_option("--target", a.target_pct, "Stop when the 95% interval is within +-this percent")->capture_default_str()->group(group);
  cmd->add_flag("--until-target", a.until_target,
               "Keep a job measuring after its verdict is settled (a 99.9% interval clear of the noise band), "
               "until the interval reaches --target or the cap")
      ->group(group);
  cmd->add_option("--min-samples", a.min_samples, "Samples per arm before the interval's width may stop a job (a settled verdict needs 6)")->capture_default_str()->group(group)->check(CLI::PositiveNumber);
  cmd->add_option("--min-time", a.min_time_s, "Kernel seconds accumulated before the interval's width may stop a job (a settled verdict does not wait for them)")->capture_default_str()->group(group)->check(CLI::NonNegativeNumber);
  cmd->add_option("--lives", a.lives, "Worker lives per arm per job: both workers are restarted on fresh memory every few rounds and the interval is taken over lives (0: one life)")->capture_default_str()->group(group)->check(CLI::NonNegativeNumber);
  cmd->add_option("--warmup", a.warmup_s, "Warm-up seconds per arm")->capture_default_str()->group(group)->check(CLI::NonNegativeNumber);
  cmd->add_option("--cache", a.cache_mode, "cold (flush before every sample) or warm")->capture_default_str()->group(group);
  cmd->add_option("--cold-step", a.cold_step,
                  "How a sample is made cold: evict (flush the worker's own memory from every cache level) or buffer "
                  "(write --flush-mb of memory); default: evict where both arms run in temper-worker")
      ->check(CLI::IsMember({"evict", "buffer"}))
      ->group(group);
  cmd->add_option("--flush-mb", a.flush_mb, "Cold-cache buffer in MiB (default: 2x the last-level cache)")->group(group)->check(CLI::PositiveNumber);
  cmd->add_option("--cpus", a.cpus, "CPU set for both arms and the judge while it measures, e.g. 1 or 0-1 (default: one-thread tasks on the last CPU, others on all)")->group(group);
  cmd->add_option("--clock", a.clock, "monotonic (wall time) or thread_cpu (the worker thread's CPU time; one-thread tasks only) (default: thread_cpu for one-thread tasks)")->group(group);
  cmd->add_option("--noise-floor", a.noise_floor_pct, "Smallest difference in percent a verdict may call real")->capture_default_str()->group(group)->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-calibration", a.no_calibration, "Ignore a stored A/A calibration")->group(group);
  cmd->add_option("--content-maker", a.content_maker,
                  "Where each timed call's fresh inputs are made: device (CUDA: on the GPU, the default there) or host "
                  "(generated on the host and copied in before every call; the only choice on the CPU)")
      ->group(group);
}

std::optional<judge::Roofline> task_roofline(const std::filesystem::path& task_dir, const std::vector<std::filesystem::path>& kb_roots,
                                             std::optional<int> threads, const kb::TargetFingerprint* target) {
  auto task = core::load_task(task_dir);
  if (!task || !task->config.cost) return std::nullopt;
  const kb::KnowledgeBase base = kb::load_kb(kb_roots.empty() ? kb::default_kb_roots() : kb_roots);
  judge::Roofline roof = kb::roofline_from_kb(base, target ? *target : kb::current_target(), threads.value_or(task->config.threads));
  if (roof.bytes_per_s > 0 || roof.flops_per_s > 0) return roof;
  return std::nullopt;
}

void cuda_compiler_defaults(const CLI::App& cmd, bool flags_given, build::CompilerSpec& compiler) {
  if (const CLI::Option* c = cmd.get_option_no_throw("--compiler"); c == nullptr || c->count() == 0) compiler.program = "nvcc";
  if (!flags_given) compiler.flags.clear();
}

Expected<kb::TargetFingerprint> cuda_kb_target() {
  judge::BackendRequest req;
  req.name = "cuda";
  req.compiler.program = "nvcc";
  TEMPER_TRY_ASSIGN(judge::KernelBackend backend, judge::prepare_backend(req, util::default_process_runner()));
  if (backend.unsupported) return fail("{}", *backend.unsupported);
  return kb::cuda_target(backend.cuda_device);
}

} // namespace temper::cli
