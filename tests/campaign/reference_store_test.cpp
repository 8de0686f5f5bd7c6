// The campaign's sealed store (judge/seal.h behind campaign::ReferenceStore) and the judge runs
// that name a sealed entry: the task's reference sealed as R0 in CAMPAIGN/refs, sealing again
// is idempotent, other content under a used id is refused, the sealed reference is judged as a
// black box, and a candidate built with other flags is refused (the compiler-match check).
#include "campaign/judge_service.h"
#include "campaign/reference_store.h"
#include "campaign_fakes.h"
#include "judge/seal.h"
#include "util/process.h"

#include <gtest/gtest.h>

namespace temper::campaign::reference_store_test {
namespace {

using namespace testing;

JudgeSettings quick_settings() {
  JudgeSettings s;
  s.cases = {13};
  s.cap_s = 0.2;
  s.cache_mode = "warm";
  s.measure_jobs = 1;
  s.confirm_jobs = 0;
  s.min_samples = 5;
  s.min_time_s = 0.02;
  s.jobs = 2;
  return s;
}

TEST(SealedReferenceStoreTest, SealsIntoTheCampaignStoreAndJudgesByName) {
  util::TempDir tmp("temper-campaign-refs");
  const fs::path task = make_task(tmp.path(), {});
  const fs::path store = tmp.path() / "campaign" / "refs";
  const JudgeSettings settings = quick_settings();
  SealedReferenceStore refs(store, task, compiler_spec(settings), util::default_process_runner(), 2);

  auto r0 = refs.seal(task / "reference.cpp", "R0", "starting reference");
  ASSERT_TRUE(r0.has_value()) << r0.error().message;
  EXPECT_EQ(r0->id, "R0");
  EXPECT_EQ(r0->label, "starting reference");
  EXPECT_EQ(r0->store, store);
  EXPECT_EQ(r0->to_json().dump().find(store.string()), std::string::npos) << "the JSON leads nowhere";
  // The judge's store entry: manifest with compiler and flags, the source in the vault, the
  // caller's source left in place.
  auto sealed = judge::find_sealed(store, "R0");
  ASSERT_TRUE(sealed.has_value()) << sealed.error().message;
  EXPECT_EQ(sealed->origin, "starting reference");
  EXPECT_EQ(sealed->flags, compiler_spec(settings).flags);
  EXPECT_EQ(sealed->task, "SwiGlu");
  EXPECT_EQ(*util::read_file(store / "R0" / "vault" / "reference.cpp"), *util::read_file(task / "reference.cpp"));
  EXPECT_TRUE(fs::exists(task / "reference.cpp"));

  // Idempotent for the same content (a resume after a kill), refused for other content.
  auto again = refs.seal(task / "reference.cpp", "R0", "starting reference");
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->sha, r0->sha);
  std::ofstream(tmp.path() / "other.cpp") << *util::read_file(task / "reference.cpp") << "\n// other\n";
  auto clash = refs.seal(tmp.path() / "other.cpp", "R0", "promoted");
  ASSERT_FALSE(clash.has_value());
  EXPECT_NE(clash.error().message.find("other content"), std::string::npos) << clash.error().message;
  auto missing = refs.get("R7");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("it has: R0"), std::string::npos) << missing.error().message;

  // The sealed reference judged as a black box (no candidate), and its disassembly.
  RealJudgeService service(settings, util::default_process_runner());
  service.set_worker_exe(fs::path(TEMPER_BINARY_DIR) / "temper-worker");
  JudgeCall call;
  call.task_dir = task;
  call.tier = "correctness";
  call.cases = {13};
  set_reference(call, *r0);
  auto out = service.judge(call);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(out->report["cases"][0]["status"], "PASSED") << out->report.dump(2);
  EXPECT_EQ(out->report["context"]["candidate"]["path"], "sealed:R0") << out->report["context"].dump(2);
  auto dis = service.disassemble(call);
  ASSERT_TRUE(dis.has_value()) << dis.error().message;
  EXPECT_NE(dis->find("sealed reference R0, case 13"), std::string::npos);
  EXPECT_NE(dis->find("temper_kernel"), std::string::npos);

  // A candidate built with other flags is not compared with the sealed reference.
  JudgeSettings other = settings;
  other.flags = {"-O1"};
  RealJudgeService mismatched(other, util::default_process_runner());
  mismatched.set_worker_exe(fs::path(TEMPER_BINARY_DIR) / "temper-worker");
  JudgeCall gate = call;
  gate.candidate = task / "reference.cpp";
  gate.tier = "gate";
  auto refused = mismatched.judge(gate);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("different protocols"), std::string::npos) << refused.error().message;
  // And a probe needs the sealed entry to exist.
  JudgeCall probe = gate;
  probe.tier = "probe";
  probe.reference = "R9";
  probe.grid = {"UNROLL=1,2"};
  auto unknown = service.probe_grid(probe);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("no sealed reference 'R9'"), std::string::npos) << unknown.error().message;
}

} // namespace
} // namespace temper::campaign::reference_store_test
