// The knowledge base without running probes: entry validation, certification decisions with a
// fake judge, stale detection, and roofline bounds from cost models and certified figures.
#include "core/task_loader.h"
#include "judge/roofline.h"
#include "kb/certify.h"
#include "kb/judge_runner.h"
#include "kb/store.h"
#include "util/fs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>

namespace kb_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kSeed = kSource / "hw_kb" / "x86_64-zen5-avx512";

// A fingerprint of class x86_64-zen5-avx512 that needs no compiler run.
kb::TargetFingerprint zen5(const std::string& compiler = "g++ 12") {
  util::HostInfo h;
  h.cpu_vendor = "AuthenticAMD";
  h.cpu_model = "AMD EPYC";
  h.cpu_family = "26/2/1";
  h.cpu_flags = {"avx2", "avx512f", "fma", "f16c"};
  h.logical_cpus = 2;
  h.memory_bytes = 24ull << 30;
  h.llc_bytes = 32 << 20;
  kb::TargetFingerprint t = kb::make_fingerprint(h, compiler);
  t.arch = "x86_64";
  return t;
}

// Copies a seed entry into root/<target>/<id>/, optionally rewriting entry.yaml.
fs::path copy_entry(const fs::path& root, const std::string& id) {
  fs::path dest = root / "x86_64-zen5-avx512" / id;
  fs::create_directories(dest.parent_path());
  fs::copy(kSeed / id, dest, fs::copy_options::recursive);
  // Start from a clean slate whatever the seed's evidence says.
  auto e = kb::load_entry(dest);
  EXPECT_TRUE(e.entry) << (e.problems.empty() ? "" : e.problems.front().to_string());
  e.entry->status = kb::EntryStatus::Proposed;
  e.entry->evidence.clear();
  EXPECT_TRUE(kb::write_status_and_evidence(*e.entry));
  return dest;
}

void replace_in(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = *util::read_file(file);
  auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  ASSERT_TRUE(util::write_file_atomic(file, text));
}

// Replaces the whole line that starts with `prefix`.
void replace_line(const fs::path& file, const std::string& prefix, const std::string& line) {
  std::string text = *util::read_file(file);
  auto at = text.find("\n" + prefix);
  ASSERT_NE(at, std::string::npos) << prefix;
  auto end = text.find('\n', at + 1);
  text.replace(at + 1, end - at - 1, line);
  ASSERT_TRUE(util::write_file_atomic(file, text));
}

std::string problems_text(const kb::EntryParse& p) {
  std::string s;
  for (const auto& d : p.problems) s += d.to_string() + "\n";
  return s;
}

class FakeRunner final : public kb::ProbeRunner {
public:
  explicit FakeRunner(Expected<kb::ProbeOutcome> o) : m_outcome(std::move(o)) {}
  Expected<kb::ProbeOutcome> run(const kb::Entry&) override {
    ++calls;
    return m_outcome;
  }
  int calls = 0;

private:
  Expected<kb::ProbeOutcome> m_outcome;
};

kb::ProbeOutcome paired(std::vector<std::array<double, 3>> jobs, bool confirmed, std::string verdict = "FASTER") {
  kb::ProbeOutcome o;
  for (const auto& j : jobs) {
    kb::ProbeJob pj;
    pj.speedup = j[0];
    pj.speedup_lo = j[1];
    pj.speedup_hi = j[2];
    o.jobs.push_back(pj);
  }
  o.verdict_confirmed = confirmed;
  o.merged_verdict = verdict;
  o.report_hash = "abc123";
  return o;
}

} // namespace

