/*
 * accel-kc's GPU forms: the plugins' own compilers of user kernels, linked into the tool.
 * kc_rtc.c is built once per vendor shim (tools/meson.build) around the CUDA/HIP plugins'
 * backends/gpu_common/gpu_rtc.c (NVRTC, hiprtc through dlopen), its names prefixed per vendor;
 * the SPIR-V form is the Level Zero plugin's backends/level_zero/ze_spirv.c (clang +
 * llvm-spirv). kc_gpu.c reads the source's rows with the core's reader (core/module_row.c,
 * linked in), so the text is exactly what the plugins compile at run time, and provides the host
 * services the compilers report through (kc_host).
 */
#ifndef ACCEL_TOOLS_KC_GPU_H
#define ACCEL_TOOLS_KC_GPU_H

#include <stddef.h>

#include <stdint.h>

#include "accel/accel_plugin.h"
#include "module_bundle.h"

/* set_error keeps the message for accel-kc to print; log prints warnings; cache_dir is the
 * private cache accel-kc makes. */
extern const accel_host_api_t kc_host;

/* b's module compiled for target by NVRTC ("compute_XY": PTX, NUL-terminated, the NUL counted)
 * or hiprtc (a gfx name: a code object): ACCEL_OK with *code malloc'ed; UNSUPPORTED when the
 * compiler library is absent; BACKEND with its log when the source does not compile. */
accel_status_t kc_cuda_compile(const accel_module_build_t *b, const char *target, char **code,
                               size_t *size);
accel_status_t kc_hip_compile(const accel_module_build_t *b, const char *target, char **code,
                              size_t *size);


/* The targets of the GPU forms: comma-separated; NULL for the build's (its CUDA plugin's archs,
 * its HIP plugin's gfx targets), "" for none. */
typedef struct kc_targets {
  const char *cuda; /* arch numbers: "80,90" */
  const char *hip;  /* gfx names: "gfx90a,gfx1100" */
} kc_targets_t;

/* Appends source's GPU forms to s[*n] (their payloads malloc'ed in owned[*n], NULL for none):
 * PTX for each CUDA arch of t, a code object for each of its gfx targets, SPIR-V; a form whose
 * compiler is absent (or for which no target is given or configured) is skipped. Prints one
 * line per form. 0; -1 when the source or a target is refused (the message printed). */
int kc_gpu_forms(const kc_targets_t *t, const char *path, const char *source,
                 const char *options, const char *dir, accel_bundle_section_t *s, char **owned,
                 uint32_t *n);

#endif
