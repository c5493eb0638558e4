/*
 * Graph pools: a handle over a graph-pool arena of the device's caching allocator. The user
 * holds one reference per accel_graph_pool_create / accel_graph_pool; captures, graphs and
 * graphs that replayed another graph inside their capture hold their own. When the last one
 * goes and the arena holds no live block, its memory goes back to the backend once every
 * stream has finished the work submitted before (a retired release, retire.c).
 */
#include <stdlib.h>

#include "core_util.h"
#include "pool.h"

static void collect_arena(void *ctx) {
  accel_allocator_arena_t *a = ctx;
  accel_allocator_arena_collect(a);
}

/* Collects an arena that just became unreferenced and empty once no work can use it: at once
 * when this runs inside a retired release whose completed fence came after the arena's last
 * free (the graph that held the last reference was the last user), else after a new fence. */
void accel_pool_arena_retire(accel_device_t *dev, accel_allocator_arena_t *zombie) {
  if (!zombie) return;
  if (accel_allocator_arena_last_free(zombie) <= accel_retire_covered_epoch())
    collect_arena(zombie);
  else
    accel_device_retire(dev, collect_arena, zombie);
}

void accel_pool_retain(accel_pool_t *p) { atomic_fetch_add(&p->hdr.refcount, 1); }

void accel_pool_release_ref(accel_pool_t *p) {
  if (atomic_fetch_sub(&p->hdr.refcount, 1) != 1) return;
  accel_device_t *dev = p->dev;
  accel_pool_arena_retire(dev, accel_allocator_arena_release(p->arena));
  free(p);
  accel_device_release_ref(dev);
}

accel_status_t accel_pool_create_internal(accel_device_t *dev, bool user, accel_pool_t **out) {
  accel_pool_t *p = calloc(1, sizeof *p);
  if (!p) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  accel_status_t st = accel_allocator_arena_create(dev->mem, &p->arena);
  if (st != ACCEL_OK) {
    free(p);
    return st;
  }
  p->dev = dev;
  accel_device_retain(dev);
  accel_handle_register(&p->hdr, ACCEL_HANDLE_POOL, dev->backend->vt);
  if (!user) accel_handle_unregister(&p->hdr); /* one reference, not the user's */
  *out = p;
  return ACCEL_OK;
}

accel_status_t accel_graph_pool_create(accel_device_t *dev, accel_pool_t **out) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  return accel_pool_create_internal(dev, true, out);
}

accel_status_t accel_pool_release(accel_pool_t *p) {
  accel_status_t st = accel_handle_drop_user(p, ACCEL_HANDLE_POOL, __func__);
  if (st != ACCEL_OK) return st;
  accel_pool_release_ref(p);
  return ACCEL_OK;
}

/* Keeps a pool alive as long as a command list that uses its memory (a graph replayed inside
 * another graph's capture). */
typedef struct pool_keep {
  accel_keepalive_t keep;
  accel_pool_t *pool;
} pool_keep_t;

static void pool_keep_release(accel_keepalive_t *k) {
  pool_keep_t *pk = (pool_keep_t *)k;
  accel_pool_release_ref(pk->pool);
  free(pk);
}

accel_keepalive_t *accel_pool_keepalive(accel_pool_t *p) {
  pool_keep_t *pk = calloc(1, sizeof *pk);
  if (!pk) return NULL;
  accel_pool_retain(p);
  pk->pool = p;
  pk->keep.refcount = 1;
  pk->keep.release = pool_keep_release;
  return &pk->keep;
}
