/* temper kernel ABI, CUDA variant (version 1).
 *
 * A CUDA candidate is one .cu file that defines
 *
 *     TEMPER_EXPORT int temper_cuda_kernel(const temper_args* args, void* stream);
 *
 * temper compiles it with nvcc to a shared object (-shared, -cudart shared, for the target
 * architecture: the device's own when one is present, else sm_90, or --cuda-arch) and loads it
 * in temper-cuda-worker. The arguments are kernel.h's, with one difference and one addition:
 *
 *  - every temper_tensor's `data` is a DEVICE pointer (one plain cudaMalloc allocation per
 *    tensor); shapes, strides (in elements), dtypes and attributes are host memory, as on the
 *    CPU backend;
 *  - `stream` is the cudaStream_t (cast it: `(cudaStream_t)stream`) on which the worker times
 *    the call. Enqueue all work on it. The worker records a start event on it before calling
 *    temper_cuda_kernel and an end event after it returns, and the time between the two events
 *    is the kernel's time. The function may return before the GPU finishes (launches are
 *    asynchronous); the worker waits for the end event.
 *
 * Work left running outside the timed window is a cheat: after the end event the worker
 * synchronizes the whole device, and if that waits on work or the outputs change, the case is
 * REJECTED_CHEAT (work_outside_timed_window). Creating streams, L2 persistence (access policy
 * windows, persisting-L2 limits and resets) and libraries beyond the CUDA runtime (cuBLAS,
 * cuDNN, ...) are rejected before anything runs unless the task allows them (temper.yaml
 * `allowed_cuda_features`, `allowed_libraries`).
 *
 * Before every call the worker copies the judge's pristine inputs into the input tensors and
 * the judge's poisoned outputs (NaN, or 0xFF bytes) into the output tensors, so a kernel must
 * write every output element and must not write its inputs (the worker copies inputs back
 * afterwards and the judge compares them). Before every timed sample it also resets persisting
 * L2 lines and writes a buffer of at least twice the L2 size on the same stream (cold L2).
 *
 * Return 0 on success; any other value is RUNTIME_ERROR with the message of args->set_error().
 * A CUDA error the worker sees after the call (an illegal address, a launch failure) is a
 * RUNTIME_ERROR too, with the CUDA error string. `num_threads` is the task's host thread count.
 *
 * Per-case specialization (`// temper: specialize`) works as for CPU kernels: the same
 * TEMPER_* macros are passed to nvcc.
 */
#ifndef TEMPER_CUDA_KERNEL_H
#define TEMPER_CUDA_KERNEL_H

#include <temper/kernel.h>

#define TEMPER_CUDA_ABI_VERSION 1

typedef int (*temper_cuda_kernel_fn)(const temper_args* args, void* stream);

#endif /* TEMPER_CUDA_KERNEL_H */
