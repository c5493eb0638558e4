/*
 * A minimal backend for the loader tests: one device whose "device memory" is host memory and
 * whose streams run every command synchronously on the calling thread. It is complete enough
 * to be opened by name and to run copies, memsets, host functions and events; kernels are
 * reported UNSUPPORTED, or run through host->run_kernel_c with FAKE_HOST_KERNELS. It declares
 * the kernel ABI of the header it was built with (-DACCEL_KERNEL_ABI_VERSION=... overrides it)
 * and FAKE_KERNEL_COUNT kernels (default: all of them). fake_query.c wraps it into the scenario
 * each test plugin represents.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel_kernel_abi.h"
#include "accel/accel_plugin.h"

#ifndef FAKE_NAME
#define FAKE_NAME "fake"
#endif
/* The device type it reports (the ranking tests build GPU- and CPU-type variants). */
#ifndef FAKE_DEVICE_TYPE
#define FAKE_DEVICE_TYPE ACCEL_DEVICE_TYPE_OTHER
#endif
/* What device_count reports (the negative_count / huge_count plugins lie). */
#ifndef FAKE_DEVICE_COUNT
#define FAKE_DEVICE_COUNT 1
#endif
#ifndef FAKE_KERNEL_COUNT
#define FAKE_KERNEL_COUNT ACCEL_KERNEL_ID_COUNT
#endif

static const accel_host_api_t *g_host;

typedef struct fake_event {
  int timing;
  int recorded;
  double ms; /* CLOCK_MONOTONIC time of the last record */
} fake_event_t;

/* Distinct non-NULL handles; the fake keeps no per-object state for these. */
static int g_backend_tag, g_device_tag;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static accel_status_t fake_backend_init(const accel_host_api_t *host, accel_be_backend_t **out) {
  g_host = host;
  *out = &g_backend_tag;
  return ACCEL_OK;
}

/* Appends one line to $FAKE_SHUTDOWN_LOG per call: the shutdown test counts them. */
static void fake_backend_shutdown(accel_be_backend_t *backend) {
  const char *log = getenv("FAKE_SHUTDOWN_LOG");
  FILE *f = log ? fopen(log, "a") : NULL;
  if (f) {
    fprintf(f, "backend_shutdown %s\n", backend == &g_backend_tag ? "ok" : "wrong backend");
    fclose(f);
  }
}

static accel_status_t fake_device_count(accel_be_backend_t *backend, int *count) {
  (void)backend;
  *count = FAKE_DEVICE_COUNT;
  return ACCEL_OK;
}

static accel_status_t fake_device_info(accel_be_backend_t *backend, int index,
                                       accel_device_info_t *info) {
  (void)backend;
  memset(info, 0, sizeof(*info));
  strcpy(info->name, "accel test fake device");
  strcpy(info->vendor, "accel tests");
  strcpy(info->backend, FAKE_NAME);
  strcpy(info->driver_version, "1");
  info->index = index;
  info->type = FAKE_DEVICE_TYPE;
  info->memory_total = 1ull << 30;
  info->memory_free = 1ull << 30;
  info->compute_units = 1;
  info->host_accessible = 1;
  return ACCEL_OK;
}

static accel_status_t fake_device_open(accel_be_backend_t *backend, int index,
                                       accel_be_device_t **out) {
  (void)backend;
  (void)index;
  *out = &g_device_tag;
  return ACCEL_OK;
}

static void fake_device_close(accel_be_device_t *device) { (void)device; }

static accel_status_t fake_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  (void)device;
  size_t rounded = (size + 255) & ~(size_t)255;
  void *p = rounded >= size ? aligned_alloc(256, rounded) : NULL;
  if (!p) return g_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "fake: aligned_alloc(%zu) failed", size);
  *ptr = p;
  return ACCEL_OK;
}

static void fake_mem_free(accel_be_device_t *device, void *ptr) {
  (void)device;
  free(ptr);
}

static accel_status_t fake_stream_create(accel_be_device_t *device, accel_be_stream_t **out) {
  (void)device;
  /* One byte per stream so that streams are distinct pointers. */
  void *s = malloc(1);
  if (!s) return g_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "fake: malloc(stream) failed");
  *out = s;
  return ACCEL_OK;
}

static void fake_stream_destroy(accel_be_stream_t *stream) { free(stream); }

/* Every command already ran when it was submitted. */
static accel_status_t fake_stream_done(accel_be_stream_t *stream) {
  (void)stream;
  return ACCEL_OK;
}

static accel_status_t fake_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event) {
  (void)stream;
  (void)event;
  return ACCEL_OK;
}

static accel_status_t fake_event_create(accel_be_device_t *device, unsigned flags,
                                        accel_be_event_t **out) {
  (void)device;
  fake_event_t *e = calloc(1, sizeof(*e));
  if (!e) return g_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "fake: calloc(event) failed");
  e->timing = !(flags & ACCEL_EVENT_DISABLE_TIMING);
  *out = e;
  return ACCEL_OK;
}

static void fake_event_destroy(accel_be_event_t *event) { free(event); }

static accel_status_t fake_event_record(accel_be_event_t *event, accel_be_stream_t *stream) {
  (void)stream;
  fake_event_t *e = event;
  e->recorded = 1;
  e->ms = now_ms();
  return ACCEL_OK;
}

static accel_status_t fake_event_done(accel_be_event_t *event) {
  (void)event;
  return ACCEL_OK;
}

