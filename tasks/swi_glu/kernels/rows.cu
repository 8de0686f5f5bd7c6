// SwiGlu on a GPU (include/temper/cuda_kernel.h), architecture "rows": a contiguous input split
// at `dim` is a stack of rows [x0 | x1], each 2 * half elements long (half = shape[dim] / 2 times
// the product of the dims after dim), and the output is the stack of rows of `half` elements, so
// every contiguous case is one streaming pass over rows, whatever its rank and split axis. The
// host picks one of three paths in constant time:
//   - flat:    rows shorter than FLAT_MAX_HALF (with FLAT 1): one 1-D grid over all output
//              elements (or 16-byte output vectors), each thread finding its row as j / half
//              with a multiply-shift divider; a vector that crosses rows is done element by
//              element, and half == 1 ([N, 2] split on dim 1) reads 2 * V contiguous inputs as
//              two vectors and separates x0 from x1 in registers;
//   - rows:    longer rows: a 2-D grid, blockIdx.y over rows and blockIdx.x over tiles of a row;
//              each row is peeled to the output's 16-byte alignment, and x0 or x1 whose start is
//              then misaligned (half not a multiple of the vector) is read element by element
//              while the other streams stay vectors; the peel and the tail (under 2 * V
//              elements) are done by tile 0;
//   - general: non-contiguous tensors, base pointers not 16-byte aligned, or more than 2^31 - 1
//              input elements (the two paths above index in 32 bits): one thread per output
//              element with a full strided walk.
// Every element is x0 / (1 + expf(-x0)) * x1 in fp32 (fp16 and bf16 widened exactly), rounded
// once to nearest even when stored; expf is CUDA's accurate one (no fast-math intrinsics), so inf
// and NaN inputs give what the fp32 formula gives.
//
// temper: knob VEC = 1 in {0, 1}
// temper: knob ELEMS = 2 in {1, 2, 4, 8}
// temper: knob BLOCK = 256 in {128, 256, 512, 1024}
// temper: knob GRID = 0 in {0, 2, 4, 8}
// temper: knob FLAT = 1 in {0, 1}
// temper: knob FLAT_MAX_HALF = 256 in {32, 256, 2048}
// temper: knob-constraint FLAT == 1 || FLAT_MAX_HALF == 256
// temper: knob-constraint VEC == 0 || BLOCK < 1024 || ELEMS <= 2
//
// VEC: 1 moves 16 bytes per load and store (4 fp32 or 8 fp16/bf16 elements, as float4-sized
// packs) wherever the stream is aligned, 0 one element per access; wide accesses cut the load and
// store instructions per byte by 4 to 8, which decides how close a streaming kernel gets to HBM
// bandwidth. ELEMS: vectors (or elements) per thread per loop iteration, whose loads are all
// issued before any arithmetic where the streams are aligned: more bytes in flight per thread
// hides the memory latency with fewer resident warps. BLOCK: threads per block; the kernels are
// declared __launch_bounds__(BLOCK, 1), so it also bounds the registers per thread (64 at 1024;
// with the 1, ptxas gives every BLOCK below 1024 the same registers, where its own target for
// BLOCK 128 spilled at ELEMS 8). GRID: 0 launches enough blocks to cover the work once (each thread does
// one iteration); k > 0 launches k blocks per SM (the SM count is read once) and loops with a
// grid stride, which saves block scheduling and tail effects when blocks are short. FLAT: 1 sends
// rows shorter than FLAT_MAX_HALF elements to the flat mapping, 0 sends every row to the 2-D
// mapping: a block per row tile leaves most threads idle on rows of 1 to a few hundred elements
// (cases 9, 12, 20: rows of 7, 1 and 50), while the flat mapping's division per unit costs a
// few instructions that long rows do not need. The first constraint keeps FLAT_MAX_HALF at its
// default where it has no effect; the second leaves out 4 or 8 packs of x0 and x1 per thread at
// BLOCK 1024, where __launch_bounds__ allows 64 registers per thread and they spill (ptxas -v).
#include <temper/cuda_kernel.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#ifndef VEC
#define VEC 1
#endif
#ifndef ELEMS
#define ELEMS 2
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef GRID
#define GRID 0
#endif
#ifndef FLAT
#define FLAT 1
#endif
#ifndef FLAT_MAX_HALF
#define FLAT_MAX_HALF 256
#endif

