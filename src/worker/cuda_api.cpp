#include "worker/cuda_api.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace temper::worker::cuda {

namespace {

template <typename Fn>
bool bind(void* lib, const char* name, Fn& fn, std::string& missing) {
  ::dlerror();
  void* p = ::dlsym(lib, name);
  if (p == nullptr) {
    if (missing.empty()) missing = name;
    return false;
  }
  fn = reinterpret_cast<Fn>(p);
  return true;
}

std::string dl_error(const char* fallback) {
  const char* e = ::dlerror();
  return e ? e : fallback;
}

// Where the runtime may be: the toolkit of the nvcc on PATH (the one temper compiled with,
// unless told otherwise) first, so the candidate's libcudart.so.N and ours are one library.
std::vector<std::string> runtime_candidates(const std::string& first) {
  std::vector<std::string> out;
  if (!first.empty()) out.push_back(first);
  if (const char* e = std::getenv("TEMPER_CUDART"); e && *e) out.emplace_back(e);
  std::vector<std::string> roots;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t b = 0; b <= p.size();) {
      size_t e = p.find(':', b);
      if (e == std::string::npos) e = p.size();
      std::string dir = p.substr(b, e - b);
      if (!dir.empty() && ::access((dir + "/nvcc").c_str(), X_OK) == 0) roots.push_back(dir + "/..");
      b = e + 1;
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* d = std::getenv(var); d && *d) roots.emplace_back(d);
  }
  roots.emplace_back("/usr/local/cuda");
  for (const auto& r : roots) {
    for (const char* sub : {"/lib64/libcudart.so", "/lib/libcudart.so", "/targets/x86_64-linux/lib/libcudart.so"}) {
      out.push_back(r + sub);
    }
  }
  for (const char* name : {"libcudart.so", "libcudart.so.13", "libcudart.so.12"}) out.emplace_back(name);
  return out;
}

} // namespace

std::string Api::error_text(Error e) const {
  const char* s = cudaGetErrorString ? cudaGetErrorString(e) : nullptr;
  return std::string(s ? s : "unknown CUDA error") + " (" + std::to_string(e) + ")";
}

std::string load(Api& api, Device& device, const std::string& driver_path, const std::string& runtime_path) {
  const char* driver_name = std::getenv("TEMPER_CUDA_DRIVER");
  if (!driver_path.empty()) driver_name = driver_path.c_str();
  if (driver_name == nullptr || *driver_name == 0) driver_name = "libcuda.so.1";
  void* driver = ::dlopen(driver_name, RTLD_NOW | RTLD_GLOBAL);
  if (driver == nullptr) return "no GPU: the NVIDIA driver library cannot be loaded (" + dl_error(driver_name) + ")";
  std::string missing;
  bool ok = bind(driver, "cuInit", api.cuInit, missing) && bind(driver, "cuDriverGetVersion", api.cuDriverGetVersion, missing) &&
            bind(driver, "cuDeviceGetCount", api.cuDeviceGetCount, missing) && bind(driver, "cuDeviceGet", api.cuDeviceGet, missing) &&
            bind(driver, "cuDeviceGetName", api.cuDeviceGetName, missing) && bind(driver, "cuGetErrorName", api.cuGetErrorName, missing);
  if (!ok) return std::string("no GPU: the driver library ") + driver_name + " lacks " + missing;
  if (Error e = api.cuInit(0); e != 0) {
    const char* name = nullptr;
    api.cuGetErrorName(e, &name);
    return "no GPU: cuInit failed with " + std::string(name ? name : "an unknown error") + " (" + std::to_string(e) + ")";
  }
  int count = 0;
  if (api.cuDeviceGetCount(&count) != 0 || count < 1) return "no GPU: the driver reports no CUDA device";
  api.cuDriverGetVersion(&device.driver_version);
  int dev = 0;
  char name[256] = {};
  if (api.cuDeviceGet(&dev, 0) == 0 && api.cuDeviceGetName(name, sizeof name - 1, dev) == 0) device.name = name;

  void* runtime = nullptr;
  std::string tried;
  for (const auto& c : runtime_candidates(runtime_path)) {
    runtime = ::dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (runtime != nullptr) break;
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (runtime == nullptr) return "the CUDA runtime (libcudart) cannot be loaded; tried " + tried + "; set TEMPER_CUDART";
  ok = bind(runtime, "cudaRuntimeGetVersion", api.cudaRuntimeGetVersion, missing) &&
       bind(runtime, "cudaSetDevice", api.cudaSetDevice, missing) &&
       bind(runtime, "cudaDeviceGetAttribute", api.cudaDeviceGetAttribute, missing) &&
       bind(runtime, "cudaGetErrorString", api.cudaGetErrorString, missing) &&
       bind(runtime, "cudaGetLastError", api.cudaGetLastError, missing) && bind(runtime, "cudaMalloc", api.cudaMalloc, missing) &&
       bind(runtime, "cudaMemcpyAsync", api.cudaMemcpyAsync, missing) &&
       bind(runtime, "cudaMemsetAsync", api.cudaMemsetAsync, missing) &&
       bind(runtime, "cudaStreamCreateWithFlags", api.cudaStreamCreateWithFlags, missing) &&
       bind(runtime, "cudaStreamSynchronize", api.cudaStreamSynchronize, missing) &&
       bind(runtime, "cudaEventCreate", api.cudaEventCreate, missing) &&
       bind(runtime, "cudaEventRecord", api.cudaEventRecord, missing) &&
       bind(runtime, "cudaEventSynchronize", api.cudaEventSynchronize, missing) &&
       bind(runtime, "cudaEventElapsedTime", api.cudaEventElapsedTime, missing) &&
       bind(runtime, "cudaDeviceSynchronize", api.cudaDeviceSynchronize, missing) &&
       bind(runtime, "cudaCtxResetPersistingL2Cache", api.cudaCtxResetPersistingL2Cache, missing);
  if (!ok) return "the CUDA runtime lacks " + missing;
  api.cudaRuntimeGetVersion(&device.runtime_version);
  if (Error e = api.cudaSetDevice(0); e != 0) return "no GPU: cudaSetDevice(0) failed: " + api.error_text(e);
  int l2 = 0;
  api.cudaDeviceGetAttribute(&device.cc_major, kAttrComputeCapabilityMajor, 0);
  api.cudaDeviceGetAttribute(&device.cc_minor, kAttrComputeCapabilityMinor, 0);
  api.cudaDeviceGetAttribute(&device.sm_count, kAttrMultiProcessorCount, 0);
  api.cudaDeviceGetAttribute(&l2, kAttrL2CacheSize, 0);
  device.l2_bytes = l2;
  return {};
}

} // namespace temper::worker::cuda
