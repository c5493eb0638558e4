/*
 * The CUDA/HIP plugins' run-time compiler of user kernels (backends/gpu_common/gpu_rtc.c) on
 * the text gpu_user.c compiles for a module (rtc_module_source.h's, on the embedded
 * kernels/gpu/module_prelude.cuh), built once per vendor shim. No device is needed: NVRTC
 * (CUDA) compiles for sm_80 and sm_90 (a CUBIN: an ELF whose symbol table names each kernel, unmangled) and for
 * compute_80 (PTX with `.entry NAME(`); hiprtc (HIP) for gfx90a and gfx1030 (a code object whose
 * symbols include NAME.kd, the kernel descriptor). A one-character typo gives one error at the
 * user's line; an unknown option fails; the CUDA target follows the compute capability (the
 * device's sm_XY, else PTX of the newest arch NVRTC knows below it, else UNSUPPORTED). Exits
 * 77 (skipped) when the compiler library is absent (the reason on stdout).
 */
#include <stdlib.h>
#include <string.h>

#include "accel_gpu_module_prelude.h"
#include "check.h"
#include "fake_host.h"
#include "gpu_rtc.h"
#include "rtc_module_source.h"

#if GPU_VENDOR_CUDA
#define SYMBOL_SUFFIX "" /* a CUBIN's symbol is the kernel's name */
#define TYPO_AT "<module>(7): error" /* NVRTC: "<module>(7): error: ..." */
static const char *const kTargets[] = {"sm_80", "sm_90", "compute_80"};
#else
#define SYMBOL_SUFFIX ".kd" /* a code object's kernel descriptor */
#define TYPO_AT "<module>:7:" /* hiprtc (clang): "<module>:7:COL: error: ..." */
static const char *const kTargets[] = {"gfx90a", "gfx1030"};
#endif

/* needle (n bytes, NULs included) occurs in hay. */
static int contains(const char *hay, size_t size, const char *needle, size_t n) {
  for (size_t i = 0; i + n <= size; ++i)
    if (memcmp(hay + i, needle, n) == 0) return 1;
  return 0;
}

/* Compiles the module for target and checks the code names every kernel. */
static void compile_ok(const gpu_rtc_t *rtc, const char *text, const char *target) {
  char *code = NULL;
  size_t size = 0;
  accel_status_t st = gpu_rtc_compile(rtc, text, target, "", &code, &size);
  CHECK(st == ACCEL_OK && code && size > 64, "%s for %s: %d (%zu bytes): %s", GPU_RTC_NAME,
        target, (int)st, size, fake_host_error);
  if (st != ACCEL_OK) return;
  const int ptx = strncmp(target, "compute_", 8) == 0;
  CHECK(ptx ? code[size - 1] == '\0' : memcmp(code, "\177ELF", 4) == 0,
        "%s: not %s", target, ptx ? "NUL-terminated PTX" : "an ELF image");
  for (size_t k = 0; k < 2; ++k) {
    char name[64];
    /* PTX: ".entry NAME("; an image's symbol table: "\0NAME\0" (CUDA) or "\0NAME.kd\0" (HIP) */
    int n = ptx ? snprintf(name, sizeof name, ".entry %s(", kSymbols[k])
                : snprintf(name, sizeof name, "%c%s" SYMBOL_SUFFIX "%c", 0, kSymbols[k], 0);
    CHECK(contains(code, size, name, (size_t)n), "%s: no kernel %s in the %zu-byte code", target,
          kSymbols[k], size);
  }
  if (ptx) {
    char want[32];
    snprintf(want, sizeof want, ".target sm_%s", target + 8);
    CHECK(strstr(code, want), "%s: PTX without %s", target, want);
  }
  free(code);
}

/* A typo at the user's line 7: one error, located there, BACKEND with the log. */
static void compile_typo(const gpu_rtc_t *rtc, const char *target) {
  char source[sizeof kSource];
  rtc_typo_source(source);
  char *text = rtc_module_text((const char *)accel_gpu_module_prelude, source);
  char *code = NULL;
  size_t size = 0;
  accel_status_t st = gpu_rtc_compile(rtc, text, target, "", &code, &size);
  CHECK(st == ACCEL_ERROR_BACKEND && !code && strstr(fake_host_error, TYPO_AT) &&
            strstr(fake_host_error, "acc_lod") && strstr(fake_host_error, "1 error"),
        "typo for %s: %d, want BACKEND, one error at %s: %s", target, (int)st, TYPO_AT,
        fake_host_error);
  free(text);
}

static void targets(const gpu_rtc_t *rtc) {
  char target[32];
#if GPU_VENDOR_CUDA
  CHECK(gpu_rtc_target(rtc, 9, 0, target, sizeof target) == ACCEL_OK &&
            strcmp(target, "sm_90") == 0, "cc 9.0 -> %s", target);
  /* a device newer than every arch NVRTC knows: PTX of the newest one */
  CHECK(gpu_rtc_target(rtc, 99, 9, target, sizeof target) == ACCEL_OK &&
            strncmp(target, "compute_", 8) == 0, "cc 99.9 -> %s", target);
  CHECK(gpu_rtc_target(rtc, 1, 0, target, sizeof target) == ACCEL_ERROR_UNSUPPORTED &&
            strstr(fake_host_error, "sm_10"), "cc 1.0: %s", fake_host_error);
#else
  CHECK(gpu_rtc_target(rtc, 9, 0, target, sizeof target) == ACCEL_OK && target[0] == '\0',
        "HIP target '%s', want '' (the current device's)", target);
#endif
}

int main(void) {
  gpu_host = &fake_host;
  const gpu_rtc_t *rtc = NULL;
  if (gpu_rtc_get(&rtc) != ACCEL_OK) {
    printf("SKIP: %s\n", fake_host_error);
    return 77;
  }
  printf("%s %d.%d from %s\n", GPU_RTC_NAME, rtc->major, rtc->minor, rtc->path);
  targets(rtc);
  char *text = rtc_module_text((const char *)accel_gpu_module_prelude, kSource);
  CHECK(text && strstr(text, LERP_LINE_7), "module text");
  for (size_t t = 0; text && t < sizeof kTargets / sizeof kTargets[0]; ++t)
    compile_ok(rtc, text, kTargets[t]);
  compile_typo(rtc, kTargets[0]);
  char *code = NULL;
  size_t size = 0;
  CHECK(gpu_rtc_compile(rtc, text, kTargets[0], "--no-such-option", &code, &size) ==
            ACCEL_ERROR_BACKEND && !code,
        "an unknown option compiled: %s", fake_host_error);
  free(text);
  return CHECK_EXIT("gpu-rtc-%s", GPU_BACKEND_NAME);
}
