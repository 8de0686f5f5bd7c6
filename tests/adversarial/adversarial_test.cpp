// The adversarial suite (DESIGN.md judge protocol, ../shared judging.md §6-7): one cheating
// candidate per known exploit for tasks/swi_glu, each judged by the real `temper` binary on case
// 1 and caught with its reason code, and an honest fast candidate that passes every check,
// timing against a sealed reference included. Fixtures: tests/fixtures/swi_glu/cheats/README.md.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>

namespace adversarial_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";
const fs::path kTask = kSource / "tasks/swi_glu";
const fs::path kCheats = kSource / "tests/fixtures/swi_glu/cheats";

// Short timing: one probe job; a cheat that is caught while timed is caught on its first samples.
const std::vector<std::string> kShortTiming = {"--tier", "probe", "--cap", "1", "--min-time", "0.05", "--min-samples", "6"};

struct Verdict {
  int exit_code = -1;
  std::string output;
  nlohmann::json report;
  nlohmann::json first_case;
};

util::ProcessResult run(std::vector<std::string> args, int timeout_s = 300) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.timeout = std::chrono::seconds(timeout_s);
  return util::default_process_runner().run(cmd);
}

// The store every test shares: the task's reference sealed as `swiglu-ref`, and a reference that
// also exports a helper function as `swiglu-helper`, sealed once per test process.
class Store {
public:
  static Store& get() {
    static Store store;
    return store;
  }
  const fs::path& path() const { return m_dir.path(); }
  const fs::path& work() const { return m_work; }
  const std::string& error() const { return m_error; }

private:
  Store() : m_dir("temper-adversarial-store"), m_work(m_dir.path() / "work") {
    fs::create_directories(m_work);
    fs::copy_file(kTask / "reference.cpp", m_work / "reference.cpp");
    std::ofstream(m_work / "helper_reference.cpp") << "#include \"" << (kTask / "reference.cpp").string() << "\"\n"
                                                   << "TEMPER_EXPORT float ref_fast_exp(float x) { return std::exp(x); }\n";
    for (auto [source, name] : {std::pair{"reference.cpp", "swiglu-ref"}, std::pair{"helper_reference.cpp", "swiglu-helper"}}) {
      auto r = run({"seal", kTask.string(), (m_work / source).string(), "--name", name, "--store", (m_dir.path() / "refs").string()});
      if (!r.ok()) m_error += r.output;
    }
  }
  util::TempDir m_dir;
  fs::path m_work;
  std::string m_error;
};

fs::path store() { return Store::get().path() / "refs"; }

// tasks/gqa/kernels/blocked.cpp sealed as `gqa-blocked` into the shared store, once, on first
// use: the kernel the GQA memoizing fixture wraps, timed as the reference it must not beat.
const std::string& gqa_blocked_error() {
  static const std::string error = [] {
    const fs::path copy = Store::get().work() / "gqa_blocked.cpp";
    fs::copy_file(kSource / "tasks/gqa/kernels/blocked.cpp", copy, fs::copy_options::overwrite_existing);
    auto r = run({"seal", (kSource / "tasks/gqa").string(), copy.string(), "--name", "gqa-blocked", "--store", store().string()});
    return r.ok() ? std::string() : r.output;
  }();
  return error;
}

Verdict judge_task(const fs::path& task, const fs::path& candidate, const std::string& cases,
                   std::vector<std::string> extra = {}) {
  util::TempDir dir("temper-adversarial");
  fs::path json = dir.path() / "report.json";
  std::vector<std::string> args = {"judge", task.string(), candidate.string(), "--cases", cases, "--trials", "3", "--json",
                                   json.string(), "--quiet", "--store", store().string()};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run(args);
  Verdict v;
  v.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  v.output = r.output;
  if (auto text = util::read_file(json)) {
    v.report = nlohmann::json::parse(*text);
    if (!v.report["cases"].empty()) v.first_case = v.report["cases"][0];
  }
  return v;
}

