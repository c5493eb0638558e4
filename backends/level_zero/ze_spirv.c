/*
 * The SPIR-V of a user kernel module (ze_spirv.h): the text the OpenCL plugin builds
 * (common/module_text.h on the embedded OpenCL prelude, kernels/opencl/module_prelude.cl),
 * compiled at run time the way the build compiles the shared kernels (kernels/meson.build):
 * clang -cl-std=CL1.2 -target spir64 with exact fp32 division and square root and no
 * contraction (and an undeclared function an error), then llvm-spirv at SPIR-V 1.0. ACCEL_CLANG and ACCEL_LLVM_SPIRV name the two
 * tools (default: the ones the build used); when one cannot be run the build is
 * ACCEL_ERROR_UNSUPPORTED. The SPIR-V goes to the kernel cache (level_zero-<hash>.bin) under the
 * module's key, the tools and the prelude's hash; a later build with the same key only loads it.
 */
#include "ze_spirv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel_cl_module_prelude.h"
#include "kernel_cache.h"
#include "module_text.h"
#include "tool_run.h"

static const char *tool(const char *env, const char *fallback) {
  const char *t = getenv(env);
  return t && *t ? t : fallback;
}

/* The whole file path in *data (malloc'ed); 0 on success. */
static int read_file(const char *path, unsigned char **data, size_t *size) {
  FILE *f = fopen(path, "rb");
  long end = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  *data = end > 0 ? malloc((size_t)end) : NULL;
  *size = (size_t)end;
  int ok = *data && fseek(f, 0, SEEK_SET) == 0 && fread(*data, 1, *size, f) == *size;
  if (f) fclose(f);
  if (ok) return 0;
  free(*data);
  *data = NULL;
  return -1;
}

/* Runs clang and llvm-spirv on text in dir: the SPIR-V in *spv (malloc'ed). */
static accel_status_t compile_spirv(const char *dir, const char *text, const char *options,
                                   unsigned char **spv, size_t *size) {
  char cl[1100], bc[1100], out[1100], log[1100];
  snprintf(cl, sizeof cl, "%s/.ze-module-%ld-XXXXXX.cl", dir, (long)getpid());
  const int fd = mkstemps(cl, 3);
  if (fd < 0)
    return accel_ze_host->set_error(ACCEL_ERROR_BACKEND, "level_zero: cannot create %s: %s", cl,
                                    strerror(errno));
  const size_t len = strlen(text);
  const int wrote = write(fd, text, len) == (ssize_t)len;
  close(fd);
  const int stem = (int)(strlen(cl) - 3);
  snprintf(bc, sizeof bc, "%.*s.bc", stem, cl);
  snprintf(out, sizeof out, "%.*s.spv", stem, cl);
  snprintf(log, sizeof log, "%.*s.log", stem, cl);
  char opts[1024];
  snprintf(opts, sizeof opts, "%s", options);
  /* an undeclared function is an error (OpenCL C 1.2 would declare it implicitly, and the
   * typo would only fail when the driver links the module) */
  char *clang[40] = {(char *)tool("ACCEL_CLANG", ACCEL_ZE_CLANG), "-cl-std=CL1.2", "-target",
                     "spir64", "-O3", "-emit-llvm", "-c", "-ffp-contract=off",
                     "-cl-fp32-correctly-rounded-divide-sqrt",
                     "-Werror=implicit-function-declaration", "-o", bc, cl};
  size_t n = 13;
  char *save = NULL;
  for (char *w = strtok_r(opts, " \t\n", &save); w && n < 39;
       w = strtok_r(NULL, " \t\n", &save))
    clang[n++] = w;
  char *spirv[] = {(char *)tool("ACCEL_LLVM_SPIRV", ACCEL_ZE_LLVM_SPIRV),
                   "--spirv-max-version=1.0", "-o", out, bc, NULL};
  const char *missing =
      "this machine does not compile user kernels (ACCEL_CLANG, ACCEL_LLVM_SPIRV)";
  accel_status_t st =
      wrote ? accel_tool_run(accel_ze_host, "level_zero", missing, clang, log)
            : accel_ze_host->set_error(ACCEL_ERROR_BACKEND, "level_zero: cannot write %s", cl);
  if (st == ACCEL_OK) st = accel_tool_run(accel_ze_host, "level_zero", missing, spirv, log);
  if (st == ACCEL_OK && read_file(out, spv, size) != 0)
    st = accel_ze_host->set_error(ACCEL_ERROR_BACKEND, "level_zero: cannot read %s", out);
  unlink(cl);
  unlink(bc);
  unlink(out);
  unlink(log);
  return st;
}

accel_status_t accel_ze_module_spirv(const accel_module_build_t *b, unsigned char **spv,
                                    size_t *size) {
  *spv = NULL;
  *size = 0;
  char key[2048];
  snprintf(key, sizeof key, "level_zero-module%s|%s|%s|%s|%s|%016llx", ACCEL_MODULE_TEXT_VERSION,
           tool("ACCEL_CLANG", ACCEL_ZE_CLANG), tool("ACCEL_LLVM_SPIRV", ACCEL_ZE_LLVM_SPIRV),
           ACCEL_CL_MODULE_PRELUDE_HASH, b->options, (unsigned long long)b->key);
  if (accel_kernel_cache_load(accel_ze_host, "level_zero", key, spv, size) == 0) return ACCEL_OK;
  if (accel_ze_host->fault_should_fail(ACCEL_FAULT_KERNEL_BUILD))
    return accel_ze_host->set_error(ACCEL_ERROR_BACKEND,
                                    "level_zero: module_build: injected fault "
                                    "(ACCEL_FAULT_KERNEL_BUILD)");
  char *text = accel_module_text((const char *)accel_cl_module_prelude, b, NULL);
  if (!text) return accel_ze_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "level_zero: no memory");
  const char *cache = accel_ze_host->cache_dir ? accel_ze_host->cache_dir() : NULL;
  const char *tmp = getenv("TMPDIR");
  accel_status_t st =
      compile_spirv(cache ? cache : tmp && *tmp ? tmp : "/tmp", text, b->options, spv, size);
  free(text);
  if (st == ACCEL_OK) accel_kernel_cache_store(accel_ze_host, "level_zero", key, *spv, *size);
  return st;
}
