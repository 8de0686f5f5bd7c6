// Streams one SwiGLU shape through tasks/swi_glu/kernels/rows.cpp outside the judge, to see what
// a knob does to the kernel itself: bench/swiglu_rows_stream.sh builds this file once per knob
// variant (the kernel's knobs are macros) and runs the variants side by side. Not a judgement:
// no golden, no reference, no pairing; it prints the median time of REPS calls and the bytes
// moved per second, for the decisions of tasks/swi_glu/plans/01-specialized-rows.json.
//
//   swiglu_rows_stream ROWS COLS DTYPE MODE REPS
//     a [ROWS, COLS] input split on its last axis; DTYPE f32, f16 or bf16; MODE cold (write a
//     64 MiB buffer before every call, like the judge's cold-cache step) or warm.
// Times are the calling thread's CPU time (the judge's clock for one-thread tasks).
#include TEMPER_ROWS_SOURCE

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void* mapped(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  return p;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s ROWS COLS f32|f16|bf16 cold|warm REPS\n", argv[0]);
    return 2;
  }
  const int64_t rows = std::atoll(argv[1]), cols = std::atoll(argv[2]);
  const std::string dtype = argv[3], mode = argv[4];
  const int reps = std::atoi(argv[5]);
  const int32_t dt = dtype == "f16" ? TEMPER_F16 : dtype == "bf16" ? TEMPER_BF16 : TEMPER_F32;
  if (rows < 1 || cols < 2 || cols % 2 || reps < 1 || (dtype != "f32" && dtype != "f16" && dtype != "bf16") ||
      (mode != "cold" && mode != "warm")) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const size_t elem = dt == TEMPER_F32 ? 4 : 2;
  const size_t in_bytes = static_cast<size_t>(rows * cols) * elem, out_bytes = in_bytes / 2;
  void* in = mapped(in_bytes);
  void* out = mapped(out_bytes);
  // Values in [-3, 3): the exponential's ordinary range.
  for (size_t i = 0; i < in_bytes / elem; ++i) {
    const float v = static_cast<float>(i % 1000) * 0.006f - 3.0f;
    if (dt == TEMPER_F32) static_cast<float*>(in)[i] = v;
    else if (dt == TEMPER_F16) static_cast<uint16_t*>(in)[i] = temper_f32_to_f16(v);
    else static_cast<uint16_t*>(in)[i] = temper_f32_to_bf16(v);
  }
  const size_t flush_bytes = size_t{64} << 20;
  auto* flush = static_cast<unsigned char*>(mapped(flush_bytes));

  temper_tensor ti{};
  ti.data = in;
  ti.dtype = dt;
  ti.rank = 2;
  ti.shape[0] = rows;
  ti.shape[1] = cols;
  ti.strides[0] = cols;
  ti.strides[1] = 1;
  temper_tensor to = ti;
  to.data = out;
  to.shape[1] = cols / 2;
  to.strides[0] = cols / 2;
  temper_attr dim{};
  dim.name = "dim";
  dim.kind = TEMPER_ATTR_INT;
  dim.i = -1;
  temper_args args{};
  args.abi_version = TEMPER_ABI_VERSION;
  args.num_inputs = 1;
  args.inputs = &ti;
  args.num_outputs = 1;
  args.outputs = &to;
  args.num_attrs = 1;
  args.attrs = &dim;
  args.num_threads = 1;

  std::vector<double> times;
  for (int r = 0; r < reps + 1; ++r) { // one unrecorded first call
    if (mode == "cold") std::fill(flush, flush + flush_bytes, static_cast<unsigned char>(r));
    const double t0 = thread_seconds();
    if (temper_kernel(&args) != 0) {
      std::fprintf(stderr, "the kernel failed\n");
      return 1;
    }
    if (r > 0) times.push_back(thread_seconds() - t0);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("%.6f %.2f\n", median, static_cast<double>(in_bytes + out_bytes) / median / 1e9);
  return 0;
}
