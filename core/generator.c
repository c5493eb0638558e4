/*
 * Random-number generators (accel_random.h): a Philox key and 128-bit counter in device
 * memory, a handle over it, forks that share their root's stream numbers, and the state copies
 * (stream-ordered, so they may be captured). The launches are generator_ops.c's.
 */
#include <stddef.h>
#include <stdlib.h>

#include "accel_kernel_abi_host.h"
#include "core_util.h"
#include "device.h"
#include "generator.h"
#include "kernel_support.h"
#include "log.h"

_Static_assert(sizeof(accel_generator_state_t) == sizeof(acc_philox_state_t) &&
                   offsetof(accel_generator_state_t, key) == offsetof(acc_philox_state_t, key0) &&
                   offsetof(accel_generator_state_t, counter) ==
                       offsetof(acc_philox_state_t, ctr0),
               "accel_generator_state_t and the kernels' acc_philox_state_t differ");

accel_status_t accel_generator_check(accel_generator_t *gen, accel_stream_t *stream,
                                     const char *fn, accel_device_t **dev) {
  accel_status_t st = accel_stream_check(stream, fn, dev);
  if (st != ACCEL_OK) return st;
  st = accel_handle_check(gen, ACCEL_HANDLE_GENERATOR, fn);
  if (st != ACCEL_OK) return st;
  if (gen->dev != *dev)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the generator belongs to another device than the stream", fn);
  return ACCEL_OK;
}

static void family_release(accel_generator_family_t *f) {
  if (atomic_fetch_sub(&f->refcount, 1) == 1) free(f);
}

static void generator_release_ref(accel_generator_t *g) {
  if (atomic_fetch_sub(&g->hdr.refcount, 1) != 1) return;
  /* Graphs that captured its launches pin the block: the free completes at their last unpin. */
  if (accel_free(g->dev, g->state) != ACCEL_OK)
    accel_log(ACCEL_LOG_WARN, "random", "generator state not freed: %s", accel_last_error());
  family_release(g->family);
  accel_device_release_ref(g->dev);
  free(g);
}

/* A generator of dev in family f (a new reference to it) whose state is init. */
static accel_status_t generator_new(accel_device_t *dev, accel_generator_family_t *f,
                                    const accel_generator_state_t *init, const char *fn,
                                    accel_generator_t **out) {
  accel_generator_t *g = calloc(1, sizeof *g);
  if (!g) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  accel_status_t st = accel_malloc(dev, sizeof *init, (void **)&g->state);
  if (st == ACCEL_OK) {
    st = accel_memcpy(dev, g->state, init, sizeof *init);
    if (st != ACCEL_OK) (void)accel_free(dev, g->state);
  }
  if (st != ACCEL_OK) {
    free(g);
    return st;
  }
  g->dev = dev;
  accel_device_retain(dev);
  g->family = f;
  atomic_fetch_add(&f->refcount, 1);
  accel_handle_register(&g->hdr, ACCEL_HANDLE_GENERATOR, dev->backend->vt);
  *out = g;
  return ACCEL_OK;
}

accel_status_t accel_generator_create(accel_device_t *device, uint64_t seed,
                                      accel_generator_t **out) {
  accel_status_t st = accel_device_check(device, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  accel_generator_family_t *f = calloc(1, sizeof *f);
  if (!f) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", __func__);
  atomic_init(&f->refcount, 1);
  atomic_init(&f->next_stream, 1);
  const accel_generator_state_t init = {{(uint32_t)seed, (uint32_t)(seed >> 32)}, {0, 0, 0, 0}};
  st = generator_new(device, f, &init, __func__, out);
  family_release(f); /* the generator holds it now (or nobody does) */
  return st;
}

accel_status_t accel_generator_release(accel_generator_t *gen) {
  accel_status_t st = accel_handle_drop_user(gen, ACCEL_HANDLE_GENERATOR, __func__);
  if (st != ACCEL_OK) return st;
  generator_release_ref(gen);
  return ACCEL_OK;
}

accel_status_t accel_generator_fork(accel_stream_t *stream, accel_generator_t *parent,
                                    accel_generator_t **child) {
  accel_device_t *dev;
  accel_status_t st = accel_generator_check(parent, stream, __func__, &dev);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(child, __func__, "child is NULL");
  const uint64_t k = atomic_fetch_add(&parent->family->next_stream, 1);
  if (k > UINT32_MAX)
    return accel_set_error(ACCEL_ERROR_STATE,
                           "%s: all 2^32 - 1 streams of this generator's root were given out",
                           __func__);
  const accel_generator_state_t init = {{0, 0}, {0, 0, 0, (uint32_t)k}};
  accel_generator_t *g;
  st = generator_new(dev, parent->family, &init, __func__, &g);
  if (st != ACCEL_OK) return st;
  /* the key as the stream reaches this point (after any set_state queued before) */
  st = accel_memcpy_async(stream, g->state->key, parent->state->key, sizeof init.key);
  if (st != ACCEL_OK) {
    (void)accel_generator_release(g);
    return st;
  }
  *child = g;
  return ACCEL_OK;
}

accel_status_t accel_generator_get_state(accel_stream_t *stream, accel_generator_t *gen,
                                         accel_generator_state_t *state) {
  accel_device_t *dev;
  accel_status_t st = accel_generator_check(gen, stream, __func__, &dev);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(state, __func__, "state is NULL");
  return accel_memcpy_async(stream, state, gen->state, sizeof *state);
}

accel_status_t accel_generator_set_state(accel_stream_t *stream, accel_generator_t *gen,
                                         const accel_generator_state_t *state) {
  accel_device_t *dev;
  accel_status_t st = accel_generator_check(gen, stream, __func__, &dev);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(state, __func__, "state is NULL");
  return accel_memcpy_async(stream, gen->state, state, sizeof *state);
}
