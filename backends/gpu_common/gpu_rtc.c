/*
 * The run-time compiler of user kernels (gpu_rtc.h): the shim's GPU_RTC_LIBRARY_NAMES (or only
 * $GPU_RTC_ENV, ACCEL_NVRTC / ACCEL_HIPRTC, when set) opened with dlopen at the first module
 * build and resolved with dlsym (common/vendor_lib.h), like the runtime itself, so that the
 * plugin loads and runs the shared kernels without it.
 */
#include "gpu_rtc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_gpu_module_prelude.h"
#include "module_text.h"
#include "vendor_lib.h"

static pthread_mutex_t rtc_lock = PTHREAD_MUTEX_INITIALIZER;
static gpu_rtc_t rtc_state;
static int rtc_opened; /* 0: not tried, 1: opened, -1: failed (why in rtc_why) */
static char rtc_why[1200];

static int rtc_open(gpu_rtc_t *rtc) {
  static const char *const names[] = GPU_RTC_LIBRARY_NAMES;
  const char *env = getenv(GPU_RTC_ENV); /* e.g. the libnvrtc of a pip wheel */
  char tried[1024];
  const char *chosen = NULL;
  void *lib = env && *env ? accel_vendor_open(&env, 1, &chosen, tried, sizeof tried)
                          : accel_vendor_open(names, sizeof names / sizeof names[0], &chosen,
                                              tried, sizeof tried);
  if (!lib) {
    snprintf(rtc_why, sizeof rtc_why,
             "%s: this machine does not compile user kernels: no %s (dlopen tried: %s)",
             GPU_BACKEND_NAME, GPU_RTC_NAME, tried);
    return -1;
  }
  const accel_vendor_symbol_t syms[] = {
#define GPU_RTC_REQ(field, lookup, display, ret, params) \
  {lookup, display, (void **)&rtc->api.field, 1},
#define GPU_RTC_OPT(field, lookup, display, ret, params) \
  {lookup, display, (void **)&rtc->api.field, 0},
      GPU_RTC_TABLE(GPU_RTC_REQ, GPU_RTC_OPT)
#undef GPU_RTC_REQ
#undef GPU_RTC_OPT
  };
  char missing[512];
  if (accel_vendor_resolve(lib, NULL, NULL, syms, sizeof syms / sizeof syms[0], missing,
                           sizeof missing)) {
    snprintf(rtc_why, sizeof rtc_why,
             "%s: this machine does not compile user kernels: %s lacks %s entry points: %s",
             GPU_BACKEND_NAME, chosen, GPU_RTC_NAME, missing);
    return -1;
  }
  snprintf(rtc->path, sizeof rtc->path, "%s", chosen);
  if (rtc->api.Version(&rtc->major, &rtc->minor) != GPU_RTC_SUCCESS) rtc->major = rtc->minor = 0;
  return 1;
}

accel_status_t gpu_rtc_get(const gpu_rtc_t **out) {
  pthread_mutex_lock(&rtc_lock);
  if (!rtc_opened) rtc_opened = rtc_open(&rtc_state);
  const int ok = rtc_opened > 0;
  pthread_mutex_unlock(&rtc_lock);
  if (!ok) return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED, "%s", rtc_why);
  *out = &rtc_state;
  return ACCEL_OK;
}

#if GPU_VENDOR_CUDA
/* The newest arch this NVRTC compiles for that is not above want (0: none; want itself when it
 * cannot say, before CUDA 11.2). */
static int newest_arch(const gpu_rtc_t *rtc, int want) {
  int n = 0;
  if (!rtc->api.GetNumSupportedArchs || !rtc->api.GetSupportedArchs ||
      rtc->api.GetNumSupportedArchs(&n) != GPU_RTC_SUCCESS || n <= 0 || n > 256)
    return want;
  int archs[256], best = 0;
  if (rtc->api.GetSupportedArchs(archs) != GPU_RTC_SUCCESS) return want;
  for (int i = 0; i < n; ++i)
    if (archs[i] <= want && archs[i] > best) best = archs[i];
  return best;
}
#endif

accel_status_t gpu_rtc_target(const gpu_rtc_t *rtc, int major, int minor, char *target,
                              size_t size) {
#if GPU_VENDOR_CUDA
  const int want = major * 10 + minor, arch = newest_arch(rtc, want);
  if (arch == 0)
    return gpu_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "%s: this machine does not compile user kernels for sm_%d: %s "
                               "%d.%d knows no arch up to it", GPU_BACKEND_NAME, want,
                               GPU_RTC_NAME, rtc->major, rtc->minor);
  snprintf(target, size, "%s_%d", arch == want ? "sm" : "compute", arch);
#else
  (void)rtc;
  (void)major;
  (void)minor;
  snprintf(target, size, "%s", "");
#endif
  return ACCEL_OK;
}

