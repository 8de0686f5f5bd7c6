#include <temper/kernel.h>
#include <temper/half.h>
#include <immintrin.h>

#include <cstdint>
#include <thread>
#include <vector>

#include <memory>
#include <sys/mman.h>

// y = x * a + b staged through a temporary as large as the input, mapped fresh on every call
// (mmap, 2 MiB aligned, madvise(MADV_HUGEPAGE)) and unmapped at the end: its first touch (the
// copy) faults in the pages.
TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->inputs[0].shape[0];
  const float a = static_cast<float>(temper_attr_float(args, "a", 1.5)), b = static_cast<float>(temper_attr_float(args, "b", 0.25));
  // The temporary starts on a 2 MiB boundary (2 MiB more is reserved for that) and is marked for
  // transparent huge pages. If the kernel refuses (THP disabled), the faults counted show it.
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + kHuge - 1) / kHuge * kHuge, span = bytes + kHuge;
  void* base = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    args->set_error("mmap of the temporary failed");
    return 1;
  }
  float* tmp = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~(kHuge - 1));
  (void)madvise(tmp, bytes, MADV_HUGEPAGE);
  for (int64_t i = 0; i < n; ++i) tmp[i] = x[i];
  // The temporary must really be written: compilers may fold an allocation they can see through.
  asm volatile("" : : "r"(tmp) : "memory");
  for (int64_t i = 0; i < n; ++i) y[i] = tmp[i] * a + b;
  munmap(base, span);
  return 0;
}