namespace {

constexpr uint32_t kTile = static_cast<uint32_t>(BLOCK) * ELEMS; // units (vectors or elements) per block iteration

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
// bf16 -> fp32 is exact: the 16 bits become the high half of the fp32 word. Written as the PTX
// move cuda_bf16.hpp itself uses below sm_90 (sm_90's cvt.f32.bf16 makes ptxas widen every
// element right after its load, doubling the registers a batch of ELEMS packs holds: 167 instead
// of 96 at ELEMS 8, and spills at BLOCK 1024).
__device__ __forceinline__ float to_f(__nv_bfloat16 v) {
  float f;
  asm("{ mov.b32 %0, {0,%1};}\n" : "=f"(f) : "h"(__bfloat16_as_ushort(v)));
  return f;
}
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T> __device__ __forceinline__ T swiglu(T x0, T x1) {
  const float a = to_f(x0);
  return from_f<T>(a / (1.0f + expf(-a)) * to_f(x1));
}

// V elements moved as one access when aligned (16 bytes for V = 16 / sizeof(T)).
template <typename T, int V> struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <typename T, int V> __device__ __forceinline__ Pack<T, V> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, V>*>(p);
}

template <typename T, int V> __device__ __forceinline__ void store_pack(T* y, const Pack<T, V>& a, const Pack<T, V>& b) {
  Pack<T, V> r;
#pragma unroll
  for (int e = 0; e < V; ++e) r.v[e] = swiglu(a.v[e], b.v[e]);
  *reinterpret_cast<Pack<T, V>*>(y) = r;
}

// V outputs at y (V-aligned) from x0 and x1, each read as one pack where it is V-aligned and
// element by element where it is not: at once, without holding registers across units.
template <typename T, int V> __device__ __forceinline__ void swiglu_unit(const T* x0, const T* x1, T* y) {
  Pack<T, V> a, b;
  if (reinterpret_cast<uintptr_t>(x0) % sizeof(Pack<T, V>) == 0) {
    a = load_pack<T, V>(x0);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) a.v[e] = x0[e];
  }
  if (reinterpret_cast<uintptr_t>(x1) % sizeof(Pack<T, V>) == 0) {
    b = load_pack<T, V>(x1);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) b.v[e] = x1[e];
  }
  store_pack<T, V>(y, a, b);
}

// n / d for n, d < 2^31 with one multiply-high, an add and a shift (Granlund and Montgomery, as
// PyTorch's IntDivider): shift = ceil(log2 d), magic = 2^32 (2^shift - d) / d + 1.
struct Divider {
  uint32_t magic;
  uint32_t shift;
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, magic) + n) >> shift; }
};

Divider make_divider(uint32_t d) {
  uint32_t shift = 0;
  while (shift < 31 && (uint32_t{1} << shift) < d) ++shift;
  const uint64_t magic = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
  return Divider{static_cast<uint32_t>(magic), shift};
}

