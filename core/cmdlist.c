#include "cmdlist.h"

#include <stdlib.h>
#include <string.h>

#include "core_util.h"
#include "hashtab.h"

#define ARENA_CHUNK 8192u

struct accel_cmd_arena {
  accel_cmd_arena_t *next;
  size_t used, cap;
  unsigned char data[];
};

void accel_cmdlist_init(accel_cmdlist_t *l) { memset(l, 0, sizeof *l); }

static void release_keeps(accel_cmdlist_t *l) {
  for (size_t i = 0; i < l->nkeeps; ++i) accel_keepalive_release(l->keeps[i]);
  l->nkeeps = 0;
}

void accel_cmdlist_clear(accel_cmdlist_t *l) {
  release_keeps(l);
  l->count = 0;
  /* keep the first arena chunk for reuse, free the rest */
  if (l->arena) {
    for (accel_cmd_arena_t *a = l->arena->next, *n; a; a = n) {
      n = a->next;
      free(a);
    }
    l->arena->next = NULL;
    l->arena->used = 0;
  }
}

void accel_cmdlist_free(accel_cmdlist_t *l) {
  accel_cmdlist_clear(l);
  free(l->arena);
  free(l->cmds);
  free(l->keeps);
  memset(l, 0, sizeof *l);
}

static void *arena_copy(accel_cmdlist_t *l, const void *src, size_t size) {
  size_t need = (size + 15u) & ~(size_t)15u;
  accel_cmd_arena_t *a = l->arena;
  if (!a || a->cap - a->used < need) {
    size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;
    accel_cmd_arena_t *n = malloc(sizeof *n + cap);
    if (!n) return NULL;
    n->used = 0;
    n->cap = cap;
    n->next = a;
    l->arena = a = n;
  }
  void *dst = a->data + a->used;
  memcpy(dst, src, size);
  a->used += need;
  return dst;
}

accel_status_t accel_cmdlist_append(accel_cmdlist_t *l, const accel_cmd_t *cmd,
                                    accel_keepalive_t *keep) {
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    accel_cmd_t *n = realloc(l->cmds, cap * sizeof *n);
    if (!n) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory recording");
    l->cmds = n;
    l->cap = cap;
  }
  accel_cmd_t c = *cmd;
  if (c.type == ACCEL_CMD_KERNEL && c.u.kernel.params_size) {
    c.u.kernel.params = arena_copy(l, cmd->u.kernel.params, cmd->u.kernel.params_size);
    if (!c.u.kernel.params)
      return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory recording");
  }
  if (keep) {
    accel_status_t st = accel_cmdlist_keep(l, keep);
    if (st != ACCEL_OK) return st;
  }
  l->cmds[l->count++] = c;
  return ACCEL_OK;
}

accel_status_t accel_cmdlist_keep(accel_cmdlist_t *l, accel_keepalive_t *keep) {
  if (l->nkeeps == l->capkeeps) {
    size_t cap = l->capkeeps ? l->capkeeps * 2 : 16;
    accel_keepalive_t **n = realloc(l->keeps, cap * sizeof *n);
    if (!n) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory recording");
    l->keeps = n;
    l->capkeeps = cap;
  }
  accel_keepalive_retain(keep);
  l->keeps[l->nkeeps++] = keep;
  return ACCEL_OK;
}

accel_status_t accel_cmdlist_copy(accel_cmdlist_t *dst, const accel_cmdlist_t *src,
                                  unsigned flags) {
  accel_cmdlist_clear(dst);
  for (size_t i = 0; i < src->count; ++i) {
    const accel_cmd_t *c = &src->cmds[i];
    if ((flags & ACCEL_CMDLIST_SKIP_EVENTS) &&
        (c->type == ACCEL_CMD_EVENT_RECORD || c->type == ACCEL_CMD_EVENT_WAIT))
      continue;
    accel_status_t st = accel_cmdlist_append(dst, c, NULL);
    if (st != ACCEL_OK) return st;
  }
  for (size_t i = 0; i < src->nkeeps; ++i) {
    accel_status_t st = accel_cmdlist_keep(dst, src->keeps[i]);
    if (st != ACCEL_OK) return st;
  }
  return ACCEL_OK;
}

/* Folds n bytes in 8-byte words; a short tail is zero-padded and tagged with its length. */
static uint64_t fold_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t w;
  for (; n >= 8; b += 8, n -= 8) {
    memcpy(&w, b, 8);
    h = accel_hash_fold(h, w);
  }
  if (n) {
    w = 0;
    memcpy(&w, b, n);
    h = accel_hash_fold(h, w ^ (uint64_t)n << 56);
  }
  return h;
}

