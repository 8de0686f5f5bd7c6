// tasks/swi_glu/kernels/rows.cpp called directly on small tensors of every dtype and path (rows
// with tails, streamed rows, the [N, 2] deinterleave, strided views), against the task's formula
// in double precision. Compiled once per knob set (tests/tasks/CMakeLists.txt), so each vector
// path the tuner may pick is checked here, not only the defaults: a wrong lane order in the bf16
// even/odd path or a clamp the base-2 exponential dropped shows up as a wrong element.
#include TEMPER_ROWS_SOURCE

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

double exact(double x0, double x1) { return x0 / (1.0 + std::exp(-x0)) * x1; }

// Storage of one dtype in 16-bit or 32-bit words; values go through the dtype's rounding.
struct Buffer {
  int32_t dtype;
  std::vector<uint32_t> words; // fp32 bits, or 16-bit values in the low half

  float get(size_t i) const {
    if (dtype == TEMPER_F32) {
      float v;
      std::memcpy(&v, &words[i], 4);
      return v;
    }
    const auto h = static_cast<uint16_t>(words[i]);
    return dtype == TEMPER_F16 ? temper_f16_to_f32(h) : temper_bf16_to_f32(h);
  }
  void set(size_t i, float v) {
    if (dtype == TEMPER_F32) {
      std::memcpy(&words[i], &v, 4);
    } else {
      words[i] = dtype == TEMPER_F16 ? temper_f32_to_f16(v) : temper_f32_to_bf16(v);
    }
  }
};

// Packs words into the dtype's element size at a byte offset `skew` from an aligned base, so the
// streamed path's peel and the unaligned loads are exercised too.
struct Packed {
  std::vector<unsigned char> bytes;
  size_t skew;
  void* data() { return bytes.data() + skew; }
};

size_t elem_bytes(int32_t dtype) { return dtype == TEMPER_F32 ? 4 : 2; }

Packed pack(const Buffer& b, size_t skew) {
  const size_t eb = elem_bytes(b.dtype);
  Packed p{std::vector<unsigned char>(b.words.size() * eb + 128), skew};
  auto* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(p.bytes.data()) + 63) & ~uintptr_t{63});
  p.skew = static_cast<size_t>(base - p.bytes.data()) + skew;
  for (size_t i = 0; i < b.words.size(); ++i) std::memcpy(p.bytes.data() + p.skew + i * eb, &b.words[i], eb);
  return p;
}

Buffer unpack(Packed& p, int32_t dtype, size_t n) {
  Buffer b{dtype, std::vector<uint32_t>(n, 0)};
  const size_t eb = elem_bytes(dtype);
  for (size_t i = 0; i < n; ++i) std::memcpy(&b.words[i], p.bytes.data() + p.skew + i * eb, eb);
  return b;
}

// Allowed error of one output element against the exact value: the dtype's rounding (half an
// ulp) plus the kernel's arithmetic (at most 1e-4 relative with the degree-3 exponential, a few
// fp32 ulps otherwise), and an absolute floor for results that underflow the dtype.
double allowed(int32_t dtype, double expect) {
  const double ulp = dtype == TEMPER_F32 ? 0x1p-23 : dtype == TEMPER_F16 ? 0x1p-10 : 0x1p-7;
  const double floor = dtype == TEMPER_F16 ? 0x1p-24 : 1e-37;
  return (ulp + 2e-4) * std::fabs(expect) + floor;
}

// `v` rounded to the dtype (through fp32, as the kernel stores).
double round_to(int32_t dtype, double v) {
  Buffer b{dtype, {0}};
  b.set(0, static_cast<float>(v));
  return b.get(0);
}

const char* dtype_name(int32_t dtype) { return dtype == TEMPER_F32 ? "f32" : dtype == TEMPER_F16 ? "f16" : "bf16"; }

