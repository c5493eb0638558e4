/*
 * Device ranking for accel_device_open(NULL): every device of every loaded backend is a
 * candidate, ordered by tier, then the plugin's score (vtable device_score, higher first), then
 * load order and device index. Tiers: GPU and accelerator devices of plugins; the built-in
 * backend (the one not loaded from a file); CPU- and other-type devices of plugins (the
 * built-in CPU backend beats them: ACCEL_BACKEND or a selector picks them explicitly).
 * Backends that did not initialise are listed last, as passed over. The core names no backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "core_util.h"
#include "log.h"

enum { TIER_PLUGIN_GPU, TIER_BUILTIN, TIER_PLUGIN_CPU, TIER_PASSED_OVER };

typedef struct candidate {
  accel_device_rank_t pub;
  int tier;
  int backend_order;
} candidate_t;

static int cmp_candidate(const void *pa, const void *pb) {
  const candidate_t *a = pa, *b = pb;
  if (a->tier != b->tier) return a->tier < b->tier ? -1 : 1;
  if (a->pub.score != b->pub.score) return a->pub.score > b->pub.score ? -1 : 1;
  if (a->backend_order != b->backend_order) return a->backend_order < b->backend_order ? -1 : 1;
  return a->pub.index < b->pub.index ? -1 : a->pub.index > b->pub.index;
}

static const char *type_word(accel_device_type_t t) {
  return t == ACCEL_DEVICE_TYPE_GPU ? "GPU"
         : t == ACCEL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
         : t == ACCEL_DEVICE_TYPE_CPU ? "CPU" : "other";
}

/* Fills c for device d of backend b (initialised). */
static void describe_device(accel_backend_t *b, int d, candidate_t *c) {
  accel_device_info_t info;
  memset(&info, 0, sizeof info);
  snprintf(c->pub.backend, sizeof c->pub.backend, "%s", b->name);
  c->pub.index = d;
  accel_status_t st = b->vt->device_info(b->state, d, &info);
  if (st != ACCEL_OK) {
    c->tier = TIER_PASSED_OVER;
    snprintf(c->pub.reason, sizeof c->pub.reason, "passed over: device_info failed: %.200s",
             accel_last_error());
    return;
  }
  c->pub.type = info.type;
  snprintf(c->pub.name, sizeof c->pub.name, "%s", info.name);
  int32_t score = 0;
  if (b->vt->device_score && b->vt->device_score(b->state, d, &score) != ACCEL_OK) score = 0;
  c->pub.score = score;
  bool builtin = b->dl == NULL;
  bool gpu_like = info.type == ACCEL_DEVICE_TYPE_GPU || info.type == ACCEL_DEVICE_TYPE_ACCELERATOR;
  c->tier = builtin ? TIER_BUILTIN : gpu_like ? TIER_PLUGIN_GPU : TIER_PLUGIN_CPU;
  if (builtin)
    snprintf(c->pub.reason, sizeof c->pub.reason,
             "the built-in backend: after every GPU and accelerator device");
  else if (gpu_like)
    snprintf(c->pub.reason, sizeof c->pub.reason, "%s-type device, score %d",
             type_word(info.type), (int)score);
  else
    snprintf(c->pub.reason, sizeof c->pub.reason,
             "%s-type device, score %d: after the built-in backend (select it by name)",
             type_word(info.type), (int)score);
}

/* The ranked candidates (malloc'ed) of every backend. */
static accel_status_t rank_all(candidate_t **out, int *n) {
  int nb = accel_backend_count(), total = 0;
  for (int i = 0; i < nb; ++i) {
    accel_backend_t *b = NULL;
    accel_backend_get(i, &b);
    total += accel_backend_ensure_init(b) == ACCEL_OK ? b->device_count : 1;
  }
  candidate_t *c = calloc((size_t)(total ? total : 1), sizeof *c);
  if (!c) return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
  int k = 0;
  for (int i = 0; i < nb; ++i) {
    accel_backend_t *b = NULL;
    accel_backend_get(i, &b);
    if (accel_backend_ensure_init(b) != ACCEL_OK) {
      c[k].tier = TIER_PASSED_OVER;
      c[k].backend_order = i;
      c[k].pub.index = -1;
      snprintf(c[k].pub.backend, sizeof c[k].pub.backend, "%s", b->name);
      snprintf(c[k].pub.reason, sizeof c[k].pub.reason, "passed over: backend unavailable: %.200s",
               b->init_message);
      k++;
      continue;
    }
    for (int d = 0; d < b->device_count; ++d, ++k) {
      c[k].backend_order = i;
      describe_device(b, d, &c[k]);
    }
  }
  qsort(c, (size_t)k, sizeof *c, cmp_candidate);
  *out = c;
  *n = k;
  return ACCEL_OK;
}

accel_status_t accel_device_ranking(accel_device_rank_t *out, int capacity, int *count) {
  ACCEL_REQUIRE_ARG(count, __func__, "count is NULL");
  if (capacity < 0 || (capacity > 0 && !out))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: out is NULL or capacity %d is negative", __func__, capacity);
  candidate_t *c = NULL;
  int n = 0;
  accel_status_t st = rank_all(&c, &n);
  if (st != ACCEL_OK) return st;
  for (int i = 0; i < n && i < capacity; ++i) out[i] = c[i].pub;
  *count = n;
  free(c);
  return ACCEL_OK;
}

accel_status_t accel_device_open_ranked(accel_device_t **out) {
  candidate_t *c = NULL;
  int n = 0;
  accel_status_t st = rank_all(&c, &n);
  if (st != ACCEL_OK) return st;
  st = ACCEL_ERROR_UNAVAILABLE;
  for (int i = 0; i < n; ++i) {
    const accel_device_rank_t *r = &c[i].pub;
    if (st == ACCEL_OK || c[i].tier == TIER_PASSED_OVER) {
      accel_log(ACCEL_LOG_INFO, "select", "not %s:%d%s%s: %s", r->backend, r->index,
                r->name[0] ? " " : "", r->name, st == ACCEL_OK ? "ranked lower" : r->reason);
      continue;
    }
    char selector[48];
    snprintf(selector, sizeof selector, "%s:%d", r->backend, r->index);
    st = accel_device_open(selector, out);
    if (st == ACCEL_OK)
      accel_log(ACCEL_LOG_INFO, "select", "chose %s (%s): rank %d, %s", selector, r->name, i + 1,
                r->reason);
    else
      accel_log(ACCEL_LOG_INFO, "select", "passed over %s: open failed: %s", selector,
                accel_last_error());
  }
  free(c);
  if (st != ACCEL_OK)
    return accel_set_error(ACCEL_ERROR_UNAVAILABLE, "no usable device found (ACCEL_LOG=info "
                                                    "shows why each device was passed over)");
  return ACCEL_OK;
}
