// temper-cuda-worker: without a driver it says "no GPU" cleanly (probe and LOAD); the
// protocol's boundary report; and, on a machine with a GPU, one real kernel through the worker.
#include "backend/arena.h"
#include "backend/cuda_device.h"
#include "backend/protocol.h"
#include "backend/worker.h"
#include "build/compile_cache.h"
#include "build/cuda_compiler.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace cuda_worker_test {

using namespace temper;
using namespace temper::backend;
namespace fs = std::filesystem;

namespace {

const fs::path kCudaWorker = fs::path(TEMPER_BINARY_DIR) / "temper-cuda-worker";
constexpr const char* kNoDriver = "/nonexistent/temper-test/libcuda.so.1";

util::ProcessResult run_probe(std::vector<std::pair<std::string, std::string>> env = {}) {
  util::Command c;
  c.argv = {kCudaWorker.string(), "--probe"};
  c.env_set = std::move(env);
  c.timeout = std::chrono::seconds(60);
  return util::default_process_runner().run(c);
}

ArenaLayout small_swiglu_layout() {
  ArenaLayout layout;
  layout.inputs.push_back(core::TensorSpec{"input", core::Dtype::F32, {4, 8}});
  layout.outputs.push_back(core::TensorSpec{"output", core::Dtype::F32, {4, 4}});
  return layout;
}

} // namespace

TEST(CudaWorker, ProbeWithoutADriverSaysNoGpu) {
  util::ProcessResult r = run_probe({{"TEMPER_CUDA_DRIVER", kNoDriver}});
  ASSERT_TRUE(r.ok()) << r.describe() << "\n" << r.output;
  auto d = parse_cuda_probe(r.output);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_FALSE(d->supported);
  EXPECT_EQ(d->reason.rfind("no GPU: ", 0), 0u) << d->reason;
  EXPECT_NE(d->reason.find(kNoDriver), std::string::npos) << d->reason;
}

TEST(CudaWorker, ProbeThroughTheJudgeSideHelper) {
  auto d = probe_cuda_device(kCudaWorker, util::default_process_runner());
  ASSERT_TRUE(d.has_value()) << d.error().message;
  if (d->supported) {
    EXPECT_FALSE(d->name.empty());
    EXPECT_EQ(d->arch.rfind("sm_", 0), 0u);
    EXPECT_GT(d->l2_bytes, 0);
  } else {
    EXPECT_FALSE(d->reason.empty());
  }
  EXPECT_FALSE(probe_cuda_device("/nonexistent/temper-cuda-worker", util::default_process_runner()).has_value());
}

TEST(CudaWorker, ParsesProbeReports) {
  auto d = parse_cuda_probe("some driver warning\n{\"schema_version\":1,\"supported\":true,\"device\":\"NVIDIA H200\","
                            "\"compute_capability\":\"9.0\",\"arch\":\"sm_90\",\"sm_count\":132,\"l2_bytes\":62914560}\n");
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_TRUE(d->supported);
  EXPECT_EQ(d->name, "NVIDIA H200");
  EXPECT_EQ(d->arch, "sm_90");
  EXPECT_EQ(d->l2_bytes, 62914560);
  EXPECT_FALSE(parse_cuda_probe("Segmentation fault").has_value());
}

// The judge's LOAD reaches a worker that finds no driver: a harness-level "unsupported", and
// the worker process ends normally (no crash, no signal).
TEST(CudaWorker, LoadWithoutADriverIsUnsupportedNotACrash) {
  auto arena = SharedArena::create(small_swiglu_layout());
  ASSERT_TRUE(arena.has_value()) << arena.error().message;
  WorkerOptions wo;
  wo.worker_exe = kCudaWorker;
  // A worker's environment is fixed (no TEMPER_* variable reaches it), so the driver to try is
  // an argument: a machine with a real driver behaves as one without.
  wo.worker_args = {"--driver", kNoDriver};
  wo.artifact = "/nonexistent/kernel.so";
  auto [worker, loaded] = Worker::start(wo, *arena);
  EXPECT_EQ(loaded.outcome, CallOutcome::HarnessError) << loaded.message;
  EXPECT_NE(loaded.message.find("unsupported: no GPU"), std::string::npos) << loaded.message;
  ASSERT_NE(worker, nullptr);
  CallResult again = worker->run(0);
  EXPECT_EQ(again.outcome, CallOutcome::HarnessError); // a failed load stays failed
}

TEST(CudaWorker, BoundaryViolationRoundTrips) {
  protocol::BoundaryViolationReply v{"work_outside_timed_window", "the outputs changed after the timed window"};
  std::string frame = protocol::encode(v);
  protocol::Frame f;
  ASSERT_EQ(protocol::take_frame(frame, f), protocol::FrameStatus::Complete);
  EXPECT_EQ(f.type, protocol::MsgType::BoundaryViolation);
  auto back = protocol::decode_boundary_violation(f.payload);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->reason_code, v.reason_code);
  EXPECT_EQ(back->message, v.message);
  EXPECT_FALSE(protocol::decode_boundary_violation("x").has_value());
}

// On a GPU: the tiled fixture through the worker, cold L2 before a call, outputs checked
// against the formula on the host.
TEST(CudaWorker, RunsAKernelOnTheGpu) {
  auto device = probe_cuda_device(kCudaWorker, util::default_process_runner());
  ASSERT_TRUE(device.has_value()) << device.error().message;
  if (!device->supported) GTEST_SKIP() << "no GPU here: " << device->reason;
  std::string nvcc = build::find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: cannot build the kernel";
  build::CompileCache cache(util::cache_root() / "compile", build::cuda_compiler_spec(nvcc, device->arch),
                            util::default_process_runner());
  build::CompileRequest req;
  req.source = fs::path(TEMPER_SOURCE_DIR) / "tests/fixtures/cuda/swi_glu_tiled.cu";
  auto built = cache.compile(req);
  ASSERT_TRUE(built.has_value()) << built.error().message;
  ASSERT_TRUE(built->ok) << built->diagnostics;

  auto arena = SharedArena::create(small_swiglu_layout());
  ASSERT_TRUE(arena.has_value()) << arena.error().message;
  auto* in = reinterpret_cast<float*>(arena->input(0, 0));
  for (int i = 0; i < 32; ++i) in[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  std::memset(arena->output(0), 0xFF, 16 * sizeof(float));
  WorkerOptions wo;
  wo.worker_exe = kCudaWorker;
  wo.artifact = built->artifact;
  core::AttrValue dim;
  dim.kind = core::AttrKind::Int;
  dim.i = -1;
  wo.attrs = {{"dim", dim}};
  wo.flush_bytes = size_t{1} << 20; // the worker raises it to twice the L2
  auto [worker, loaded] = Worker::start(wo, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message << "\n" << (worker ? worker->output_tail() : "");
  ASSERT_TRUE(worker->flush().ok());
  CallResult r = worker->run(0);
  ASSERT_TRUE(r.ok()) << r.message << "\n" << worker->output_tail();
  EXPECT_GT(r.kernel_seconds, 0);
  EXPECT_LT(r.kernel_seconds, r.round_trip_seconds);
  const auto* out = reinterpret_cast<const float*>(arena->output(0));
  for (int row = 0; row < 4; ++row) {
    for (int j = 0; j < 4; ++j) {
      float x0 = in[row * 8 + j], x1 = in[row * 8 + 4 + j];
      EXPECT_NEAR(out[row * 4 + j], x0 / (1.0f + std::exp(-x0)) * x1, 1e-5f) << row << "," << j;
    }
  }
}

} // namespace cuda_worker_test
