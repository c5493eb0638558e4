/*
 * Communicators (include/accel/accel_comm.h): creation over MPI (a host engine directly, a
 * stream engine bootstrapped through the host engine), split, destroy, queries and the failure
 * record. Issuing collectives is core/comm_enqueue.c's.
 *
 * Failure model: the first collective that fails when it runs (engine error or
 * ACCEL_COMM_TIMEOUT) records its status and message in the communicator; later collectives on
 * it are skipped, so no rank waits on peers that are gone. accel_comm_get_error reports it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "comm_internal.h"
#include "core_util.h"
#include "log.h"

#define DEFAULT_TIMEOUT_S 300.0

double accel_comm_timeout(void) {
  const char *e = accel_env("ACCEL_COMM_TIMEOUT");
  if (!e) return DEFAULT_TIMEOUT_S;
  char *end = NULL;
  double v = strtod(e, &end);
  if (end == e || *end || !(v > 0) || !isfinite(v)) {
    accel_log(ACCEL_LOG_WARN, "comm", "ACCEL_COMM_TIMEOUT=%s is not a positive number of "
              "seconds; using %.0f", e, DEFAULT_TIMEOUT_S);
    return DEFAULT_TIMEOUT_S;
  }
  return v;
}

void accel_comm_release_ref(accel_comm_t *c) {
  if (atomic_fetch_sub(&c->hdr.refcount, 1) != 1) return;
  accel_comm_live_remove(&c->live);
  c->ev->comm_destroy(c->impl);
  accel_device_release_ref(c->dev);
  pthread_mutex_destroy(&c->lock);
  pthread_mutex_destroy(&c->engine_lock);
  free(c);
}

accel_status_t accel_comm_handle_check(accel_comm_t *c, const char *fn) {
  return accel_handle_check(c, ACCEL_HANDLE_COMM, fn);
}

void accel_comm_fail(accel_comm_t *c, accel_status_t status, const char *what) {
  pthread_mutex_lock(&c->lock);
  if (!atomic_load(&c->failed)) {
    c->error = status;
    snprintf(c->message, sizeof c->message, "%s", what);
    atomic_store(&c->failed, 1);
  }
  pthread_mutex_unlock(&c->lock);
  accel_log(ACCEL_LOG_ERROR, "comm", "rank %d: %s", c->rank, what);
}

static accel_status_t comm_new(accel_device_t *dev, const accel_comm_engine_vtable_t *ev,
                               accel_ce_comm_t *impl, int rank, int size, accel_comm_t **out) {
  accel_comm_t *c = calloc(1, sizeof *c);
  if (!c) {
    ev->comm_destroy(impl);
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory (communicator)");
  }
  c->dev = dev;
  accel_device_retain(dev);
  c->ev = ev;
  c->impl = impl;
  c->rank = rank;
  c->size = size;
  static atomic_uint_least64_t next_serial = 1;
  c->serial = atomic_fetch_add(&next_serial, 1);
  c->timeout_s = accel_comm_timeout();
  accel_comm_checker_init(&c->check, accel_comm_check_mode(), ev, impl, rank, size,
                          c->timeout_s);
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_init(&c->engine_lock, NULL);
  c->live.dev = dev;
  c->live.timeout_s = c->timeout_s;
  accel_comm_live_add(&c->live);
  accel_handle_register(&c->hdr, ACCEL_HANDLE_COMM, dev->backend->vt);
  *out = c;
  return ACCEL_OK;
}

/* ACCEL_COMM_ENGINE, else the one the device's backend names (core names none itself). */
static const char *default_engine(accel_device_t *dev) {
  const char *e = accel_env("ACCEL_COMM_ENGINE");
  return e ? e : accel_backend_comm_engine(dev->backend);
}

typedef struct boot_ctx {
  const accel_comm_engine_vtable_t *hv;
  accel_ce_comm_t *host;
  double timeout_s;
} boot_ctx_t;

static accel_status_t boot_all_gather(void *ctx, const void *send, void *recv, size_t bytes) {
  boot_ctx_t *b = ctx;
  return b->hv->host_all_gather(b->host, send, recv, bytes, b->timeout_s);
}

/* A stream engine over the device's native handles, bootstrapped through an MPI
 * communicator that is freed once the engine's communicator exists. */
