/* Device selection, lifetime and info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "device.h"
#include "kernel_support.h"
#include "log.h"
#include "trace.h"

/* device.h: filled by external_memory.c at load. */
accel_device_external_hooks_t accel_device_external;

accel_status_t accel_device_check(accel_device_t *dev, const char *fn) {
  return accel_handle_check(dev, ACCEL_HANDLE_DEVICE, fn);
}

void accel_device_retain(accel_device_t *dev) {
  pthread_mutex_lock(&dev->backend->lock);
  atomic_fetch_add(&dev->hdr.refcount, 1);
  pthread_mutex_unlock(&dev->backend->lock);
}

/* Frees the device struct (its locks), after everything it held is gone. */
static void device_free(accel_device_t *dev) {
  pthread_mutex_destroy(&dev->lock);
  pthread_mutex_destroy(&dev->retire_lock);
  free(dev);
}

static void device_teardown(accel_device_t *dev) {
  accel_device_drain(dev);
  /* a release run here may retire more (a graph's pool): until none is left */
  accel_callbacks_begin(); /* the last reference is no host function's: its stream held one */
  while (atomic_load(&dev->nretired) || atomic_load(&dev->ncallbacks))
    accel_device_reap(dev, true);
  accel_callbacks_end();
  if (dev->upload_stream) accel_device_stream_ops.release(dev->upload_stream);
  if (dev->default_stream) accel_device_stream_ops.release(dev->default_stream);
  if (dev->kernel_state) accel_kernel_state_destroy(dev, dev->kernel_state);
  accel_device_external.teardown(dev); /* registrations the user never ended */
  accel_allocator_destroy(dev->mem);
  /* host blocks the user never freed go back with the device */
  for (size_t i = 0; i < dev->host_allocs.cap; ++i)
    if (dev->host_allocs.slots[i].key)
      dev->backend->vt->host_free(dev->impl, (void *)dev->host_allocs.slots[i].key);
  accel_hashtab_free(&dev->host_allocs);
  dev->backend->vt->device_close(dev->impl);
  accel_handle_unregister(&dev->hdr);
  device_free(dev);
}

void accel_device_release_ref(accel_device_t *dev) {
  accel_backend_t *b = dev->backend;
  pthread_mutex_lock(&b->lock);
  bool last = atomic_fetch_sub(&dev->hdr.refcount, 1) == 1;
  if (last && !dev->wrapped) b->devices[dev->index] = NULL;
  pthread_mutex_unlock(&b->lock);
  if (last) device_teardown(dev);
}

/* The backend half of a device: opened by index, or wrapped over native (then the plugin
 * says which enumerated device the context runs on, and that device's info is read). */
static accel_status_t device_impl(accel_backend_t *b, accel_device_t *dev,
                                  const accel_native_t *native) {
  if (!native) {
    accel_status_t st = b->vt->device_info(b->state, dev->index, &dev->info);
    if (st == ACCEL_OK) st = b->vt->device_open(b->state, dev->index, &dev->impl);
    if (st != ACCEL_OK)
      return accel_set_error(st, "opening %s:%d failed: %s", b->name, dev->index,
                             accel_last_error());
    return ACCEL_OK;
  }
  accel_status_t st = b->vt->device_wrap_native(b->state, native, &dev->index, &dev->impl);
  if (st != ACCEL_OK)
    return accel_set_error(st, "accel_device_wrap_native: %s", accel_last_error());
  if (dev->index < 0 || dev->index >= b->device_count)
    st = accel_set_error(ACCEL_ERROR_PLUGIN,
                         "accel_device_wrap_native: the %s plugin named device index %d of %d",
                         b->name, dev->index, b->device_count);
  else if ((st = b->vt->device_info(b->state, dev->index, &dev->info)) != ACCEL_OK)
    st = accel_set_error(st, "accel_device_wrap_native: device_info of %s:%d: %s", b->name,
                         dev->index, accel_last_error());
  if (st != ACCEL_OK) b->vt->device_close(dev->impl);
  return st;
}