Verdict judge(const fs::path& candidate, std::vector<std::string> extra = {}) {
  return judge_task(kTask, candidate, "1", std::move(extra));
}

// Timed against `reference` (a source) with the short probe timing.
std::vector<std::string> against(const fs::path& reference) {
  std::vector<std::string> args = {"--reference", reference.string()};
  args.insert(args.end(), kShortTiming.begin(), kShortTiming.end());
  return args;
}

// A kernel that passes every check and is timed gains nothing: not FASTER than the honest
// kernel it wraps, and no more than noise above it.
void expect_no_gain(const Verdict& v) {
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(v.first_case.value("status", ""), "PASSED") << v.first_case.dump(2) << v.output;
  ASSERT_TRUE(v.first_case.contains("timing")) << v.first_case.dump(2);
  const auto& t = v.first_case["timing"];
  EXPECT_NE(t.value("verdict", ""), "FASTER") << t.dump(2);
  EXPECT_LT(t.value("speedup", 99.0), 1.05) << t.dump(2);
  EXPECT_EQ(t["jobs"][0].value("content", ""), "fresh") << t.dump(2);
}

std::vector<std::string> with_reference(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--reference", "swiglu-ref"};
  args.insert(args.end(), kShortTiming.begin(), kShortTiming.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

void expect_caught(const Verdict& v, const std::string& status, const std::string& reason) {
  ASSERT_TRUE(Store::get().error().empty()) << Store::get().error();
  EXPECT_EQ(v.exit_code, 1) << v.output;
  EXPECT_EQ(v.first_case.value("status", ""), status) << v.first_case.dump(2) << "\n" << v.output;
  EXPECT_EQ(v.first_case.value("reason_code", ""), reason) << v.first_case.dump(2);
  // The terminal table names the reason too.
  EXPECT_NE(v.output.find("[" + reason + "]"), std::string::npos) << v.output;
}

} // namespace

// --- the control: an honest fast kernel passes everything, timed against the sealed reference.

TEST(Adversarial, AnHonestFastKernelPassesEveryCheck) {
  auto v = judge(kSource / "tests/fixtures/swi_glu/correct_fast.cpp", with_reference());
  ASSERT_TRUE(Store::get().error().empty()) << Store::get().error();
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(v.first_case.value("status", ""), "PASSED") << v.first_case.dump(2) << v.output;
  ASSERT_TRUE(v.first_case.contains("timing")) << v.first_case.dump(2);
  EXPECT_EQ(v.report["context"]["reference"].value("sealed", ""), "swiglu-ref") << v.report["context"].dump(2);
  // The sandbox the workers ran under is part of the record.
  EXPECT_TRUE(v.report["context"]["sandbox"].is_string()) << v.report["context"].dump(2);
}

// --- static boundary checks: nothing of the candidate runs.

TEST(Adversarial, CallingTheReferencesSymbolIsCallsReference) {
  util::TempDir dir("temper-adversarial");
  const fs::path cand = dir.path() / "calls_helper.cpp";
  std::ofstream(cand) << "#include \"" << (kCheats / "honest_part.h").string() << "\"\n"
                      << R"(extern "C" float ref_fast_exp(float);
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  if (ref_fast_exp(0.0f) != 1.0f) return 1;
  return cheat::compute(args);
}
)";
  auto v = judge(cand, {"--reference", "swiglu-helper", "--tier", "probe"});
  expect_caught(v, "REJECTED_CHEAT", "calls_reference");
  EXPECT_EQ(v.first_case.value("trials", -1), 0) << v.first_case.dump(2);
}

TEST(Adversarial, OpeningTheSealedArtifactIsAForbiddenImport) {
  expect_caught(judge(kCheats / "dlopens_sealed.cpp"), "REJECTED_CHEAT", "forbidden_import");
}

TEST(Adversarial, RunningAProgramIsAForbiddenImport) {
  expect_caught(judge(kCheats / "runs_program.cpp"), "REJECTED_CHEAT", "forbidden_import");
}

