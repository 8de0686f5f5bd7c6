// The CUDA driver and runtime, loaded at run time with dlopen, so temper-cuda-worker builds
// without a CUDA toolkit and starts on a machine without a driver (where it says "no GPU" and
// why). Only the calls the worker makes are declared, with the C types of the CUDA headers
// (error codes are ints, handles opaque pointers; enum values copied from driver_types.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace temper::worker::cuda {

using Error = int; // cudaError_t / CUresult; 0 is success
using Stream = void*;
using Event = void*;

inline constexpr int kMemcpyHostToDevice = 1;
inline constexpr int kMemcpyDeviceToHost = 2;
inline constexpr int kMemcpyDeviceToDevice = 3;
inline constexpr int kAttrMultiProcessorCount = 16;
inline constexpr int kAttrL2CacheSize = 38;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;

struct Api {
  // Driver (libcuda.so.1): presence, device count and name.
  Error (*cuInit)(unsigned) = nullptr;
  Error (*cuDriverGetVersion)(int*) = nullptr;
  Error (*cuDeviceGetCount)(int*) = nullptr;
  Error (*cuDeviceGet)(int*, int) = nullptr;
  Error (*cuDeviceGetName)(char*, int, int) = nullptr;
  Error (*cuGetErrorName)(Error, const char**) = nullptr;
  // Runtime (libcudart), the one the candidate links too.
  Error (*cudaRuntimeGetVersion)(int*) = nullptr;
  Error (*cudaSetDevice)(int) = nullptr;
  Error (*cudaDeviceGetAttribute)(int*, int, int) = nullptr;
  const char* (*cudaGetErrorString)(Error) = nullptr;
  Error (*cudaGetLastError)() = nullptr;
  Error (*cudaMalloc)(void**, size_t) = nullptr;
  Error (*cudaMemcpyAsync)(void*, const void*, size_t, int, Stream) = nullptr;
  Error (*cudaMemsetAsync)(void*, int, size_t, Stream) = nullptr;
  Error (*cudaStreamCreateWithFlags)(Stream*, unsigned) = nullptr;
  Error (*cudaStreamSynchronize)(Stream) = nullptr;
  Error (*cudaEventCreate)(Event*) = nullptr;
  Error (*cudaEventRecord)(Event, Stream) = nullptr;
  Error (*cudaEventSynchronize)(Event) = nullptr;
  Error (*cudaEventElapsedTime)(float*, Event, Event) = nullptr;
  Error (*cudaDeviceSynchronize)() = nullptr;
  Error (*cudaCtxResetPersistingL2Cache)() = nullptr;

  // "cudaErrorIllegalAddress"-style text for a runtime error, with its number.
  std::string error_text(Error e) const;
};

// Facts about device 0, for the probe and for the cold-L2 buffer.
struct Device {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int driver_version = 0;
  int runtime_version = 0;
};

// Loads the driver ($TEMPER_CUDA_DRIVER, default libcuda.so.1), initializes it, checks there is
// a device, then loads the runtime ($TEMPER_CUDART, the toolkit's beside nvcc, then by name)
// with RTLD_GLOBAL so the candidate's own libcudart dependency binds to it. Returns "" on
// success, else why not, starting "no GPU: " when there is no driver or no device.
// `driver` and `runtime`, when not empty, are tried first (the worker's --driver and --runtime:
// the judge names the runtime of the toolkit it compiles with; tests name fakes).
std::string load(Api& api, Device& device, const std::string& driver = {}, const std::string& runtime = {});

} // namespace temper::worker::cuda
