// A SwiGLU candidate exactly 3% slower than tasks/swi_glu/reference.cpp, for the timing
// benchmark's sensitivity test (bench/timing_protocol.cpp).
//
// It is the reference itself (the very same source, included below with its entry point
// renamed), followed by a busy-wait calibrated inside the call: the reference's computation is
// timed with clock_gettime(CLOCK_MONOTONIC), then the kernel spins until TEMPER_BENCH_SLOWDOWN
// (default 0.03) of that time has passed again. So the call takes 1.03 times what the
// computation took in that very call, whatever the machine's state; only the two clock reads
// (tens of nanoseconds) come on top.
//
// The renamed reference keeps default visibility in a shared object, so g++ (without
// -fno-semantic-interposition) does not inline it here: its machine code is the reference's.
// Its address differs, though, so code alignment can still differ from the reference's own
// build; building this file with -DTEMPER_BENCH_SLOWDOWN=0 gives the control that measures
// that (the benchmark's --control option).
//
// The compile cache follows the include below, so a change to the reference rebuilds this.
#include <temper/kernel.h>

#include <time.h>

#define temper_kernel temper_bench_reference_kernel
#include "../../tasks/swi_glu/reference.cpp"
#undef temper_kernel

#ifndef TEMPER_BENCH_SLOWDOWN
#define TEMPER_BENCH_SLOWDOWN 0.03
#endif

namespace {

double monotonic_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

} // namespace

TEMPER_EXPORT int temper_kernel(const temper_args* args) {
  const double t0 = monotonic_seconds();
  const int rc = temper_bench_reference_kernel(args);
  const double t1 = monotonic_seconds();
  const double until = t1 + (t1 - t0) * (TEMPER_BENCH_SLOWDOWN);
  while (monotonic_seconds() < until) {
  }
  return rc;
}