/* The options: the fixed ones, the target's, then the user's words (*buf owns their text). */
static const char **compile_options(const char *target, const char *options, char **buf,
                                    int *n) {
  static const char *const fixed[] = GPU_RTC_FIXED_OPTIONS;
  const size_t nfixed = sizeof fixed / sizeof fixed[0];
  const size_t len = strlen(options) + strlen(target) + sizeof GPU_RTC_TARGET_OPTION + 2;
  const char **opts = calloc(nfixed + 2 + len / 2, sizeof *opts);
  *buf = malloc(len);
  if (!opts || !*buf) {
    free(opts);
    free(*buf);
    return NULL;
  }
  size_t k = 0;
  for (; k < nfixed; ++k) opts[k] = fixed[k];
  int at = snprintf(*buf, len, "%s%s", GPU_RTC_TARGET_OPTION, target) + 1;
  if (*target) opts[k++] = *buf;
  snprintf(*buf + at, len - (size_t)at, "%s", options);
  char *save = NULL;
  for (char *w = strtok_r(*buf + at, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
    opts[k++] = w;
  *n = (int)k;
  return opts;
}

/* The compiler's log after a failed compile, in the error. */
static accel_status_t compile_failed(const gpu_rtc_t *rtc, gpuRtcProgram_t prog,
                                     gpuRtcResult_t r, const char *target) {
  size_t size = 0;
  char *log = NULL;
  if (rtc->api.GetProgramLogSize(prog, &size) == GPU_RTC_SUCCESS && size > 0 &&
      (log = malloc(size + 1)) && rtc->api.GetProgramLog(prog, log) == GPU_RTC_SUCCESS)
    log[size] = '\0';
  else if (log)
    log[0] = '\0';
  accel_status_t st = gpu_host->set_error(
      ACCEL_ERROR_BACKEND, "%s: the module does not compile (%s for %s: %s):\n%.700s",
      GPU_BACKEND_NAME, GPU_RTC_NAME, *target ? target : "the current device",
      rtc->api.GetErrorString(r), log ? log : "");
  free(log);
  return st;
}

/* Copies the compiled code out of prog. */
static accel_status_t take_code(const gpu_rtc_t *rtc, gpuRtcProgram_t prog, const char *target,
                                char **code, size_t *size) {
  gpuRtcResult_t (*get_size)(gpuRtcProgram_t, size_t *) = rtc->api.GetCodeSize;
  gpuRtcResult_t (*get)(gpuRtcProgram_t, char *) = rtc->api.GetCode;
#if GPU_VENDOR_CUDA
  if (strncmp(target, "compute_", 8) == 0) {
    get_size = rtc->api.GetPTXSize;
    get = rtc->api.GetPTX;
  }
#else
  (void)target;
#endif
  gpuRtcResult_t r = get_size(prog, size);
  if (r == GPU_RTC_SUCCESS && *size > 0) {
    if (!(*code = malloc(*size)))
      return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: module code of %zu bytes",
                                 GPU_BACKEND_NAME, *size);
    r = get(prog, *code);
    if (r == GPU_RTC_SUCCESS) return ACCEL_OK;
  }
  free(*code);
  *code = NULL;
  return gpu_host->set_error(ACCEL_ERROR_BACKEND, "%s: %s returned no code (%zu bytes): %s",
                             GPU_BACKEND_NAME, GPU_RTC_NAME, *size, rtc->api.GetErrorString(r));
}

accel_status_t gpu_rtc_compile(const gpu_rtc_t *rtc, const char *text, const char *target,
                               const char *options, char **code, size_t *size) {
  *code = NULL;
  *size = 0;
  char *buf = NULL;
  int nopts = 0;
  const char **opts = compile_options(target, options, &buf, &nopts);
  if (!opts)
    return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: no memory", GPU_BACKEND_NAME);
  gpuRtcProgram_t prog = NULL;
  gpuRtcResult_t r = rtc->api.CreateProgram(&prog, text, "module.cu", 0, NULL, NULL);
  accel_status_t st = ACCEL_OK;
  if (r != GPU_RTC_SUCCESS)
    st = gpu_host->set_error(ACCEL_ERROR_BACKEND, "%s: %s could not create a program: %s",
                             GPU_BACKEND_NAME, GPU_RTC_NAME, rtc->api.GetErrorString(r));
  if (st == ACCEL_OK && (r = rtc->api.CompileProgram(prog, nopts, opts)) != GPU_RTC_SUCCESS)
    st = compile_failed(rtc, prog, r, target);
  if (st == ACCEL_OK) st = take_code(rtc, prog, target, code, size);
  if (prog) rtc->api.DestroyProgram(&prog);
  free(opts);
  free(buf);
  return st;
}

accel_status_t gpu_rtc_compile_module(const gpu_rtc_t *rtc, const accel_module_build_t *b,
                                      const char *target, char **code, size_t *size) {
  char *text = accel_module_text((const char *)accel_gpu_module_prelude, b, NULL);
  if (!text)
    return gpu_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: no memory", GPU_BACKEND_NAME);
  accel_status_t st = gpu_rtc_compile(rtc, text, target, b->options, code, size);
  free(text);
  return st;
}