// Flat mapping: unit u covers outputs [u V, u V + V) of the flat output (n elements, rows of
// `half`), whose x0 starts at j + r half (j = u V, r = j / half) and x1 half further. A unit
// inside one row when half is a multiple of V (x0 and x1 then V-aligned too), and with half == 1
// a unit whose inputs are the 2 V contiguous elements x0 x1 x0 x1 ..., are loaded as packs for
// all ELEMS units before any arithmetic; any other unit is done at once: inside a row with packs
// where aligned (swiglu_unit), across rows or at the partial end element by element.
template <typename T, int V>
__global__ void __launch_bounds__(BLOCK, 1) swiglu_flat(const T* __restrict__ in, T* __restrict__ out, uint32_t n,
                                                     uint32_t half, Divider rows) {
  constexpr int kNone = 0, kRow = 1, kPairs = 2;
  const uint32_t units = (n + V - 1) / V;
  const uint32_t step = gridDim.x * kTile;
  for (uint32_t base = blockIdx.x * kTile; base < units; base += step) {
    Pack<T, V> a[ELEMS], b[ELEMS];
    int kind[ELEMS];
#pragma unroll
    for (int k = 0; k < ELEMS; ++k) {
      kind[k] = kNone;
      const uint32_t u = base + k * BLOCK + threadIdx.x;
      if (u >= units) continue;
      const uint32_t j = u * V;
      uint32_t r = rows.div(j);
      uint32_t c = j - r * half;
      const uint32_t x0 = j + r * half; // r * 2 * half + c
      if constexpr (V == 1) {
        a[k] = load_pack<T, V>(in + x0);
        b[k] = load_pack<T, V>(in + x0 + half);
        kind[k] = kRow;
      } else if (j + V <= n && c + V <= half) {
        if (half % V == 0) {
          a[k] = load_pack<T, V>(in + x0);
          b[k] = load_pack<T, V>(in + x0 + half);
          kind[k] = kRow;
        } else {
          swiglu_unit<T, V>(in + x0, in + x0 + half, out + j);
        }
      } else if (half == 1 && j + V <= n) {
        a[k] = load_pack<T, V>(in + 2 * j);
        b[k] = load_pack<T, V>(in + 2 * j + V);
        kind[k] = kPairs;
      } else {
        for (int e = 0; e < V && j + e < n; ++e) {
          const uint32_t i0 = r * 2 * half + c;
          out[j + e] = swiglu(in[i0], in[i0 + half]);
          if (++c == half) {
            c = 0;
            ++r;
          }
        }
      }
    }
#pragma unroll
    for (int k = 0; k < ELEMS; ++k) {
      T* y = out + (base + k * BLOCK + threadIdx.x) * V;
      if (kind[k] == kRow) {
        store_pack<T, V>(y, a[k], b[k]);
      } else if (kind[k] == kPairs) {
        Pack<T, V> p;
#pragma unroll
        for (int e = 0; e < V / 2; ++e) {
          p.v[e] = swiglu(a[k].v[2 * e], a[k].v[2 * e + 1]);
          p.v[V / 2 + e] = swiglu(b[k].v[2 * e], b[k].v[2 * e + 1]);
        }
        *reinterpret_cast<Pack<T, V>*>(y) = p;
      }
    }
  }
}

// Rows mapping: blockIdx.y walks the rows, blockIdx.x the row's tiles of kTile vectors. A row's
// output starts at r * half: its first `lead` elements (up to the next V boundary) and its last
// `tail` ones (after the whole vectors) are done one by one by tile 0. In between, when half is
// a multiple of V (no lead or tail, x0 and x1 V-aligned like y) ELEMS packs of each are loaded
// before any arithmetic; otherwise each unit is done at once, a misaligned stream element by
// element (x0 is aligned where y is only when r half is a multiple of V, x1 when (r + 1) half is).
template <typename T, int V>
__global__ void __launch_bounds__(BLOCK, 1) swiglu_rows(const T* __restrict__ in, T* __restrict__ out, uint32_t rows,
                                                     uint32_t half, uint32_t tiles) {
  for (uint32_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const uint32_t yo = r * half; // the row's first output; its x0 is at 2 yo, its x1 at 2 yo + half
    const uint32_t mis = yo % V;
    const uint32_t lead = mis == 0 ? 0 : (V - mis < half ? V - mis : half);
    const uint32_t body = (half - lead) / V;
    const uint32_t tail = half - lead - body * V;
    const T* x0 = in + 2 * yo + lead;
    const T* x1 = x0 + half;
    T* y = out + yo + lead;
    for (uint32_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      if constexpr (V > 1) {
        if (t == 0 && threadIdx.x < lead + tail) {
          const uint32_t e = threadIdx.x < lead ? threadIdx.x : lead + body * V + (threadIdx.x - lead);
          out[yo + e] = swiglu(in[2 * yo + e], in[2 * yo + half + e]);
        }
        if (half % V != 0) {
#pragma unroll
          for (int k = 0; k < ELEMS; ++k) {
            const uint32_t v = t * kTile + k * BLOCK + threadIdx.x;
            if (v < body) swiglu_unit<T, V>(x0 + v * V, x1 + v * V, y + v * V);
          }
          continue;
        }
      }
      Pack<T, V> a[ELEMS], b[ELEMS];
#pragma unroll
      for (int k = 0; k < ELEMS; ++k) {
        const uint32_t v = t * kTile + k * BLOCK + threadIdx.x;
        if (v < body) {
          a[k] = load_pack<T, V>(x0 + v * V);
          b[k] = load_pack<T, V>(x1 + v * V);
        }
      }
#pragma unroll
      for (int k = 0; k < ELEMS; ++k) {
        const uint32_t v = t * kTile + k * BLOCK + threadIdx.x;
        if (v < body) store_pack<T, V>(y + v * V, a[k], b[k]);
      }
    }
  }
}

