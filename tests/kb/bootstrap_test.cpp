// `temper kb bootstrap` without running probes: which class roofline entries are taken from, what
// the plan does with each entry, the entries it files, and the user's knowledge base layered over
// the repository's.
#include "judge/roofline.h"
#include "kb/bootstrap.h"
#include "kb/certify.h"
#include "kb/store.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace bootstrap_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSeed = fs::path(TEMPER_SOURCE_DIR) / "hw_kb" / "x86_64-zen5-avx512";

kb::TargetFingerprint fingerprint(const std::string& family, int cpus = 2) {
  util::HostInfo h;
  h.cpu_vendor = "AuthenticAMD";
  h.cpu_model = "AMD EPYC";
  h.cpu_family = family;
  h.cpu_flags = {"avx2", "avx512f", "fma", "f16c"};
  h.logical_cpus = cpus;
  h.memory_bytes = 24ull << 30;
  h.llc_bytes = 32 << 20;
  kb::TargetFingerprint t = kb::make_fingerprint(h, "g++ 12");
  t.arch = "x86_64";
  return t;
}
kb::TargetFingerprint zen4(int cpus = 2) { return fingerprint("25/97/2", cpus); }
kb::TargetFingerprint zen5() { return fingerprint("26/2/1"); }

void rewrite_line(const fs::path& file, const std::string& key, const std::string& line) {
  std::string text = *util::read_file(file);
  auto at = text.find("\n" + key + ":");
  ASSERT_NE(at, std::string::npos) << key;
  auto end = text.find('\n', at + 1);
  text.replace(at + 1, end - at - 1, line);
  ASSERT_TRUE(util::write_file_atomic(file, text));
}

// Files the seed entry `seed_id` under root/<cls>/<id>/ with target and id rewritten, certified on
// `on` (a fingerprint id) when given, else proposed.
fs::path file_entry(const fs::path& root, const std::string& cls, const std::string& seed_id, const std::string& id,
                    const std::string& on = {}) {
  fs::path dest = root / cls / id;
  fs::create_directories(dest.parent_path());
  fs::copy(kSeed / seed_id, dest, fs::copy_options::recursive);
  rewrite_line(dest / "entry.yaml", "id", "id: " + id);
  rewrite_line(dest / "entry.yaml", "target", "target: " + cls);
  auto p = kb::load_entry(dest);
  EXPECT_TRUE(p.entry) << (p.problems.empty() ? "" : p.problems.front().to_string());
  if (!p.entry) return dest;
  p.entry->evidence.clear();
  p.entry->status = kb::EntryStatus::Proposed;
  if (!on.empty()) {
    kb::Evidence ev;
    ev.date = "2026-12-01T00:00:00Z";
    ev.fingerprint = on;
    ev.target = cls;
    ev.outcome = "certified";
    ev.figures = {{"value", 50.0}};
    ev.reason = "test";
    p.entry->evidence.push_back(ev);
    p.entry->status = kb::EntryStatus::Certified;
  }
  EXPECT_TRUE(kb::write_status_and_evidence(*p.entry));
  return dest;
}

const kb::BootstrapItem* item(const kb::BootstrapPlan& plan, const std::string& id) {
  auto it = std::find_if(plan.items.begin(), plan.items.end(), [&](const kb::BootstrapItem& i) { return i.id == id; });
  return it == plan.items.end() ? nullptr : &*it;
}

class FigureRunner final : public kb::ProbeRunner {
public:
  explicit FigureRunner(double figure) : m_figure(figure) {}
  Expected<kb::ProbeOutcome> run(const kb::Entry& e) override {
    ran.push_back(e.id);
    // 1 ms per call with a little spread: the figure is work / 1 ms, in the entry's unit (1e9).
    kb::ProbeOutcome o;
    o.work = m_figure * 1e9 * 1e-3;
    for (int i = 0; i < 2; ++i) {
      kb::ProbeJob j;
      j.confirmation = i == 1;
      for (int k = 0; k < 40; ++k) j.seconds.push_back(1e-3 * (1 + 0.005 * ((k % 7) - 3) / 3.0));
      o.jobs.push_back(j);
    }
    o.verdict_confirmed = true;
    o.report_hash = "abc";
    return o;
  }
  std::vector<std::string> ran;

private:
  double m_figure;
};

} // namespace

