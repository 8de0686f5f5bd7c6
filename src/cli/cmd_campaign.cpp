// `temper run TASK`, `temper resume CAMPAIGN`, `temper status CAMPAIGN`: campaigns (docs/campaigns.md).
#include "campaign/cluster_judge_service.h"
#include "campaign/final_report.h"
#include "campaign/orchestrator.h"
#include "campaign/planfile_teacher.h"
#include "cli/case_list.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/ref_profile.h"
#include "cli/status_watch.h"
#include "cli/timing_flags.h"
#include "core/task_loader.h"
#include "core/thread_count.h"
#include "judge/common.h"
#include "judge/kernel_backend.h"
#include "judge/python_golden.h"
#include "judge/seal.h"
#include "kb/store.h"
#include "report/campaign_html.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/process.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

namespace temper::cli {

namespace {

namespace fs = std::filesystem;
using campaign::CampaignConfig;

struct RunArgs {
  std::string task;
  std::string teacher = "planfile";
  std::string student = "tuner";
  int rounds = 1;
  std::vector<std::string> budget;
  std::string dir;
  std::string reference;
  std::string store;
  std::string cases;
  std::string compiler = "g++";
  std::string flags;
  double cap_s = 15;
  std::string cache_mode = "cold";
  int measure_jobs = 3;
  int confirm_jobs = 3;
  int min_samples = 10;
  double min_time_s = 0.5;
  double noise_floor_pct = 1.0;
  std::string cpus;
  int jobs = 0;
  int rejections = 5;
  int plateau = 6;
  double plateau_noise_pct = 1.0;
  int revisions = 3;
  int teacher_turns = 3;
  bool no_sandbox = false;
  bool no_vs_torch = false;
  bool quiet = false;
  std::string threads; // empty: temper.yaml's
  // --executor and its options; empty or 0: temper.yaml's `executor`, else local.
  std::string executor, partition, account, constraint;
  int max_jobs = 0;
  std::string backend = "cpu";
  std::string cuda_arch;
};

// --backend cuda: nvcc and the architecture, resolved once (judge::prepare_backend, which also
// probes the GPU) and recorded in the campaign's settings, so every build of the campaign and
// of its resumes is the same. Without a GPU the campaign still starts: it builds the reference
// and checks it, then ends saying why nothing can run.
Status resolve_cuda_backend(const RunArgs& a, const CLI::App& cmd, campaign::JudgeSettings& s, bool quiet) {
  judge::BackendRequest req;
  req.name = "cuda";
  req.compiler.program = a.compiler;
  req.compiler.flags = s.flags;
  cuda_compiler_defaults(cmd, !s.flags.empty(), req.compiler);
  req.cuda_arch = a.cuda_arch;
  TEMPER_TRY_ASSIGN(judge::KernelBackend backend, judge::prepare_backend(req, util::default_process_runner()));
  s.backend = "cuda";
  s.compiler = backend.compiler.program;
  s.flags = backend.compiler.flags;
  s.cuda_arch = backend.compiler.cuda_arch;
  if (!quiet) {
    const nlohmann::json& device = backend.facts.value("device", nlohmann::json::object());
    std::cerr << fmt::format("temper: backend cuda: {} for {}; {}\n", s.compiler, s.cuda_arch,
                             backend.unsupported ? *backend.unsupported + " (the campaign builds and checks the reference, then stops)"
                                                 : "device " + device.value("device", std::string("?")));
  }
  return {};
}

// Where the campaign's judge runs go: temper.yaml's `executor`, with what the command line gives
// over it.
Expected<exec::ExecutorSettings> executor_settings(const RunArgs& a, const fs::path& task_dir) {
  exec::ExecutorSettings s;
  if (auto task = core::load_task(task_dir); task && task->config.executor.is_object()) {
    auto from_yaml = exec::ExecutorSettings::from_json(task->config.executor);
    if (!from_yaml) return fail("temper.yaml executor: {}", from_yaml.error().message);
    s = *from_yaml;
  }
  if (!a.executor.empty()) {
    if (a.executor == "local") s = exec::ExecutorSettings{}; // nothing of a cluster's settings applies
    s.kind = a.executor;
  }
  if (!a.partition.empty()) s.partition = a.partition;
  if (!a.account.empty()) s.account = a.account;
  if (!a.constraint.empty()) s.constraint = a.constraint;
  if (a.max_jobs > 0) s.max_jobs = a.max_jobs;
  TEMPER_TRY(s.validate());
  return s;
}

// "90", "90s", "30m", "4h" -> seconds.
Expected<double> parse_duration(const std::string& text) {
  if (text.empty()) return fail("empty duration");
  double factor = 1;
  std::string num = text;
  switch (text.back()) {
  case 's': num.pop_back(); break;
  case 'm': factor = 60; num.pop_back(); break;
  case 'h': factor = 3600; num.pop_back(); break;
  default: break;
  }
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !(v >= 0)) return fail("'{}' is not a duration (e.g. 90s, 30m, 4h)", text);
  return v * factor;
}

Status apply_budget(const std::string& item, campaign::Budgets& b) {
  auto eq = item.find('=');
  if (eq == std::string::npos) return fail("--budget {}: expected KEY=VALUE with KEY wall, cost, job or turn", item);
  const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
  if (key == "cost") {
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || v < 0) return fail("--budget cost={}: a number of US dollars", value);
    b.cost_usd = v;
    return {};
  }
  TEMPER_TRY_ASSIGN(double secs, parse_duration(value));
  if (key == "wall") b.wall_s = secs;
  else if (key == "job") b.job_s = secs;
  else if (key == "turn") b.turn_s = secs;
  else return fail("--budget {}: unknown key '{}' (wall, cost, job, turn)", item, key);
  return {};
}