// Runs the kernel on a contiguous [rows, cols] input split on `dim` and compares every output.
void check(int32_t dtype, int64_t rows, int64_t cols, int dim, size_t skew, uint32_t seed) {
  SCOPED_TRACE(std::string(dtype_name(dtype)) + " [" + std::to_string(rows) + ", " + std::to_string(cols) +
               "] dim " + std::to_string(dim) + " skew " + std::to_string(skew));
  const auto n = static_cast<size_t>(rows * cols);
  Buffer in{dtype, std::vector<uint32_t>(n, 0)};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {inf, -inf, std::nanf(""), 0.0f, -0.0f, 100.0f, -100.0f, -88.0f, 60000.0f, -60000.0f};
  for (size_t i = 0; i < n; ++i) in.set(i, u(rng));
  for (size_t k = 0; k < std::size(specials); ++k) in.set((k * 7919 + seed) % n, specials[k]);

  const int64_t out_rows = dim == 0 ? rows / 2 : rows, out_cols = dim == 0 ? cols : cols / 2;
  const auto m = static_cast<size_t>(out_rows * out_cols);
  Packed pin = pack(in, skew);
  Packed pout = pack(Buffer{dtype, std::vector<uint32_t>(m, 0x7fc0)}, skew);

  temper_tensor ti{};
  ti.data = pin.data();
  ti.dtype = dtype;
  ti.rank = 2;
  ti.shape[0] = rows;
  ti.shape[1] = cols;
  ti.strides[0] = cols;
  ti.strides[1] = 1;
  temper_tensor to = ti;
  to.data = pout.data();
  to.shape[0] = out_rows;
  to.shape[1] = out_cols;
  to.strides[0] = out_cols;
  temper_attr attr{};
  attr.name = "dim";
  attr.kind = TEMPER_ATTR_INT;
  attr.i = dim;
  temper_args args{};
  args.abi_version = TEMPER_ABI_VERSION;
  args.num_inputs = 1;
  args.inputs = &ti;
  args.num_outputs = 1;
  args.outputs = &to;
  args.num_attrs = 1;
  args.attrs = &attr;
  args.num_threads = 1;
  ASSERT_EQ(temper_kernel(&args), 0);

  const Buffer out = unpack(pout, dtype, m);
  int wrong = 0;
  for (int64_t r = 0; r < out_rows; ++r) {
    for (int64_t c = 0; c < out_cols; ++c) {
      const int64_t i0 = r * cols + c;
      const int64_t i1 = dim == 0 ? (r + out_rows) * cols + c : r * cols + c + out_cols;
      const double expect = exact(in.get(static_cast<size_t>(i0)), in.get(static_cast<size_t>(i1)));
      const double got = out.get(static_cast<size_t>(r * out_cols + c));
      const double rounded = round_to(dtype, expect);
      bool ok;
      if (std::isnan(expect)) {
        ok = std::isnan(got);
      } else if (std::isinf(rounded)) {
        ok = got == rounded || std::fabs(got - expect) <= allowed(dtype, expect);
      } else {
        ok = std::fabs(got - expect) <= allowed(dtype, expect);
      }
      if (!ok && ++wrong <= 5) {
        ADD_FAILURE() << "output [" << r << ", " << c << "]: x0 " << in.get(static_cast<size_t>(i0)) << ", x1 "
                      << in.get(static_cast<size_t>(i1)) << ": got " << got << ", expected " << expect;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

constexpr int32_t kDtypes[] = {TEMPER_F32, TEMPER_F16, TEMPER_BF16};

TEST(SwiGluRows, ShortAndOddRowsWithTails) {
  for (int32_t dt : kDtypes) {
    check(dt, 7, 66, -1, 0, 1);   // half 33: two vectors and a tail of one
    check(dt, 5, 2, -1, 0, 2);    // half 1 on the last axis: the deinterleave path
    check(dt, 10, 14, 0, 2, 3);   // split on the row axis, output two bytes off alignment
    check(dt, 3, 258, -1, 6, 4);  // rows of 129, misaligned
  }
}

TEST(SwiGluRows, LongRowsAndTheDeinterleavePath) {
  for (int32_t dt : kDtypes) {
    check(dt, 4, 8194, -1, 0, 5);
    check(dt, 1001, 2, -1, 0, 6);
  }
}

// Outputs of at least 4 MiB take the streaming stores when NT_STORES is on (NT_MIN_MB 4).
TEST(SwiGluRows, OutputsLargeEnoughToStream) {
  check(TEMPER_F32, 256, 8192, -1, 0, 7);
  check(TEMPER_BF16, 512, 8192, -1, 0, 8);
  check(TEMPER_F16, 2, 4194306, -1, 2, 9); // one long row, two bytes off: peel, then stream
}

// Which paths this build exercises; the vector ones need AVX-512, or AVX2 with FMA and F16C (and
// AVX512-BF16 for the bf16 even/odd path) at compile time, else the kernel takes its general
// walk, which the tests above then check instead.
TEST(SwiGluRows, VectorPathsAreBuilt) {
#if !SWIGLU_VECTOR
  GTEST_SKIP() << "built without AVX-512 or AVX2+FMA+F16C (-march of this compiler): only the general path is tested";
#else
#if SWIGLU_AVX512 && BF16_PAIRS && !SWIGLU_BF16_PAIRS
  // (On AVX2 bf16 rows always take the even/odd split, whatever BF16_PAIRS says.)
  GTEST_SKIP() << "BF16_PAIRS asked but the target lacks AVX512-BF16: the bf16 even/odd path is not tested";
#endif
  SUCCEED();
#endif
}

} // namespace