static accel_status_t create_stream_engine(accel_device_t *dev, const void *mpi_comm,
                                           const accel_comm_engine_vtable_t *ev,
                                           accel_ce_comm_t **out, int *rank, int *size) {
  const accel_backend_vtable_t *bv = dev->backend->vt;
  if (bv->struct_size < offsetof(accel_backend_vtable_t, device_native) + sizeof(void *) ||
      !bv->device_native)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "accel_comm_create_mpi: engine '%s' needs the native device of "
                           "backend '%s', which does not expose it", ev->name,
                           dev->backend->name);
  accel_native_t native = {.struct_size = sizeof native};
  accel_status_t st = bv->device_native(dev->impl, &native);
  if (st != ACCEL_OK) return st;
  const accel_comm_engine_vtable_t *hv = NULL;
  st = accel_comm_engine_get(accel_host_comm_engine(), "accel_comm_create_mpi", &hv);
  if (st != ACCEL_OK) return st;
  boot_ctx_t b = {.hv = hv, .timeout_s = accel_comm_timeout()};
  st = hv->comm_create_mpi(mpi_comm, &b.host, rank, size);
  if (st != ACCEL_OK) return st;
  accel_comm_bootstrap_t boot = {
      .rank = *rank, .size = *size, .ctx = &b, .all_gather = boot_all_gather};
  st = ev->comm_create_bootstrap(&boot, &native, out);
  hv->comm_destroy(b.host);
  return st;
}

accel_status_t accel_comm_create_mpi(accel_device_t *dev, const void *mpi_comm,
                                     const char *engine, accel_comm_t **out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  st = accel_capture_check_none(__func__);
  if (st != ACCEL_OK) return st;
  const char *name = engine ? engine : default_engine(dev);
  const accel_comm_engine_vtable_t *ev = NULL;
  st = accel_comm_engine_get(name, __func__, &ev);
  if (st != ACCEL_OK) return st;
  if (ev->host_engine && !dev->info.host_accessible)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "%s: engine '%s' runs on the host and device %s (%s) has memory the "
                           "host cannot access; use the device's own engine", __func__, name,
                           dev->info.name, dev->backend->name);
  accel_ce_comm_t *impl = NULL;
  int rank = 0, size = 0;
  st = ev->host_engine ? ev->comm_create_mpi(mpi_comm, &impl, &rank, &size)
                       : create_stream_engine(dev, mpi_comm, ev, &impl, &rank, &size);
  if (st != ACCEL_OK) return st;
  return comm_new(dev, ev, impl, rank, size, out);
}

accel_status_t accel_comm_split(accel_comm_t *c, int color, int key, accel_comm_t **out) {
  accel_status_t st = accel_comm_handle_check(c, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  st = accel_capture_check_none(__func__);
  if (st != ACCEL_OK) return st;
  if (atomic_load(&c->failed))
    return accel_set_error(c->error, "%s: communicator failed earlier: %s", __func__,
                           c->message);
  accel_ce_comm_t *impl = NULL;
  int rank = 0, size = 0;
  st = c->ev->comm_split(c->impl, color < 0 ? -1 : color, key, &impl, &rank, &size);
  if (st != ACCEL_OK) return st;
  *out = NULL;
  if (!impl) return ACCEL_OK; /* color < 0: no group */
  return comm_new(c->dev, c->ev, impl, rank, size, out);
}

static accel_status_t comm_release_user(accel_comm_t *c, const char *fn) {
  accel_status_t st = accel_handle_drop_user(c, ACCEL_HANDLE_COMM, fn);
  if (st != ACCEL_OK) return st;
  accel_comm_release_ref(c);
  return ACCEL_OK;
}

ACCEL_DEFINE_RELEASE(accel_comm_t, accel_comm_release, accel_comm_destroy, comm_release_user)

accel_status_t accel_comm_rank(accel_comm_t *c, int *rank) {
  accel_status_t st = accel_comm_handle_check(c, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(rank, __func__, "rank is NULL");
  *rank = c->rank;
  return ACCEL_OK;
}

accel_status_t accel_comm_size(accel_comm_t *c, int *size) {
  accel_status_t st = accel_comm_handle_check(c, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(size, __func__, "size is NULL");
  *size = c->size;
  return ACCEL_OK;
}

const char *accel_comm_engine_name(accel_comm_t *c) {
  return accel_comm_handle_check(c, __func__) == ACCEL_OK ? c->ev->name : NULL;
}

accel_status_t accel_comm_get_error(accel_comm_t *c) {
  accel_status_t st = accel_comm_handle_check(c, __func__);
  if (st != ACCEL_OK) return st;
  if (!atomic_load(&c->failed)) return ACCEL_OK;
  pthread_mutex_lock(&c->lock);
  st = accel_set_error(c->error, "%s: %s", __func__, c->message);
  pthread_mutex_unlock(&c->lock);
  return st;
}

accel_status_t accel_comm_abort(accel_comm_t *c, int errorcode) {
  accel_status_t st = accel_comm_handle_check(c, __func__);
  if (st != ACCEL_OK) return st;
  c->ev->abort(c->impl, errorcode);
  return accel_set_error(ACCEL_ERROR_BACKEND, "%s: engine '%s' did not end the job", __func__,
                         c->ev->name);
}