TEST(KbTarget, ClassFromVendorFamilyAndFlags) {
  EXPECT_EQ(zen5().target_class(), "x86_64-zen5-avx512");
  util::HostInfo h;
  h.cpu_vendor = "GenuineIntel";
  h.cpu_family = "6/143/8";
  h.cpu_flags = {"avx2"};
  auto t = kb::make_fingerprint(h, "g++");
  t.arch = "x86_64";
  EXPECT_EQ(t.target_class(), "x86_64-sapphirerapids-avx2");
  h.cpu_family = "6/1/0";
  t = kb::make_fingerprint(h, "g++");
  t.arch = "x86_64";
  EXPECT_EQ(t.microarch(), "unknown-f6m1");
  // The id covers the compiler: another toolchain is another fingerprint of the same class.
  EXPECT_NE(zen5("g++ 12").id(), zen5("g++ 13").id());
  EXPECT_EQ(zen5("g++ 12").target_class(), zen5("g++ 13").target_class());
  EXPECT_EQ(kb::current_target().to_json()["fingerprint"], kb::current_target().id());
}

TEST(KbEntry, SeedEntriesValidate) {
  kb::KnowledgeBase base = kb::load_kb(kSource / "hw_kb");
  std::string text;
  for (const auto& p : base.problems) text += p.to_string() + "\n";
  EXPECT_TRUE(base.problems.empty()) << text;
  EXPECT_GE(base.entries.size(), 16u);
  ASSERT_NE(base.find("bw-triad-1t"), nullptr);
  EXPECT_EQ(base.find("bw-triad-1t")->probe.kind, kb::ProbeKind::Measure);
}

TEST(KbEntry, SchemaErrorsNameFileAndLine) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "fma-accumulators-4-vs-12");
  fs::path file = e / "entry.yaml";
  replace_in(file, "  kind: paired\n", "  kind: pairwise\n  colour: blue\n");
  replace_in(file, "id: fma-accumulators-4-vs-12\n", "id: Wrong_Id\n");
  kb::EntryParse p = kb::load_entry(e);
  EXPECT_FALSE(p.entry);
  const std::string text = problems_text(p);
  EXPECT_NE(text.find("probe.kind must be paired, measure or metric, not 'pairwise'"), std::string::npos) << text;
  EXPECT_NE(text.find("colour"), std::string::npos) << text;
  EXPECT_NE(text.find("id 'Wrong_Id' must be lower-case"), std::string::npos) << text;
  // Every problem carries the file and a line.
  for (const auto& d : p.problems) {
    EXPECT_EQ(d.file, file.string());
    EXPECT_GT(d.line, 0) << d.message;
  }
  // The line of the bad kind is the kind's line.
  std::string yaml = *util::read_file(file);
  int kind_line = 1 + static_cast<int>(std::count(yaml.begin(), yaml.begin() + static_cast<long>(yaml.find("kind: pairwise")), '\n'));
  bool found = false;
  for (const auto& d : p.problems) found |= d.message.find("pairwise") != std::string::npos && d.line == kind_line;
  EXPECT_TRUE(found) << text;
}

TEST(KbEntry, MissingFieldsAndFilesAndBadRanges) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "bw-read-1t");
  fs::path file = e / "entry.yaml";
  replace_in(file, "  kernel: kernel.cpp\n", "  kernel: missing.cpp\n");
  replace_line(file, "  accept:", "  accept: {max: 1, min: 1000}");
  fs::remove(e / "probe" / "golden.cpp");
  std::string yaml = *util::read_file(file);
  yaml.erase(yaml.find("title:"), yaml.find('\n', yaml.find("title:")) - yaml.find("title:") + 1);
  ASSERT_TRUE(util::write_file_atomic(file, yaml));
  kb::EntryParse p = kb::load_entry(e);
  EXPECT_FALSE(p.entry);
  const std::string text = problems_text(p);
  EXPECT_NE(text.find("missing 'title'"), std::string::npos) << text;
  EXPECT_NE(text.find("missing.cpp"), std::string::npos) << text;
  EXPECT_NE(text.find("has no golden.cpp"), std::string::npos) << text;
  EXPECT_NE(text.find("min 1000"), std::string::npos) << text;
}

TEST(KbEntry, CertifiedWithoutEvidenceAndWrongDirectory) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "bw-read-1t");
  replace_in(e / "entry.yaml", "status: proposed", "status: certified");
  replace_in(e / "entry.yaml", "target: x86_64-zen5-avx512", "target: x86_64-zen4-avx512");
  const std::string text = problems_text(kb::load_entry(e));
  EXPECT_NE(text.find("status certified needs evidence"), std::string::npos) << text;
  EXPECT_NE(text.find("must equal the directory above the entry"), std::string::npos) << text;
}

