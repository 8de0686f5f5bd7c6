// Timed calls on the device (backend/device_content.h, device/device_content.cu): the host's mix
// and hash, the protocol fields that carry them, and temper-cuda-worker making a call's inputs
// and hashing its outputs exactly as the host says: on a fake driver and runtime here (host
// memory), and on the GPU where there is one.
#include "backend/arena.h"
#include "backend/cuda_device.h"
#include "backend/device_content.h"
#include "backend/protocol.h"
#include "backend/worker.h"
#include "build/compile_cache.h"
#include "build/cuda_compiler.h"
#include "judge/kernel_backend.h"
#include "util/fs.h"
#include "util/process.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace cuda_device_content_test {

using namespace temper;
using namespace temper::backend;
namespace fs = std::filesystem;
namespace dc = temper::backend::device_content;

namespace {

const fs::path kCudaWorker = fs::path(TEMPER_BINARY_DIR) / "temper-cuda-worker";
const fs::path kFake = TEMPER_FAKE_CUDA;

// The worker's arguments that make it load the fake driver and runtime.
std::vector<std::string> fake_libraries() {
  return {"--driver", (kFake / "lib64" / "libcuda.so.1").string(), "--runtime", (kFake / "lib64" / "libcudart.so").string()};
}

std::vector<unsigned char> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

// Inputs of four element sizes, sizes that leave partial 16-byte chunks and 8-byte words; the
// outputs are the same tensors (the copy kernels write input k to output k).
ArenaLayout mixed_layout() {
  ArenaLayout l;
  l.input_sets = 2;
  l.inputs = {core::TensorSpec{"h", core::Dtype::F16, {37, 33}}, core::TensorSpec{"f", core::Dtype::F32, {64, 70}},
              core::TensorSpec{"b", core::Dtype::I8, {5, 131}}, core::TensorSpec{"bf", core::Dtype::BF16, {8, 64}}};
  l.outputs = l.inputs;
  return l;
}

// Runs the copy kernel in a worker with device content and checks every call against the host.
void check_device_content(WorkerOptions wo) {
  auto arena = SharedArena::create(mixed_layout());
  ASSERT_TRUE(arena.has_value()) << arena.error().message;
  const auto& layout = arena->layout();
  for (int set = 0; set < 2; ++set) {
    for (size_t k = 0; k < layout.inputs.size(); ++k) {
      auto bytes = random_bytes(layout.inputs[k].bytes(), 100 * static_cast<uint64_t>(set) + k);
      std::memcpy(arena->input(set, k), bytes.data(), bytes.size());
    }
  }
  for (size_t k = 0; k < layout.outputs.size(); ++k) std::memset(arena->output(k), 0x5A, layout.outputs[k].bytes());
  wo.flush_bytes = size_t{1} << 20;
  auto [worker, loaded] = Worker::start(wo, *arena);
  ASSERT_TRUE(loaded.ok()) << loaded.message << "\n" << (worker ? worker->output_tail() : "");

  // The outputs the host expects for a seed: each input mixed from the two draws.
  auto expected = [&](uint64_t seed) {
    std::vector<std::vector<unsigned char>> out;
    for (size_t k = 0; k < layout.inputs.size(); ++k) {
      std::vector<unsigned char> v(layout.inputs[k].bytes());
      dc::mix(v.data(), arena->input(0, k), arena->input(1, k), v.size(), core::dtype_size(layout.inputs[k].dtype), seed);
      out.push_back(std::move(v));
    }
    return out;
  };
  auto host_hash = [](const std::vector<std::vector<unsigned char>>& bufs) {
    uint64_t h = 0;
    for (const auto& b : bufs) h = dc::combine(h, dc::hash_bytes(b.data(), b.size()), b.size());
    return h;
  };

  ASSERT_TRUE(worker->flush().ok());
  CallResult timed = worker->run(0, DeviceCall{17, false});
  ASSERT_TRUE(timed.ok()) << timed.message << "\n" << worker->output_tail();
  ASSERT_TRUE(timed.outputs_hash.has_value());
  EXPECT_EQ(*timed.outputs_hash, host_hash(expected(17)));
  EXPECT_EQ(arena->output(0)[0], 0x5A) << "a timed call's outputs stay on the device";

  CallResult fetched = worker->run(0, DeviceCall{17, true});
  ASSERT_TRUE(fetched.ok()) << fetched.message;
  EXPECT_EQ(fetched.outputs_hash, timed.outputs_hash);
  auto want = expected(17);
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_EQ(std::memcmp(arena->output(k), want[k].data(), want[k].size()), 0) << "output " << k << " is not the host's mix";

  CallResult other = worker->run(1, DeviceCall{18, true});
  ASSERT_TRUE(other.ok()) << other.message;
  EXPECT_NE(other.outputs_hash, timed.outputs_hash) << "another call, other content";
  want = expected(18);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(std::memcmp(arena->output(k), want[k].data(), want[k].size()), 0) << k;
  // The draws themselves are untouched: a plain call still copies set 1 from the arena.
  CallResult plain = worker->run(1);
  ASSERT_TRUE(plain.ok()) << plain.message;
  EXPECT_FALSE(plain.outputs_hash.has_value());
  EXPECT_EQ(std::memcmp(arena->output(2), arena->input(1, 2), layout.inputs[2].bytes()), 0);
}

} // namespace

