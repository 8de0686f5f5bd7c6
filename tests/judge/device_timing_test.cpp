// The judge's timing job with inputs made on the device (MeasurementProtocol::content_maker
// "device"), end to end through temper-cuda-worker on the fake driver and runtime
// (tests/fixtures/cuda_fake): fresh inputs per call mixed there, outputs hashed there, the
// sampled check rebuilding a call's inputs on the host, fetching its outputs and checking them on
// the golden. The same path runs on a GPU with the real library (CudaE2E, bench/cuda_judge_cost.sh).
#include "build/compile_cache.h"
#include "core/task_loader.h"
#include "judge/golden.h"
#include "judge/timing.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace temper::judge::device_timing_test {
namespace {

namespace fs = std::filesystem;
const fs::path kFake = TEMPER_FAKE_CUDA;

struct DeviceTimingFixture {
  util::TempDir dir;
  build::CompileCache cache{dir.path() / "compile", build::CompilerSpec{"g++", {"-O1"}}, util::default_process_runner()};
  core::Task task;
  core::Case c;

  DeviceTimingFixture() {
    auto t = core::load_task(fs::path(TEMPER_SOURCE_DIR) / "tasks" / "swi_glu");
    EXPECT_TRUE(t) << t.error().message;
    task = *t;
    c = task.cases.at(1); // float32, range [-2, 2]
    c.input_shapes = {{32, 256}};
  }

  TimingConfig config() const {
    TimingConfig tc;
    tc.worker_exe = fs::path(TEMPER_BINARY_DIR) / "temper-cuda-worker";
    tc.worker_args = {"--driver", (kFake / "lib64" / "libcuda.so.1").string(), "--runtime", (kFake / "lib64" / "libcudart.so").string()};
    tc.device_content = kFake / "libtemper_fake_device_content.so";
    tc.judge_work_outside_call = false;
    auto& p = tc.protocol;
    p.content_maker = "device";
    p.clock = "fake runtime events";
    p.flush_bytes = size_t{1} << 20;
    p.rule.cap_s = 0.3;
    p.rule.min_time_s = 0.01;
    p.rule.warmup_s = 0.002;
    p.rule.target_lives = 2;
    p.rule.min_lives = 1;
    return tc;
  }

  Expected<CaseTiming> time(const std::string& reference, const std::string& candidate,
                             std::shared_ptr<ProvedOutputs> proved = nullptr, uint64_t seed = 0x5eed, int max_rounds = 0) {
    GoldenRunner golden(task, cache, util::default_process_runner(), dir.path() / "golden");
    TEMPER_TRY(golden.prepare());
    TimingConfig tc = config();
    tc.proved = std::move(proved);
    if (max_rounds > 0) {
      tc.protocol.rule.min_samples = std::min(tc.protocol.rule.min_samples, max_rounds);
      tc.protocol.rule.max_samples = max_rounds;
    }
    return time_case(task, c, kFake / ("libtemper_fake_swi_glu_" + reference + ".so"),
                     kFake / ("libtemper_fake_swi_glu_" + candidate + ".so"), golden, tc, seed, std::nullopt);
  }
};

TEST(DeviceTiming, TheReferenceAgainstItselfIsProvedByItsOwnOutputs) {
  DeviceTimingFixture f;
  auto t = f.time("plain", "plain");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->behaviour_differs) << t->message;
  EXPECT_EQ(t->failure_status, CaseStatus::Passed) << t->message;
  EXPECT_EQ(t->input_sets, 2) << "the two draws the device mixes";
  // Calls the reference also made (the same content id) need no re-run; only warm-ups that
  // the reference did not make do.
  EXPECT_GT(t->proved_by_reference, 10 * t->rechecks);
}

TEST(DeviceTiming, OtherBytesWithinToleranceAreCheckedOnTheGolden) {
  DeviceTimingFixture f;
  auto t = f.time("plain", "double");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->behaviour_differs) << t->message;
  EXPECT_GT(t->rechecks, 0) << "outputs the reference did not give are run again, fetched and checked";
  const int recorded = static_cast<int>(t->paired.candidate.samples.size());
  EXPECT_EQ(t->check_target, check_sample_size(0.05, 0.99, recorded, recorded - t->proved_by_reference));
  EXPECT_EQ(t->rechecks, t->check_target);
}