TEST(KbCertify, DecisionsFromAFakeJudge) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "fma-accumulators-4-vs-12"); // expects b at least 1.5x faster
  const kb::TargetFingerprint here = zen5();

  struct Case {
    kb::ProbeOutcome outcome;
    std::string want;
    kb::EntryStatus status;
  } cases[] = {
      {paired({{2.1, 2.0, 2.2}, {2.05, 1.9, 2.2}}, true), "certified", kb::EntryStatus::Certified},
      {paired({{1.1, 1.05, 1.15}, {1.12, 1.08, 1.2}}, true), "refuted", kb::EntryStatus::Refuted},
      {paired({{1.6, 1.3, 1.9}, {1.55, 1.4, 1.7}}, true), "ambiguous", kb::EntryStatus::Proposed},   // straddles 1.5
      {paired({{2.1, 2.0, 2.2}, {2.0, 1.8, 2.2}}, false, "AMBIGUOUS"), "ambiguous", kb::EntryStatus::Proposed}, // jobs disagree
      {paired({{2.1, 0, INFINITY}}, true), "ambiguous", kb::EntryStatus::Proposed},                  // undetermined interval
  };
  for (const auto& c : cases) {
    kb::Entry entry = *kb::load_entry(e).entry;
    FakeRunner runner(c.outcome);
    auto r = kb::certify(entry, runner, here, true);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->decision.outcome, c.want) << r->decision.reason;
    EXPECT_EQ(r->new_status, c.status);
    // Written back: the reloaded entry has the status and the evidence with fingerprint and hash.
    kb::Entry back = *kb::load_entry(e).entry;
    EXPECT_EQ(back.status, c.status);
    ASSERT_FALSE(back.evidence.empty());
    EXPECT_EQ(back.evidence.back().fingerprint, here.id());
    EXPECT_EQ(back.evidence.back().outcome, c.want);
    EXPECT_EQ(back.evidence.back().report_hash, "abc123");
    EXPECT_TRUE(back.evidence.back().figures.contains("lo"));
  }
  // The comments and text above status survive every rewrite.
  EXPECT_NE(util::read_file(e / "entry.yaml")->find("# Knowledge-base entry"), std::string::npos);
  EXPECT_EQ(kb::load_entry(e).entry->evidence.size(), std::size(cases));
}

TEST(KbCertify, MeasureFigureIntervalAgainstAcceptedRange) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "bw-read-1t");
  kb::Entry entry = *kb::load_entry(e).entry;
  entry.probe.accept = {20.0, 40.0};
  auto outcome_at = [](double seconds_median, double jitter) {
    kb::ProbeOutcome o;
    o.work = 64e6; // bytes per call
    for (int job = 0; job < 2; ++job) {
      kb::ProbeJob j;
      for (int i = 0; i < 40; ++i) j.seconds.push_back(seconds_median * (1 + jitter * ((i % 7) - 3) / 3.0));
      o.jobs.push_back(j);
    }
    return o;
  };
  // 64 MB in 2 ms = 32 GB/s, tight: certified.
  EXPECT_EQ(kb::decide(entry, outcome_at(2e-3, 0.01)).outcome, "certified");
  // 64 MB in 8 ms = 8 GB/s: clearly outside.
  EXPECT_EQ(kb::decide(entry, outcome_at(8e-3, 0.01)).outcome, "refuted");
  // 64 MB in 3.2 ms = 20 GB/s with 20% spread: straddles the lower bound.
  EXPECT_EQ(kb::decide(entry, outcome_at(3.2e-3, 0.2)).outcome, "ambiguous");
  // Too few samples for an interval.
  kb::ProbeOutcome few;
  few.work = 64e6;
  kb::ProbeJob three;
  three.seconds = {2e-3, 2e-3, 2e-3};
  few.jobs.push_back(three);
  EXPECT_EQ(kb::decide(entry, few).outcome, "ambiguous");
  auto iv = kb::figure_interval(outcome_at(2e-3, 0.01).jobs[0].seconds, 64e6, 1e9);
  ASSERT_TRUE(iv);
  EXPECT_NEAR(iv->value, 32, 0.5);
  EXPECT_LE(iv->lo, iv->value);
  EXPECT_GE(iv->hi, iv->value);
}

