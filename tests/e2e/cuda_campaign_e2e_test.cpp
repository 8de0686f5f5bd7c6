// `temper run --backend cuda`: the real binary, a CUDA campaign end to end.
//
// Without a GPU the real toolkit's nvcc builds the task's CUDA reference and the campaign ends
// saying why nothing can run. On the fake toolkit (tests/fixtures/cuda_fake: nvcc building
// host-code "CUDA" kernels, a fake driver and runtime in host memory) the whole loop runs as it
// would on a GPU: the plan from plans/cuda/, the tuner Student on a .cu starter, probes, a gate,
// promotion of a confirmed FASTER kernel, the ledger and the final report, every judge run on
// the cuda backend.
#include "backend/cuda_device.h"
#include "build/cuda_compiler.h"
#include "campaign/ledger.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace cuda_campaign_e2e_test {

using namespace temper;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kSource = TEMPER_SOURCE_DIR;
const fs::path kBinary = fs::path(TEMPER_BINARY_DIR) / "temper";
const fs::path kFakeCuda = TEMPER_FAKE_CUDA;

util::ProcessResult temper(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
  util::Command cmd;
  cmd.argv = {kBinary.string()};
  cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
  cmd.env_set = std::move(env);
  cmd.timeout = std::chrono::seconds(600);
  return util::default_process_runner().run(cmd);
}

// tasks/swi_glu with the fixture as its CUDA reference (at PASSES=3) and as the starter of a
// two-milestone plan in plans/cuda/: M0 correct, M1 a gate on case 15 at 1.5x over the reference
// with PASSES to search.
fs::path make_fake_cuda_task(const fs::path& root) {
  const fs::path task = root / "swi_glu";
  fs::create_directories(task / "kernels");
  fs::create_directories(task / "plans" / "cuda");
  for (const char* f : {"proto.yaml", "cases.yaml", "cases.csv", "temper.yaml", "golden.cpp", "desc.md", "reference.cpp", "pytorch.py"})
    fs::copy_file(kSource / "tasks/swi_glu" / f, task / f);
  const fs::path fixture = kSource / "tests/fixtures/cuda_fake/swi_glu_passes.cpp";
  // The reference is the fixture at its default (three passes), under a line of its own: the
  // plan checker refuses a starter with the reference's very content.
  EXPECT_TRUE(util::write_file_atomic(task / "reference.cu", "// The task's CUDA reference: swi_glu_passes.cpp as it is.\n" +
                                                                 *util::read_file(fixture))
                  .has_value());
  fs::copy_file(fixture, task / "kernels" / "passes.cu");
  auto milestone = [](const std::string& id, json acceptance, json knobs) {
    return json{{"id", id},
                {"title", "milestone " + id},
                {"requirements", {"one pass over the rows"}},
                {"contract", "cuda_kernel.h ABI"},
                {"acceptance", acceptance},
                {"budget", {{"attempts", 4}, {"seconds", 3600}}},
                {"depends_on", {"D1"}},
                {"starter", "kernels/passes.cu"},
                {"knobs", knobs}};
  };
  const json plan = {
      {"schema_version", 1},
      {"kind", "temper.plan"},
      {"decisions",
       {{{"id", "D1"}, {"title", "passes"}, {"choice", "compute each output once"}, {"rationale", "the output is the same every pass"},
         {"evidence", {{"measurements", {"reference/times.json"}}}}}}},
      {"milestones",
       {milestone("M0", {{"correctness", {{"cases", "all"}}}}, {{"PASSES", 3}}),
        milestone("M1",
                  {{"correctness", {{"cases", "all"}}},
                   {"performance", {{"tier", "gate"}, {"cases", {15}}, {"min_speedup", 1.5}, {"against", "reference"}}}},
                  {{"PASSES", {1, 3}}})}}};
  EXPECT_TRUE(util::write_file_atomic(task / "plans" / "cuda" / "01-passes.json", plan.dump(2) + "\n").has_value());
  return task;
}