TEST(Adversarial, ReadingTheGoldensFromTheCacheIsCaughtInTheSource) {
  expect_caught(judge(kCheats / "reads_golden.cpp"), "REJECTED_CHEAT", "reads_protected_file");
}

TEST(Adversarial, LookingForTheJudgeInEnvironmentOrArgvIsAForbiddenImport) {
  auto v = judge(kCheats / "detects_judge.cpp");
  expect_caught(v, "REJECTED_CHEAT", "forbidden_import");
  EXPECT_NE(v.first_case.value("message", "").find("getenv"), std::string::npos) << v.first_case.dump(2);
}

TEST(Adversarial, InterposingClockGettimeIsTimerTampering) {
  expect_caught(judge(kCheats / "interposes_clock.cpp"), "REJECTED_CHEAT", "timer_tampering");
}

TEST(Adversarial, LinkingOpenBlasIsAForbiddenLibrary) {
  // The check is on the library list: the system's OpenBLAS, or a stand-in of that name.
  util::TempDir dir("temper-adversarial-blas");
  std::string lib_dir = "/usr/lib/x86_64-linux-gnu";
  if (!fs::exists(lib_dir + "/libopenblas.so")) {
    lib_dir = dir.path().string();
    std::ofstream(dir.path() / "openblas.c") << "int openblas_get_num_threads(void) { return 1; }\n";
    util::Command cc;
    cc.argv = {"g++", "-x", "c", "-shared", "-fPIC", "-Wl,-soname,libopenblas.so.0", (dir.path() / "openblas.c").string(), "-o",
               (dir.path() / "libopenblas.so").string()};
    auto r = util::default_process_runner().run(cc);
    ASSERT_TRUE(r.ok()) << r.output;
  }
  auto v = judge(kCheats / "links_openblas.cpp", {"--flags", "-O3 -march=native -Wl,--no-as-needed -L" + lib_dir + " -lopenblas"});
  expect_caught(v, "REJECTED_CHEAT", "forbidden_library");
  EXPECT_NE(v.first_case.value("message", "").find("libopenblas"), std::string::npos) << v.first_case.dump(2);
}

// --- the runtime sandbox.

TEST(Adversarial, ARawForkIsStoppedBySeccomp) {
  expect_caught(judge(kCheats / "raw_fork.cpp"), "REJECTED_CHEAT", "forbidden_syscall");
}

// Not a reason code: the read is refused and the kernel has nothing to cheat with.
TEST(Adversarial, TheJudgesMemoryIsOutOfReach) {
  auto v = judge(kCheats / "reads_judge_memory.cpp");
  EXPECT_EQ(v.first_case.value("status", ""), "RUNTIME_ERROR") << v.first_case.dump(2) << v.output;
  EXPECT_NE(v.first_case.value("message", "").find("out of reach"), std::string::npos) << v.first_case.dump(2);
}

// --- the judge's checks on behaviour.

TEST(Adversarial, ModifyingTheInputsIsWritesInputs) {
  expect_caught(judge(kSource / "tests/fixtures/swi_glu/writes_input.cpp"), "REJECTED_CHEAT", "writes_inputs");
}

TEST(Adversarial, CachingByInputPointerIsStaleOutput) {
  expect_caught(judge(kCheats / "cache_by_pointer.cpp"), "REJECTED_CHEAT", "stale_output");
}

TEST(Adversarial, CachingByInputContentIsStaleOutput) {
  auto v = judge(kCheats / "cache_by_content.cpp");
  expect_caught(v, "REJECTED_CHEAT", "stale_output");
  EXPECT_NE(v.first_case.value("message", "").find("swapped"), std::string::npos) << v.first_case.dump(2);
}

TEST(Adversarial, ComputingOnlyOnTheFirstCallIsStaleOutput) {
  expect_caught(judge(kCheats / "first_call_only.cpp"), "REJECTED_CHEAT", "stale_output");
}

TEST(Adversarial, LeavingAThreadToFinishIsDeferredWork) {
  expect_caught(judge(kCheats / "deferred_thread.cpp"), "REJECTED_CHEAT", "deferred_work");
}