TEST(KbBootstrap, TargetClassParts) {
  auto p = kb::parse_target_class("x86_64-unknown-f26m2-avx512");
  EXPECT_EQ(p.arch, "x86_64");
  EXPECT_EQ(p.microarch, "unknown-f26m2");
  EXPECT_EQ(p.isa_tier, "avx512");
  EXPECT_EQ(kb::microarch_vendor("zen4"), "AuthenticAMD");
  EXPECT_EQ(kb::microarch_vendor("sapphirerapids"), "GenuineIntel");
  EXPECT_EQ(kb::microarch_vendor("no-such-core"), "");
}

TEST(KbBootstrap, NearestClassPrefersVendorIsaThenGeneration) {
  util::TempDir dir;
  const std::string other = "0000000000000000";
  file_entry(dir.path(), "x86_64-zen5-avx512", "bw-read-1t", "bw-read-1t", other);
  file_entry(dir.path(), "x86_64-zen5-avx512", "bw-triad-1t", "bw-triad-1t", other);
  file_entry(dir.path(), "x86_64-zen2-avx2", "bw-read-1t", "zen2-bw-read-1t", other);
  file_entry(dir.path(), "x86_64-zen2-avx2", "bw-triad-1t", "zen2-bw-triad-1t", other);
  file_entry(dir.path(), "x86_64-zen2-avx2", "bw-write-1t", "zen2-bw-write-1t", other);
  // Proposed entries do not make a class a source.
  file_entry(dir.path(), "x86_64-zen3-avx512", "bw-read-1t", "zen3-bw-read-1t");
  kb::KnowledgeBase base = kb::load_kb(dir.path());
  ASSERT_TRUE(base.problems.empty()) << base.problems.front().to_string();
  EXPECT_EQ(kb::nearest_class(base, "x86_64-zen4-avx512"), "x86_64-zen5-avx512"); // same ISA tier beats more entries
  EXPECT_EQ(kb::nearest_class(base, "x86_64-zen3-avx2"), "x86_64-zen2-avx2");     // never a wider ISA tier
  EXPECT_EQ(kb::nearest_class(base, "x86_64-zen6-avx512"), "x86_64-zen5-avx512");
  // Another vendor: ISA tier, then the class with the most entries.
  EXPECT_EQ(kb::nearest_class(base, "x86_64-sapphirerapids-avx2"), "x86_64-zen2-avx2");
  EXPECT_EQ(kb::nearest_class(base, "x86_64-sapphirerapids-avx512"), "x86_64-zen5-avx512");
  EXPECT_EQ(kb::nearest_class(base, "aarch64-neoversev2-sve"), std::nullopt);
  // Never a class with wider vectors: its probes would not run here.
  EXPECT_EQ(kb::nearest_class(base, "x86_64-zen1-sse4"), std::nullopt);
  EXPECT_EQ(kb::nearest_class(base, "x86_64-znver9-avx2"), "x86_64-zen2-avx2");
  // A class is not its own source.
  EXPECT_EQ(kb::nearest_class(base, "x86_64-zen5-avx512"), "x86_64-zen2-avx2");
}

TEST(KbBootstrap, DerivedIdsSwapTheMicroarchPrefix) {
  EXPECT_EQ(kb::derived_id("bw-read-1t", "x86_64-zen5-avx512", "x86_64-zen4-avx512"), "zen4-bw-read-1t");
  EXPECT_EQ(kb::derived_id("zen4-bw-read-1t", "x86_64-zen4-avx512", "x86_64-zen3-avx512"), "zen3-bw-read-1t");
  EXPECT_EQ(kb::derived_id("zen5-fma-peak-1t", "x86_64-zen5-avx512", "x86_64-unknown-f26m2-avx512"), "unknown-f26m2-fma-peak-1t");
}

TEST(KbBootstrap, LaterRootsShadowEarlierOnesEntryByEntry) {
  util::TempDir repo, user;
  file_entry(repo.path(), "x86_64-zen5-avx512", "bw-read-1t", "bw-read-1t", "1111111111111111");
  file_entry(repo.path(), "x86_64-zen5-avx512", "bw-triad-1t", "bw-triad-1t", "1111111111111111");
  file_entry(user.path(), "x86_64-zen5-avx512", "bw-read-1t", "bw-read-1t", zen5().id());
  kb::KnowledgeBase base = kb::load_kb(std::vector<fs::path>{repo.path(), user.path() / "missing", user.path()});
  ASSERT_EQ(base.entries.size(), 2u);
  EXPECT_EQ(base.root, repo.path());
  const kb::Entry* read = base.find("bw-read-1t");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->kb_root, user.path());
  EXPECT_EQ(read->effective_status(zen5().id()), kb::EntryStatus::Certified);
  EXPECT_EQ(base.find("bw-triad-1t")->kb_root, repo.path());
  // The roofline reads the user's certification of this machine; the repository's is stale here.
  judge::Roofline r = kb::roofline_from_kb(base, zen5(), 1);
  EXPECT_DOUBLE_EQ(r.bytes_per_s, 50e9);
}

