/*
 * accel-kc's GPU forms (kc_gpu.h): the source's rows read by the core's own reader
 * (core/module_row.c), the module build the plugins get from them, and that build compiled by
 * the plugins' own compilers: NVRTC for PTX and hiprtc for code objects (gpu_rtc.c, kc_rtc.c)
 * and clang + llvm-spirv for SPIR-V (ze_spirv.c), for the targets given or this accel's.
 */
#include "kc_gpu.h"

#include <ctype.h>
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

/* A vendor's forms: one per target of the list. */
typedef struct kc_vendor {
  uint32_t kind;
  const char *targets;        /* the build's, comma-separated (KC_CUDA_ARCHS, ...) */
  const char *option;         /* the command line's override */
  const char *compile_prefix; /* what the compiler is asked for: compute_ + arch */
  const char *form_prefix;    /* the form's target: sm_ + arch */
  const char *tool, *plugin;
  accel_status_t (*compile)(const accel_module_build_t *b, const char *target, char **code,
                            size_t *size);
} kc_vendor_t;

/* 1 when t is a target the vendor's compiler may be given: CUDA 1 to 4 digits (NVRTC refuses
 * an arch it does not know); HIP one of the build's gfx targets, those its ROCm compiles (ROCm
 * 5.2's hiprtc crashes on a target it does not know, e.g. gfx942). */
static int valid_target(const kc_vendor_t *v, const char *t) {
  const size_t len = strlen(t);
  if (v->kind == ACCEL_MODULE_FORM_HIP_CO) {
    for (const char *at = v->targets; len && (at = strstr(at, t)); ++at)
      if ((at == v->targets || at[-1] == ',') && (at[len] == ',' || !at[len])) return 1;
    return 0;
  }
  size_t digits = 0;
  while (digits < len && isdigit((unsigned char)t[digits])) ++digits;
  return len > 0 && len <= 4 && digits == len;
}

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

/* The vendor's form for each target of list (none after its compiler proves absent). */
static int vendor_forms(const kc_vendor_t *v, const char *list, const accel_module_build_t *b,
                        const kc_out_t *o) {
  if (!*list) {
    printf("  %s: skipped: %s\n", accel_bundle_form_name(v->kind),
           list == v->targets ? "this accel was built without its plugin (no target configured)"
                              : "no target given");
    return 0;
  }
  char copy[512], *save = NULL;
  snprintf(copy, sizeof copy, "%s", list);
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (!valid_target(v, t)) {
      fprintf(stderr, "accel-kc: %s: '%s' is not a %s target%s%s\n", v->option, t, v->plugin,
              v->kind == ACCEL_MODULE_FORM_HIP_CO ? " this build compiles; those are: " : "",
              v->kind == ACCEL_MODULE_FORM_HIP_CO ? v->targets : "");
      return -1;
    }
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

/* The forms of b: PTX, code objects (for t's targets, else the build's), SPIR-V. */
static int build_forms(const kc_targets_t *t, const accel_module_build_t *b, const kc_out_t *o) {
  static const kc_vendor_t kVendors[] = {
      {ACCEL_MODULE_FORM_PTX, KC_CUDA_ARCHS, "--cuda-archs", "compute_", "sm_", "NVRTC", "CUDA",
       kc_cuda_compile},
      {ACCEL_MODULE_FORM_HIP_CO, KC_HIP_TARGETS, "--hip-targets", "", "", "hiprtc", "HIP",
       kc_hip_compile}};
  const char *lists[] = {t->cuda ? t->cuda : kVendors[0].targets,
                         t->hip ? t->hip : kVendors[1].targets};
  for (size_t v = 0; v < sizeof kVendors / sizeof kVendors[0]; ++v)
    if (vendor_forms(&kVendors[v], lists[v], b, o) != 0) return -1;
  unsigned char *spv = NULL;
  size_t size = 0;
  const accel_status_t st = accel_ze_module_spirv(b, &spv, &size);
  return add_form(o, st, ACCEL_MODULE_FORM_SPIRV, "", (char *)spv, size, "clang + llvm-spirv") < 0
             ? -1
             : 0;
}

int kc_gpu_forms(const kc_targets_t *t, const char *path, const char *source,
                 const char *options, const char *dir, accel_bundle_section_t *s, char **owned,
                 uint32_t *n) {
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
  if (rc == 0) rc = build_forms(t, &b, &o);
  else fprintf(stderr, "accel-kc: no memory\n");
  free(symbols);
  free(sizes);
  module_rows_free(&rows);
  return rc;
}