// A knowledge base with one GPU entry for the fake device's class: its bandwidth, measured by
// the h200 probe task's operator on a host-code kernel, accepted at any figure a host reaches.
fs::path make_fake_gpu_kb(const fs::path& root) {
  const fs::path entry = root / "kb" / "nvidia-sm90-temper-fake-gpu" / "fake-gpu-bandwidth";
  const fs::path probe = entry / "probe";
  fs::create_directories(probe);
  const fs::path h200 = kSource / "hw_kb/nvidia-sm90-h200/h200-hbm-bandwidth/probe";
  for (const char* f : {"proto.yaml", "temper.yaml", "golden.cpp"}) fs::copy_file(h200 / f, probe / f);
  fs::copy_file(kSource / "tests/fixtures/cuda_fake/axpb.cpp", probe / "kernel.cu");
  EXPECT_TRUE(util::write_file_atomic(probe / "cases.yaml", "cases:\n- operator: KbAxpb\n  case_id: 1\n  input_shape:\n  - [4194304]\n"
                                                            "  dtype: [float32]\n  attrs: {a: 1.5, b: 0.25}\n  value_range: [-1, 1]\n")
                  .has_value());
  EXPECT_TRUE(util::write_file_atomic(entry / "entry.yaml",
                                      "schema_version: 1\nid: fake-gpu-bandwidth\ntitle: the fake GPU's bandwidth\n"
                                      "target: nvidia-sm90-temper-fake-gpu\nclaim: host memory streams\nmechanism: it is host memory\n"
                                      "usage: the memory roofline of the fake GPU\ntags: [memory, bandwidth, roofline, cuda]\n"
                                      "probe:\n  kind: measure\n  task: probe\n  case: 1\n  cache: cold\n  cap_s: 0.5\n  jobs: 1\n"
                                      "  kernel: kernel.cu\n  figure: {name: bandwidth, unit: GB/s, work: \"in0.bytes * 2\", roofline: bytes_per_s}\n"
                                      "  accept: {min: 0.01, max: 100000}\nstatus: proposed\nevidence: []\n")
                  .has_value());
  return root / "kb";
}

json read_json(const fs::path& file) {
  auto text = util::read_file(file);
  return text ? json::parse(*text, nullptr, false) : json();
}

} // namespace