TEST(DeviceContent, MixTakesEachElementFromOneDrawAndEveryCallDiffers) {
  const size_t n = 4099; // elements of 2 bytes, a partial group of 64 at the end
  std::vector<uint16_t> a(n), b(n), x(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<uint16_t>(2 * i);
    b[i] = static_cast<uint16_t>(2 * i + 1);
  }
  auto bytes = [](std::vector<uint16_t>& v) { return reinterpret_cast<unsigned char*>(v.data()); };
  dc::mix(bytes(x), bytes(a), bytes(b), n * 2, 2, 1);
  dc::mix(bytes(y), bytes(a), bytes(b), n * 2, 2, 2);
  size_t from_a = 0, differ = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(x[i] == a[i] || x[i] == b[i]) << i;
    EXPECT_EQ(x[i] == a[i], dc::takes_first(1, i)) << i;
    from_a += x[i] == a[i];
    differ += x[i] != y[i];
  }
  EXPECT_GT(from_a, n * 45 / 100);
  EXPECT_LT(from_a, n * 55 / 100);
  EXPECT_GT(differ, n * 45 / 100); // two seeds: about half the elements differ
  // In place over either draw gives the same bytes.
  std::vector<uint16_t> z = b;
  dc::mix(bytes(z), bytes(a), bytes(z), n * 2, 2, 1);
  EXPECT_EQ(z, x);
  EXPECT_NE(dc::call_seed(7, 1, 0), dc::call_seed(7, 1, 1));
  EXPECT_NE(dc::call_seed(7, 1, 0), dc::call_seed(7, 2, 0));
  EXPECT_NE(dc::call_seed(7, 1, 0), dc::call_seed(8, 1, 0));
}

TEST(DeviceContent, HashSeesEveryByteItsPlaceAndTheLength) {
  auto v = random_bytes(1003, 5);
  const uint64_t h = dc::hash_bytes(v.data(), v.size());
  for (size_t i : {size_t{0}, size_t{7}, size_t{8}, size_t{1002}}) {
    auto w = v;
    w[i] ^= 1;
    EXPECT_NE(dc::hash_bytes(w.data(), w.size()), h) << i;
  }
  std::vector<unsigned char> swapped = v;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_NE(dc::hash_bytes(swapped.data(), swapped.size()), h) << "words are hashed with their position";
  std::vector<unsigned char> zeros(16, 0);
  EXPECT_NE(dc::combine(0, dc::hash_bytes(zeros.data(), 15), 15), dc::combine(0, dc::hash_bytes(zeros.data(), 16), 16));
  EXPECT_NE(dc::combine(dc::combine(0, 1, 8), 2, 8), dc::combine(dc::combine(0, 2, 8), 1, 8)) << "buffers in order";
  EXPECT_NE(dc::library_source().find("temper_dc_mix"), std::string_view::npos);
}