// The repository's knowledge base (beside the task's tasks/ directory, else the default), with
// the user's layered over it; $TEMPER_KB_DIR alone when set.
std::vector<fs::path> kb_roots_for(const fs::path& task_dir) {
  if (const char* env = std::getenv("TEMPER_KB_DIR"); env && *env) return {env};
  std::vector<fs::path> roots = kb::default_kb_roots();
  std::error_code ec;
  if (fs::path beside = task_dir.parent_path().parent_path() / "hw_kb"; fs::is_directory(beside, ec) && !std::getenv("TEMPER_KB")) roots.front() = beside;
  return roots;
}

// `./harness ref-profile` for the Teacher: `temper ref profile` on the campaign's sealed entry.
// At the campaign's thread count: a `--threads all` campaign's Teacher sees the reference as
// every kernel of the campaign runs, not at the task's one thread.
Expected<std::string> profile_campaign_reference(const campaign::SealedReference& ref, int64_t case_id, int threads) {
  TEMPER_TRY_ASSIGN(judge::SealedRef sealed, judge::find_sealed(ref.store, ref.id));
  TEMPER_TRY_ASSIGN(fs::path artifact, judge::sealed_artifact(sealed, case_id));
  std::ostringstream out, err;
  if (profile_sealed(sealed, case_id, artifact, out, err, threads) != kExitOk) return fail("{}", err.str());
  return out.str();
}

// The GPU a CUDA campaign's kernels run on, as the knowledge base's target; none for a CPU
// campaign or where there is no GPU.
std::optional<kb::TargetFingerprint> campaign_gpu(const campaign::JudgeSettings& settings) {
  if (!settings.cuda()) return std::nullopt;
  auto gpu = cuda_kb_target();
  return gpu ? std::optional<kb::TargetFingerprint>(*gpu) : std::nullopt;
}

// Certified peaks of the campaign's target (this machine's CPU, or `gpu` for a CUDA campaign)
// bound each case through the task's cost model (fraction of the roofline in probes, gates and
// the final summary); none when the knowledge base has no certified figures or the task no
// cost model.
std::optional<judge::Roofline> roofline_for(const fs::path& task_dir, const campaign::JudgeSettings& settings,
                                            const kb::TargetFingerprint* gpu = nullptr) {
  const std::optional<int> threads = settings.threads > 0 ? std::optional<int>(settings.threads) : std::nullopt;
  // Kernels that run on a GPU: its class's figures (kb certify --backend cuda), none without one.
  if (settings.cuda()) return gpu ? task_roofline(task_dir, kb_roots_for(task_dir), threads, gpu) : std::nullopt;
  return task_roofline(task_dir, kb_roots_for(task_dir), threads);
}