struct Geometry {
  int32_t rank;
  int64_t out_shape[TEMPER_MAX_RANK];
  int64_t in_strides[TEMPER_MAX_RANK];
  int64_t out_strides[TEMPER_MAX_RANK];
  int64_t half_offset; // from x0 to x1 along dim, in input elements
  int64_t count;       // output elements
};

// Any strides, 64-bit indices: one output element per thread and iteration.
template <typename T>
__global__ void __launch_bounds__(BLOCK, 1) swiglu_general(const T* __restrict__ in, T* __restrict__ out, Geometry g) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < g.count;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = j, in_off = 0, out_off = 0;
    for (int32_t k = g.rank - 1; k >= 0; --k) {
      const int64_t idx = rest % g.out_shape[k];
      rest /= g.out_shape[k];
      in_off += idx * g.in_strides[k];
      out_off += idx * g.out_strides[k];
    }
    out[out_off] = swiglu(in[in_off], in[in_off + g.half_offset]);
  }
}

// Blocks for `want` blocks of work: all of them (GRID 0), else GRID per SM with a grid stride.
uint32_t grid_blocks(uint64_t want) {
  if (want == 0) want = 1;
#if GRID > 0
  static int sms = 0; // read once per process
  if (sms == 0) {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count <= 0) {
      (void)cudaGetLastError(); // leave no error behind for the launch check
      count = 128;
    }
    sms = count;
  }
  const uint64_t cap = static_cast<uint64_t>(GRID) * static_cast<uint64_t>(sms);
#else
  const uint64_t cap = 0x7fffffffu;
#endif
  return static_cast<uint32_t>(want < cap ? want : cap);
}

int fail(const temper_args* args, const char* message) {
  if (args->set_error) args->set_error(message);
  return 1;
}

template <typename T>
void launch_general(const temper_tensor& in, const temper_tensor& out, int64_t dim, cudaStream_t stream) {
  Geometry g{};
  g.rank = in.rank;
  for (int32_t k = 0; k < in.rank; ++k) {
    g.out_shape[k] = out.shape[k];
    g.in_strides[k] = in.strides[k];
    g.out_strides[k] = out.strides[k];
  }
  g.half_offset = out.shape[dim] * in.strides[dim];
  g.count = temper_numel(&out);
  const uint32_t blocks = grid_blocks((static_cast<uint64_t>(g.count) + BLOCK - 1) / BLOCK);
  swiglu_general<T><<<blocks, BLOCK, 0, stream>>>(static_cast<const T*>(in.data), static_cast<T*>(out.data), g);
}

