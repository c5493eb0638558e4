/*
 * Loads libaccel-level-zero.so with dlopen and a fake host service table, as libaccel would,
 * and checks backend_init: on a machine without a Level Zero GPU driver it must return
 * ACCEL_ERROR_UNAVAILABLE with a reason naming the loader or zeInit result; where a device
 * exists, it must report at least one device with sane info.
 * usage: check_level_zero_unavailable PATH/libaccel-level-zero.so
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "accel/accel_plugin.h"
#include "fake_host.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libaccel-level-zero.so\n", argv[0]);
    return 2;
  }
  fake_host_verbose = 1;
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  accel_plugin_query_fn query = (accel_plugin_query_fn)dlsym(lib, ACCEL_PLUGIN_QUERY_SYMBOL);
  if (!query) {
    printf("FAIL: %s not exported\n", ACCEL_PLUGIN_QUERY_SYMBOL);
    return 1;
  }
  const accel_backend_vtable_t *vt = NULL;
  if (query(ACCEL_PLUGIN_ABI_VERSION + 1, &fake_host, &vt) != ACCEL_ERROR_PLUGIN || vt) {
    printf("FAIL: a wrong host ABI was not refused\n");
    return 1;
  }
  printf("ok: wrong ABI refused: %s\n", fake_host_error);
  if (query(ACCEL_PLUGIN_ABI_VERSION, &fake_host, &vt) != ACCEL_OK || !vt) {
    printf("FAIL: accel_plugin_query: %s\n", fake_host_error);
    return 1;
  }
  if (vt->abi_version != ACCEL_PLUGIN_ABI_VERSION || vt->struct_size != sizeof(*vt) ||
      strcmp(vt->name, "level_zero") != 0) {
    printf("FAIL: vtable header abi=%u size=%u name=%s\n", vt->abi_version, vt->struct_size,
           vt->name);
    return 1;
  }
  accel_be_backend_t *be = NULL;
  fake_host_error[0] = '\0';
  accel_status_t st = vt->backend_init(&fake_host, &be);
  if (st == ACCEL_ERROR_UNAVAILABLE) {
    if (!fake_host_error[0] ||
        (!strstr(fake_host_error, "zeInit") && !strstr(fake_host_error, "libze_loader") &&
         !strstr(fake_host_error, "zeDeviceGet"))) {
      printf("FAIL: UNAVAILABLE without a useful reason: \"%s\"\n", fake_host_error);
      return 1;
    }
    printf("ok: UNAVAILABLE: %s\n", fake_host_error);
    return 0;
  }
  if (st != ACCEL_OK) {
    printf("FAIL: backend_init returned %d: %s\n", (int)st, fake_host_error);
    return 1;
  }
  int count = 0;
  if (vt->device_count(be, &count) != ACCEL_OK || count < 1) {
    printf("FAIL: backend_init OK but device_count=%d\n", count);
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    accel_device_info_t info;
    if (vt->device_info(be, i, &info) != ACCEL_OK || !info.name[0] || !info.lazy_default) {
      printf("FAIL: device_info(%d): %s\n", i, fake_host_error);
      return 1;
    }
    printf("ok: device %d: %s (%s), %llu bytes\n", i, info.name, info.vendor,
           (unsigned long long)info.memory_total);
  }
  vt->backend_shutdown(be);
  return 0;
}