TEST(KbCertify, MissingFlagRefutesAsNotApplicableAndOtherTargetsAreRefused) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "bf16-narrowing-avx512bf16"); // requires avx512_bf16
  kb::Entry entry = *kb::load_entry(e).entry;
  FakeRunner runner(paired({{3, 2.9, 3.1}}, true));
  auto r = kb::certify(entry, runner, zen5(), false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->decision.outcome, "refuted");
  EXPECT_NE(r->decision.reason.find("not applicable: this CPU lacks avx512_bf16"), std::string::npos);
  EXPECT_EQ(runner.calls, 0);

  kb::TargetFingerprint other = zen5();
  other.family = 25;
  other.model = 0x11; // zen4
  auto refused = kb::certify(entry, runner, other, false);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("x86_64-zen4-avx512"), std::string::npos);
}

TEST(KbCertify, ProbeErrorsLeaveTheEntryAlone) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "fma-accumulators-4-vs-12");
  const std::string before = *util::read_file(e / "entry.yaml");
  kb::Entry entry = *kb::load_entry(e).entry;
  FakeRunner runner(fail("the probe's kernel fails the judge"));
  EXPECT_FALSE(kb::certify(entry, runner, zen5(), true));
  EXPECT_EQ(*util::read_file(e / "entry.yaml"), before);
}

TEST(KbEntry, MetricProbeSchema) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "first-touch-4k-faults");
  fs::path file = e / "entry.yaml";
  {
    auto p = kb::load_entry(e);
    ASSERT_TRUE(p.entry) << problems_text(p);
    EXPECT_EQ(p.entry->probe.kind, kb::ProbeKind::Metric);
    EXPECT_EQ(p.entry->probe.metric.name, "sw.page_faults");
    EXPECT_EQ(p.entry->probe.calls, 20);
    EXPECT_EQ(p.entry->to_json("x")["probe"]["calls"], 20);
  }
  replace_line(file, "  metric:", "  metric: {name: sw.page_fault, expect: {min: 1}}");
  replace_line(file, "  calls:", "  calls: 3");
  replace_line(file, "  cache:", "  cache: warm\n  cap_s: 2\n  accept: {min: 1}");
  const std::string text = problems_text(kb::load_entry(e));
  EXPECT_NE(text.find("'sw.page_fault' is not a metric temper measures (did you mean sw.page_faults?)"), std::string::npos) << text;
  EXPECT_NE(text.find("probe.calls must be 6 to 1000"), std::string::npos) << text;
  EXPECT_NE(text.find("a metric probe profiles cold calls"), std::string::npos) << text;
  EXPECT_NE(text.find("probe.cap_s does not belong to a metric probe"), std::string::npos) << text;
  EXPECT_NE(text.find("probe.accept does not belong to a metric probe"), std::string::npos) << text;
  // A speedup needs two kernels.
  fs::path e2 = copy_entry(dir.path() / "b", "first-touch-4k-faults");
  replace_line(e2 / "entry.yaml", "  metric:", "  metric: {name: time.speedup, expect: {min: 1}}");
  EXPECT_NE(problems_text(kb::load_entry(e2)).find("write a paired probe"), std::string::npos);
}

namespace {

// A metric probe's outcome: per job, the per-call values (or none: a value only).
kb::ProbeOutcome metric_jobs(std::vector<std::vector<double>> calls, std::optional<double> value = std::nullopt) {
  kb::ProbeOutcome o;
  for (auto& c : calls) {
    kb::ProbeJob j;
    j.metric_samples = c;
    j.metric_value = value ? *value : (c.empty() ? 0 : c[c.size() / 2]);
    o.jobs.push_back(j);
  }
  o.report_hash = "feed01";
  o.note = "fake profiler";
  return o;
}

std::vector<double> around(double center, double spread, int n = 20) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center + spread * ((i % 5) - 2) / 2.0);
  return v;
}

} // namespace