TEST(DeviceContent, ProtocolCarriesTheLibraryTheSeedAndTheHash) {
  namespace proto = protocol;
  proto::RunCommand run{1};
  run.flags = proto::kRunDeviceContent | proto::kRunFetchOutputs;
  run.content_seed = 0x0123456789abcdefULL;
  std::string frame = proto::encode(run);
  proto::Frame f;
  ASSERT_EQ(proto::take_frame(frame, f), proto::FrameStatus::Complete);
  auto r = proto::decode_run(f.payload);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->set, 1);
  EXPECT_EQ(r->flags, run.flags);
  EXPECT_EQ(r->content_seed, run.content_seed);
  std::string plain = proto::encode(proto::RunCommand{2});
  ASSERT_EQ(proto::take_frame(plain, f), proto::FrameStatus::Complete);
  EXPECT_EQ(f.payload.size(), 4u) << "a plain RUN is the frame it always was";

  proto::DoneReply d;
  d.has_outputs_hash = true;
  d.outputs_hash = 42;
  frame = proto::encode(d);
  ASSERT_EQ(proto::take_frame(frame, f), proto::FrameStatus::Complete);
  auto back = proto::decode_done(f.payload);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->has_outputs_hash);
  EXPECT_EQ(back->outputs_hash, 42u);

  proto::LoadCommand load;
  load.artifact = "k.so";
  load.device_content = "/cache/dc.so";
  frame = proto::encode(load);
  ASSERT_EQ(proto::take_frame(frame, f), proto::FrameStatus::Complete);
  auto l = proto::decode_load(f.payload);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->device_content, "/cache/dc.so");
  EXPECT_TRUE(l->input_groups.empty());
}

// The CUDA worker's device-content protocol on a fake driver and runtime (host memory): the
// inputs it makes and the hashes it returns are the host's, bit for bit.
TEST(CudaDeviceContent, FakeGpuMakesInputsAndHashesOutputsLikeTheHost) {
  WorkerOptions wo;
  wo.worker_exe = kCudaWorker;
  wo.worker_args = fake_libraries();
  wo.artifact = kFake / "libtemper_fake_copy_inputs.so";
  wo.device_content = kFake / "libtemper_fake_device_content.so";
  check_device_content(wo);
}

TEST(CudaDeviceContent, LoadRefusesDeviceContentWithoutTwoDraws) {
  ArenaLayout l = mixed_layout();
  l.input_sets = 1;
  auto arena = SharedArena::create(l);
  ASSERT_TRUE(arena.has_value());
  WorkerOptions wo;
  wo.worker_exe = kCudaWorker;
  wo.worker_args = fake_libraries();
  wo.artifact = kFake / "libtemper_fake_copy_inputs.so";
  wo.device_content = kFake / "libtemper_fake_device_content.so";
  auto [worker, loaded] = Worker::start(wo, *arena);
  EXPECT_EQ(loaded.outcome, CallOutcome::HarnessError);
  EXPECT_NE(loaded.message.find("two input sets"), std::string::npos) << loaded.message;
}

// The library nvcc builds from the source in temper (no GPU needed to build it).
TEST(CudaDeviceContent, LibraryBuildsWithNvcc) {
  std::string nvcc = build::find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  build::CompileCache cache(util::cache_root() / "compile", build::cuda_compiler_spec(nvcc, "sm_90"), util::default_process_runner());
  auto lib = judge::build_device_content(cache);
  ASSERT_TRUE(lib.has_value()) << lib.error().message;
  EXPECT_TRUE(fs::is_regular_file(*lib));
}

// On a GPU: the real library mixes and hashes exactly as the host does.
TEST(CudaDeviceContent, GpuMakesInputsAndHashesOutputsLikeTheHost) {
  auto device = probe_cuda_device(kCudaWorker, util::default_process_runner());
  ASSERT_TRUE(device.has_value()) << device.error().message;
  if (!device->supported) GTEST_SKIP() << "no GPU here: " << device->reason;
  std::string nvcc = build::find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: cannot build the library";
  build::CompileCache cache(util::cache_root() / "compile", build::cuda_compiler_spec(nvcc, device->arch), util::default_process_runner());
  auto lib = judge::build_device_content(cache);
  ASSERT_TRUE(lib.has_value()) << lib.error().message;
  build::CompileRequest req;
  req.source = fs::path(TEMPER_SOURCE_DIR) / "tests/fixtures/cuda/copy_inputs.cu";
  auto kernel = cache.compile(req);
  ASSERT_TRUE(kernel.has_value()) << kernel.error().message;
  ASSERT_TRUE(kernel->ok) << kernel->diagnostics;
  WorkerOptions wo;
  wo.worker_exe = kCudaWorker;
  wo.artifact = kernel->artifact;
  wo.device_content = *lib;
  check_device_content(wo);
}

} // namespace cuda_device_content_test