// --- caught while timed: these pass correctness.

TEST(Adversarial, CachingByPointerOnlyWhenTimedIsStaleOutput) {
  // Two worker lives per arm: each life makes many calls, so the kernel gets to remember one
  // (with a life every two calls, on a slow machine, it never would).
  auto v = judge(kCheats / "cache_by_pointer_when_timed.cpp", with_reference({"--lives", "2"}));
  expect_caught(v, "REJECTED_CHEAT", "stale_output");
  EXPECT_NE(v.first_case.value("message", "").find("while timed"), std::string::npos) << v.first_case.dump(2);
}

TEST(Adversarial, SkippingWorkAfterACacheFlushIsTimedBehaviourDiffers) {
  // The buffer cold step (the PyTorch arm's): its buffer is what the kernel looks for. Under the
  // default evict step a timed worker maps nothing a correctness worker does not.
  expect_caught(judge(kCheats / "skips_when_flushed.cpp", with_reference({"--cold-step", "buffer"})), "INCORRECT_NUMERICAL",
                "timed_behaviour_differs");
}

TEST(Adversarial, WritingPartOfTheOutputWhenTimedIsTimedBehaviourDiffers) {
  expect_caught(judge(kCheats / "partial_write.cpp", with_reference()), "INCORRECT_NUMERICAL", "timed_behaviour_differs");
}

// --- remembering outputs gains nothing: every timed call computes on values no earlier call of
// its job saw. Before, the timing pool repeated a few input sets per job, and a GQA kernel that
// remembered outputs by a hash of its whole input was confirmed 2.4x and 4.8x faster.

TEST(Adversarial, RememberingWholeInputsGainsNothingOnSwiGlu) {
  expect_no_gain(judge(kCheats / "memoizes_full_content.cpp", against(kSource / "tests/fixtures/swi_glu/honest_scalar.cpp")));
}

TEST(Adversarial, RememberingWholeInputsGainsNothingOnComputeBoundGqa) {
  // Case 1: a small causal prefill, where hashing the inputs costs little next to the attention.
  ASSERT_EQ(gqa_blocked_error(), "");
  std::vector<std::string> timing = {"--reference", "gqa-blocked"};
  timing.insert(timing.end(), kShortTiming.begin(), kShortTiming.end());
  expect_no_gain(judge_task(kSource / "tasks/gqa", kSource / "tests/fixtures/gqa/memoizes_full_content.cpp", "1", timing));
}

// --- the arm not being timed is frozen, and its threads' work outside calls is counted.

// tasks/swi_glu on two threads (both CPUs, the monotonic clock), in a directory of the test's.
fs::path two_thread_task(const util::TempDir& dir) {
  const fs::path task = dir.path() / "swi_glu_2t";
  fs::copy(kTask, task, fs::copy_options::recursive);
  auto yaml = util::read_file(task / "temper.yaml");
  EXPECT_TRUE(yaml);
  std::string text = yaml ? *yaml : std::string();
  const auto at = text.find("threads: 1");
  EXPECT_NE(at, std::string::npos) << text;
  if (at != std::string::npos) text.replace(at, 10, "threads: 2");
  std::ofstream(task / "temper.yaml") << text;
  return task;
}