TEST(KbCertify, MetricDecisionsFromAFakeProfiler) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "first-touch-4k-faults"); // sw.page_faults in [15500, 17500]
  const kb::TargetFingerprint here = zen5();
  kb::ProbeOutcome unsupported;
  kb::ProbeJob uj;
  uj.metric_unsupported = "perf_event_open(software sw.page_faults) failed: ENOENT";
  unsupported.jobs.push_back(uj);
  unsupported.report_hash = "feed01";
  struct Case {
    kb::ProbeOutcome outcome;
    std::string want;
    kb::EntryStatus status;
    std::string reason;
  } cases[] = {
      {metric_jobs({around(16390, 4), around(16388, 6)}), "certified", kb::EntryStatus::Certified, "lies inside the expected [15500, 17500]"},
      {metric_jobs({around(33, 2), around(34, 2)}), "refuted", kb::EntryStatus::Refuted, "lies entirely outside"},
      // The calls spread across the upper bound: the interval of the median straddles it.
      {metric_jobs({around(17500, 400), around(17450, 400)}), "ambiguous", kb::EntryStatus::Proposed, "straddles a bound"},
      {metric_jobs({{16390, 16391, 16392}}), "ambiguous", kb::EntryStatus::Proposed, "too few calls"},
      {unsupported, "ambiguous", kb::EntryStatus::Proposed, "unsupported here: sw.page_faults cannot be measured on this machine: perf_event_open"},
  };
  for (const auto& c : cases) {
    kb::Entry entry = *kb::load_entry(e).entry;
    FakeRunner runner(c.outcome);
    auto r = kb::certify(entry, runner, here, true);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->decision.outcome, c.want) << r->decision.reason;
    EXPECT_NE(r->decision.reason.find(c.reason), std::string::npos) << r->decision.reason;
    EXPECT_EQ(r->new_status, c.status);
    kb::Entry back = *kb::load_entry(e).entry;
    EXPECT_EQ(back.status, c.status);
    ASSERT_FALSE(back.evidence.empty());
    const kb::Evidence& ev = back.evidence.back();
    EXPECT_EQ(ev.fingerprint, here.id());
    EXPECT_EQ(ev.outcome, c.want);
    EXPECT_EQ(ev.report_hash, "feed01");
    EXPECT_EQ(ev.figures["name"], "sw.page_faults");
    EXPECT_EQ(ev.figures["unit"], "count");
  }
  // The certified run's evidence names the figure and its interval over all the calls.
  kb::Entry entry = *kb::load_entry(e).entry;
  const nlohmann::json& f = entry.evidence.front().figures;
  EXPECT_EQ(f["calls"], 40);
  EXPECT_GE(f["lo"].get<double>(), 16380);
  EXPECT_LE(f["hi"].get<double>(), 16400);
  EXPECT_EQ(f["protocol"], "fake profiler");
  EXPECT_TRUE(entry.evidence.back().figures.contains("unsupported"));
}

