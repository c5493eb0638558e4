/*
 * accel CTS: device selection and information.
 */
#include <stdio.h>
#include <string.h>

#include "cts_internal.h"

CTS_CASE(device_info_sane, CTS_TAG_NONE) {
  const accel_device_info_t *info = &ctx->info;
  CTS_CHECK(info->name[0] != '\0', "device name is empty");
  CTS_CHECK(memchr(info->name, '\0', sizeof(info->name)) != NULL, "name not terminated");
  CTS_CHECK(info->backend[0] != '\0', "backend name is empty");
  if (ctx->selector) {
    size_t len = strcspn(ctx->selector, ":");
    CTS_CHECK(strlen(info->backend) == len && strncmp(info->backend, ctx->selector, len) == 0,
              "backend '%s' does not match selector '%s'", info->backend, ctx->selector);
  }
  CTS_CHECK(info->memory_total > 0, "memory_total is 0");
  CTS_CHECK(info->memory_free <= info->memory_total, "memory_free %llu > memory_total %llu",
            (unsigned long long)info->memory_free, (unsigned long long)info->memory_total);
  CTS_CHECK(info->compute_units > 0, "compute_units is 0");
  CTS_CHECK(info->index >= 0, "negative index %d", info->index);
  CTS_CHECK(info->type <= ACCEL_DEVICE_TYPE_OTHER, "unknown device type %d", (int)info->type);
  CTS_CHECK(info->supports_fp16 <= 1 && info->supports_bf16 <= 1 && info->native_graphs <= 1 &&
                info->lazy_default <= 1 && info->host_accessible <= 1,
            "boolean info fields must be 0 or 1");
  /* Fresh info agrees with the info taken when the device was opened. */
  accel_device_info_t again;
  CTS_OK(accel_device_get_info(ctx->dev, &again));
  CTS_CHECK(strcmp(again.name, info->name) == 0 && again.memory_total == info->memory_total &&
                again.index == info->index,
            "device info changed between calls");
  return CTS_PASS;
}

CTS_CASE(device_backend_listed, CTS_TAG_NONE) {
  int n = accel_backend_count();
  CTS_CHECK(n >= 1, "accel_backend_count() = %d", n);
  int found_cpu = 0, found_own = 0;
  for (int i = 0; i < n; i++) {
    accel_backend_t *b = NULL;
    CTS_OK(accel_backend_get(i, &b));
    const char *name = accel_backend_name(b);
    CTS_CHECK(name && name[0], "backend %d has no name", i);
    for (int j = 0; j < i; j++) {
      accel_backend_t *other = NULL;
      CTS_OK(accel_backend_get(j, &other));
      CTS_CHECK(strcmp(accel_backend_name(other), name) != 0, "backend '%s' listed twice", name);
    }
    found_cpu |= strcmp(name, "cpu") == 0;
    found_own |= strcmp(name, ctx->info.backend) == 0;
  }
  CTS_CHECK(found_cpu, "the cpu backend is not listed");
  CTS_CHECK(found_own, "the device's backend '%s' is not listed", ctx->info.backend);

  accel_backend_t *own = NULL;
  CTS_OK(accel_backend_find(ctx->info.backend, &own));
  const char *reason = NULL;
  CTS_OK(accel_backend_status(own, &reason));
  int count = 0;
  CTS_OK(accel_device_count(own, &count));
  CTS_CHECK(count > ctx->info.index, "device_count %d but the device has index %d", count,
            ctx->info.index);
  accel_backend_t *none = NULL;
  CTS_CHECK(accel_backend_find("no-such-backend", &none) != ACCEL_OK, "found 'no-such-backend'");
  CTS_CHECK(none == NULL, "output written on failure");
  CTS_CHECK(accel_last_error()[0] != '\0', "no message for an unknown backend");
  return CTS_PASS;
}

CTS_CASE(device_open_twice_same_handle, CTS_TAG_NONE) {
  char selector[64];
  snprintf(selector, sizeof(selector), "%s:%d", ctx->info.backend, ctx->info.index);
  accel_device_t *a = NULL, *b = NULL;
  CTS_OK(accel_device_open(selector, &a));
  accel_status_t st = accel_device_open(selector, &b);
  int same_a = a == ctx->dev, same_b = b == ctx->dev;
  accel_device_close(a);
  if (st == ACCEL_OK) accel_device_close(b);
  CTS_CHECK(st == ACCEL_OK, "second open of %s failed: %s", selector, accel_status_name(st));
  CTS_CHECK(same_a && same_b, "opening %s again gave a different handle", selector);
  /* The suite's own reference survived the two closes. */
  accel_device_info_t info;
  CTS_OK(accel_device_get_info(ctx->dev, &info));
  return CTS_PASS;
}

CTS_CASE(device_bad_index, CTS_TAG_NONE) {
  char selector[64];
  snprintf(selector, sizeof(selector), "%s:9999", ctx->info.backend);
  accel_device_t *d = NULL;
  accel_status_t st = accel_device_open(selector, &d);
  CTS_CHECK(st != ACCEL_OK, "opening %s succeeded", selector);
  CTS_CHECK(d == NULL, "output written on failure");
  CTS_CHECK(accel_last_error()[0] != '\0', "no error message for %s", selector);
  return CTS_PASS;
}

CTS_CASE(device_synchronize_idle_and_busy, CTS_TAG_NONE) {
  CTS_OK(accel_device_synchronize(ctx->dev));
  accel_stream_t *s = NULL;
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  atomic_int flag;
  atomic_init(&flag, 0);
  CTS_OK(accel_launch_host_func(s, cts_sleep_host_fn, (void *)(uintptr_t)10));
  CTS_OK(accel_launch_host_func(s, cts_flag_host_fn, &flag));
  CTS_OK(accel_stream_flush(s));
  CTS_OK(accel_device_synchronize(ctx->dev));
  int seen = atomic_load(&flag);
  CTS_OK(accel_stream_destroy(s));
  CTS_CHECK(seen == 1, "accel_device_synchronize returned before a stream's work finished");
  return CTS_PASS;
}

CTS_CASE(device_version_string, CTS_TAG_NONE) {
  char want[32];
  snprintf(want, sizeof(want), "%d.%d.%d", ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR,
           ACCEL_VERSION_PATCH);
  CTS_CHECK(strcmp(accel_version_string(), want) == 0, "library version %s, headers %s",
            accel_version_string(), want);
  return CTS_PASS;
}