// Contiguous tensors: `outer` rows of [x0 | x1] with `half` elements each side.
template <typename T>
void launch_contiguous(const temper_tensor& in, const temper_tensor& out, uint32_t outer, uint32_t half,
                       cudaStream_t stream) {
  constexpr int V = VEC ? static_cast<int>(16 / sizeof(T)) : 1;
  const T* x = static_cast<const T*>(in.data);
  T* y = static_cast<T*>(out.data);
  if (FLAT && half < FLAT_MAX_HALF) {
    const uint32_t n = outer * half;
    const uint64_t units = (static_cast<uint64_t>(n) + V - 1) / V;
    const uint32_t blocks = grid_blocks((units + kTile - 1) / kTile);
    swiglu_flat<T, V><<<blocks, BLOCK, 0, stream>>>(x, y, n, half, make_divider(half));
    return;
  }
  uint32_t tiles = (half / V + kTile - 1) / kTile;
  if (tiles == 0) tiles = 1; // a row shorter than a vector: its lead and tail
#if GRID > 0
  const uint32_t total = grid_blocks(uint64_t{0xffffffffu});
  const uint32_t gx = tiles < total ? tiles : total;
  uint32_t gy = total / gx;
  if (gy > outer) gy = outer;
#else
  const uint32_t gx = tiles;
  uint32_t gy = outer;
#endif
  if (gy > 65535) gy = 65535;
  if (gy == 0) gy = 1;
  swiglu_rows<T, V><<<dim3(gx, gy), BLOCK, 0, stream>>>(x, y, outer, half, tiles);
}

template <typename T>
void launch(const temper_tensor& in, const temper_tensor& out, int64_t dim, cudaStream_t stream) {
  int64_t outer = 1, half = out.shape[dim];
  for (int32_t k = 0; k < dim; ++k) outer *= in.shape[k];
  for (int32_t k = static_cast<int32_t>(dim) + 1; k < in.rank; ++k) half *= in.shape[k];
  const bool aligned = VEC == 0 || ((reinterpret_cast<uintptr_t>(in.data) | reinterpret_cast<uintptr_t>(out.data)) % 16 == 0);
  if (temper_is_contiguous(&in) && temper_is_contiguous(&out) && aligned && temper_numel(&in) <= 0x7fffffff) {
    launch_contiguous<T>(in, out, static_cast<uint32_t>(outer), static_cast<uint32_t>(half), stream);
  } else {
    launch_general<T>(in, out, dim, stream);
  }
}

} // namespace

TEMPER_EXPORT int temper_cuda_kernel(const temper_args* args, void* stream) {
  if (args == nullptr) return 1;
  if (args->num_inputs != 1 || args->num_outputs != 1) return fail(args, "SwiGlu: expects one input and one output");
  const temper_tensor& in = args->inputs[0];
  const temper_tensor& out = args->outputs[0];
  if (in.rank < 1 || in.rank > TEMPER_MAX_RANK || out.rank != in.rank) return fail(args, "SwiGlu: bad rank");
  if (in.dtype != TEMPER_F32 && in.dtype != TEMPER_F16 && in.dtype != TEMPER_BF16) return fail(args, "SwiGlu: unsupported dtype");
  if (out.dtype != in.dtype) return fail(args, "SwiGlu: output dtype differs from the input dtype");
  int64_t dim = temper_attr_int(args, "dim", -1);
  if (dim < -in.rank || dim >= in.rank) return fail(args, "SwiGlu: dim out of range");
  if (dim < 0) dim += in.rank;
  if (in.shape[dim] % 2 != 0) return fail(args, "SwiGlu: the split dimension is odd");
  for (int32_t k = 0; k < in.rank; ++k) {
    if (out.shape[k] != (k == dim ? in.shape[k] / 2 : in.shape[k])) return fail(args, "SwiGlu: bad output shape");
  }
  if (temper_numel(&out) == 0) return 0;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (in.dtype == TEMPER_F16) launch<__half>(in, out, dim, s);
  else if (in.dtype == TEMPER_BF16) launch<__nv_bfloat16>(in, out, dim, s);
  else launch<float>(in, out, dim, s);
  return cudaGetLastError() == cudaSuccess ? 0 : fail(args, "SwiGlu: the launch failed");
}