TEST(KbCertify, DeterministicMetricsAreDecidedOnTheirValue) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "first-touch-4k-faults");
  kb::Entry entry = *kb::load_entry(e).entry;
  EXPECT_TRUE(kb::deterministic_metric("static.vec512_ops"));
  EXPECT_TRUE(kb::deterministic_metric("cg.D1mr"));
  EXPECT_FALSE(kb::deterministic_metric("sw.page_faults"));
  EXPECT_FALSE(kb::deterministic_metric("time.median_us"));
  entry.probe.metric.name = "cg.D1mw";
  entry.probe.metric.expect = {std::nullopt, 1000.0};
  // One value per job, no per-call values: the value decides, even from two jobs that agree.
  EXPECT_EQ(kb::decide(entry, metric_jobs({{}, {}}, 262144.0)).outcome, "refuted");
  kb::Decision in = kb::decide(entry, metric_jobs({{}, {}}, 12.0));
  EXPECT_EQ(in.outcome, "certified") << in.reason;
  EXPECT_NE(in.reason.find("deterministic"), std::string::npos) << in.reason;
  // Jobs that disagree across the bound leave it open.
  kb::ProbeOutcome split = metric_jobs({{}, {}}, 900.0);
  split.jobs[1].metric_value = 1100.0;
  EXPECT_EQ(kb::decide(entry, split).outcome, "ambiguous");
  // The interval of a median from per-call values, raw (zeros allowed).
  auto iv = kb::median_interval({0, 0, 0, 1, 0, 0, 0, 2, 0, 0});
  ASSERT_TRUE(iv);
  EXPECT_EQ(iv->value, 0);
  EXPECT_FALSE(kb::median_interval({1, 2, 3}));
}

TEST(KbCertify, MetricProbeOnAMissingKernelIsAnError) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "first-touch-4k-faults");
  kb::Entry entry = *kb::load_entry(e).entry;
  const std::string before = *util::read_file(e / "entry.yaml");
  fs::remove(e / "probe" / "kernel.cpp");
  kb::JudgeRunnerOptions o;
  o.progress = false;
  kb::JudgeProbeRunner runner(o, util::default_process_runner());
  EXPECT_FALSE(kb::certify(entry, runner, zen5(), true));
  EXPECT_EQ(*util::read_file(e / "entry.yaml"), before);
}

TEST(KbStale, CertifiedOnAnotherFingerprintIsStale) {
  util::TempDir dir;
  fs::path e = copy_entry(dir.path(), "fma-accumulators-4-vs-12");
  kb::Entry entry = *kb::load_entry(e).entry;
  FakeRunner runner(paired({{2.1, 2.0, 2.2}, {2.05, 1.9, 2.2}}, true));
  const kb::TargetFingerprint there = zen5("g++ 12"), here = zen5("g++ 13");
  ASSERT_TRUE(kb::certify(entry, runner, there, true));
  kb::KnowledgeBase base = kb::load_kb(dir.path());
  const kb::Entry* loaded = base.find("fma-accumulators-4-vs-12");
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->effective_status(there.id()), kb::EntryStatus::Certified);
  EXPECT_EQ(loaded->effective_status(here.id()), kb::EntryStatus::Stale);
  EXPECT_EQ(loaded->to_json(here.id())["effective_status"], "stale");
  // Exported documents leave stale entries out and say so.
  EXPECT_NE(kb::export_markdown(base, here.target_class(), there).find("Four FMA accumulators"), std::string::npos);
  std::string doc = kb::export_markdown(base, here.target_class(), here);
  EXPECT_EQ(doc.find("Four FMA accumulators"), std::string::npos);
  EXPECT_NE(doc.find("1 certified entry left out"), std::string::npos) << doc;
  // Certifying again here makes it current.
  kb::Entry again = *loaded;
  ASSERT_TRUE(kb::certify(again, runner, here, true));
  EXPECT_EQ(kb::load_kb(dir.path()).find("fma-accumulators-4-vs-12")->effective_status(here.id()), kb::EntryStatus::Certified);
}

