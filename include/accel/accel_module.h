/*
 * accel modules: your own kernels, written in the kernel dialect and compiled at run time for
 * the device (docs/KERNELS.md, "Write your own kernel" and "Loading a kernel at run time";
 * docs/API.md, "Modules").
 *
 * A module source holds kernel bodies (ACC_KERNEL functions in the dialect) and one row per
 * kernel, ACCEL_KERNEL(ID, symbol, params_t, ACC_OP("name", ACC_TABLE_SHARED), (lists),
 * (scalars)), in the subset kernels/gen_kernel_rows.py reads for a generated row: the row
 * declares its tensor lists (access, dtype rule, aliasing rule), device scalars and host float
 * values (ACC_VALUE, after the scalars), and accel generates params_t from it (chunks, the
 * scalars' fields, num_chunks, the lists' dtype fields, the values' fields).
 * accel_launch validates a call by the row exactly as a built-in kernel's call is validated and
 * launches one block per chunk, so capture pins, lazy queues and tracing apply unchanged.
 *
 * Compiled results go to the kernel cache (ACCEL_CACHE_DIR), keyed by the source, the options,
 * the device and the accel version: a second load of the same source compiles nothing.
 * CPU: the system C compiler (ACCEL_CC, default cc) builds a shared object that is loaded; its
 * log is in accel_last_error() when the source does not compile (the lines are the source's).
 * Backends without module support answer ACCEL_ERROR_UNSUPPORTED.
 */
#ifndef ACCEL_ACCEL_MODULE_H
#define ACCEL_ACCEL_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct accel_module accel_module_t;
typedef struct accel_kernel accel_kernel_t;
/* accel_kernels.h declares it in full. */
typedef struct accel_tensor accel_tensor_t;

/* Compiles source (NUL-terminated, in the dialect) for device with options (NULL or "": none;
 * passed to the backend's compiler, e.g. "-DWIDTH=4" on the CPU), or loads the cached result.
 * Refused: a row the run-time reader cannot state (INVALID_ARGUMENT naming the row), a source
 * that does not compile (ACCEL_ERROR_BACKEND with the compiler's log), no compiler
 * (UNSUPPORTED). Legal while a stream of the device captures (nothing is enqueued). */
ACCEL_API accel_status_t accel_module_load_source(accel_device_t *device, const char *source,
                                                  const char *options, accel_module_t **out);

/* The kernel whose row's ACC_OP names name (e.g. "my_axpby"). Valid until its module's
 * release. INVALID_ARGUMENT when the module has no such kernel. */
ACCEL_API accel_status_t accel_module_get_kernel(accel_module_t *module, const char *name,
                                                 accel_kernel_t **out);

/* Drops the user's reference: its kernels become invalid handles. The compiled code stays
 * loaded, so graphs that captured its launches keep replaying. A second release is
 * ACCEL_ERROR_INVALID_HANDLE. */
ACCEL_API accel_status_t accel_module_release(accel_module_t *module);

/* Launches kernel on stream over n tensors per list: lists[l] for the row's list l (nlists =
 * the row's list count), scalars[s] the device address of the row's scalar s (NULL only for a
 * scalar the row does not require), then, for each ACC_VALUE of the row, a pointer to its host
 * float, read during the call (nscalars = the row's ACC_SCALAR and ACC_VALUE count, the way
 * cuLaunchKernel takes its arguments). Validated by the row
 * (dtypes, sizes, aliasing, live memory, read-only registrations) as built-in kernels are; the
 * stream must belong to the module's device. Captured, queued lazily and traced like any
 * kernel launch. */
ACCEL_API accel_status_t accel_launch(accel_stream_t *stream, const accel_kernel_t *kernel,
                                     const accel_tensor_t *const *lists, size_t nlists, size_t n,
                                     const void *const *scalars, size_t nscalars);

/* Loads a bundle that accel-kc made ahead of time (size bytes at data, e.g. a .accb file read
 * or mapped whole; docs/KERNELS.md, "Bundles: accel-kc"): the kernels of its source, built from
 * the form the device takes: the CPU shared object for this machine's target (no compiler is
 * needed at run time: the object is written to the kernel cache and loaded); on OpenCL the
 * SPIR-V when the device takes IL, else the source, built by the device's compiler (and cached)
 * as accel_module_load_source does; on CUDA the PTX of the newest arch not above the device's,
 * on HIP the code object the runtime takes, on Level Zero the SPIR-V (no compiler runs). Its
 * rows are read from the bundle's source exactly as accel_module_load_source reads them, so
 * launches are validated alike. Refused: a damaged, truncated or foreign file
 * (INVALID_ARGUMENT, "bad bundle: " and what is wrong), a bundle without a form for the device
 * or one its rows do not match (UNSUPPORTED naming the forms), plus load_source's refusals. The
 * data may be freed when the call returns. */
ACCEL_API accel_status_t accel_module_load_bundle(accel_device_t *device, const void *data,
                                                  size_t size, accel_module_t **out);

#ifdef __cplusplus
}
#endif

#endif
