// The real binary on SwiGLU kernels that compute the right answer but cross the candidate
// boundary (tests/fixtures/swi_glu/cheats): each is REJECTED_CHEAT with its reason code before
// any of its code runs.
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace boundary_e2e_test {

using namespace temper;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";

struct Verdict {
  int exit_code = -1;
  std::string output;
  nlohmann::json first_case;
};

Verdict judge(const fs::path& candidate, std::vector<std::string> extra = {}, const fs::path& task = kSource / "tasks/swi_glu") {
  util::TempDir dir("temper-e2e");
  fs::path json = dir.path() / "report.json";
  util::Command cmd;
  cmd.argv = {kBinary.string(), "judge", task.string(), (kSource / candidate).string(), "--cases", "1", "--json",
              json.string(), "--quiet"};
  cmd.argv.insert(cmd.argv.end(), extra.begin(), extra.end());
  cmd.timeout = std::chrono::seconds(300);
  auto r = util::default_process_runner().run(cmd);
  Verdict out;
  out.exit_code = r.outcome == util::Outcome::Exited ? r.exit_code : -1;
  out.output = r.output;
  if (auto text = util::read_file(json)) {
    auto report = nlohmann::json::parse(*text);
    if (!report["cases"].empty()) out.first_case = report["cases"][0];
  }
  return out;
}

void expect_rejected(const Verdict& v, const std::string& reason, const std::string& named) {
  EXPECT_EQ(v.exit_code, 1) << v.output;
  EXPECT_EQ(v.first_case.value("status", ""), "REJECTED_CHEAT") << v.first_case.dump(2) << v.output;
  EXPECT_EQ(v.first_case.value("reason_code", ""), reason) << v.first_case.dump(2);
  EXPECT_NE(v.first_case.value("message", "").find(named), std::string::npos) << v.first_case.dump(2);
  // Rejected before it ran: no trial was made.
  EXPECT_EQ(v.first_case.value("trials", -1), 0) << v.first_case.dump(2);
}

} // namespace

TEST(BoundaryE2E, OpeningLibrariesAtRunTimeIsRejected) {
  expect_rejected(judge("tests/fixtures/swi_glu/cheats/dlopens_artifact.cpp"), "forbidden_import", "`dlopen`");
}

TEST(BoundaryE2E, RunningAProgramIsRejected) {
  expect_rejected(judge("tests/fixtures/swi_glu/cheats/runs_program.cpp"), "forbidden_import", "`system`");
}

TEST(BoundaryE2E, NamingTheVaultIsRejected) {
  expect_rejected(judge("tests/fixtures/swi_glu/cheats/names_vault.cpp"), "reads_protected_file", "`vault`");
}

TEST(BoundaryE2E, ClangBuildsAreCheckedToo) {
  if (util::find_program("clang++").empty()) GTEST_SKIP() << "clang++ is not installed";
  expect_rejected(judge("tests/fixtures/swi_glu/cheats/runs_program.cpp", {"--compiler", "clang++"}), "forbidden_import",
                  "`system`");
}

// No false positives on the bundled kernels (judge_e2e_test covers more of their cases).
TEST(BoundaryE2E, HonestKernelsPass) {
  for (const char* k : {"tests/fixtures/swi_glu/correct_fast.cpp", "tasks/swi_glu/reference.cpp"}) {
    auto v = judge(k);
    EXPECT_EQ(v.exit_code, 0) << k << "\n" << v.output;
    EXPECT_EQ(v.first_case.value("status", ""), "PASSED") << k << "\n" << v.first_case.dump(2);
  }
}

// A reference that exports a helper, and a candidate that leaves the helper undefined so the
// loader would bind it to whatever provides it: calling the reference. Checked both against the
// task's own reference (correctness only) and against a timing reference.
TEST(BoundaryE2E, BindingToTheReferencesSymbolsIsRejected) {
  util::TempDir dir("temper-e2e");
  fs::copy(kSource / "tasks/swi_glu", dir.path() / "task", fs::copy_options::recursive);
  const fs::path ref = dir.path() / "task" / "reference.cpp";
  std::ofstream(ref) << "#include \"" << (kSource / "tasks/swi_glu/reference.cpp").string() << "\"\n"
                     << "TEMPER_EXPORT float ref_fast_exp(float x) { return std::exp(x); }\n";
  const fs::path cand = dir.path() / "candidate.cpp";
  std::ofstream(cand) << "#include \"" << (kSource / "tests/fixtures/swi_glu/fixture_common.h").string() << "\"\n"
                      << R"(extern "C" float ref_fast_exp(float);
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  int64_t dim = 0;
  if (int status = fixture::check_args(args, &dim)) return status;
  const temper_tensor& in = args->inputs[0];
  const temper_tensor& out = args->outputs[0];
  fixture::for_each_element(in, out, dim, [&](int64_t x0, int64_t x1, int64_t dst) {
    const float a = fixture::load(in.data, in.dtype, x0), b = fixture::load(in.data, in.dtype, x1);
    fixture::store(out.data, out.dtype, dst, a / (1.0f + ref_fast_exp(-a)) * b);
  });
  return 0;
}
)";
  expect_rejected(judge(cand, {}, dir.path() / "task"), "calls_reference", "`ref_fast_exp`");
  expect_rejected(judge(cand, {"--reference", ref.string()}), "calls_reference", "`ref_fast_exp`");
}

} // namespace boundary_e2e_test
