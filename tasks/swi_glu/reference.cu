// SwiGlu reference kernel for the CUDA backend (include/temper/cuda_kernel.h):
// output = silu(x0) * x1, (x0, x1) = chunk(input, 2, dim).
//
// The baseline to beat on a GPU: one thread per output element, any rank from 1 to 8, any split
// dim, any element strides, float32, float16 and bfloat16. Each element is computed in fp32 as
// x0 / (1 + exp(-x0)) * x1 and rounded once (to nearest even) when stored, like reference.cpp.
#include <temper/cuda_kernel.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

struct Geometry {
  int32_t rank;
  int64_t out_shape[TEMPER_MAX_RANK];
  int64_t in_strides[TEMPER_MAX_RANK];
  int64_t out_strides[TEMPER_MAX_RANK];
  int64_t half_offset; // from x0 to x1 along dim, in input elements
  int64_t count;       // output elements
};

__device__ float load(const void* p, int32_t dtype, int64_t i) {
  if (dtype == TEMPER_F16) return __half2float(static_cast<const __half*>(p)[i]);
  if (dtype == TEMPER_BF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__device__ void store(void* p, int32_t dtype, int64_t i, float v) {
  if (dtype == TEMPER_F16) static_cast<__half*>(p)[i] = __float2half_rn(v);
  else if (dtype == TEMPER_BF16) static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  else static_cast<float*>(p)[i] = v;
}

__global__ void swiglu_reference(const void* in, void* out, int32_t dtype, Geometry g) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < g.count;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = j, in_off = 0, out_off = 0;
    for (int32_t k = g.rank - 1; k >= 0; --k) {
      int64_t idx = rest % g.out_shape[k];
      rest /= g.out_shape[k];
      in_off += idx * g.in_strides[k];
      out_off += idx * g.out_strides[k];
    }
    float x0 = load(in, dtype, in_off);
    float x1 = load(in, dtype, in_off + g.half_offset);
    store(out, dtype, out_off, x0 / (1.0f + expf(-x0)) * x1);
  }
}

int fail(const temper_args* args, const char* message) {
  if (args->set_error) args->set_error(message);
  return 1;
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
  Geometry g{};
  g.rank = in.rank;
  for (int32_t k = 0; k < in.rank; ++k) {
    if (out.shape[k] != (k == dim ? in.shape[k] / 2 : in.shape[k])) return fail(args, "SwiGlu: bad output shape");
    g.out_shape[k] = out.shape[k];
    g.in_strides[k] = in.strides[k];
    g.out_strides[k] = out.strides[k];
  }
  g.half_offset = out.shape[dim] * in.strides[dim];
  g.count = temper_numel(&out);
  if (g.count == 0) return 0;
  const int threads = 256;
  const int64_t blocks = (g.count + threads - 1) / threads;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 * 32 ? blocks : 65535 * 32);
  swiglu_reference<<<grid, threads, 0, static_cast<cudaStream_t>(stream)>>>(in.data, out.data, in.dtype, g);
  return cudaGetLastError() == cudaSuccess ? 0 : fail(args, "SwiGlu: the launch failed");
}