TEST(KbBootstrap, PlanCopiesStaleEntriesDerivesMissingOnesAndSkipsWhatCannotRun) {
  util::TempDir repo, user;
  const std::string z5 = "5555555555555555";
  for (const char* id : {"bw-read-1t", "bw-read-all", "bw-triad-1t", "fma-peak-1t", "fma-accumulators-4-vs-12"})
    file_entry(repo.path(), "x86_64-zen5-avx512", id, id, z5);
  file_entry(repo.path(), "x86_64-zen4-avx512", "bw-read-1t", "zen4-bw-read-1t", zen4(1).id()); // certified here
  file_entry(repo.path(), "x86_64-zen4-avx512", "bw-triad-1t", "zen4-bw-triad-1t", z5);         // stale here
  kb::KnowledgeBase base = kb::load_kb(repo.path());
  ASSERT_TRUE(base.problems.empty()) << base.problems.front().to_string();

  // One CPU: the all-cores probe cannot run.
  kb::BootstrapPlan plan = kb::plan_bootstrap(base, zen4(1), user.path());
  EXPECT_EQ(plan.target_class, "x86_64-zen4-avx512");
  EXPECT_EQ(plan.source_class, "x86_64-zen5-avx512");
  ASSERT_NE(item(plan, "zen4-bw-read-1t"), nullptr);
  EXPECT_EQ(item(plan, "zen4-bw-read-1t")->action, kb::BootstrapItem::Action::Have);
  EXPECT_EQ(item(plan, "zen4-bw-triad-1t")->action, kb::BootstrapItem::Action::Shadow);
  EXPECT_EQ(item(plan, "zen4-fma-peak-1t")->action, kb::BootstrapItem::Action::Derive);
  ASSERT_NE(item(plan, "zen4-bw-read-all"), nullptr);
  EXPECT_EQ(item(plan, "zen4-bw-read-all")->action, kb::BootstrapItem::Action::Skip);
  EXPECT_NE(item(plan, "zen4-bw-read-all")->reason.find("this machine has 1 CPUs"), std::string::npos);
  // Covered by this class's own entry; a paired entry feeds no roofline.
  EXPECT_EQ(std::count_if(plan.items.begin(), plan.items.end(), [](const auto& i) { return i.id.find("bw-triad-1t") != std::string::npos; }), 1);
  EXPECT_EQ(item(plan, "zen4-fma-accumulators-4-vs-12"), nullptr);
  EXPECT_EQ(plan.to_run(), 2);

  // An entry already in the destination is certified in place; `from` names the source class.
  kb::BootstrapPlan again = kb::plan_bootstrap(base, zen4(2), repo.path());
  EXPECT_EQ(item(again, "zen4-bw-triad-1t")->action, kb::BootstrapItem::Action::Certify);
  EXPECT_EQ(item(again, "zen4-bw-read-all")->action, kb::BootstrapItem::Action::Derive);
  kb::BootstrapPlan none = kb::plan_bootstrap(base, zen4(), user.path(), "x86_64-zen9-avx512");
  EXPECT_TRUE(none.source_class.empty());
  EXPECT_EQ(none.to_run(), 2); // both of this class's entries are stale on a 2-CPU fingerprint
}

