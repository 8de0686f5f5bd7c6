// A C++ golden run by the judge (judge/golden.h): the sampled check's goldens for many calls in
// one process per precision, agreeing value for value with the golden run once per input set.
#include "build/compile_cache.h"
#include "core/inputs.h"
#include "core/task_loader.h"
#include "judge/golden.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace temper::judge::golden_runner_test {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = TEMPER_SOURCE_DIR;

// Counts the processes the golden runner starts.
class CountingRunner final : public util::ProcessRunner {
public:
  util::ProcessResult run(const util::Command& cmd) override {
    ++runs;
    return util::default_process_runner().run(cmd);
  }
  int runs = 0;
};

// The smallest case whose inputs are drawn from a finite range: the sets' goldens must differ
// (an all-NaN or all-zero case gives every set the same outputs).
const core::Case& smallest_case(const core::Task& task) {
  auto size = [](const core::Case& c) {
    int64_t n = 0;
    for (const auto& s : c.input_shapes) n += core::numel(s);
    return n;
  };
  auto drawn = [](const core::Case& c) {
    return std::all_of(c.ranges.begin(), c.ranges.end(),
                       [](const core::ValueRange& r) { return std::isfinite(r.lo) && std::isfinite(r.hi) && r.lo < r.hi; });
  };
  const core::Case* best = nullptr;
  for (const auto& c : task.cases)
    if (drawn(c) && (!best || size(c) < size(*best))) best = &c;
  return best ? *best : task.cases.front();
}

TEST(GoldenValues, EqualMeansTheSameBitsNaNsIncluded) {
  const double nan = std::nan("");
  EXPECT_EQ(GoldenValues(std::vector<double>{nan, 1.0}), GoldenValues(std::vector<double>{nan, 1.0}));
  EXPECT_NE(GoldenValues(std::vector<double>{nan, 1.0}), GoldenValues(std::vector<double>{nan, 2.0}));
  EXPECT_NE(GoldenValues(std::vector<double>{0.0}), GoldenValues(std::vector<double>{-0.0}));
  EXPECT_NE(GoldenValues(std::vector<double>{1.0}), GoldenValues(std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(GoldenValues(), GoldenValues(std::vector<double>{}));
}

TEST(GoldenRunner, ManySetsRunInOneProcessPerPrecisionAndAgreeWithOneSetAtATime) {
  auto task = core::load_task(kSource / "tasks" / "swi_glu");
  ASSERT_TRUE(task) << task.error().message;
  const core::Case& c = smallest_case(*task);
  util::TempDir dir;
  build::CompileCache cache{dir.path() / "compile", build::CompilerSpec{"g++", {"-O1"}}, util::default_process_runner()};
  CountingRunner runner;
  GoldenRunner golden(*task, cache, runner, dir.path() / "golden");
  ASSERT_TRUE(golden.prepare());

  std::vector<std::vector<core::HostTensor>> sets;
  for (int t = 0; t < 3; ++t) sets.push_back(core::generate_inputs(task->op, c, 1234, t));
  std::vector<const std::vector<core::HostTensor>*> views;
  for (const auto& s : sets) views.push_back(&s);
  runner.runs = 0;
  auto pairs = golden.outputs_uncached_pairs(c, views, true);
  ASSERT_TRUE(pairs) << pairs.error().message;
  EXPECT_EQ(runner.runs, 2) << "one process for the fp64 golden of every set, one for the low-precision one";
  ASSERT_EQ(pairs->size(), sets.size());

  for (size_t k = 0; k < sets.size(); ++k) {
    const auto& pair = (*pairs)[k];
    ASSERT_TRUE(pair.lowp.has_value());
    EXPECT_GE(pair.fp64.seconds, 0);
    auto fp64 = golden.outputs(c, sets[k], GoldenPrecision::Fp64);
    auto lowp = golden.outputs(c, sets[k], GoldenPrecision::LowPrecision);
    ASSERT_TRUE(fp64 && lowp);
    ASSERT_EQ(pair.fp64.outputs.size(), fp64->outputs.size());
    for (size_t o = 0; o < fp64->outputs.size(); ++o) {
      const auto& got = pair.fp64.outputs[o].values;
      const auto& want = fp64->outputs[o].values;
      ASSERT_EQ(got.size(), want.size());
      // Bits, not ==: NaN outputs must match too.
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(double))) << "set " << k;
      const auto& got_lp = pair.lowp->outputs[o].values;
      const auto& want_lp = lowp->outputs[o].values;
      ASSERT_EQ(got_lp.size(), want_lp.size());
      EXPECT_EQ(0, std::memcmp(got_lp.data(), want_lp.data(), got_lp.size() * sizeof(double))) << "set " << k;
    }
  }
  // The outputs' specs, as outputs() found them, for a timing job's arena.
  GoldenRunner fresh(*task, cache, runner, dir.path() / "golden");
  ASSERT_TRUE(fresh.prepare());
  EXPECT_FALSE(fresh.output_specs(c).has_value());
  auto read = fresh.outputs(c, sets[0], GoldenPrecision::Fp64);
  ASSERT_TRUE(read);
  auto specs = fresh.output_specs(c);
  ASSERT_TRUE(specs.has_value());
  ASSERT_EQ(specs->size(), read->outputs.size());
  EXPECT_EQ((*specs)[0].name, read->outputs[0].name);
  EXPECT_EQ((*specs)[0].dtype, read->outputs[0].dtype);
  EXPECT_EQ((*specs)[0].shape, read->outputs[0].shape);

  // Different values give different goldens: the sets were not mixed up.
  EXPECT_NE((*pairs)[0].fp64.outputs[0].values, (*pairs)[1].fp64.outputs[0].values);
}

