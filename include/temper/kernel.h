/* temper kernel ABI, version 2.
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
 * can use compile-time shapes. Without it the source is compiled once for all cases. The macros
 * number the case's tensors flat (a tensor list's elements in order, none for an absent input).
 *
 * Inputs (version 2). args->inputs has one descriptor per input the operator declares, in
 * proto.yaml order. An input may be a tensor list (foreach operators, RNN weights) or an optional
 * input the case leaves out; args->input_lists, also one entry per declared input, says which:
 *   - a tensor:  input_lists[k].count == 1, tensors == &inputs[k];
 *   - a list:    input_lists[k].count == n, tensors[0..n-1] its elements; inputs[k].data is NULL;
 *   - absent:    input_lists[k].count == 0, tensors == NULL;           inputs[k].data is NULL.
 * A task whose inputs are all plain tensors looks exactly as in version 1, so kernels written for
 * version 1 keep working: the worker tells the version a kernel was built for by the
 * temper_kernel_abi symbol this header defines (none: version 1), hands it that in
 * args->abi_version, and refuses a version 1 kernel a case that has lists or absent inputs.
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

#define TEMPER_ABI_VERSION 2
#define TEMPER_MAX_RANK 8

/* The ABI version this kernel was compiled against, read by the worker. Weak, so several
 * translation units may include this header; never a symbol a kernel should set by hand. */
#ifdef __cplusplus
extern "C" {
/* extern: a namespace-scope const is otherwise internal in C++. */
__attribute__((weak, visibility("default"), used)) extern const int32_t temper_kernel_abi = TEMPER_ABI_VERSION;
}
#else
__attribute__((weak, visibility("default"), used)) const int32_t temper_kernel_abi = TEMPER_ABI_VERSION;
#endif

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

/* The tensors of one declared input (version 2): see "Inputs" above. */
typedef struct temper_tensor_list {
  int32_t count;                /* 1 for a tensor, the list's length, 0 when absent */
  const temper_tensor* tensors; /* count descriptors; NULL when count is 0 */
} temper_tensor_list;

typedef struct temper_args {
  int32_t abi_version; /* the version the kernel was built for (its TEMPER_ABI_VERSION) */
  int32_t num_inputs;
  const temper_tensor* inputs;
  int32_t num_outputs;
  temper_tensor* outputs;
  int32_t num_attrs;
  const temper_attr* attrs;
  int32_t num_threads; /* threads the kernel may use; the task's setting */
  /* Sets the message reported with a non-zero return. Provided by the worker. */
  void (*set_error)(const char* message);
  /* Version 2: num_inputs entries, one per declared input. */
  const temper_tensor_list* input_lists;
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
/* Input helpers (version 2). */
static inline int temper_input_present(const temper_args* a, int32_t k) {
  return k >= 0 && k < a->num_inputs && (a->input_lists ? a->input_lists[k].count > 0 : 1);
}
static inline int32_t temper_input_count(const temper_args* a, int32_t k) {
  if (k < 0 || k >= a->num_inputs) return 0;
  return a->input_lists ? a->input_lists[k].count : 1;
}
/* Element j of input k: the tensor itself (j == 0) for a plain input; NULL when out of range. */
static inline const temper_tensor* temper_input_tensor(const temper_args* a, int32_t k, int32_t j) {
  if (j < 0 || j >= temper_input_count(a, k)) return 0;
  return a->input_lists ? &a->input_lists[k].tensors[j] : &a->inputs[k];
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