bool has_torch_function(const fs::path& task_dir) {
  auto task = core::load_task(task_dir);
  return task && !judge::torch_function_of(*task).empty();
}

campaign::OrchestratorDeps make_deps(campaign::JudgeService& judge, campaign::ExpectationEvaluator& expectations,
                                     const fs::path& task_dir, const campaign::JudgeSettings& settings, bool quiet) {
  campaign::OrchestratorDeps deps;
  deps.judge = &judge;
  deps.expectations = &expectations;
  // `temper ref profile` measures CPU kernels (perf, valgrind): a CUDA reference has no profile here.
  if (!settings.cuda()) {
    deps.ref_profile = [threads = settings.threads](const campaign::SealedReference& ref, int64_t case_id) {
      return profile_campaign_reference(ref, case_id, threads);
    };
  }
  const std::string backend = settings.backend;
  deps.make_agent = [task_dir, backend](const std::string& spec, agent::Role) {
    return campaign::make_campaign_agent(spec, task_dir, backend);
  };
#ifdef TEMPER_HAVE_AGENT_LAYER
  deps.start_harness = [](const fs::path& socket, agent::HarnessHandler handler) { return agent::HarnessServer::start(socket, std::move(handler)); };
#endif
  deps.kb_roots = kb_roots_for(task_dir);
  // A CUDA campaign's knowledge-base target is its GPU: the roofline and the Teacher's entries are that class's.
  const std::optional<kb::TargetFingerprint> gpu = campaign_gpu(settings);
  deps.roofline = roofline_for(task_dir, settings, gpu ? &*gpu : nullptr);
  if (gpu) {
    deps.target_class = gpu->target_class();
    deps.target_fingerprint = gpu->id();
  }
  deps.progress = quiet ? nullptr : &std::cerr;
  return deps;
}

// The campaign's way to the judge: here, or a Slurm cluster's nodes (docs/scale-out.md) with
// disassembly still done here.
struct CampaignJudge {
  std::unique_ptr<campaign::RealJudgeService> local;
  util::SteadyClock clock;
  std::unique_ptr<exec::SlurmClient> slurm;
  std::unique_ptr<exec::ClusterExecutor> executor;
  std::unique_ptr<campaign::ClusterJudgeService> cluster;

  campaign::JudgeService& service() { return cluster ? static_cast<campaign::JudgeService&>(*cluster) : *local; }
};

Expected<std::unique_ptr<CampaignJudge>> make_campaign_judge(const CampaignConfig& c, const fs::path& dir, bool quiet) {
  auto j = std::make_unique<CampaignJudge>();
  j->local = std::make_unique<campaign::RealJudgeService>(c.judge, util::default_process_runner(), TEMPER_VERSION);
  if (!c.executor.slurm()) return j;
  j->slurm = std::make_unique<exec::SlurmClient>(c.executor, util::default_process_runner());
  TEMPER_TRY(j->slurm->available());
  j->executor = std::make_unique<exec::ClusterExecutor>(*j->slurm, j->clock, exec::ExecutorTiming{}, quiet ? nullptr : &std::cerr);
  campaign::ClusterJudgeOptions o;
  o.jobs_root = fs::absolute(dir) / "jobs";
  o.temper_exe = self_executable();
  o.kb_roots = kb_roots_for(c.task_dir);
  for (auto& root : o.kb_roots) root = fs::absolute(root);
  o.max_jobs = c.executor.max_jobs;
  j->cluster = std::make_unique<campaign::ClusterJudgeService>(c.judge, o, *j->executor, *j->local, j->clock);
  return j;
}

