// SwiGlu reference kernel for the CPU backend: output = silu(x0) * x1, (x0, x1) = chunk(input, 2, dim).
//
// The baseline to beat: plain, single-threaded C++ with no vector intrinsics. It handles any rank
// from 1 to 8, any split dim (negative counts from the end), any element strides in the tensor
// descriptors, and float32, float16 and bfloat16 (half types widened to fp32 with half.h). Every
// element is computed in fp32 as x0 / (1 + exp(-x0)) * x1 and rounded once when stored, so inf
// and NaN inputs give what that fp32 formula gives (see desc.md).
#include <temper/half.h>
#include <temper/kernel.h>

#include <cmath>
#include <cstdint>

namespace {

int fail(const temper_args* args, const char* message) {
  if (args->set_error) args->set_error(message);
  return 1;
}

bool is_supported(int32_t dtype) { return dtype == TEMPER_F32 || dtype == TEMPER_F16 || dtype == TEMPER_BF16; }

float load(const void* base, int32_t dtype, int64_t offset) {
  switch (dtype) {
  case TEMPER_F16: return temper_f16_to_f32(static_cast<const uint16_t*>(base)[offset]);
  case TEMPER_BF16: return temper_bf16_to_f32(static_cast<const uint16_t*>(base)[offset]);
  default: return static_cast<const float*>(base)[offset];
  }
}

void store(void* base, int32_t dtype, int64_t offset, float v) {
  switch (dtype) {
  case TEMPER_F16: static_cast<uint16_t*>(base)[offset] = temper_f32_to_f16(v); break;
  case TEMPER_BF16: static_cast<uint16_t*>(base)[offset] = temper_f32_to_bf16(v); break;
  default: static_cast<float*>(base)[offset] = v; break;
  }
}

float swiglu(float x0, float x1) { return x0 / (1.0f + std::exp(-x0)) * x1; }

} // namespace

TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  if (args == nullptr) return 1;
  if (args->abi_version != TEMPER_ABI_VERSION) return fail(args, "SwiGlu: unsupported ABI version");
  if (args->num_inputs != 1 || args->num_outputs != 1 || args->inputs == nullptr || args->outputs == nullptr) {
    return fail(args, "SwiGlu: expects exactly one input and one output");
  }
  const temper_tensor& in = args->inputs[0];
  const temper_tensor& out = args->outputs[0];
  const int32_t rank = in.rank;
  if (rank < 1 || rank > TEMPER_MAX_RANK) return fail(args, "SwiGlu: input rank must be 1 to 8");
  if (out.rank != rank) return fail(args, "SwiGlu: output rank differs from the input rank");
  if (!is_supported(in.dtype)) return fail(args, "SwiGlu: input dtype must be float32, float16 or bfloat16");
  if (out.dtype != in.dtype) return fail(args, "SwiGlu: output dtype differs from the input dtype");

  int64_t dim = temper_attr_int(args, "dim", -1);
  if (dim < -rank || dim >= rank) return fail(args, "SwiGlu: dim is out of range for the input rank");
  if (dim < 0) dim += rank;
  if (in.shape[dim] % 2 != 0) return fail(args, "SwiGlu: the size of the split dimension is odd");
  for (int32_t k = 0; k < rank; ++k) {
    int64_t expect = k == dim ? in.shape[k] / 2 : in.shape[k];
    if (out.shape[k] != expect) return fail(args, "SwiGlu: output shape is not the input shape with dim halved");
  }
  if (temper_numel(&out) == 0) return 0;

  // Walk every output index with an odometer; x0 is at the same index of the input, x1 half a
  // split dimension further along dim.
  const int64_t half_offset = out.shape[dim] * in.strides[dim];
  int64_t index[TEMPER_MAX_RANK] = {0};
  int64_t in_off = 0, out_off = 0;
  const int32_t last = rank - 1;
  const int64_t n_last = out.shape[last];
  for (;;) {
    for (int64_t i = 0; i < n_last; ++i) {
      float x0 = load(in.data, in.dtype, in_off + i * in.strides[last]);
      float x1 = load(in.data, in.dtype, in_off + half_offset + i * in.strides[last]);
      store(out.data, out.dtype, out_off + i * out.strides[last], swiglu(x0, x1));
    }
    // Advance the index over the dimensions before the last one.
    int32_t k = last - 1;
    for (; k >= 0; --k) {
      if (++index[k] < out.shape[k]) {
        in_off += in.strides[k];
        out_off += out.strides[k];
        break;
      }
      in_off -= (out.shape[k] - 1) * in.strides[k];
      out_off -= (out.shape[k] - 1) * out.strides[k];
      index[k] = 0;
    }
    if (k < 0) break;
  }
  return 0;
}
