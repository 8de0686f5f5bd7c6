/* temper kernel ABI, version 1.
 *
 * A CPU candidate is one C or C++ source file that defines
 *
 *     TEMPER_EXPORT int temper_kernel(const temper_args* args);
 *
 * temper compiles it to a shared object, loads it in a worker process, and calls the entry point
 * with descriptors of tensors that live in shared memory. Outputs are preallocated by the judge
 * (destination-passing style) with the shapes of the golden's outputs; before every call they are
 * poisoned (NaN, or 0xFF bytes for integers) and inputs are restored, so a kernel must write every
 * output element and must not write its inputs. Return 0 on success; any other value is reported
 * as RUNTIME_ERROR together with the message set through temper_set_error().
 *
 * Per-case specialization: a source containing the line `// temper: specialize` is compiled once
 * per case with the case's shapes, dtypes and attributes as macros (TEMPER_CASE_ID,
 * TEMPER_IN<i>_RANK, TEMPER_IN<i>_DIM<d>, TEMPER_IN<i>_DTYPE, TEMPER_ATTR_<name>), so a kernel
 * can use compile-time shapes. Without it the source is compiled once for all cases.
 */
#ifndef TEMPER_KERNEL_H
#define TEMPER_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
#define TEMPER_EXTERN_C extern "C"
#else
#define TEMPER_EXTERN_C
#endif
#define TEMPER_EXPORT TEMPER_EXTERN_C __attribute__((visibility("default")))

#define TEMPER_ABI_VERSION 1
#define TEMPER_MAX_RANK 8

/* Element types. Values are stable: they appear in specialization macros. */
typedef enum temper_dtype {
  TEMPER_F32 = 0,
  TEMPER_F16 = 1,
  TEMPER_BF16 = 2,
  TEMPER_F64 = 3,
  TEMPER_I8 = 4,
  TEMPER_I16 = 5,
  TEMPER_I32 = 6,
  TEMPER_I64 = 7,
  TEMPER_U8 = 8,
  TEMPER_BOOL = 9
} temper_dtype;

/* A strided view of one tensor. Strides are in elements, not bytes. */
typedef struct temper_tensor {
  void* data;
  int32_t dtype; /* a temper_dtype */
  int32_t rank;
  int64_t shape[TEMPER_MAX_RANK];
  int64_t strides[TEMPER_MAX_RANK];
} temper_tensor;

typedef enum temper_attr_kind {
  TEMPER_ATTR_INT = 0,
  TEMPER_ATTR_FLOAT = 1,
  TEMPER_ATTR_BOOL = 2,
  TEMPER_ATTR_STRING = 3,
  TEMPER_ATTR_INT_LIST = 4,
  TEMPER_ATTR_FLOAT_LIST = 5
} temper_attr_kind;

/* One operator attribute, always present: the judge fills declared defaults. */
typedef struct temper_attr {
  const char* name;
  int32_t kind;           /* a temper_attr_kind */
  int64_t i;              /* INT and BOOL */
  double f;               /* FLOAT */
  const char* s;          /* STRING */
  const int64_t* ints;    /* INT_LIST */
  const double* floats;   /* FLOAT_LIST */
  int64_t count;          /* length of a list */
} temper_attr;

typedef struct temper_args {
  int32_t abi_version; /* TEMPER_ABI_VERSION */
  int32_t num_inputs;
  const temper_tensor* inputs;
  int32_t num_outputs;
  temper_tensor* outputs;
  int32_t num_attrs;
  const temper_attr* attrs;
  int32_t num_threads; /* threads the kernel may use; the task's setting */
  /* Sets the message reported with a non-zero return. Provided by the worker. */
  void (*set_error)(const char* message);
} temper_args;

typedef int (*temper_kernel_fn)(const temper_args* args);

/* Attribute lookup helpers. */
static inline const temper_attr* temper_find_attr(const temper_args* a, const char* name) {
  for (int32_t k = 0; k < a->num_attrs; ++k) {
    const char* x = a->attrs[k].name;
    const char* y = name;
    while (*x && *x == *y) {
      ++x;
      ++y;
    }
    if (*x == 0 && *y == 0) return &a->attrs[k];
  }
  return 0;
}
static inline int64_t temper_attr_int(const temper_args* a, const char* name, int64_t dflt) {
  const temper_attr* t = temper_find_attr(a, name);
  return t ? (t->kind == TEMPER_ATTR_FLOAT ? (int64_t)t->f : t->i) : dflt;
}
static inline double temper_attr_float(const temper_args* a, const char* name, double dflt) {
  const temper_attr* t = temper_find_attr(a, name);
  return t ? (t->kind == TEMPER_ATTR_FLOAT ? t->f : (double)t->i) : dflt;
}
static inline int64_t temper_numel(const temper_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d) n *= t->shape[d];
  return n;
}
static inline int temper_is_contiguous(const temper_tensor* t) {
  int64_t expect = 1;
  for (int32_t d = t->rank - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expect) return 0;
    expect *= t->shape[d];
  }
  return 1;
}

#endif /* TEMPER_KERNEL_H */