int finish(const fs::path& dir, campaign::Orchestrator& o, campaign::JudgeService& judge, Status ran, bool quiet) {
  if (!ran) {
    std::cerr << "temper: error: " << ran.error().message << "\n"
              << "temper: the campaign's state is saved; continue with `temper resume " << dir.string() << "`\n";
    return kExitUsage;
  }
  if (o.state().phase != campaign::Phase::Done) {
    if (auto st = campaign::campaign_status(dir)) std::cout << campaign::format_status(*st);
    return kExitFailed;
  }
  // A backend that cannot run here (CUDA without a GPU): built and checked, nothing measured,
  // so there is no final kernel to report on.
  if (o.state().end_reason.rfind("unsupported: ", 0) == 0) {
    if (auto st = campaign::campaign_status(dir)) std::cout << campaign::format_status(*st);
    return kExitFailed;
  }
  // What the whole campaign gained: the final kernel against the starting reference on every
  // case of the campaign (judged once; a rerun reads the stored summary).
  if (!quiet) std::cerr << "temper: final report: judging the final kernel against the starting reference\n";
  campaign::FinalReportOptions opts;
  const bool cuda = o.config().judge.cuda();
  const std::optional<kb::TargetFingerprint> gpu = campaign_gpu(o.config().judge);
  opts.roofline = roofline_for(o.config().task_dir, o.config().judge, gpu ? &*gpu : nullptr);
  // The PyTorch arm runs on the CPU (judge::prepare_torch_reference): beside a CUDA kernel it
  // would compare a GPU with a CPU, so a CUDA campaign's report has no such column yet.
  opts.vs_torch = o.config().vs_torch && !cuda && has_torch_function(o.config().task_dir);
  opts.torch_default_threads = core::usable_cpus() > 1;
  auto summary = campaign::ensure_final_report(dir, o.references(), judge, opts);
  if (!summary) {
    std::cerr << "temper: error: final report: " << summary.error().message << "\n"
              << "temper: rerun `temper resume " << dir.string() << "` to retry it\n";
    if (auto st = campaign::campaign_status(dir)) std::cout << campaign::format_status(*st);
    return kExitFailed;
  }
  std::cout << campaign::format_final_summary(*summary);
  // The same, for people who look at pictures: final/report.html beside final/report.json. A
  // page that cannot be written is said, not a failed campaign.
  auto page = report::campaign_report_html(dir);
  Status written = page ? util::write_file_atomic(dir / "final" / "report.html", *page) : Status(tl::unexpected(page.error()));
  if (written) std::cout << "HTML report: " << (dir / "final" / "report.html").string() << "\n";
  else std::cerr << "temper: warning: HTML report: " << written.error().message << "\n";
  return o.state().rounds_done.empty() ? kExitFailed : kExitOk;
}

int resume_campaign(const std::string& dir, bool quiet);

