/*
 * The run-time compiler of user kernels (gpu_rtc.c): NVRTC for the CUDA plugin, hiprtc for the
 * HIP plugin, as the vendor shim's GPU_RTC_* name them. Separate from gpu_backend.h so that the
 * text-compiler test (tests/unit/test_gpu_rtc.c) builds it without a driver.
 */
#ifndef ACCEL_GPU_RTC_H
#define ACCEL_GPU_RTC_H

#include <stddef.h>

#include "gpu_backend.h"

typedef struct gpu_rtc_api {
#define GPU_RTC_FIELD(field, lookup, display, ret, params) ret(*field) params;
  GPU_RTC_TABLE(GPU_RTC_FIELD, GPU_RTC_FIELD)
#undef GPU_RTC_FIELD
} gpu_rtc_api_t;

typedef struct gpu_rtc {
  gpu_rtc_api_t api;
  char path[64]; /* the library opened */
  int major, minor; /* its version (a part of the cache key) */
} gpu_rtc_t;

/* The compiler, opened at the first call and kept (never closed); ACCEL_ERROR_UNSUPPORTED with
 * every library tried (or the entry points missing) when there is none. */
accel_status_t gpu_rtc_get(const gpu_rtc_t **out);

/* The target to compile for on a device of compute capability major.minor. CUDA: "sm_XY" (a
 * CUBIN) when this NVRTC compiles for it, else "compute_XY" of the newest arch it knows below the
 * device (PTX, compiled by the driver at load); UNSUPPORTED when it knows none. HIP: "" (hiprtc
 * compiles for the current device's gfx target). */
accel_status_t gpu_rtc_target(const gpu_rtc_t *rtc, int major, int minor, char *target,
                              size_t size);

/* Compiles text for target (as gpu_rtc_target gives, or a gfx name on HIP; "" for the current
 * device) with GPU_RTC_FIXED_OPTIONS and then options (split at blanks). On success *code is
 * malloc'ed: the CUBIN, the PTX (NUL-terminated, the NUL counted in *size) or the code object.
 * A source that does not compile is ACCEL_ERROR_BACKEND with the compiler's log. */
accel_status_t gpu_rtc_compile(const gpu_rtc_t *rtc, const char *text, const char *target,
                               const char *options, char **code, size_t *size);

/* gpu_rtc_compile of b's module text (common/module_text.h on the embedded CUDA/HIP prelude,
 * kernels/gpu/module_prelude.cuh) with b's options: what the plugin (gpu_user.c) and accel-kc
 * (tools/kc_rtc.c) compile for a module. */
accel_status_t gpu_rtc_compile_module(const gpu_rtc_t *rtc, const accel_module_build_t *b,
                                      const char *target, char **code, size_t *size);

#endif