// Two jobs on the same seed (a probe's variants, a campaign's judgements) sharing their proofs,
// each with fewer rounds than the sample, so every round is checked (the big cases): the
// second's outputs on the same values are the bytes the first proved, so it needs no golden.
// On another seed nothing is shared, and a kernel whose bytes differ is checked in full.
TEST(DeviceTiming, OutputsProvedByAnEarlierJobOnTheSameValuesNeedNoGolden) {
  DeviceTimingFixture f;
  auto proved = std::make_shared<ProvedOutputs>();
  constexpr int kRounds = 12;
  auto first = f.time("plain", "double", proved, 0x5eed, kRounds);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_GT(first->rechecks, 0);
  auto second = f.time("plain", "double", proved, 0x5eed, kRounds);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(second->behaviour_differs) << second->message;
  // Only rounds the first job did not reach can need a golden.
  const auto rounds = [](const CaseTiming& t) { return static_cast<int>(t.paired.candidate.samples.size()); };
  EXPECT_LE(second->rechecks, std::max(0, rounds(*second) - rounds(*first)));
  EXPECT_GT(second->proved_by_identity, 0);
  auto other_seed = f.time("plain", "double", proved, 0x5eee, kRounds);
  ASSERT_TRUE(other_seed) << other_seed.error().message;
  EXPECT_GT(other_seed->rechecks, 0);
  auto wrong = f.time("plain", "wrong", proved, 0x5eed, kRounds);
  ASSERT_TRUE(wrong) << wrong.error().message;
  EXPECT_TRUE(wrong->behaviour_differs) << "other bytes on the same values are checked, and fail";
}

TEST(DeviceTiming, AKernelWrongOnSomeInputsIsCaught) {
  DeviceTimingFixture f;
  auto t = f.time("plain", "wrong");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->behaviour_differs) << "a third of the calls fail the golden; the sample must find one";
  EXPECT_NE(t->message.find("fails the golden check"), std::string::npos) << t->message;
}

// The final report's shape: one candidate against several references in one job. Each result is
// the candidate against that reference; the candidate's calls and its sampled check serve all;
// a reference that does not load fails only its own result; a wrong candidate fails every one.
TEST(DeviceTiming, OneCandidateAgainstSeveralReferencesInOneJob) {
  DeviceTimingFixture f;
  GoldenRunner golden(f.task, f.cache, util::default_process_runner(), f.dir.path() / "golden");
  ASSERT_TRUE(golden.prepare());
  const TimingConfig tc = f.config();
  auto fake = [](const std::string& name) { return kFake / ("libtemper_fake_swi_glu_" + name + ".so"); };
  std::vector<ReferenceArm> refs(3);
  refs[0].artifact = fake("double");
  refs[1].artifact = fake("plain");
  refs[2].artifact = kFake / "no-such-reference.so";
  auto r = time_case_against(f.task, f.c, fake("double"), refs, golden, tc, 0x5eed, {});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  ASSERT_FALSE((*r)[2]);
  EXPECT_NE((*r)[2].error().message.find("does not load"), std::string::npos) << (*r)[2].error().message;
  for (size_t k : {0u, 1u}) {
    ASSERT_TRUE((*r)[k]) << (*r)[k].error().message;
    const CaseTiming& t = *(*r)[k];
    EXPECT_EQ(t.paired.status, PairedStatus::Measured) << t.message;
    EXPECT_EQ(t.failure_status, CaseStatus::Passed) << t.message;
    EXPECT_FALSE(t.behaviour_differs) << t.message;
    EXPECT_GT(t.paired.rounds, 0);
  }
  const CaseTiming& a = *(*r)[0];
  const CaseTiming& b = *(*r)[1];
  // One check for both: its outputs are the first reference's bytes (the same kernel).
  EXPECT_EQ(a.rechecks, b.rechecks);
  EXPECT_EQ(a.proved_by_reference, b.proved_by_reference);
  EXPECT_GT(a.proved_by_reference, 0);
  // The candidate's calls are shared: the rounds both pairs took part in hold the same times.
  const size_t common = std::min(a.paired.candidate.samples.size(), b.paired.candidate.samples.size());
  ASSERT_GT(common, 0u);
  for (size_t i = 0; i < common; ++i)
    EXPECT_EQ(a.paired.candidate.samples[i].kernel_seconds, b.paired.candidate.samples[i].kernel_seconds) << i;
  EXPECT_EQ(a.candidate_activity.timed_calls, b.candidate_activity.timed_calls);

  std::vector<ReferenceArm> two(refs.begin(), refs.begin() + 2);
  auto wrong = time_case_against(f.task, f.c, fake("wrong"), two, golden, tc, 0x5eed, {});
  ASSERT_TRUE(wrong) << wrong.error().message;
  for (const auto& t : *wrong) {
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_TRUE(t->behaviour_differs);
    EXPECT_EQ(t->failure_status, CaseStatus::IncorrectNumerical);
    EXPECT_NE(t->message.find("fails the golden check"), std::string::npos) << t->message;
  }
}

} // namespace
} // namespace temper::judge::device_timing_test