static accel_status_t fake_event_elapsed_ms(accel_be_event_t *start, accel_be_event_t *end,
                                            float *ms) {
  fake_event_t *a = start, *b = end;
  if (!a->timing || !b->timing)
    return g_host->set_error(ACCEL_ERROR_INVALID_ARGUMENT, "fake: event created without timing");
  if (!a->recorded || !b->recorded)
    return g_host->set_error(ACCEL_ERROR_STATE, "fake: event never recorded");
  *ms = (float)(b->ms - a->ms);
  return ACCEL_OK;
}

static accel_status_t fake_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                        size_t size, accel_copy_kind_t kind) {
  (void)stream;
  (void)kind;
  memmove(dst, src, size);
  return ACCEL_OK;
}

static accel_status_t fake_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                        size_t size) {
  (void)stream;
  memset(dst, value, size);
  return ACCEL_OK;
}

static accel_status_t fake_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn,
                                            void *user) {
  (void)stream;
  fn(user);
  return ACCEL_OK;
}

#ifdef FAKE_HOST_KERNELS
/* Kernels through host->run_kernel_c (synchronously). Before each launch, three malformed
 * copies of it must be refused with INVALID_ARGUMENT and a message naming run_kernel_c, read
 * back through host->last_error; the host must state the kernel ABI this plugin was built
 * with. */
static accel_status_t expect_refused(accel_kernel_launch_t bad, const char *what) {
  accel_status_t st = g_host->run_kernel_c(&bad);
  if (st != ACCEL_ERROR_INVALID_ARGUMENT)
    return g_host->set_error(ACCEL_ERROR_BACKEND, "fake: run_kernel_c accepted %s (status %d)",
                             what, (int)st);
  const char *msg = g_host->last_error();
  if (!strstr(msg, "run_kernel_c"))
    return g_host->set_error(ACCEL_ERROR_BACKEND, "fake: last_error after %s: '%s'", what, msg);
  return ACCEL_OK;
}

static accel_status_t fake_launch_kernel(accel_be_stream_t *stream,
                                         const accel_kernel_launch_t *launch) {
  (void)stream;
  if (g_host->kernel_abi_version != ACCEL_KERNEL_ABI_VERSION ||
      g_host->kernel_count != ACCEL_KERNEL_ID_COUNT)
    return g_host->set_error(ACCEL_ERROR_BACKEND,
                             "fake: host states kernel ABI %u with %u kernels, built with %u, %u",
                             g_host->kernel_abi_version, g_host->kernel_count,
                             ACCEL_KERNEL_ABI_VERSION, ACCEL_KERNEL_ID_COUNT);
  accel_kernel_launch_t bad = *launch;
  bad.params_size = launch->params_size - 4;
  accel_status_t st = expect_refused(bad, "a short parameter block");
  bad = *launch;
  bad.kernel_id = 100000;
  if (st == ACCEL_OK) st = expect_refused(bad, "an unknown kernel id");
  bad = *launch;
  bad.num_blocks = 0;
  if (st == ACCEL_OK) st = expect_refused(bad, "0 blocks");
  return st == ACCEL_OK ? g_host->run_kernel_c(launch) : st;
}
#else
static accel_status_t fake_launch_kernel(accel_be_stream_t *stream,
                                         const accel_kernel_launch_t *launch) {
  (void)stream;
  return g_host->set_error(ACCEL_ERROR_UNSUPPORTED, "fake: no kernels (asked for %s)",
                           launch->kernel_name);
}
#endif

static const accel_backend_vtable_t k_fake_vtable = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_backend_vtable_t),
    .name = FAKE_NAME,
#ifdef FAKE_VISIBLE_ENV
    .visible_devices_env = FAKE_VISIBLE_ENV,
#endif
    .description = "accel loader-test backend (synchronous, host memory)",
    .backend_init = fake_backend_init,
    .backend_shutdown = fake_backend_shutdown,
    .device_count = fake_device_count,
    .device_info = fake_device_info,
    .device_open = fake_device_open,
    .device_close = fake_device_close,
    .mem_alloc = fake_mem_alloc,
    .mem_free = fake_mem_free,
    .host_alloc = fake_mem_alloc,
    .host_free = fake_mem_free,
    .stream_create = fake_stream_create,
    .stream_destroy = fake_stream_destroy,
    .stream_synchronize = fake_stream_done,
    .stream_query = fake_stream_done,
    .stream_wait_event = fake_stream_wait_event,
    .event_create = fake_event_create,
    .event_destroy = fake_event_destroy,
    .event_record = fake_event_record,
    .event_synchronize = fake_event_done,
    .event_query = fake_event_done,
    .event_elapsed_ms = fake_event_elapsed_ms,
    .memcpy_async = fake_memcpy_async,
    .memset_async = fake_memset_async,
    .launch_host_func = fake_launch_host_func,
    .launch_kernel = fake_launch_kernel,
#ifdef FAKE_HOST_KERNELS
    .kernel_forms = ACCEL_KERNEL_FORM_HOST_C,
#endif
    .kernel_abi_version = ACCEL_KERNEL_ABI_VERSION,
    .kernel_count = FAKE_KERNEL_COUNT,
};

/* Linked into every test plugin built with fake_query.c (declared there). */
const accel_backend_vtable_t *fake_backend_vtable(void);
const accel_backend_vtable_t *fake_backend_vtable(void) { return &k_fake_vtable; }
