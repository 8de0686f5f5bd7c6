#include "campaign/judge_service.h"

#include "build/cuda_compiler.h"
#include "core/task_loader.h"
#include "judge/judge.h"
#include "judge/probe.h"
#include "judge/report.h"
#include "judge/seal.h"
#include "util/fs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>

namespace temper::campaign {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

double num(const json& j, const char* key, double dflt = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : dflt;
}

} // namespace

bool ReportSummary::gate_faster() const {
  return tier == "gate" && confirmation_jobs > 0 && all_passed && timed && all_confirmed && slower == 0 &&
         ambiguous == 0 && faster > 0 && speedup && *speedup > 1;
}

std::vector<ClusterJobRow> cluster_job_rows(const std::string& judge_run_key, const json& report) {
  std::vector<ClusterJobRow> rows;
  if (!report.contains("executor") || !report["executor"].is_object()) return rows;
  for (const auto& job : report["executor"].value("jobs", json::array())) {
    const std::string key = job.value("job", "");
    for (const auto& a : job.value("attempts", json::array())) {
      ClusterJobRow r;
      r.submission = a.value("number", 1);
      r.key = fmt::format("{}-{}-{}", judge_run_key, key, r.submission);
      r.judge_run = judge_run_key;
      r.job = key;
      r.slurm_id = a.value("slurm_id", "");
      r.state = a.value("state", "");
      r.node = a.value("node", "");
      r.queue_seconds = num(a, "queue_seconds");
      r.run_seconds = num(a, "run_seconds");
      r.note = a.value("note", "");
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

ReportSummary summarize_report(const json& report) {
  ReportSummary s;
  s.kind = report.value("kind", "");
  if (report.contains("executor") && report["executor"].is_object()) s.queue_seconds = num(report["executor"], "queue_seconds");
  const json& timing = report.contains("timing") ? report["timing"] : json();
  if (s.kind == "temper.probe.report") {
    const json& vs = report.value("variants", json::array());
    s.cases = static_cast<int>(vs.size());
    s.tier = "probe";
    for (const auto& v : vs) {
      const bool ok = v.value("status", "") == "PASSED";
      s.passed += ok;
      if (!ok && s.first_failure.empty()) s.first_failure = fmt::format("variant {}: {}: {}", v.value("label", ""), v.value("status", ""), v.value("message", ""));
      // A cache hit's seconds are the original build's, not time this run spent.
      const bool hit = v.at("compile").value("cache_hit", false);
      if (!hit) s.compile_seconds += num(v.at("compile"), "seconds");
      s.compile_cache_hit = s.compile_cache_hit && hit;
      if (v.contains("timing") && v["timing"].is_object() && !s.speedup) {
        s.timed = true;
        s.speedup = num(v["timing"], "speedup", NAN);
        if (v["timing"].contains("roofline_fraction") && v["timing"]["roofline_fraction"].is_number())
          s.roofline_fraction = v["timing"]["roofline_fraction"].get<double>();
        s.best_variant = v.value("label", "");
      }
    }
    s.all_passed = s.cases > 0 && s.passed == s.cases;
    s.wall_seconds = num(report.value("summary", json::object()), "wall_seconds");
    return s;
  }
  const json& cases = report.value("cases", json::array());
  s.cases = static_cast<int>(cases.size());
  bool any_miss = false;
  double compile_sum = 0;
  for (const auto& c : cases) {
    const bool ok = c.value("status", "") == "PASSED";
    s.passed += ok;
    if (!ok && s.first_failure.empty()) {
      s.first_failure = fmt::format("case {}: {}{}", c.value("case_id", int64_t{0}), c.value("status", ""),
                                    c.contains("message") ? ": " + c["message"].get<std::string>() : "");
    }
    if (c.contains("compile")) {
      any_miss = any_miss || !c["compile"].value("cache_hit", true);
      compile_sum = std::max(compile_sum, num(c["compile"], "seconds"));
    }
    if (c.contains("timing")) {
      for (const auto& job : c["timing"].value("jobs", json::array())) {
        if (job.value("kind", "") == "confirmation") s.confirm_seconds += num(job, "wall_seconds");
      }
    }
  }
  s.all_passed = s.cases > 0 && s.passed == s.cases;
  const json& summary = report.value("summary", json::object());
  s.wall_seconds = num(summary, "wall_seconds");
  s.compile_seconds = summary.contains("compile_seconds") ? num(summary, "compile_seconds") : compile_sum;
  s.compile_cache_hit = !any_miss;
  if (timing.is_object()) {
    s.timed = timing.value("cases_timed", 0) > 0;
    s.tier = timing.value("tier", "");
    s.confirmation_jobs = timing.value("confirmation_jobs", 0);
    if (timing.contains("geomean_speedup") && timing["geomean_speedup"].is_number()) s.speedup = timing["geomean_speedup"].get<double>();
    const json& v = timing.value("verdicts", json::object());
    s.faster = v.value("FASTER", 0);
    s.slower = v.value("SLOWER", 0);
    s.same = v.value("SAME", 0);
    s.ambiguous = v.value("AMBIGUOUS", 0);
    s.all_confirmed = s.timed;
    double log_sum = 0;
    int with_roofline = 0, timed_cases = 0;
    for (const auto& c : cases) {
      if (!c.contains("timing") || !c["timing"].is_object()) continue;
      const json& t = c["timing"];
      if (!t.value("confirmed", false)) s.all_confirmed = false;
      if (!t.contains("speedup") || !t["speedup"].is_number()) continue; // not timed (failed, too slow)
      ++timed_cases;
      if (t.contains("roofline_fraction") && t["roofline_fraction"].is_number() && t["roofline_fraction"].get<double>() > 0) {
        log_sum += std::log(t["roofline_fraction"].get<double>());
        ++with_roofline;
      }
    }
    if (timed_cases > 0 && with_roofline == timed_cases) s.roofline_fraction = std::exp(log_sum / with_roofline);
  } else {
    s.tier = "correctness";
  }
  return s;
}

Expected<double> fit_cap_to_limit(double cap_s, int cases, int jobs, double limit_s) {
  // Correctness, goldens, compiles and warm-up: a generous allowance per case.
  const double allowance = 10.0 * std::max(1, cases) + 30.0;
  const double arms = 2.0 * std::max(1, cases) * std::max(1, jobs);
  const double room = limit_s - allowance;
  if (room <= 0 || room / arms < 0.05) {
    return fail("a timed run of {} case(s) x {} job(s) does not fit in the per-job limit of {:.0f} s: select fewer cases or raise --budget job=",
                cases, jobs, limit_s);
  }
  return std::min(cap_s, room / arms);
}

Expected<CapChoice> choose_cap(double cap_s, const std::map<int64_t, double>& reference_seconds,
                               const std::vector<int64_t>& timed_cases, int cases, int jobs, double limit_s,
                               const judge::StopRule& rule) {
  // The slowest timed case by the reference's measured time.
  int64_t slowest = 0;
  double slowest_s = 0;
  auto consider = [&](int64_t id, double seconds) {
    if (std::isfinite(seconds) && seconds > slowest_s) {
      slowest = id;
      slowest_s = seconds;
    }
  };
  if (timed_cases.empty()) {
    for (const auto& [id, seconds] : reference_seconds) consider(id, seconds);
  } else {
    for (int64_t id : timed_cases) {
      if (auto it = reference_seconds.find(id); it != reference_seconds.end()) consider(id, it->second);
    }
  }
  CapChoice out;
  double wanted = cap_s;
  const double needed = slowest_s > 0 ? judge::cap_for_verdict(rule, kReferenceTimeMargin * slowest_s) : 0;
  if (needed > cap_s) {
    wanted = std::min(needed, kMaxCapRaise * cap_s);
    out.note = fmt::format("cap per arm raised from {:.2f} s to {:.2f} s so that the sealed reference's slowest case here "
                           "(case {}, {:.3f} s a call in reference/times.json) fits a verdict's 3 rounds and their warm-ups{}",
                           cap_s, wanted, slowest, slowest_s,
                           wanted < needed ? fmt::format(" (it asks {:.2f} s; at most {:.0f}x the configured cap)", needed, kMaxCapRaise) : "");
  }
  TEMPER_TRY_ASSIGN(out.cap_s, fit_cap_to_limit(wanted, cases, jobs, limit_s));
  if (out.cap_s < wanted) {
    out.note += fmt::format("{}cap per arm reduced from {:.2f} s to {:.2f} s to fit the per-job limit of {:.0f} s",
                            out.note.empty() ? "" : "; ", wanted, out.cap_s, limit_s);
  }
  return out;
}

std::map<int64_t, double> measured_reference_seconds(const std::filesystem::path& campaign_dir, const std::string& reference_id) {
  std::map<int64_t, double> out;
  std::error_code ec;
  for (const auto& round : std::filesystem::directory_iterator(campaign_dir / "rounds", ec)) {
    auto text = util::read_file(round.path() / "teacher" / "reference" / "times.json");
    if (!text) continue;
    const json doc = json::parse(*text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || doc.value("reference", "") != reference_id) continue;
    for (const auto& c : doc.value("cases", json::array())) {
      // On the timing protocol's clock where recorded (older campaigns: wall time only).
      const double seconds = c.contains("protocol_clock_seconds") ? num(c, "protocol_clock_seconds") : num(c, "kernel_seconds");
      if (c.value("status", "PASSED") == "PASSED" && seconds > 0) out[c.value("case_id", int64_t{0})] = seconds;
    }
    break; // every round measures its reference once; any of them will do
  }
  return out;
}

void set_reference(JudgeCall& call, const SealedReference& ref) {
  call.reference = ref.id;
  call.store = ref.store;
}

build::CompilerSpec compiler_spec(const JudgeSettings& s) {
  if (s.cuda()) return build::cuda_compiler_spec(s.compiler, s.cuda_arch, s.flags);
  build::CompilerSpec spec;
  spec.program = s.compiler;
  if (!s.flags.empty()) spec.flags = s.flags;
  return spec;
}

namespace {

judge::JudgeOptions base_options(const JudgeSettings& s, const JudgeCall& call, const std::string& version) {
  judge::JudgeOptions o;
  o.task_dir = call.task_dir;
  o.candidate = call.candidate;
  o.case_ids = call.cases;
  o.compiler = compiler_spec(s);
  o.jobs = s.jobs;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::min(s.call_timeout_s, call.time_limit_s) * 1000));
  o.progress = call.progress;
  o.temper_version = version;
  if (s.threads > 0) o.threads = s.threads;
  o.backend = s.backend;
  o.cuda_arch = s.cuda_arch;
  return o;
}

judge::TimingOptions timing_options(const JudgeSettings& s, const JudgeCall& call, double cap) {
  judge::TimingOptions t;
  t.tier = call.tier == "probe" ? "probe" : "gate";
  t.measure_jobs = std::max(1, s.measure_jobs);
  t.confirm_jobs = std::max(0, s.confirm_jobs);
  t.noise_floor = s.noise_floor;
  t.protocol.cpus = s.cpus;
  t.protocol.cache_mode = s.cache_mode;
  t.protocol.rule.cap_s = cap;
  t.protocol.rule.min_samples = s.min_samples;
  t.protocol.rule.min_time_s = std::min(s.min_time_s, cap);
  return t;
}

Expected<std::optional<judge::SealedRef>> sealed_of(const JudgeCall& call) {
  if (call.reference.empty()) return std::optional<judge::SealedRef>();
  TEMPER_TRY_ASSIGN(judge::SealedRef r, judge::find_sealed(call.store, call.reference));
  return std::optional<judge::SealedRef>(std::move(r));
}

Expected<int> case_count(const JudgeCall& call) {
  if (!call.cases.empty()) return static_cast<int>(call.cases.size());
  TEMPER_TRY_ASSIGN(auto task, core::load_task(call.task_dir));
  return static_cast<int>(task.cases.size());
}

} // namespace

Expected<JudgeOutcome> RealJudgeService::judge(const JudgeCall& call) {
  judge::JudgeOptions o = base_options(m_settings, call, m_version);
  o.worker_exe = m_worker_exe;
  TEMPER_TRY_ASSIGN(auto sealed, sealed_of(call));
  if (call.candidate.empty()) {
    // The sealed reference itself (the Teacher's ref-time): its artifacts, as `temper ref run`.
    if (!sealed) return fail("no candidate and no sealed reference to judge");
    o.sealed_candidate = *sealed;
    o.compiler.program = sealed->compiler;
    o.compiler.flags = sealed->flags;
  }
  JudgeOutcome out;
  if (call.tier != "correctness") {
    if (!sealed && !call.torch_reference) return fail("a {} judgement needs a sealed reference", call.tier);
    TEMPER_TRY_ASSIGN(int n, case_count(call));
    const bool probe = call.tier == "probe";
    const int jobs = probe ? 1 : std::max(1, m_settings.measure_jobs) + std::max(0, m_settings.confirm_jobs);
    const double cap = probe ? std::min(m_settings.cap_s, 3.0) : m_settings.cap_s;
    // A probe times only its first case.
    std::vector<int64_t> timed = call.cases;
    if (probe && timed.size() > 1) timed.resize(1);
    const judge::StopRule rule = timing_options(m_settings, call, cap).protocol.rule;
    TEMPER_TRY_ASSIGN(CapChoice chosen, choose_cap(cap, call.reference_seconds, timed, probe ? 1 : n, jobs, call.time_limit_s, rule));
    out.note = chosen.note;
    o.timing = timing_options(m_settings, call, chosen.cap_s);
    if (call.roofline) o.timing->roofline = *call.roofline;
    if (call.torch_reference) {
      o.timing->torch_reference = true;
      o.timing->torch_threads = call.torch_threads;
    }
    else o.timing->sealed = *sealed;
    o.timing->also_torch_threads = call.also_torch_threads;
    o.timing->proved = m_proved;
  }
  o.compared = m_compared;
  TEMPER_TRY_ASSIGN(auto report, judge::run_judge(o, m_runner));
  out.report = judge::report_to_json(report);
  if (!out.note.empty()) out.report["campaign_note"] = out.note;
  return out;
}

Expected<JudgeOutcome> RealJudgeService::probe_grid(const JudgeCall& call) {
  judge::ProbeOptions o;
  o.task_dir = call.task_dir;
  o.candidate = call.candidate;
  if (call.cases.empty()) return fail("a probe needs a case");
  o.case_id = call.cases.front();
  for (const auto& g : call.grid) {
    TEMPER_TRY_ASSIGN(auto axis, judge::parse_knob_axis(g));
    o.grid.push_back(std::move(axis));
  }
  for (const auto& v : call.variants) o.variants.emplace_back(v.begin(), v.end());
  size_t count = o.variants.size();
  if (o.variants.empty()) {
    TEMPER_TRY_ASSIGN(auto grid, judge::expand_grid(o.grid));
    count = grid.size();
  }
  o.compiler = compiler_spec(m_settings);
  o.backend = m_settings.backend;
  o.cuda_arch = m_settings.cuda_arch;
  o.jobs = m_settings.jobs;
  if (m_settings.threads > 0) o.threads = m_settings.threads;
  o.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::min(m_settings.call_timeout_s, call.time_limit_s) * 1000));
  o.progress = false;
  o.temper_version = m_version;
  o.worker_exe = m_worker_exe;
  JudgeOutcome out;
  const double cap = std::min(m_settings.cap_s, 3.0);
  const judge::StopRule rule = timing_options(m_settings, call, cap).protocol.rule;
  TEMPER_TRY_ASSIGN(CapChoice chosen, choose_cap(cap, call.reference_seconds, {o.case_id}, static_cast<int>(count), 1, call.time_limit_s, rule));
  out.note = chosen.note;
  o.timing = timing_options(m_settings, call, chosen.cap_s);
  TEMPER_TRY_ASSIGN(auto sealed, sealed_of(call));
  if (!sealed) return fail("a probe needs a sealed reference");
  o.timing.sealed = *sealed;
  if (call.roofline) o.timing.roofline = *call.roofline;
  o.timing.proved = m_proved;
  o.compared = m_compared;
  TEMPER_TRY_ASSIGN(auto report, judge::run_probe(o, m_runner));
  out.report = judge::probe_report_to_json(report);
  if (!out.note.empty()) out.report["campaign_note"] = out.note;
  return out;
}