TEST(KbRoofline, BoundFromCostModelAndCertifiedFigures) {
  util::TempDir dir;
  const kb::TargetFingerprint here = zen5();
  // A certified triad bandwidth of 25 GB/s and FMA peak of 100 GFLOP/s on this fingerprint.
  for (auto [id, value] : {std::pair{"bw-triad-1t", 25.0}, std::pair{"fma-peak-1t", 100.0}, std::pair{"bw-triad-all", 40.0}}) {
    fs::path e = copy_entry(dir.path(), id);
    kb::Entry entry = *kb::load_entry(e).entry;
    entry.status = kb::EntryStatus::Certified;
    entry.evidence.push_back({"2026-12-02T00:00:00Z", here.id(), here.target_class(), "certified", {{"value", value}}, "test", "h"});
    ASSERT_TRUE(kb::write_status_and_evidence(entry));
  }
  kb::KnowledgeBase base = kb::load_kb(dir.path());
  ASSERT_TRUE(base.problems.empty()) << base.problems.front().to_string();
  judge::Roofline one = kb::roofline_from_kb(base, here, 1);
  EXPECT_DOUBLE_EQ(one.bytes_per_s, 25e9); // the all-core figure needs 2 threads
  EXPECT_DOUBLE_EQ(one.flops_per_s, 100e9);
  judge::Roofline two = kb::roofline_from_kb(base, here, 2);
  EXPECT_DOUBLE_EQ(two.bytes_per_s, 40e9);
  EXPECT_DOUBLE_EQ(two.flops_per_s, 200e9); // one core's peak times two cores
  // The bandwidth was certified at 2 threads; the flops were not, and the source says so.
  EXPECT_NE(two.source.find("bandwidth bw-triad-all,"), std::string::npos) << two.source;
  EXPECT_NE(two.source.find("fma-peak-1t (scaled from 1 thread)"), std::string::npos) << two.source;
  // Stale figures are not used.
  EXPECT_EQ(kb::roofline_from_kb(base, zen5("other compiler"), 1).bytes_per_s, 0);

  auto task = core::load_task(kSource / "tasks" / "swi_glu");
  ASSERT_TRUE(task) << task.error().message;
  const core::Case* c = task->find_case(1); // [1024, 2048] float16: 4 MiB in, 2 MiB out
  ASSERT_NE(c, nullptr);
  auto b = judge::roofline_bound(*task, *c, one);
  ASSERT_TRUE(b) << b.error().message;
  const double bytes = 1024.0 * 2048 * 2 * 1.5, flops = 1024.0 * 1024 * 4;
  EXPECT_DOUBLE_EQ(b->bytes, bytes);
  EXPECT_DOUBLE_EQ(b->flops, flops);
  EXPECT_DOUBLE_EQ(b->seconds, std::max(bytes / 25e9, flops / 100e9));
  EXPECT_EQ(b->limiter, "memory");
  // A side without a figure is left out: still a lower bound, a looser one.
  judge::Roofline flops_only = one;
  flops_only.bytes_per_s = 0;
  auto partial = judge::roofline_bound(*task, *c, flops_only);
  ASSERT_TRUE(partial) << partial.error().message;
  EXPECT_DOUBLE_EQ(partial->seconds, flops / 100e9);
  EXPECT_EQ(partial->limiter, "compute, bytes unbounded");
  // With no figure at all there is no bound, and the error says why.
  auto none = judge::roofline_bound(*task, *c, judge::Roofline{});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no certified figure"), std::string::npos);
}

TEST(KbStore, ProposeFilesAValidEntryAndRejectsAnInvalidOne) {
  util::TempDir dir;
  fs::path src = dir.path() / "incoming" / "my-entry";
  fs::create_directories(src.parent_path());
  fs::copy(kSeed / "fma-accumulators-4-vs-12", src, fs::copy_options::recursive);
  replace_in(src / "entry.yaml", "id: fma-accumulators-4-vs-12", "id: my-entry");
  fs::path root = dir.path() / "kb";
  auto filed = kb::propose_entry(root, src);
  ASSERT_TRUE(filed) << filed.error().message;
  EXPECT_EQ(*filed, root / "x86_64-zen5-avx512" / "my-entry");
  auto back = kb::load_entry(*filed);
  ASSERT_TRUE(back.entry);
  EXPECT_EQ(back.entry->status, kb::EntryStatus::Proposed);
  EXPECT_TRUE(back.entry->evidence.empty());
  // Filing it twice is refused; an invalid entry is refused with its problems.
  EXPECT_FALSE(kb::propose_entry(root, src));
  replace_in(src / "entry.yaml", "  kind: paired", "  kind: nonsense");
  auto bad = kb::propose_entry(dir.path() / "kb2", src);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("entry.yaml:"), std::string::npos) << bad.error().message;
}

} // namespace kb_test