// Bits, not ==: NaN outputs must match too.
void expect_same_bits(const GoldenResult& got, const GoldenResult& want, const std::string& what) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size()) << what;
  for (size_t o = 0; o < want.outputs.size(); ++o) {
    ASSERT_EQ(got.outputs[o].values.size(), want.outputs[o].values.size()) << what;
    EXPECT_EQ(0, std::memcmp(got.outputs[o].values.data(), want.outputs[o].values.data(),
                             want.outputs[o].values.size() * sizeof(double)))
        << what;
  }
}

// With the real process runner, a sampled check's goldens run on servers kept for the runner's
// life, each writing over output files whose results were released: held results stay intact,
// every result agrees with a golden process of its own, and a golden's failure says why.
TEST(GoldenRunner, ServersAgreeWithProcessesKeepHeldResultsAndSayWhyAGoldenFails) {
  auto task = core::load_task(kSource / "tasks" / "swi_glu");
  ASSERT_TRUE(task) << task.error().message;
  const core::Case& c = smallest_case(*task);
  util::TempDir dir;
  build::CompileCache cache{dir.path() / "compile", build::CompilerSpec{"g++", {"-O1"}}, util::default_process_runner()};
  GoldenRunner served(*task, cache, util::default_process_runner(), dir.path() / "golden");
  CountingRunner runner;
  GoldenRunner processes(*task, cache, runner, dir.path() / "golden");
  ASSERT_TRUE(served.prepare());
  ASSERT_TRUE(processes.prepare());

  std::vector<std::vector<core::HostTensor>> sets;
  for (int t = 0; t < 4; ++t) sets.push_back(core::generate_inputs(task->op, c, 99, t));
  auto want = [&](int t, bool lowp) {
    auto r = processes.outputs_uncached(c, sets[static_cast<size_t>(t)], lowp ? GoldenPrecision::LowPrecision : GoldenPrecision::Fp64);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : GoldenResult{};
  };

  auto first = served.outputs_uncached_pairs(c, {&sets[0], &sets[1]}, true);
  ASSERT_TRUE(first) << first.error().message;
  // While the first results are held, more goldens on the same servers.
  for (int t = 2; t < 4; ++t) {
    auto later = served.outputs_uncached_pairs(c, {&sets[static_cast<size_t>(t)]}, false);
    ASSERT_TRUE(later) << later.error().message;
    expect_same_bits((*later)[0].fp64, want(t, false), "set " + std::to_string(t));
  }
  for (int t = 0; t < 2; ++t) {
    const auto& pair = (*first)[static_cast<size_t>(t)];
    expect_same_bits(pair.fp64, want(t, false), "held set " + std::to_string(t));
    ASSERT_TRUE(pair.lowp.has_value());
    expect_same_bits(*pair.lowp, want(t, true), "held low-precision set " + std::to_string(t));
  }
  EXPECT_NE((*first)[0].fp64.outputs[0].values, (*first)[1].fp64.outputs[0].values);
  runner.runs = 0;
  first = served.outputs_uncached_pairs(c, {&sets[3]}, false); // the first results released
  ASSERT_TRUE(first) << first.error().message;
  expect_same_bits((*first)[0].fp64, want(3, false), "after a release");
  EXPECT_EQ(runner.runs, 1) << "only the process that gave the expected values ran as a process";

  // SwiGLU's golden refuses an odd size along its dim, and says so.
  core::Case odd = c;
  for (auto& shape : odd.input_shapes)
    for (auto& d : shape) d = 3;
  auto odd_inputs = core::generate_inputs(task->op, odd, 99, 0);
  auto refused = served.outputs_uncached_pairs(odd, {&odd_inputs}, false);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not even"), std::string::npos) << refused.error().message;
  // The server goes on.
  auto after = served.outputs_uncached_pairs(c, {&sets[2]}, false);
  ASSERT_TRUE(after) << after.error().message;
  expect_same_bits((*after)[0].fp64, want(2, false), "after a failure");
}

} // namespace
} // namespace temper::judge::golden_runner_test