static accel_status_t device_create(accel_backend_t *b, int index, const accel_native_t *native,
                                    accel_device_t **out) {
  accel_device_t *dev = calloc(1, sizeof *dev);
  if (!dev) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  dev->backend = b;
  dev->index = index;
  dev->wrapped = native != NULL;
  pthread_mutex_init(&dev->lock, NULL);
  dev->host_allocs.min_cap = 64;
  pthread_mutex_init(&dev->retire_lock, NULL);
  accel_status_t st = device_impl(b, dev, native);
  if (st != ACCEL_OK) {
    device_free(dev);
    return st;
  }
  index = dev->index;
  snprintf(dev->info.backend, sizeof dev->info.backend, "%s", b->name);
  dev->info.index = index;
  const char *lazy_env = accel_env("ACCEL_LAZY");
  dev->lazy_default = lazy_env ? accel_env_flag("ACCEL_LAZY", false) : dev->info.lazy_default;
  if (accel_env_flag("ACCEL_DISABLE_GRAPHS", false)) dev->info.native_graphs = 0;
  st = accel_allocator_create(b->vt, dev->impl, &dev->mem);
  if (st == ACCEL_OK) {
    /* a free of memory a registration (of any device) covers is refused */
    accel_allocator_set_guard(dev->mem, accel_device_external.check_free);
    accel_handle_register(&dev->hdr, ACCEL_HANDLE_DEVICE, b->vt);
    dev->trace_id = accel_trace_new_track(native ? "wrapped device" : "device", b->name, index);
    st = accel_device_stream_ops.create(dev, ACCEL_STREAM_DEFAULT, true, false,
                                        &dev->default_stream);
    if (st != ACCEL_OK) {
      accel_handle_unregister(&dev->hdr);
      accel_allocator_destroy(dev->mem);
    }
  }
  if (st != ACCEL_OK) {
    b->vt->device_close(dev->impl);
    device_free(dev);
    return st;
  }
  *out = dev;
  return ACCEL_OK;
}

/* Opens (or retains) device index of backend b. */
static accel_status_t open_index(accel_backend_t *b, int index, accel_device_t **out) {
  accel_status_t st = accel_backend_ensure_init(b);
  if (st != ACCEL_OK) return st;
  if (index < 0 || index >= b->device_count)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "device index %d out of range: backend '%s' has %d device(s)", index,
                           b->name, b->device_count);
  pthread_mutex_lock(&b->lock);
  accel_device_t *dev = b->devices[index];
  if (dev) {
    /* another user reference: re-registers a device whose user closed it while streams,
     * events or graphs kept it alive */
    atomic_fetch_add(&dev->hdr.refcount, 1);
    accel_handle_add_user(&dev->hdr);
  } else {
    st = device_create(b, index, NULL, &dev);
    if (st == ACCEL_OK) b->devices[index] = dev;
  }
  pthread_mutex_unlock(&b->lock);
  if (st == ACCEL_OK) {
    *out = dev;
    accel_log(ACCEL_LOG_INFO, "accel", "opened %s:%d (%s)", b->name, index, dev->info.name);
  }
  return st;
}

accel_status_t accel_device_create_wrapped(accel_backend_t *b, const accel_native_t *native,
                                           accel_device_t **out) {
  accel_status_t st = device_create(b, -1, native, out);
  if (st == ACCEL_OK)
    accel_log(ACCEL_LOG_INFO, "accel", "wrapped a native context on %s:%d (%s)", b->name,
              (*out)->index, (*out)->info.name);
  return st;
}

static accel_status_t open_selector(const char *selector, accel_device_t **out) {
  char name[64];
  int index = 0;
  const char *colon = strchr(selector, ':');
  size_t len = colon ? (size_t)(colon - selector) : strlen(selector);
  if (len == 0 || len >= sizeof name)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "invalid device selector '%s' (expected backend[:index])", selector);
  memcpy(name, selector, len);
  name[len] = '\0';
  if (colon) {
    char *end = NULL;
    long v = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || v < 0 || v > 1 << 20)
      return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                             "invalid device index in selector '%s'", selector);
    index = (int)v;
  }
  accel_backend_t *b = NULL;
  accel_status_t st = accel_backend_find(name, &b);
  if (st != ACCEL_OK) return st;
  return open_index(b, index, out);
}

