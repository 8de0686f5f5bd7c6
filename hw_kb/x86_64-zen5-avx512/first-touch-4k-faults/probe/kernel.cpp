#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

#include <memory>
#include <sys/mman.h>

// y = x * a + b staged through a temporary as large as the input that is allocated fresh on
// every call (operator new[], as a std::vector or unique_ptr temporary would be): its first touch
// (the copy) faults in the pages.
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0];
  const float a = static_cast<float>(temper_attr_float(args, "a", 1.5)), b = static_cast<float>(temper_attr_float(args, "b", 0.25));
  // Uninitialized: the copy below is the temporary's first touch. glibc serves requests above
  // 32 MiB (its largest mmap threshold) with a fresh mmap and unmaps them on delete[].
  std::unique_ptr<float[]> owner(new float[static_cast<size_t>(n)]);
  float* tmp = owner.get();
  for (int64_t i = 0; i < n; ++i) tmp[i] = x[i];
  // The temporary must really be written: compilers may fold an allocation they can see through.
  asm volatile("" : : "r"(tmp) : "memory");
  for (int64_t i = 0; i < n; ++i) y[i] = tmp[i] * a + b;
  return 0;
}
