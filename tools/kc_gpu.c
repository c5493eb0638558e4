/*
 * accel-kc's GPU forms (kc_gpu.h): the source's rows read by the core's own reader
 * (core/module_row.c), the module build the plugins get from them, and that build compiled by
 * the plugins' own compilers: NVRTC for PTX and hiprtc for code objects (gpu_rtc.c, kc_rtc.c)
 * and clang + llvm-spirv for SPIR-V (ze_spirv.c), each for the targets this accel was built for.
 */
#include "kc_gpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "module.h"
#include "ze_spirv.h"

static char kc_error[4096];
static const char *kc_dir; /* the private kernel cache */

/* The compilers' errors, and core/module_row.c's: kept for accel-kc to print. */
accel_status_t accel_set_error(accel_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(kc_error, sizeof kc_error, fmt, ap);
  va_end(ap);
  return status;
}

static void kc_log(accel_log_level_t level, const char *domain, const char *fmt, ...) {
  if (level > ACCEL_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "accel-kc: %s: ", domain);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int kc_no_fault(accel_fault_site_t site) {
  (void)site;
  return 0;
}

static const char *kc_cache_dir(void) { return kc_dir; }

const accel_host_api_t kc_host = {.abi_version = ACCEL_PLUGIN_ABI_VERSION,
                                  .struct_size = sizeof(accel_host_api_t),
                                  .log = kc_log,
                                  .set_error = accel_set_error,
                                  .fault_should_fail = kc_no_fault,
                                  .cache_dir = kc_cache_dir};
const accel_host_api_t *accel_ze_host = &kc_host; /* ze_spirv.c reports through it */

/* A vendor's forms: one per target of the build's list. */
typedef struct kc_vendor {
  uint32_t kind;
  const char *targets;        /* comma-separated, as configured (KC_CUDA_ARCHS, ...) */
  const char *compile_prefix; /* what the compiler is asked for: compute_ + arch */
  const char *form_prefix;    /* the form's target: sm_ + arch */
  const char *tool, *plugin;
  accel_status_t (*compile)(const accel_module_build_t *b, const char *target, char **code,
                            size_t *size);
} kc_vendor_t;

typedef struct kc_out {
  const char *path;
  accel_bundle_section_t *s;
  char **owned;
  uint32_t *n;
} kc_out_t;

/* One compile's outcome: the form added (0), skipped without its compiler (1, said why) or the
 * source refused (-1, the compiler's log printed). code is the out's or freed. */
static int add_form(const kc_out_t *o, accel_status_t st, uint32_t kind, const char *target,
                    char *code, size_t size, const char *tool) {
  const char *name = accel_bundle_form_name(kind), *sep = *target ? " " : "";
  if (st == ACCEL_OK && *o->n < ACCEL_BUNDLE_MAX_SECTIONS) {
    accel_bundle_section_t *s = &o->s[*o->n];
    *s = (accel_bundle_section_t){kind, "", (const unsigned char *)code, size};
    snprintf(s->target, sizeof s->target, "%s", target);
    o->owned[(*o->n)++] = code;
    printf("  %s%s%s: built (%zu bytes, %s)\n", name, sep, target, size, tool);
    return 0;
  }
  free(code);
  if (st == ACCEL_ERROR_UNSUPPORTED) {
    printf("  %s%s%s: skipped: %s\n", name, sep, target, kc_error);
    return 1;
  }
  fprintf(stderr, "accel-kc: %s: %s%s%s: %s\n", o->path, name, sep, target,
          st == ACCEL_OK ? "too many forms for one bundle" : kc_error);
  return -1;
}

/* The vendor's form for each configured target (none after its compiler proves absent). */
static int vendor_forms(const kc_vendor_t *v, const accel_module_build_t *b, const kc_out_t *o) {
  if (!*v->targets) {
    printf("  %s: skipped: this accel was built without the %s plugin (no target configured)\n",
           accel_bundle_form_name(v->kind), v->plugin);
    return 0;
  }
  char list[512], *save = NULL;
  snprintf(list, sizeof list, "%s", v->targets);
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char want[64], target[ACCEL_BUNDLE_TARGET_MAX], *code = NULL;
    size_t size = 0;
    snprintf(want, sizeof want, "%s%s", v->compile_prefix, t);
    snprintf(target, sizeof target, "%s%s", v->form_prefix, t);
    const accel_status_t st = v->compile(b, want, &code, &size);
    const int r = add_form(o, st, v->kind, target, code, size, v->tool);
    if (r) return r < 0 ? -1 : 0;
  }
  return 0;
}

/* The forms of b: PTX, code objects, SPIR-V. */
static int build_forms(const accel_module_build_t *b, const kc_out_t *o) {
  static const kc_vendor_t kVendors[] = {
      {ACCEL_MODULE_FORM_PTX, KC_CUDA_ARCHS, "compute_", "sm_", "NVRTC", "CUDA", kc_cuda_compile},
      {ACCEL_MODULE_FORM_HIP_CO, KC_HIP_TARGETS, "", "", "hiprtc", "HIP", kc_hip_compile}};
  for (size_t v = 0; v < sizeof kVendors / sizeof kVendors[0]; ++v)
    if (vendor_forms(&kVendors[v], b, o) != 0) return -1;
  unsigned char *spv = NULL;
  size_t size = 0;
  const accel_status_t st = accel_ze_module_spirv(b, &spv, &size);
  return add_form(o, st, ACCEL_MODULE_FORM_SPIRV, "", (char *)spv, size, "clang + llvm-spirv") < 0
             ? -1
             : 0;
}

int kc_gpu_forms(const char *path, const char *source, const char *options, const char *dir,
                 accel_bundle_section_t *s, char **owned, uint32_t *n) {
  kc_dir = dir;
  module_rows_t rows = {0};
  if (module_rows_read(source, "accel-kc", &rows) != ACCEL_OK) {
    fprintf(stderr, "accel-kc: %s: %s\n", path, kc_error);
    return -1;
  }
  const char **symbols = calloc(rows.n ? rows.n : 1, sizeof *symbols);
  uint32_t *sizes = calloc(rows.n ? rows.n : 1, sizeof *sizes);
  int rc = symbols && sizes ? 0 : -1;
  for (size_t k = 0; rc == 0 && k < rows.n; ++k) {
    symbols[k] = rows.rows[k].desc.symbol;
    sizes[k] = rows.rows[k].layout.size;
  }
  /* as core/module.c builds it, less the launch ids and cache key (unused here) */
  const accel_module_build_t b = {sizeof b, (uint32_t)rows.n, rows.params, source,
                                  options ? options : "", symbols, sizes,
                                  ACCEL_KERNEL_ID_USER_BASE, 0, 0, NULL, 0, 0};
  const kc_out_t o = {path, s, owned, n};
  if (rc == 0) rc = build_forms(&b, &o);
  else fprintf(stderr, "accel-kc: no memory\n");
  free(symbols);
  free(sizes);
  module_rows_free(&rows);
  return rc;
}