namespace {

// A CUDA reference's device code for the Teacher: cuobjdump's SASS of the artifact, per kernel
// its instruction count and then the first lines of each.
Expected<std::string> cuda_disassembly(const std::string& nvcc, const fs::path& artifact, const std::string& label,
                                       util::ProcessRunner& runner) {
  std::string cuobjdump = (fs::path(nvcc).parent_path() / "cuobjdump").string();
  std::error_code ec;
  if (!fs::is_regular_file(cuobjdump, ec)) cuobjdump = util::find_program("cuobjdump");
  if (cuobjdump.empty()) return std::string("unsupported: cuobjdump (the CUDA toolkit's) not found beside nvcc or on PATH\n");
  util::Command cmd;
  cmd.argv = {cuobjdump, "-sass", artifact.string()};
  cmd.timeout = std::chrono::milliseconds(60'000);
  auto r = runner.run(cmd);
  if (!r.ok()) return fail("cuobjdump failed ({})", r.describe());
  std::istringstream in(r.output);
  std::string line;
  std::vector<std::pair<std::string, int>> counts;
  std::vector<std::string> body;
  while (std::getline(in, line)) {
    if (auto at = line.find("Function : "); at != std::string::npos) {
      counts.emplace_back(line.substr(at + 11), 0);
      body.push_back(line);
      continue;
    }
    if (counts.empty() || line.find("/*") == std::string::npos || line.find(';') == std::string::npos) continue;
    ++counts.back().second;
    if (body.size() < 600) body.push_back(line);
  }
  std::string text = fmt::format("# Reference SASS summary (cuobjdump -sass of sealed reference {})\n\n", label);
  text += fmt::format("{:<64} {:>8}\n", "kernel", "instrs");
  for (const auto& [name, n] : counts) text += fmt::format("{:<64} {:>8}\n", name.substr(0, 64), n);
  text += "\nSASS (first 600 lines):\n";
  for (const auto& l : body) text += l + "\n";
  return text;
}

} // namespace

Expected<std::string> RealJudgeService::disassemble(const JudgeCall& call) {
  TEMPER_TRY_ASSIGN(auto sealed, sealed_of(call));
  if (!sealed) return fail("disassembly needs a sealed reference");
  int64_t case_id = call.cases.empty() ? (sealed->case_artifacts.empty() ? 0 : sealed->case_artifacts.begin()->first) : call.cases.front();
  TEMPER_TRY_ASSIGN(std::filesystem::path artifact, judge::sealed_artifact(*sealed, case_id));
  if (m_settings.cuda()) return cuda_disassembly(m_settings.compiler, artifact, fmt::format("{}, case {}", sealed->name, case_id), m_runner);
  const std::string objdump = util::find_program("objdump");
  if (objdump.empty()) return std::string("unsupported: objdump not found on PATH\n");
  util::Command cmd;
  cmd.argv = {objdump, "-d", "--no-show-raw-insn", "-C", artifact.string()};
  cmd.timeout = std::chrono::milliseconds(60'000);
  auto r = m_runner.run(cmd);
  if (!r.ok()) return fail("objdump failed ({})", r.describe());
  // Summary: instructions per function, the vector share, call targets; then the body of
  // temper_kernel (the exported entry point) up to a bound.
  std::istringstream in(r.output);
  std::string line, fn;
  std::map<std::string, std::array<int, 4>> per_fn; // instructions, vector, calls, fp
  std::map<std::string, int> call_targets;
  std::vector<std::string> entry;
  while (std::getline(in, line)) {
    if (line.size() > 2 && line.back() == ':' && line.find('<') != std::string::npos) {
      fn = line.substr(line.find('<') + 1);
      fn = fn.substr(0, fn.rfind('>'));
      continue;
    }
    if (fn.empty() || line.find(":\t") == std::string::npos) continue;
    auto& counts = per_fn[fn];
    counts[0]++;
    if (line.find("%ymm") != std::string::npos || line.find("%zmm") != std::string::npos) counts[1]++;
    if (line.find("\tcall") != std::string::npos) {
      counts[2]++;
      auto lt = line.find('<');
      if (lt != std::string::npos) call_targets[line.substr(lt + 1, line.rfind('>') - lt - 1)]++;
    }
    if (line.find("%xmm") != std::string::npos) counts[3]++;
    if (fn == "temper_kernel" && entry.size() < 400) entry.push_back(line);
  }
  std::string text = fmt::format("# Reference disassembly summary (objdump -d of sealed reference {}, case {})\n\n", sealed->name, case_id);
  text += fmt::format("{:<48} {:>8} {:>10} {:>8} {:>8}\n", "function", "instrs", "ymm/zmm", "xmm", "calls");
  for (const auto& [name, c] : per_fn) {
    if (c[0] == 0) continue;
    text += fmt::format("{:<48} {:>8} {:>10} {:>8} {:>8}\n", name.substr(0, 48), c[0], c[1], c[3], c[2]);
  }
  text += "\ncall targets:\n";
  for (const auto& [t, n] : call_targets) text += fmt::format("  {} x{}\n", t, n);
  text += "\ntemper_kernel (first 400 instructions):\n";
  for (const auto& l : entry) text += l + "\n";
  return text;
}

} // namespace temper::campaign
