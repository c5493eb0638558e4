/*
 * The Level Zero plugin's compiler of user kernels (backends/level_zero/ze_spirv.c): the text
 * the OpenCL plugin builds for a module (rtc_module_source.h's, on the embedded OpenCL
 * prelude) through clang + llvm-spirv into SPIR-V, no device needed. The result is SPIR-V 1.0
 * (magic, version word) with an OpEntryPoint for each kernel, and spirv-val accepts it (when
 * installed); a second build of the same module is a kernel-cache hit (clang, counted through
 * an ACCEL_CLANG wrapper, ran once); a one-character typo gives one error at the user's line 7
 * (BACKEND, clang's log); ACCEL_CLANG naming nothing is UNSUPPORTED.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel_cl_module_prelude.h"
#include "check.h"
#include "fake_host.h"
#include "rtc_module_source.h"
#include "ze_spirv.h"

const accel_host_api_t *accel_ze_host;

static char cache[] = "/tmp/accel-test-ze-spirv-XXXXXX";
static const char *test_cache_dir(void) { return cache; }

/* word i of the module (little-endian host). */
static uint32_t word(const unsigned char *spv, size_t i) {
  uint32_t w;
  memcpy(&w, spv + 4 * i, 4);
  return w;
}

/* The module has an OpEntryPoint (opcode 15) whose name is name. */
static int has_entry(const unsigned char *spv, size_t size, const char *name) {
  for (size_t i = 5; i < size / 4;) {
    const uint32_t w = word(spv, i), n = w >> 16;
    if (n == 0) return 0;
    if ((w & 0xffffu) == 15 && n > 3 && strcmp((const char *)(spv + 4 * (i + 3)), name) == 0)
      return 1;
    i += n;
  }
  return 0;
}

static void valid(const unsigned char *spv, size_t size) {
  CHECK(size > 20 && word(spv, 0) == 0x07230203u && word(spv, 1) == 0x00010000u,
        "not SPIR-V 1.0 (%zu bytes, magic %08x, version %08x)", size, size ? word(spv, 0) : 0u,
        size > 4 ? word(spv, 1) : 0u);
  for (size_t k = 0; k < 2; ++k)
    CHECK(has_entry(spv, size, kSymbols[k]), "no OpEntryPoint %s", kSymbols[k]);
  if (system("spirv-val --version > /dev/null 2>&1") != 0) return;
  char path[64];
  snprintf(path, sizeof path, "%s/module.spv", cache);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(spv, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "spirv-val --target-env opencl1.2 %s", path);
  CHECK(system(cmd) == 0, "spirv-val rejects the module");
  unlink(path);
}

/* ACCEL_CLANG: a wrapper that counts its runs in <cache>/runs, then runs the build's clang. */
static void count_clang_runs(void) {
  char path[80], script[512];
  snprintf(path, sizeof path, "%s/clang-counted", cache);
  snprintf(script, sizeof script, "#!/bin/sh\necho run >> %s/runs\nexec %s \"$@\"\n", cache,
           ACCEL_ZE_CLANG);
  FILE *f = fopen(path, "w");
  CHECK(f && fputs(script, f) >= 0 && fclose(f) == 0 && chmod(path, 0700) == 0, "%s", path);
  setenv("ACCEL_CLANG", path, 1);
}

static int clang_runs(void) {
  char path[80], line[16];
  snprintf(path, sizeof path, "%s/runs", cache);
  FILE *f = fopen(path, "r");
  int n = 0;
  while (f && fgets(line, sizeof line, f)) n++;
  if (f) fclose(f);
  return n;
}

int main(void) {
  accel_host_api_t host = fake_host;
  host.cache_dir = test_cache_dir;
  accel_ze_host = &host;
  CHECK(mkdtemp(cache), "mkdtemp");
  count_clang_runs();
  const accel_module_build_t b = rtc_module_build(kSource);
  unsigned char *spv = NULL;
  size_t size = 0;
  for (int round = 0; round < 2; ++round) { /* the second is a kernel-cache hit */
    accel_status_t st = accel_ze_module_spirv(&b, &spv, &size);
    CHECK(st == ACCEL_OK && spv, "build %d: %d: %s", round, (int)st, fake_host_error);
    if (spv) valid(spv, size);
    free(spv);
    CHECK(clang_runs() == 1, "build %d: clang ran %d times, want 1", round, clang_runs());
  }
  char source[sizeof kSource];
  rtc_typo_source(source);
  const accel_module_build_t typo = rtc_module_build(source);
  accel_status_t st = accel_ze_module_spirv(&typo, &spv, &size);
  CHECK(st == ACCEL_ERROR_BACKEND && !spv && strstr(fake_host_error, "<module>:7:") &&
            strstr(fake_host_error, "acc_lod") && strstr(fake_host_error, "1 error"),
        "typo: %d, want BACKEND with one error at <module>:7: %s", (int)st, fake_host_error);
  setenv("ACCEL_CLANG", "/nonexistent/clang", 1);
  st = accel_ze_module_spirv(&b, &spv, &size);
  CHECK(st == ACCEL_ERROR_UNSUPPORTED && strstr(fake_host_error, "does not compile user kernels"),
        "no clang: %d: %s", (int)st, fake_host_error);
  char rm[80];
  snprintf(rm, sizeof rm, "rm -rf %s", cache);
  CHECK(system(rm) == 0, "%s", rm);
  return CHECK_EXIT("ze-spirv");
}