uint64_t accel_cmdlist_hash(const accel_cmdlist_t *l) {
  uint64_t h = accel_hash_u64(l->count);
  for (size_t i = 0; i < l->count; ++i) {
    const accel_cmd_t *c = &l->cmds[i];
    h = accel_hash_fold(h, c->type);
    switch (c->type) {
      case ACCEL_CMD_KERNEL:
        h = accel_hash_fold(h, c->u.kernel.kernel_id);
        h = accel_hash_fold(h, c->u.kernel.num_blocks);
        h = fold_bytes(h, c->u.kernel.params, c->u.kernel.params_size);
        break;
      case ACCEL_CMD_MEMCPY:
        h = accel_hash_fold(h, (uintptr_t)c->u.memcpy.dst);
        h = accel_hash_fold(h, (uintptr_t)c->u.memcpy.src);
        h = accel_hash_fold(h, c->u.memcpy.size);
        break;
      case ACCEL_CMD_MEMSET:
        h = accel_hash_fold(h, (uintptr_t)c->u.memset.dst);
        h = accel_hash_fold(h, c->u.memset.size);
        h = accel_hash_fold(h, c->u.memset.value);
        break;
      case ACCEL_CMD_HOST_FUNC:
        h = accel_hash_fold(h, (uintptr_t)c->u.host_func.fn);
        h = accel_hash_fold(h, (uintptr_t)c->u.host_func.user);
        break;
      case ACCEL_CMD_NATIVE:
        h = accel_hash_fold(h, (uintptr_t)c->u.native.enqueue);
        h = accel_hash_fold(h, (uintptr_t)c->u.native.ctx);
        break;
      case ACCEL_CMD_COND_BEGIN:
        h = accel_hash_fold(h, (uintptr_t)c->u.cond.flag);
        h = accel_hash_fold(h, (uint64_t)c->u.cond.kind << 32 | c->u.cond.max_iterations);
        break;
      case ACCEL_CMD_COND_END: break;
      default:
        h = accel_hash_fold(h, c->stream_slot);
        h = accel_hash_fold(h, c->u.event.event_slot);
        break;
    }
  }
  return h;
}

static bool cmd_equal(const accel_cmd_t *a, const accel_cmd_t *b) {
  if (a->type != b->type || a->stream_slot != b->stream_slot) return false;
  switch (a->type) {
    case ACCEL_CMD_KERNEL:
      return a->u.kernel.kernel_id == b->u.kernel.kernel_id &&
             a->u.kernel.num_blocks == b->u.kernel.num_blocks &&
             a->u.kernel.params_size == b->u.kernel.params_size &&
             memcmp(a->u.kernel.params, b->u.kernel.params, a->u.kernel.params_size) == 0;
    case ACCEL_CMD_MEMCPY:
      return a->u.memcpy.dst == b->u.memcpy.dst && a->u.memcpy.src == b->u.memcpy.src &&
             a->u.memcpy.size == b->u.memcpy.size && a->u.memcpy.kind == b->u.memcpy.kind;
    case ACCEL_CMD_MEMSET:
      return a->u.memset.dst == b->u.memset.dst && a->u.memset.size == b->u.memset.size &&
             a->u.memset.value == b->u.memset.value;
    case ACCEL_CMD_HOST_FUNC:
      return a->u.host_func.fn == b->u.host_func.fn && a->u.host_func.user == b->u.host_func.user;
    case ACCEL_CMD_NATIVE:
      return a->u.native.enqueue == b->u.native.enqueue && a->u.native.ctx == b->u.native.ctx;
    case ACCEL_CMD_COND_BEGIN:
      return a->u.cond.flag == b->u.cond.flag && a->u.cond.kind == b->u.cond.kind &&
             a->u.cond.max_iterations == b->u.cond.max_iterations;
    case ACCEL_CMD_COND_END: return true;
    default:
      return a->u.event.event_slot == b->u.event.event_slot;
  }
}

bool accel_cmdlist_equal(const accel_cmdlist_t *a, const accel_cmdlist_t *b) {
  if (a->count != b->count) return false;
  for (size_t i = 0; i < a->count; ++i)
    if (!cmd_equal(&a->cmds[i], &b->cmds[i])) return false;
  return true;
}
