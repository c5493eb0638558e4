/*
 * accel-kc's PTX and HIP code objects (kc_gpu.h): built once per vendor shim with KC_RTC_COMPILE
 * naming the function and gpu_rtc.c's names prefixed (tools/meson.build), so that both vendors'
 * compilers link into one tool. The text and options are the plugin's (gpu_rtc_compile_module).
 */
#include <stdlib.h>

#include "gpu_rtc.h"
#include "kc_gpu.h"

/* gpu_rtc.c reports through the plugin's host pointer: accel-kc's. */
const accel_host_api_t *gpu_host = &kc_host;

accel_status_t KC_RTC_COMPILE(const accel_module_build_t *b, const char *target, char **code,
                              size_t *size) {
  const gpu_rtc_t *rtc = NULL;
  accel_status_t st = gpu_rtc_get(&rtc);
  return st == ACCEL_OK ? gpu_rtc_compile_module(rtc, b, target, code, size) : st;
}