static accel_status_t device_create_as(const char *selector, accel_device_t **out,
                                       const char *fn) {
  ACCEL_REQUIRE_ARG(out, fn, "out is NULL");
  accel_registry_ensure_loaded();
  accel_trace_scope_t t = accel_trace_begin(0, "device_open");
  const char *sel = selector ? selector : accel_env("ACCEL_BACKEND");
  accel_status_t st = sel ? open_selector(sel, out) : accel_device_open_ranked(out);
  accel_trace_end(&t);
  return st;
}

accel_status_t accel_device_create(const char *selector, accel_device_t **out) {
  return device_create_as(selector, out, __func__);
}

/* The old name of accel_device_create (docs/API.md, "Lifetime verbs"): the same call,
 * kept for source and for binaries linked against it. */
accel_status_t accel_device_open(const char *selector, accel_device_t **out) {
  return device_create_as(selector, out, __func__);
}

static accel_status_t device_release_user(accel_device_t *dev, const char *fn) {
  /* one close per open: a close too many finds no user reference left */
  accel_status_t st = accel_handle_drop_user(dev, ACCEL_HANDLE_DEVICE, fn);
  if (st != ACCEL_OK) return st;
  /* a retired release holds the device: run those whose fence completed (e.g. a graph
   * destroyed while replaying, its stream destroyed since), or nothing might ever reap them
   * and the device would outlive its last user (not waiting: a host function may close) */
  accel_device_reap(dev, false);
  accel_device_callbacks_if_idle(dev); /* DLPack deleters: not inside a host function */
  accel_device_release_ref(dev);
  return ACCEL_OK;
}

ACCEL_DEFINE_RELEASE(accel_device_t, accel_device_release, accel_device_close, device_release_user)

accel_status_t accel_device_get_info(accel_device_t *dev, accel_device_info_t *info) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(info, __func__, "info is NULL");
  *info = dev->info;
  if (dev->backend->vt->mem_info) {
    uint64_t free_b = 0, total_b = 0;
    if (dev->backend->vt->mem_info(dev->impl, &free_b, &total_b) == ACCEL_OK) {
      info->memory_free = free_b;
      info->memory_total = total_b;
    }
  }
  return ACCEL_OK;
}

accel_status_t accel_device_check_kernel(accel_device_t *dev, const char *fn, uint32_t id) {
  const accel_backend_t *b = dev->backend;
  if (id < b->vt->kernel_count) return ACCEL_OK;
  return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                         "%s: kernel %s (id %u) is newer than backend '%s': its plugin was built "
                         "with %u of this libaccel's %u kernels",
                         fn, accel_kernel_names[id], id, b->name, b->vt->kernel_count,
                         (unsigned)ACCEL_KERNEL_COUNT);
}

/* Synchronizes every stream of the device without capture checks. The device lock is held only
 * to list the streams (each retained), never while waiting: a host function may call into the
 * device meanwhile. */
accel_status_t accel_device_drain(accel_device_t *dev) {
  accel_stream_t **streams = NULL;
  size_t n = 0;
  accel_status_t first = accel_device_streams(dev, &streams, &n);
  if (first != ACCEL_OK) return first;
  if (dev->backend->vt->device_synchronize) {
    /* flush lazy queues first: the backend only sees submitted work */
    for (size_t i = 0; i < n; ++i) {
      accel_device_stream_ops.flush(streams[i]);
    }
    first = dev->backend->vt->device_synchronize(dev->impl);
  } else {
    for (size_t i = 0; i < n; ++i) {
      accel_status_t st = accel_device_stream_ops.sync(streams[i]);
      if (first == ACCEL_OK) first = st;
    }
  }
  accel_device_streams_release(streams, n);
  return first;
}

accel_status_t accel_device_synchronize(accel_device_t *dev) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  st = accel_device_stream_ops.check_unsafe(__func__, NULL);
  if (st != ACCEL_OK) return st;
  accel_trace_scope_t t = accel_trace_begin(dev->trace_id, "device_synchronize");
  st = accel_device_drain(dev);
  accel_callbacks_begin(); /* a waiting call: never a host function's (DLPack deleters run) */
  accel_device_reap(dev, false); /* every fence before the drain is complete now */
  accel_callbacks_end();
  accel_trace_end(&t);
  return st;
}

void **accel_device_kernel_state(accel_device_t *dev) { return &dev->kernel_state; }