TEST(CudaCampaignE2E, WithoutAGpuTheReferenceIsBuiltAndTheCampaignSaysWhy) {
  if (build::find_nvcc().empty()) GTEST_SKIP() << "nvcc not found: no CUDA toolkit here";
  auto device = backend::probe_cuda_device(fs::path(TEMPER_BINARY_DIR) / "temper-cuda-worker", util::default_process_runner());
  if (device && device->supported) GTEST_SKIP() << "a GPU is here (" << device->name << "): bench/cuda_device_check.sh runs campaigns on it";
  util::TempDir tmp("temper-cuda-campaign");
  const fs::path dir = tmp.path() / "c";
  auto r = temper({"run", (kSource / "tasks/swi_glu").string(), "--backend", "cuda", "--cases", "1,2", "--dir", dir.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("temper: backend cuda: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ended: unsupported: no GPU: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("backend: cuda, "), std::string::npos) << r.output; // temper status's line
  // The task's CUDA reference, sealed as R0: built by nvcc for the default architecture.
  const json manifest = read_json(dir / "refs" / "R0" / "manifest.json");
  EXPECT_EQ(manifest["compiler"]["cuda_arch"], "sm_90") << manifest.dump(2);
  EXPECT_TRUE(fs::exists(dir / "refs" / "R0" / "vault" / "reference.cu"));
  const json campaign = read_json(dir / "campaign.json");
  EXPECT_EQ(campaign["config"]["judge"]["backend"], "cuda") << campaign.dump(2);
  EXPECT_EQ(campaign["state"]["phase"], "done");
  // Nothing was measured, so nothing was written for a Teacher to read as measured.
  EXPECT_FALSE(fs::exists(dir / "rounds" / "R1" / "teacher" / "reference" / "times.json"));
}

TEST(CudaCampaignE2E, ACampaignRunsEndToEndOnTheFakeGpu) {
  util::TempDir tmp("temper-cuda-campaign-fake");
  const fs::path task = make_fake_cuda_task(tmp.path());
  const fs::path dir = tmp.path() / "c";
  const std::vector<std::pair<std::string, std::string>> fake = {{"TEMPER_NVCC", (kFakeCuda / "bin" / "nvcc").string()},
                                                                 {"TEMPER_CUDA_DRIVER", (kFakeCuda / "lib64" / "libcuda.so.1").string()},
                                                                 // Its own cache: the tuner's memory of earlier runs would skip the probes.
                                                                 {"TEMPER_CACHE_DIR", (tmp.path() / "cache").string()}};
  // The fake GPU's class gets a certified bandwidth, which then bounds the campaign's cases.
  const fs::path kb = make_fake_gpu_kb(tmp.path());
  auto target = temper({"target"}, fake);
  EXPECT_NE(target.output.find("gpu class     nvidia-sm90-temper-fake-gpu"), std::string::npos) << target.output;
  auto certified = temper({"kb", "--kb", kb.string(), "certify", "fake-gpu-bandwidth", "--backend", "cuda", "--quiet"}, fake);
  ASSERT_EQ(certified.exit_code, 0) << certified.output;
  EXPECT_NE(certified.output.find("fake-gpu-bandwidth           certified"), std::string::npos) << certified.output;
  auto with_kb = fake;
  with_kb.emplace_back("TEMPER_KB_DIR", kb.string());
  auto r = temper({"run", task.string(), "--backend", "cuda", "--cases", "15", "--dir", dir.string(), "--cap", "1",
                   "--measure-jobs", "1", "--confirm-jobs", "1", "--min-samples", "10", "--min-time", "0.1", "--no-vs-torch"},
                  with_kb);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("device temper fake GPU"), std::string::npos) << r.output;

  // The plan came from plans/cuda/, and the tuner found PASSES=1: promoted as R1.
  const fs::path r1 = dir / "rounds" / "R1";
  const json promotion = read_json(r1 / "promotion.json");
  EXPECT_TRUE(promotion.value("promoted", false)) << promotion.dump(2) << "\n" << r.output;
  EXPECT_GT(promotion.value("speedup", 0.0), 1.5) << promotion.dump(2);
  const json r1_manifest = read_json(dir / "refs" / "R1" / "manifest.json");
  ASSERT_TRUE(r1_manifest.is_object());
  EXPECT_EQ(r1_manifest["compiler"].value("cuda_arch", ""), "sm_90") << r1_manifest.dump(2);

  // Every judge run of the campaign ran on the cuda backend, on the fake device, with the inputs
  // of timed calls made on the device.
  int gates = 0, probes = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(r1 / "attempts", ec)) {
    for (const char* name : {"report.json", "report-correctness.json"}) {
      const json report = read_json(e.path() / name);
      if (!report.is_object()) continue;
      EXPECT_EQ(report["context"]["backend"]["name"], "cuda") << e.path() / name;
      EXPECT_EQ(report["context"]["backend"]["device"].value("device", ""), "temper fake GPU") << report["context"].dump(2);
      if (report.value("kind", "") == "temper.probe.report") ++probes;
      if (report.contains("timing") && report["timing"].is_object() && report["timing"].value("tier", "") == "gate") {
        ++gates;
        EXPECT_EQ(report["timing"]["protocol"].value("content_maker", ""), "device") << report["timing"].dump(2);
      }
    }
  }
  EXPECT_GE(probes, 1);
  EXPECT_GE(gates, 1);

  // The Teacher's black box: the reference timed on the device's clock; no CPU profile.
  const json times = read_json(r1 / "teacher" / "reference" / "times.json");
  ASSERT_EQ(times["cases"].size(), 1u) << times.dump(2);
  EXPECT_GT(times["cases"][0].value("protocol_clock_seconds", 0.0), 0);
  EXPECT_EQ(times["cases"][0]["protocol_clock_seconds"], times["cases"][0]["kernel_seconds"]);
  EXPECT_NE(util::read_file(r1 / "teacher" / "reference" / "profile.txt")->find("CUDA"), std::string::npos);

  // The final report: the final kernel against the starting reference, on the cuda backend.
  const json final_report = read_json(dir / "final" / "report.json");
  ASSERT_TRUE(final_report.is_object()) << r.output;
  // ... bounded by the GPU class's certified bandwidth.
  EXPECT_TRUE(final_report["cases"][0]["timing"].contains("roofline_fraction")) << final_report["cases"][0]["timing"].dump(2);
  EXPECT_TRUE(final_report["cases"][0]["timing"].value("roofline_fraction", json()).is_number());
  EXPECT_NE(r.output.find("HTML report: "), std::string::npos);
  auto ledger = campaign::Ledger::open(dir / "ledger.sqlite");
  ASSERT_TRUE(ledger.has_value()) << ledger.error().message;
  auto totals = ledger->totals();
  ASSERT_TRUE(totals.has_value());
  EXPECT_GT(totals->gate_s, 0);
  EXPECT_GT(totals->probe_s, 0);
}

} // namespace cuda_campaign_e2e_test