int run_campaign(const RunArgs& a, const CLI::App& cmd) {
  CampaignConfig c;
  c.task_dir = fs::absolute(a.task);
  c.teacher = a.teacher;
  c.student = a.student;
  if (a.rounds < 1) {
    std::cerr << "temper: --rounds must be at least 1\n";
    return kExitUsage;
  }
  c.rounds = a.rounds;
  for (const auto& item : a.budget) {
    if (auto st = apply_budget(item, c.budgets); !st) {
      std::cerr << "temper: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
  if (!a.cases.empty()) {
    auto ids = parse_case_list(a.cases);
    if (!ids) {
      std::cerr << "temper: " << ids.error().message << "\n";
      return kExitUsage;
    }
    c.judge.cases = *ids;
  }
  if (!a.cpus.empty()) {
    auto ids = parse_case_list(a.cpus);
    if (!ids) {
      std::cerr << "temper: --cpus: " << ids.error().message << "\n";
      return kExitUsage;
    }
    for (auto v : *ids) c.judge.cpus.push_back(static_cast<int>(v));
  }
  c.judge.compiler = a.compiler;
  c.judge.flags = split_flags(a.flags);
  if (a.backend == "cuda") {
    if (auto st = resolve_cuda_backend(a, cmd, c.judge, a.quiet); !st) {
      std::cerr << "temper: error: --backend cuda: " << st.error().message << "\n";
      return kExitUsage;
    }
  } else if (!a.cuda_arch.empty()) {
    std::cerr << "temper: --cuda-arch applies to --backend cuda\n";
    return kExitUsage;
  }
  c.judge.cap_s = a.cap_s;
  if (a.cache_mode != "cold" && a.cache_mode != "warm") {
    std::cerr << "temper: --cache must be cold or warm, not '" << a.cache_mode << "'\n";
    return kExitUsage;
  }
  c.judge.cache_mode = a.cache_mode;
  c.judge.measure_jobs = a.measure_jobs;
  c.judge.confirm_jobs = a.confirm_jobs;
  c.judge.min_samples = a.min_samples;
  c.judge.min_time_s = a.min_time_s;
  c.judge.noise_floor = a.noise_floor_pct / 100;
  c.judge.jobs = a.jobs;
  if (auto threads = threads_flag(a.threads); !threads) {
    std::cerr << "temper: " << threads.error().message << "\n";
    return kExitUsage;
  } else if (*threads) {
    c.judge.threads = **threads;
    c.judge.threads_all = a.threads == "all";
  }
  c.triggers.rejections = a.rejections;
  c.triggers.plateau = a.plateau;
  c.triggers.plateau_noise = a.plateau_noise_pct / 100;
  c.triggers.revisions = a.revisions;
  c.triggers.teacher_turns = a.teacher_turns;
  c.sandbox = !a.no_sandbox;
  c.vs_torch = !a.no_vs_torch;
  if (auto executor = executor_settings(a, c.task_dir); !executor) {
    std::cerr << "temper: " << executor.error().message << "\n";
    return kExitUsage;
  } else {
    c.executor = *executor;
  }
  if (!a.reference.empty()) {
    fs::path ref = a.reference;
    // A bare name is a file of the task (--reference reference_v2.cpp).
    if (!fs::exists(ref) && fs::exists(c.task_dir / ref)) ref = c.task_dir / ref;
    if (!fs::exists(ref)) {
      // A sealed reference's name: the campaign seals its vaulted source again as R0, with the
      // campaign's compiler and flags, into its own store.
      auto sealed = judge::find_sealed(a.store.empty() ? judge::default_store() : fs::path(a.store), a.reference);
      std::error_code ec;
      if (sealed) {
        for (const auto& e : fs::directory_iterator(sealed->dir / "vault", ec)) ref = e.path();
      }
      if (!sealed || !fs::is_regular_file(ref, ec)) {
        std::cerr << "temper: --reference " << a.reference << ": no such file (nor in the task directory), nor a sealed reference"
                  << (sealed ? "" : ": " + sealed.error().message) << "\n";
        return kExitUsage;
      }
    }
    c.initial_reference = fs::absolute(ref).string();
  }
  fs::path dir = a.dir;
  if (dir.empty()) {
    std::string stamp = judge::utc_now();
    for (char& ch : stamp) if (ch == ':') ch = '-';
    dir = fs::path("campaigns") / (fs::path(a.task).lexically_normal().filename().string() + "-" + stamp);
  }
  // The same directory again continues that campaign (a second `make run` finishes from its
  // state), as long as it is the same task; anything else there is refused.
  if (fs::exists(dir / "campaign.json")) {
    auto existing = campaign::load_campaign(dir);
    if (!existing) {
      std::cerr << "temper: error: " << existing.error().message << "\n";
      return kExitUsage;
    }
    if (fs::weakly_canonical(existing->config.task_dir) != fs::weakly_canonical(c.task_dir)) {
      std::cerr << "temper: error: " << dir.string() << " holds a campaign on " << existing->config.task_dir.string()
                << ", not on " << c.task_dir.string() << ": give another --dir\n";
      return kExitUsage;
    }
    if (!a.quiet) std::cerr << "temper: " << dir.string() << " holds a campaign on this task: resuming it with its own settings\n";
    return resume_campaign(dir.string(), a.quiet);
  }
  auto judges = make_campaign_judge(c, dir, a.quiet);
  if (!judges) {
    std::cerr << "temper: error: --executor " << c.executor.kind << ": " << judges.error().message << "\n";
    return kExitUsage;
  }
  campaign::JudgeService& judge = (*judges)->service();
  campaign::ProfilingExpectationEvaluator expectations(c.judge, util::default_process_runner());
  const fs::path task_dir = c.task_dir;
  const campaign::JudgeSettings settings = c.judge;
  auto o = campaign::Orchestrator::create(dir, std::move(c), make_deps(judge, expectations, task_dir, settings, a.quiet));
  if (!o) {
    std::cerr << "temper: error: " << o.error().message << "\n";
    return kExitUsage;
  }
  if (!a.quiet) std::cerr << "temper: campaign " << dir.string() << "\n";
  return finish(dir, **o, judge, (*o)->run(), a.quiet);
}

int resume_campaign(const std::string& dir, bool quiet) {
  auto file = campaign::load_campaign(dir);
  if (!file) {
    std::cerr << "temper: error: " << file.error().message << "\n";
    return kExitUsage;
  }
  auto judges = make_campaign_judge(file->config, dir, quiet);
  if (!judges) {
    std::cerr << "temper: error: --executor " << file->config.executor.kind << ": " << judges.error().message << "\n";
    return kExitUsage;
  }
  campaign::JudgeService& judge = (*judges)->service();
  campaign::ProfilingExpectationEvaluator expectations(file->config.judge, util::default_process_runner());
  auto o = campaign::Orchestrator::open(dir, make_deps(judge, expectations, file->config.task_dir, file->config.judge, quiet));
  if (!o) {
    std::cerr << "temper: error: " << o.error().message << "\n";
    return kExitUsage;
  }
  return finish(dir, **o, judge, (*o)->run(), quiet);
}

} // namespace

void register_campaign_commands(CLI::App& app, Action& action) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Run an optimization campaign on a task: Teacher plans, Student implements, the judge decides");
  run->add_option("task", a->task, "Task directory")->required();
  run->add_option("--teacher", a->teacher, "Teacher agent: planfile (the task's plans/), planfile:DIR, claude, codex, opencode, cmd:\"...\", script:DIR")->capture_default_str();
  run->add_option("--student", a->student, "Student agent: tuner (built in: tunes the kernel's knobs, no LLM), tuner:KEY=VALUE,..., claude, codex, opencode, cmd:\"...\", script:DIR")->capture_default_str();
  run->add_option("--rounds", a->rounds, "Rounds; each promotes its best verified kernel to the next round's reference")->capture_default_str()->check(CLI::PositiveNumber);
  run->add_option("--budget", a->budget, "KEY=VALUE, repeatable: wall=4h (campaign), job=7200s (one judge run), turn=30m (one agent turn), cost=20 (agent USD)");
  run->add_option("--dir", a->dir, "Campaign directory (default: campaigns/TASK-TIME); an existing campaign of the same task there is resumed");
  run->add_option("--reference", a->reference, "Starting reference kernel (a file, a file name in the task, or a sealed reference's name; default: the task's reference)");
  run->add_option("--store", a->store, "Store of sealed references, for --reference NAME (default: $TEMPER_HOME/refs)");
  run->add_option("--cases", a->cases, "The campaign's cases, e.g. 1-4,7 (default: all)");
  run->add_option("--compiler", a->compiler, "Compiler for candidates and references (--backend cuda: nvcc unless given)")->capture_default_str();
  run->add_option("--flags", a->flags, "Optimization flags (default: \"-O3 -march=native\"; --backend cuda: -O3)");
  run->add_option("--cap", a->cap_s, "Seconds of measurement per arm per case per timing job")->capture_default_str()->check(CLI::PositiveNumber);
  run->add_option("--cache", a->cache_mode, "cold (flush before every sample) or warm")->capture_default_str();
  run->add_option("--measure-jobs", a->measure_jobs, "Gate: measurement jobs")->capture_default_str()->check(CLI::PositiveNumber);
  run->add_option("--confirm-jobs", a->confirm_jobs, "Gate: confirmation jobs")->capture_default_str()->check(CLI::NonNegativeNumber);
  run->add_option("--min-samples", a->min_samples, "Samples per arm before stopping")->capture_default_str()->check(CLI::PositiveNumber);
  run->add_option("--min-time", a->min_time_s, "Kernel seconds before stopping")->capture_default_str()->check(CLI::NonNegativeNumber);
  run->add_option("--noise-floor", a->noise_floor_pct, "Smallest difference in percent a verdict may call real")->capture_default_str()->check(CLI::NonNegativeNumber);
  run->add_option("--cpus", a->cpus, "CPU set for timing, e.g. 0 or 0-1");
  run->add_option("--threads", a->threads, "Threads every kernel may use, N or all (every CPU temper may run on; default: temper.yaml's)");
  run->add_option("--jobs,-j", a->jobs, "Parallel compiles and cases (default: one per core)")->check(CLI::PositiveNumber);
  run->add_option("--rejections", a->rejections, "Stagnation: consecutive submissions not accepted")->capture_default_str()->check(CLI::NonNegativeNumber);
  run->add_option("--plateau", a->plateau, "Stagnation: last K probes and submissions within the plateau band")->capture_default_str()->check(CLI::NonNegativeNumber);
  run->add_option("--plateau-noise", a->plateau_noise_pct, "Stagnation: the plateau band in percent")->capture_default_str()->check(CLI::NonNegativeNumber);
  run->add_option("--revisions", a->revisions, "Revisions per round before the round ends")->capture_default_str()->check(CLI::NonNegativeNumber);
  run->add_option("--teacher-turns", a->teacher_turns, "Teacher turns to produce a valid plan or revision")->capture_default_str()->check(CLI::PositiveNumber);
  run->add_flag("--no-sandbox", a->no_sandbox, "Run agents without the filesystem sandbox");
  run->add_flag("--no-vs-torch", a->no_vs_torch,
                "Leave the final report's \"vs PyTorch\" column out (by default the final kernel is also timed against the task's "
                "PyTorch function, where it has one)");
  run->add_option("--executor", a->executor,
                  "Where judge runs go: local (here) or slurm (a cluster's nodes, docs/scale-out.md); default: temper.yaml's executor, else local");
  run->add_option("--partition", a->partition, "--executor slurm: the partition");
  run->add_option("--account", a->account, "--executor slurm: the account");
  run->add_option("--constraint", a->constraint, "--executor slurm: node features; keep the campaign on one class of node");
  run->add_option("--max-jobs", a->max_jobs,
                  "--executor slurm: jobs queued or running at once; a gate's cases and a probe's variants are shared out over them (default 4)")
      ->check(CLI::Range(1, 1000));
  run->add_option("--backend", a->backend,
                  "Where kernels run: cpu (C++ kernels, kernel.h) or cuda (.cu kernels, cuda_kernel.h, built with nvcc; the task's "
                  "reference.cuda and plans/cuda/; docs/cuda.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  run->add_option("--cuda-arch", a->cuda_arch, "cuda: target architecture, e.g. sm_90 (default: the GPU's, else sm_90)");
  run->add_flag("--quiet,-q", a->quiet, "No progress lines on stderr");
  run->callback([a, run, &action] { action = [a, run] { return run_campaign(*a, *run); }; });

  auto resume_dir = std::make_shared<std::string>();
  auto resume_quiet = std::make_shared<bool>(false);
  CLI::App* resume = app.add_subcommand("resume", "Continue a campaign where it stopped (after a kill, an error or a budget raise)");
  resume->add_option("campaign", *resume_dir, "Campaign directory")->required();
  resume->add_flag("--quiet,-q", *resume_quiet, "No progress lines on stderr");
  resume->callback([resume_dir, resume_quiet, &action] { action = [resume_dir, resume_quiet] { return resume_campaign(*resume_dir, *resume_quiet); }; });

  auto status_dir = std::make_shared<std::string>();
  auto status_json = std::make_shared<bool>(false);
  auto status_watch = std::make_shared<bool>(false);
  auto status_interval = std::make_shared<double>(2.0);
  CLI::App* status = app.add_subcommand("status", "Where a campaign stands: round, milestone, attempts, best verified speedup, revisions, costs, budget");
  status->add_option("campaign", *status_dir, "Campaign directory")->required();
  status->add_flag("--json", *status_json, "Print the status as JSON");
  status->add_flag("--watch", *status_watch, "Refresh until the campaign is done: in place on a terminal, plain snapshots when piped");
  status->add_option("--interval", *status_interval, "Seconds between refreshes with --watch")->capture_default_str()->check(CLI::PositiveNumber);
  status->callback([status_dir, status_json, status_watch, status_interval, &action] {
    action = [status_dir, status_json, status_watch, status_interval] {
      if (*status_watch) {
        if (*status_json) {
          std::cerr << "temper: --watch prints text; use --json without it\n";
          return int{kExitUsage};
        }
        WatchOptions w;
        w.interval_s = *status_interval;
        w.in_place = ::isatty(1) != 0;
        return watch_status(*status_dir, w, std::cout, std::cerr);
      }
      auto st = campaign::campaign_status(*status_dir);
      if (!st) {
        std::cerr << "temper: error: " << st.error().message << "\n";
        return int{kExitUsage};
      }
      std::cout << (*status_json ? st->dump(2) + "\n" : campaign::format_status(*st));
      return int{kExitOk};
    };
  });
}

} // namespace temper::cli