TEST(KbBootstrap, RunFilesDerivedEntriesInTheDestinationAndCertifiesThem) {
  util::TempDir repo, user;
  const std::string z5 = "5555555555555555";
  fs::path fma = file_entry(repo.path(), "x86_64-zen5-avx512", "fma-peak-1t", "fma-peak-1t", z5);
  file_entry(repo.path(), "x86_64-zen4-avx512", "bw-triad-1t", "zen4-bw-triad-1t", z5);
  const std::string repo_fma = *util::read_file(fma / "entry.yaml");
  kb::KnowledgeBase base = kb::load_kb(repo.path());
  kb::BootstrapPlan plan = kb::plan_bootstrap(base, zen4(), user.path());
  ASSERT_EQ(plan.to_run(), 2);

  FigureRunner runner(60); // inside both the copied bw range [15, 70] and the derived fma range [47.5, 1160]
  std::vector<std::string> started;
  kb::BootstrapOptions options;
  options.destination = user.path();
  options.cap_s = 0.5;
  options.on_start = [&](int i, int n, const kb::BootstrapItem& it) { started.push_back(fmt::format("{}/{} {}", i, n, it.id)); };
  std::vector<kb::BootstrapRow> rows = kb::run_bootstrap(plan, runner, zen4(), options);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(started, (std::vector<std::string>{"1/2 zen4-bw-triad-1t", "2/2 zen4-fma-peak-1t"}));

  // The derived entry: this class's id and target, a widened range, the cap given, certified here.
  const fs::path derived = user.path() / "x86_64-zen4-avx512" / "zen4-fma-peak-1t";
  auto p = kb::load_entry(derived);
  ASSERT_TRUE(p.entry) << (p.problems.empty() ? "" : p.problems.front().to_string());
  EXPECT_EQ(p.entry->id, "zen4-fma-peak-1t");
  EXPECT_EQ(p.entry->target, "x86_64-zen4-avx512");
  const kb::Entry* src = base.find("fma-peak-1t");
  ASSERT_TRUE(src->probe.accept.min && p.entry->probe.accept.min && p.entry->probe.accept.max);
  EXPECT_DOUBLE_EQ(*p.entry->probe.accept.min, *src->probe.accept.min / kb::kDerivedRangeWidening);
  EXPECT_DOUBLE_EQ(*p.entry->probe.accept.max, *src->probe.accept.max * kb::kDerivedRangeWidening);
  EXPECT_DOUBLE_EQ(p.entry->probe.cap_s, 0.5);
  EXPECT_NE(p.entry->claim.find("x86_64-zen4-avx512"), std::string::npos) << p.entry->claim;
  EXPECT_EQ(p.entry->effective_status(zen4().id()), kb::EntryStatus::Certified);
  EXPECT_EQ(rows[1].outcome, "certified") << rows[1].detail;
  EXPECT_NE(util::read_file(derived / "entry.yaml")->find("# Derived by `temper kb bootstrap` from fma-peak-1t"), std::string::npos);
  // The copied stale entry lives in the user's KB; the repository's files are untouched.
  EXPECT_TRUE(fs::exists(user.path() / "x86_64-zen4-avx512" / "zen4-bw-triad-1t" / "entry.yaml"));
  EXPECT_EQ(*util::read_file(fma / "entry.yaml"), repo_fma);
  EXPECT_EQ(kb::load_entry(repo.path() / "x86_64-zen4-avx512" / "zen4-bw-triad-1t").entry->effective_status(zen4().id()),
            kb::EntryStatus::Stale);

  // Both layers read as one: everything is certified here, a second bootstrap has nothing to do.
  kb::KnowledgeBase layered = kb::load_kb(std::vector<fs::path>{repo.path(), user.path()});
  kb::BootstrapPlan after = kb::plan_bootstrap(layered, zen4(), user.path());
  EXPECT_EQ(after.to_run(), 0);
  judge::Roofline r = kb::roofline_from_kb(layered, zen4(), 1);
  EXPECT_NEAR(r.flops_per_s, 60e9, 1e8);
}

TEST(KbBootstrap, ProposeOnlyFilesWithoutRunningAndAClashIsAnErrorRow) {
  util::TempDir repo, user;
  file_entry(repo.path(), "x86_64-zen5-avx512", "bw-write-1t", "bw-write-1t", "5555555555555555");
  kb::KnowledgeBase base = kb::load_kb(repo.path());
  kb::BootstrapPlan plan = kb::plan_bootstrap(base, zen4(), user.path());
  ASSERT_EQ(plan.to_run(), 1);
  FigureRunner runner(10);
  kb::BootstrapOptions options;
  options.destination = user.path();
  options.certify = false;
  auto rows = kb::run_bootstrap(plan, runner, zen4(), options);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].outcome, "proposed");
  EXPECT_TRUE(runner.ran.empty());
  EXPECT_EQ(kb::load_entry(user.path() / "x86_64-zen4-avx512" / "zen4-bw-write-1t").entry->status, kb::EntryStatus::Proposed);
  // The same plan run again finds the directory in place and says so instead of overwriting it.
  rows = kb::run_bootstrap(plan, runner, zen4(), options);
  EXPECT_EQ(rows[0].outcome, "error");
  EXPECT_NE(rows[0].detail.find("already exists"), std::string::npos) << rows[0].detail;
}

} // namespace bootstrap_test