TEST(Adversarial, AThreadBusyBetweenCallsIsWorkOutsideCall) {
  util::TempDir dir("temper-adversarial-2t");
  const fs::path task = two_thread_task(dir);
  auto v = judge_task(task, kCheats / "busy_between_calls.cpp", "1", against(task / "reference.cpp"));
  expect_caught(v, "REJECTED_CHEAT", "work_outside_call");
  const auto& job = v.first_case["timing"]["jobs"][0];
  EXPECT_GT(job["activity"]["candidate"]["max_threads"].get<int>(), 1) << job.dump(2);
  // The honest kernel on the same two-thread task does no such work.
  auto honest = judge_task(task, task / "reference.cpp", "1", against(task / "reference.cpp"));
  EXPECT_EQ(honest.first_case.value("status", ""), "PASSED") << honest.first_case.dump(2) << honest.output;
  // Nor does the starter kernel's pool (temper/parallel.h): two threads work in its calls and
  // sleep between them.
  auto pooled = judge_task(task, kTask / "kernels" / "rows.cpp", "1", against(task / "reference.cpp"));
  EXPECT_EQ(pooled.first_case.value("status", ""), "PASSED") << pooled.first_case.dump(2) << pooled.output;
  ASSERT_TRUE(pooled.first_case.contains("timing")) << pooled.first_case.dump(2);
  const auto& activity = pooled.first_case["timing"]["jobs"][0]["activity"]["candidate"];
  EXPECT_GT(activity["max_threads"].get<int>(), 1) << activity.dump(2);
}

// --- the sealed reference stays a black box.

TEST(Adversarial, SealedReferencesAreListedRunAndDisassembledNeverPrinted) {
  ASSERT_TRUE(Store::get().error().empty()) << Store::get().error();
  auto list = run({"ref", "list", "--store", store().string()});
  EXPECT_TRUE(list.ok()) << list.output;
  EXPECT_NE(list.output.find("swiglu-ref"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("swiglu-helper"), std::string::npos) << list.output;

  auto ran = run({"ref", "run", "swiglu-ref", "--case", "1", "--store", store().string(), "--quiet"});
  EXPECT_TRUE(ran.ok()) << ran.output;
  EXPECT_NE(ran.output.find("PASSED"), std::string::npos) << ran.output;

  auto dis = run({"ref", "disasm", "swiglu-ref", "--case", "1", "--store", store().string()});
  EXPECT_TRUE(dis.ok()) << dis.output;
  EXPECT_NE(dis.output.find("<temper_kernel>:"), std::string::npos) << dis.output.substr(0, 2000);

  // The source moved into the vault: the original is gone, and no command prints its text.
  EXPECT_FALSE(fs::exists(Store::get().work() / "reference.cpp"));
  const std::string marker = "TEMPER_EXPORT"; // in the source, never in a disassembly
  for (const auto* out : {&list.output, &ran.output, &dis.output}) EXPECT_EQ(out->find(marker), std::string::npos);

  auto prof = run({"ref", "profile", "swiglu-ref", "--case", "1", "--store", store().string()});
  EXPECT_TRUE(prof.ok()) << prof.output; // the black box's metrics: static mix of the artifact, counters
  EXPECT_NE(prof.output.find("static.code_bytes"), std::string::npos) << prof.output;
  EXPECT_EQ(prof.output.find(marker), std::string::npos);
  EXPECT_NE(prof.output.find("on case 1 (SwiGlu), 1 thread\n"), std::string::npos) << prof.output; // the task's
  // At a campaign's thread count (`temper run --threads`), which its Teacher's profile uses.
  auto prof2 = run({"ref", "profile", "swiglu-ref", "--case", "1", "--threads", "2", "--store", store().string()});
  EXPECT_TRUE(prof2.ok()) << prof2.output;
  EXPECT_NE(prof2.output.find("on case 1 (SwiGlu), 2 threads\n"), std::string::npos) << prof2.output;
  EXPECT_EQ(run({"ref", "profile", "swiglu-ref", "--case", "1", "--threads", "0", "--store", store().string()}).exit_code, 2);

  auto missing = run({"ref", "run", "no-such-ref", "--case", "1", "--store", store().string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("swiglu-ref"), std::string::npos) << missing.output; // names what the store has
}

TEST(Adversarial, TimingASealedReferenceUsesThePairedProtocol) {
  ASSERT_TRUE(Store::get().error().empty()) << Store::get().error();
  auto t = run({"ref", "time", "swiglu-ref", "--case", "1", "--store", store().string(), "--cap", "1", "--quiet"});
  EXPECT_TRUE(t.ok()) << t.output;
  EXPECT_NE(t.output.find("A/A ratio"), std::string::npos) << t.output;
}

} // namespace adversarial_test
