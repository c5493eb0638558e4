/*
 * Stress: 4 worker threads drive one device with a random mix of (almost) every public call of
 * accel.h and accel_kernels.h for SECONDS seconds. They share two streams, three graphs (two of
 * them share a graph pool), two events and extra references of the device; each worker also has
 * two streams of its own (one eager, one lazy) with buffers whose content it knows. Host
 * functions call the API from the library's threads. Every status is checked against what the
 * contract allows in that situation, every result the workers can predict is checked exactly,
 * and at the end the memory statistics must be back to the baseline. A watchdog prints what
 * every thread was doing and exits if the run hangs.
 *
 *   test_stress DEVICE [SECONDS]   (default: $ACCEL_STRESS_SECONDS, else 8)
 *   ACCEL_STRESS_SEED=N       replay a run (the seeds are printed)
 *   ACCEL_STRESS_SKIP=a,b     leave operations out by name ("host function", "misuse", ...) to
 *                             narrow a failure down
 *
 * Rules the test keeps so that every check is meaningful (docs/RELIABILITY.md, "Stress"):
 *  - ILLEGAL_IN_CAPTURE is accepted from a call that waits (synchronize, query, blocking copy,
 *    accel_malloc) only while some GLOBAL capture may have been active during the call, and
 *    CAPTURE_INVALIDATED only inside a GLOBAL capture (another thread may invalidate it).
 *  - Captures run only on a worker's own streams. Shared graphs are captured, reset and
 *    replayed under a mutex of their group (graphs sharing a pool are one group) and their
 *    replays are chained with an event, so their device work never runs concurrently.
 *  - Handles and memory are misused only right after this thread freed them, while a
 *    reader-writer lock keeps every other create/allocate of the test out (the address cannot
 *    be reused meanwhile, so the call is defined: INVALID_HANDLE / INVALID_ARGUMENT).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
#endif
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rel_common.h"
#include "require.h"

enum { WORKERS = 4, SHARED_STREAMS = 2, SHARED_GRAPHS = 3, SHARED_EVENTS = 2, TEMPS = 3 };
enum { REGION = 512, SHARED_OUT = 512, MAX_FAILURES = 30, SCALARS = 64 };

/* ---------------------------------------------------------------------------------------------
 * Calls, statuses and the capture window
 * ------------------------------------------------------------------------------------------- */

/* X(id, name, waits): waits = the call is illegal while a capture is active (per mode). */
#define CALLS(X)                                                                             \
  X(DEVICE_OPEN, "accel_device_open", 0) X(DEVICE_CLOSE, "accel_device_close", 0)            \
  X(GET_INFO, "accel_device_get_info", 0) X(DEVICE_SYNC, "accel_device_synchronize", 1)      \
  X(MEM_STATS, "accel_memory_stats", 0) X(RESET_PEAK, "accel_reset_peak_memory_stats", 0)    \
  X(EMPTY_CACHE, "accel_empty_cache", 0) X(MALLOC, "accel_malloc", 1)                        \
  X(FREE, "accel_free", 0) X(MALLOC_ASYNC, "accel_malloc_async", 0)                          \
  X(FREE_ASYNC, "accel_free_async", 0) X(HOST_ALLOC, "accel_host_alloc", 0)                  \
  X(HOST_FREE, "accel_host_free", 0) X(MEMCPY, "accel_memcpy", 1)                            \
  X(MEMCPY_ASYNC, "accel_memcpy_async", 0) X(MEMSET_ASYNC, "accel_memset_async", 0)          \
  X(STREAM_CREATE, "accel_stream_create_ex", 0) X(STREAM_DESTROY, "accel_stream_destroy", 0) \
  X(STREAM_SYNC, "accel_stream_synchronize", 1) X(STREAM_QUERY, "accel_stream_query", 1)     \
  X(STREAM_FLUSH, "accel_stream_flush", 0) X(IS_CAPTURING, "accel_stream_is_capturing", 0)   \
  X(WAIT_EVENT, "accel_stream_wait_event", 0) X(HOST_FUNC, "accel_launch_host_func", 0)      \
  X(EVENT_CREATE, "accel_event_create", 0) X(EVENT_RECORD, "accel_event_record", 0)          \
  X(EVENT_SYNC, "accel_event_synchronize", 1) X(EVENT_QUERY, "accel_event_query", 1)         \
  X(ELAPSED, "accel_event_elapsed_ms", 0) X(EVENT_DESTROY, "accel_event_destroy", 0)         \
  X(GRAPH_CREATE, "accel_graph_create", 0) X(CAPTURE_BEGIN, "accel_graph_capture_begin", 0)  \
  X(CAPTURE_END, "accel_graph_capture_end", 0) X(REPLAY, "accel_graph_replay", 0)            \
  X(GRAPH_RESET, "accel_graph_reset", 0) X(GRAPH_DESTROY, "accel_graph_destroy", 0)          \
  X(GRAPH_POOL, "accel_graph_pool", 0) X(POOL_CREATE, "accel_graph_pool_create", 0)          \
  X(POOL_RELEASE, "accel_pool_release", 0) X(FILL, "accel_fill", 0)                          \
  X(SCALE, "accel_scale", 0) X(NORM, "accel_multi_tensor_norm", 0)                           \
  X(CLIP, "accel_clip_by_global_norm", 0) X(UPDATE_HP, "accel_update_hp_grads", 0)           \
  X(UNSCALE, "accel_unscale_and_check", 0) X(ADAM, "accel_fused_adam", 0)

#define AS_ENUM(id, name, waits) C_##id,
enum { CALLS(AS_ENUM) NCALLS };
#define AS_NAME(id, name, waits) name,
static const char *const k_call_name[] = {CALLS(AS_NAME)};
#define AS_WAITS(id, name, waits) waits,
static const int k_call_waits[] = {CALLS(AS_WAITS)};

enum { NSTATUS = ACCEL_ERROR_STATE + 2 }; /* the last one counts statuses outside the enum */
#define M(st) (1u << (st))
#define OK M(ACCEL_OK)
#define OK_NOT_READY (OK | M(ACCEL_ERROR_NOT_READY))
#define IN_GLOBAL (OK | M(ACCEL_ERROR_CAPTURE_INVALIDATED)) /* work inside a GLOBAL capture */

static _Atomic long g_counts[NCALLS][NSTATUS];
static atomic_int g_failures;
static atomic_int g_stop;

/* GLOBAL captures: the count goes up before capture_begin and down after capture_end, the epoch
 * moves with every change, so a call that overlapped any GLOBAL capture sees either a nonzero
 * count or a moved epoch. */
static atomic_int g_global_active;
static atomic_uint g_global_epoch;

typedef struct window {
  int active;
  unsigned epoch;
} window_t;

static window_t window_now(void) {
  window_t w = {atomic_load(&g_global_active), atomic_load(&g_global_epoch)};
  return w;
}

static int window_overlapped(window_t before) {
  return before.active > 0 || atomic_load(&g_global_active) > 0 ||
         atomic_load(&g_global_epoch) != before.epoch;
}

static void global_enter(void) {
  atomic_fetch_add(&g_global_active, 1);
  atomic_fetch_add(&g_global_epoch, 1);
}

static void global_leave(void) {
  atomic_fetch_add(&g_global_epoch, 1);
  atomic_fetch_sub(&g_global_active, 1);
}

/* Who makes a call: a worker or a host function. `cur` is what the watchdog prints. */
typedef struct caller {
  char who[48];
  atomic_long iter;
  _Atomic(const char *) *cur;
  window_t before;
} caller_t;

static void call_start(caller_t *c, int call) {
  atomic_store(c->cur, k_call_name[call]);
  c->before = window_now();
}

static accel_status_t call_end(caller_t *c, int call, unsigned allowed, accel_status_t st) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", accel_last_error());
  atomic_store(c->cur, "(between calls)");
  int idx = st >= ACCEL_OK && st <= ACCEL_ERROR_STATE ? (int)st : NSTATUS - 1;
  atomic_fetch_add(&g_counts[call][idx], 1);
  if (k_call_waits[call] && window_overlapped(c->before))
    allowed |= M(ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  if (idx < NSTATUS - 1 && (allowed & M(idx))) return st;
  char line[1024];
  snprintf(line, sizeof line, "FAIL %s iteration %ld: %s -> %s (%d): %s\n", c->who,
           atomic_load(&c->iter),
           k_call_name[call], accel_status_name(st), (int)st, msg);
  fputs(line, stderr);
  if (atomic_fetch_add(&g_failures, 1) + 1 >= MAX_FAILURES) atomic_store(&g_stop, 1);
  return st;
}

/* CALL(caller, C_X, allowed statuses, expression): records what the thread is doing, counts the
 * status and fails the test when the contract does not allow it. */
#define CALL(c, id, allowed, expr) \
  call_end((c), C_##id, (allowed), (call_start((c), C_##id), (expr)))

static void failf(caller_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(caller_t *c, const char *fmt, ...) {
  char text[768], line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  snprintf(line, sizeof line, "FAIL %s iteration %ld: %s\n", c->who, atomic_load(&c->iter), text);
  fputs(line, stderr);
  if (atomic_fetch_add(&g_failures, 1) + 1 >= MAX_FAILURES) atomic_store(&g_stop, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Shared state
 * ------------------------------------------------------------------------------------------- */

static accel_device_t *g_dev;
static const char *g_selector;
/* Readers: every operation of a worker and every creating host function (try-lock: a host
 * function never blocks). Writer: the misuse operation (a freed address stays unused). */
static pthread_rwlock_t g_life;

static accel_stream_t *g_shared[SHARED_STREAMS];
static accel_event_t *g_shared_ev[SHARED_EVENTS];
static accel_pool_t *g_shared_pool;
static float *g_shared_buf; /* REGION floats per worker and shared stream */

/* Graphs 0 and 1 share g_shared_pool (group 0), graph 2 has a private pool (group 1). */
typedef struct group {
  pthread_mutex_t lock;
  accel_event_t *done; /* recorded after every replay: the next one waits for it */
} group_t;

typedef struct shared_graph {
  accel_graph_t *g;
  group_t *group;
  int ready;        /* holds a capture (under group->lock) */
  float value;      /* what the captured fill writes */
  float *out, *norm;
} shared_graph_t;

static group_t g_groups[2];
static shared_graph_t g_sgraph[SHARED_GRAPHS];

static atomic_long g_hostfn_launched, g_hostfn_ran;
static _Atomic(const char *) g_hostfn_cur[WORKERS];

static const float k_scales[] = {0.5f, 1.0f, 2.0f, 3.0f, 0.25f, 1.0f};
static const float k_one = 1.0f;
/* Adam steps that leave the parameters bit for bit unchanged: lr = 0, or a skipped step. */
static const accel_adam_args_t k_adam[2] = {
    {0.0f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, 1, 0.0f},
    {0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 3, 0, 1.0f},
};

/* ---------------------------------------------------------------------------------------------
 * Workers
 * ------------------------------------------------------------------------------------------- */

/* One of a worker's own streams with the buffers only it touches, and their expected content. */
typedef struct lane {
  accel_stream_t *s;
  size_t n;
  float *a, *p, *m, *v; /* F32: a = gradients/work, p = Adam params, m/v = moments */
  uint16_t *lp;         /* F16 */
  float *sc;            /* device scalars: 0 scale, 1 norm, 2 inv scale, 3 found_inf, 5 coef */
  accel_adam_args_t *args;
  float *host, *host_p, *host_sc; /* accel_host_alloc mirrors */
  uint16_t *host_lp;
  double va, vp, wlp, s0; /* every element of a / p / lp, and sc[0] */
  double norm;            /* sc[1] when norm_known */
  int norm_known;
  accel_graph_t *graph;   /* own graph: fill(a, gvalue), scale(a, sc), L1 norm, host func */
  int graph_ready;
  double gvalue;
  accel_pool_t *pool;     /* own pool for the own graph's captures (or NULL) */
  atomic_long graph_hostfn; /* runs of the captured host function */
  long graph_replays;
} lane_t;

typedef struct pending {
  int active;
  accel_stream_t *s;
  float expect;
  float *slot; /* host memory the replay's norm is copied to */
} pending_t;

typedef struct worker {
  int id;
  uint64_t seed, rng;
  caller_t c;
  _Atomic(const char *) cur;
  lane_t lane[2];
  accel_event_t *hop[2], *timing[2];
  float region_val[SHARED_STREAMS];
  int region_known[SHARED_STREAMS];
  float *region_host;         /* REGION floats per shared stream (host_alloc) */
  float *sg_host;             /* a slot per shared graph (host_alloc) */
  pending_t pend[SHARED_GRAPHS];
  accel_stream_t *temp[TEMPS];
  accel_device_t *refs[2];
  void *blocks[4];
  unsigned char *quiet;       /* device, only touched by blocking accel_memcpy */
} worker_t;

static worker_t g_workers[WORKERS];

static uint64_t rnd(worker_t *w) {
  uint64_t z = (w->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int rndn(worker_t *w, int n) { return (int)(rnd(w) % (uint64_t)n); }

/* Values stay multiples of 1/64 below 64 in magnitude, so every sum a norm makes is exact. */
static int exact_value(double v) { return fabs(v) <= 64.0 && v * 64.0 == floor(v * 64.0); }

static float half_to_float(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 1024), e - 25);
  return h & 0x8000 ? -v : v;
}

static accel_tensor_t ten(void *data, size_t n, accel_dtype_t dt) {
  accel_tensor_t t = {data, n, dt};
  return t;
}

/* Waits for a stream, retrying while GLOBAL captures of other threads make it illegal. */
static accel_status_t sync_retry(worker_t *w, accel_stream_t *s, int tries) {
  accel_status_t st = ACCEL_OK;
  for (int i = 0; i < tries; ++i) {
    st = CALL(&w->c, STREAM_SYNC, OK, accel_stream_synchronize(s));
    if (st != ACCEL_ERROR_ILLEGAL_IN_CAPTURE) return st;
    usleep(1000);
  }
  return st;
}

/* --- kernels on a lane (the model follows every operation) ------------------------------------ */

static void op_kernel(worker_t *w) {
  lane_t *l = &w->lane[rndn(w, 2)];
  caller_t *c = &w->c;
  size_t h = l->n / 2;
  accel_tensor_t a2[2] = {ten(l->a, h, ACCEL_F32), ten(l->a + h, l->n - h, ACCEL_F32)};
  accel_tensor_t a = ten(l->a, l->n, ACCEL_F32), lp = ten(l->lp, l->n, ACCEL_F16);
  int k = exact_value(l->va) ? rndn(w, 9) : 0;
  switch (k) {
    case 0: {
      float v = (float)(rndn(w, 17) - 8);
      if (CALL(c, FILL, OK, accel_fill(l->s, &a, 1, v)) == ACCEL_OK) l->va = v;
      break;
    }
    case 1: {
      int i = rndn(w, (int)(sizeof k_scales / sizeof k_scales[0]));
      if (CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->sc, &k_scales[i], 4)) ==
          ACCEL_OK)
        l->s0 = k_scales[i];
      if (CALL(c, SCALE, OK, accel_scale(l->s, a2, 2, l->sc)) == ACCEL_OK) l->va *= l->s0;
      break;
    }
    case 2: {
      int inf = rndn(w, 2);
      if (CALL(c, NORM, OK, accel_multi_tensor_norm(l->s, a2, 2, inf ? INFINITY : 1.0f,
                                                    l->sc + 1)) == ACCEL_OK) {
        l->norm = inf ? fabs(l->va) : fabs(l->va) * (double)l->n;
        l->norm_known = 1;
      }
      break;
    }
    case 3: {
      /* max_norm = half the norm held in sc[1]: coef = 0.5 exactly (eps 0), applied */
      if (!l->norm_known || l->norm <= 0.0) break;
      if (CALL(c, CLIP, OK, accel_clip_by_global_norm(l->s, &a, 1, (float)(l->norm / 2),
                                                       l->sc + 1, 0.0f, l->sc + 5)) == ACCEL_OK)
        l->va *= 0.5;
      break;
    }
    case 4: {
      float wv = (float)(rndn(w, 9) - 4);
      if (CALL(c, FILL, OK, accel_fill(l->s, &lp, 1, wv)) == ACCEL_OK) l->wlp = wv;
      break;
    }
    case 5: {
      int zero = rndn(w, 2);
      if (CALL(c, UPDATE_HP, OK, accel_update_hp_grads(l->s, &lp, &a, 1, zero)) == ACCEL_OK) {
        l->va += l->wlp;
        if (zero) l->wlp = 0.0;
      }
      break;
    }
    case 6: {
      int i = rndn(w, 4);
      CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->sc + 2, &k_scales[i], 4));
      CALL(c, MEMSET_ASYNC, OK, accel_memset_async(l->s, l->sc + 3, 0, 4));
      if (CALL(c, UNSCALE, OK, accel_unscale_and_check(l->s, &a, 1, l->sc + 2, l->sc + 3)) ==
          ACCEL_OK)
        l->va *= k_scales[i];
      break;
    }
    case 7: {
      accel_tensor_t p = ten(l->p, l->n, ACCEL_F32), m = ten(l->m, l->n, ACCEL_F32),
                     v = ten(l->v, l->n, ACCEL_F32);
      CALL(c, MEMCPY_ASYNC, OK,
           accel_memcpy_async(l->s, l->args, &k_adam[rndn(w, 2)], sizeof(accel_adam_args_t)));
      CALL(c, ADAM, OK, accel_fused_adam(l->s, &p, &a, &m, &v, 1, l->args));
      break;
    }
    default:
      if (rndn(w, 2)) {
        if (CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->p, l->a, l->n * 4)) ==
            ACCEL_OK)
          l->vp = l->va;
      } else if (CALL(c, MEMSET_ASYNC, OK, accel_memset_async(l->s, l->a, 0, l->n * 4)) ==
                 ACCEL_OK) {
        l->va = 0.0;
      }
      break;
  }
}

/* Copies the lane back, waits, and compares with the model. */
static void check_lane(worker_t *w, lane_t *l, int tries) {
  caller_t *c = &w->c;
  CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->host, l->a, l->n * 4));
  CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->host_p, l->p, l->n * 4));
  CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->host_lp, l->lp, l->n * 2));
  CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->host_sc, l->sc, 8 * 4));
  if (sync_retry(w, l->s, tries) != ACCEL_OK) return;
  size_t bad_a = 0, bad_p = 0, bad_lp = 0, first = 0;
  for (size_t i = 0; i < l->n; ++i) {
    if (l->host[i] != (float)l->va && !bad_a++) first = i;
    bad_p += l->host_p[i] != (float)l->vp;
    bad_lp += half_to_float(l->host_lp[i]) != (float)l->wlp;
  }
  if (bad_a)
    failf(c, "lane %d: %zu of %zu values of a differ from %g (first [%zu] = %g)",
          (int)(l - w->lane), bad_a, l->n, l->va, first, (double)l->host[first]);
  if (bad_p) failf(c, "lane %d: %zu params differ from %g", (int)(l - w->lane), bad_p, l->vp);
  if (bad_lp)
    failf(c, "lane %d: %zu fp16 grads differ from %g", (int)(l - w->lane), bad_lp, l->wlp);
  if (l->norm_known && l->host_sc[1] != (float)l->norm)
    failf(c, "lane %d: norm %g, want %g", (int)(l - w->lane), (double)l->host_sc[1], l->norm);
  if (l->host_sc[3] != 0.0f)
    failf(c, "lane %d: found_inf %g for finite values", (int)(l - w->lane),
          (double)l->host_sc[3]);
}

static void op_check(worker_t *w) { check_lane(w, &w->lane[rndn(w, 2)], 1); }

/* --- memory --------------------------------------------------------------------------------- */

static void op_memory(worker_t *w) {
  caller_t *c = &w->c;
  lane_t *l = &w->lane[rndn(w, 2)];
  int slot = rndn(w, 4);
  size_t size = (size_t)(rnd(w) % 65536) + 1;
  switch (rndn(w, 6)) {
    case 0: /* blocking malloc / free */
      if (w->blocks[slot]) {
        if (CALL(c, FREE, OK, accel_free(g_dev, w->blocks[slot])) == ACCEL_OK)
          w->blocks[slot] = NULL;
      } else {
        void *p = NULL;
        if (CALL(c, MALLOC, OK, accel_malloc(g_dev, size, &p)) == ACCEL_OK) w->blocks[slot] = p;
      }
      break;
    case 1: { /* stream-ordered temporary */
      void *p = NULL;
      if (CALL(c, MALLOC_ASYNC, OK, accel_malloc_async(l->s, size, &p)) != ACCEL_OK) break;
      CALL(c, MEMSET_ASYNC, OK, accel_memset_async(l->s, p, rndn(w, 256), size));
      CALL(c, FREE_ASYNC, OK, accel_free_async(l->s, p));
      break;
    }
    case 2: { /* pinned host memory */
      void *p = NULL;
      if (CALL(c, HOST_ALLOC, OK, accel_host_alloc(g_dev, size, &p)) != ACCEL_OK) break;
      memset(p, 0x5A, size);
      CALL(c, HOST_FREE, OK, accel_host_free(g_dev, p));
      break;
    }
    case 3: { /* blocking copies through the default stream */
      unsigned char out[256], back[256];
      memset(out, rndn(w, 256), sizeof out);
      if (CALL(c, MEMCPY, OK, accel_memcpy(g_dev, w->quiet, out, sizeof out)) != ACCEL_OK) break;
      if (CALL(c, MEMCPY, OK, accel_memcpy(g_dev, back, w->quiet, sizeof back)) != ACCEL_OK)
        break;
      if (memcmp(out, back, sizeof out) != 0) failf(c, "accel_memcpy round trip differs");
      break;
    }
    case 4: {
      accel_memory_stats_t s;
      CALL(c, MEM_STATS, OK, accel_memory_stats(g_dev, &s));
      if (rndn(w, 2)) CALL(c, RESET_PEAK, OK, accel_reset_peak_memory_stats(g_dev));
      break;
    }
    default:
      CALL(c, EMPTY_CACHE, OK, accel_empty_cache(g_dev));
      break;
  }
}

/* --- device references ------------------------------------------------------------------------ */

static void op_device(worker_t *w) {
  caller_t *c = &w->c;
  int slot = rndn(w, 2);
  accel_device_info_t info;
  if (w->refs[slot]) {
    CALL(c, GET_INFO, OK, accel_device_get_info(w->refs[slot], &info));
    if (CALL(c, DEVICE_CLOSE, OK, accel_device_close(w->refs[slot])) == ACCEL_OK)
      w->refs[slot] = NULL;
  } else {
    accel_device_t *d = NULL;
    if (CALL(c, DEVICE_OPEN, OK, accel_device_open(g_selector, &d)) != ACCEL_OK) return;
    if (d != g_dev)
      failf(c, "accel_device_open gave %p, the device is %p", (void *)d, (void *)g_dev);
    w->refs[slot] = d;
  }
  if (rndn(w, 4) == 0) CALL(c, DEVICE_SYNC, OK, accel_device_synchronize(g_dev));
}

/* --- streams -------------------------------------------------------------------------------- */

static void op_stream(worker_t *w) {
  caller_t *c = &w->c;
  int slot = rndn(w, TEMPS);
  accel_stream_t *s = w->temp[slot];
  if (!s) {
    static const unsigned flags[] = {ACCEL_STREAM_DEFAULT, ACCEL_STREAM_LAZY, ACCEL_STREAM_EAGER};
    if (CALL(c, STREAM_CREATE, OK, accel_stream_create_ex(g_dev, flags[rndn(w, 3)], &s)) ==
        ACCEL_OK)
      w->temp[slot] = s;
    return;
  }
  int capturing = -1;
  switch (rndn(w, 6)) {
    case 0: {
      void *p = NULL;
      if (CALL(c, MALLOC_ASYNC, OK, accel_malloc_async(s, 4096, &p)) != ACCEL_OK) break;
      CALL(c, MEMSET_ASYNC, OK, accel_memset_async(s, p, 7, 4096));
      CALL(c, FREE_ASYNC, OK, accel_free_async(s, p));
      break;
    }
    case 1: CALL(c, STREAM_QUERY, OK_NOT_READY, accel_stream_query(s)); break;
    case 2: CALL(c, STREAM_FLUSH, OK, accel_stream_flush(s)); break;
    case 3:
      CALL(c, IS_CAPTURING, OK, accel_stream_is_capturing(s, &capturing));
      if (capturing != 0) failf(c, "an idle stream says it is capturing (%d)", capturing);
      break;
    case 4: CALL(c, STREAM_SYNC, OK, accel_stream_synchronize(s)); break;
    default:
      if (CALL(c, STREAM_DESTROY, OK, accel_stream_destroy(s)) == ACCEL_OK) w->temp[slot] = NULL;
      break;
  }
}

/* --- events --------------------------------------------------------------------------------- */

static accel_stream_t *any_stream(worker_t *w) {
  int k = rndn(w, 4);
  return k < 2 ? w->lane[k].s : g_shared[k - 2];
}

static void op_event(worker_t *w) {
  caller_t *c = &w->c;
  accel_event_t *e = g_shared_ev[rndn(w, SHARED_EVENTS)];
  lane_t *l = &w->lane[rndn(w, 2)];
  switch (rndn(w, 6)) {
    case 0: CALL(c, EVENT_RECORD, OK, accel_event_record(e, any_stream(w))); break;
    case 1: CALL(c, WAIT_EVENT, OK, accel_stream_wait_event(any_stream(w), e)); break;
    case 2: CALL(c, EVENT_QUERY, OK_NOT_READY, accel_event_query(e)); break;
    case 3: CALL(c, EVENT_SYNC, OK, accel_event_synchronize(e)); break;
    case 4: { /* timing on a lane */
      float ms = -1.0f;
      CALL(c, EVENT_RECORD, OK, accel_event_record(w->timing[0], l->s));
      accel_tensor_t t = ten(l->p, l->n, ACCEL_F32);
      if (CALL(c, FILL, OK, accel_fill(l->s, &t, 1, (float)l->vp)) != ACCEL_OK) break;
      CALL(c, EVENT_RECORD, OK, accel_event_record(w->timing[1], l->s));
      if (CALL(c, EVENT_SYNC, OK, accel_event_synchronize(w->timing[1])) != ACCEL_OK) break;
      if (CALL(c, ELAPSED, OK, accel_event_elapsed_ms(w->timing[0], w->timing[1], &ms)) ==
              ACCEL_OK && !(ms >= 0.0f))
        failf(c, "elapsed %g ms", (double)ms);
      break;
    }
    default: { /* a short-lived event */
      accel_event_t *t = NULL;
      if (CALL(c, EVENT_CREATE, OK, accel_event_create(g_dev, ACCEL_EVENT_DISABLE_TIMING, &t)) !=
          ACCEL_OK)
        break;
      CALL(c, EVENT_RECORD, OK, accel_event_record(t, l->s));
      CALL(c, EVENT_QUERY, OK_NOT_READY, accel_event_query(t));
      CALL(c, EVENT_DESTROY, OK, accel_event_destroy(t));
      break;
    }
  }
}

/* --- host functions ------------------------------------------------------------------------- */

typedef struct hostfn_ctx {
  int owner, action;
} hostfn_ctx_t;

/* Runs on a library thread: only calls that do not wait for its own stream. */
static void host_fn(void *user) {
  hostfn_ctx_t *h = user;
  caller_t c;
  memset(&c, 0, sizeof c);
  snprintf(c.who, sizeof c.who, "host function of worker %d", h->owner);
  c.cur = &g_hostfn_cur[h->owner];
  /* creating calls only when no misuse operation holds the lifecycle lock */
  int creates = h->action != 0 && h->action != 5;
  int locked = creates && pthread_rwlock_tryrdlock(&g_life) == 0;
  if (!creates || locked) {
    switch (h->action) {
      case 0: {
        accel_memory_stats_t s;
        CALL(&c, MEM_STATS, OK, accel_memory_stats(g_dev, &s));
        break;
      }
      case 1: {
        void *p = NULL;
        if (CALL(&c, HOST_ALLOC, OK, accel_host_alloc(g_dev, 1000, &p)) != ACCEL_OK) break;
        memset(p, 1, 1000);
        CALL(&c, HOST_FREE, OK, accel_host_free(g_dev, p));
        break;
      }
      case 2: {
        accel_stream_t *s = NULL;
        if (CALL(&c, STREAM_CREATE, OK, accel_stream_create_ex(g_dev, ACCEL_STREAM_DEFAULT, &s)) !=
            ACCEL_OK)
          break;
        CALL(&c, STREAM_FLUSH, OK, accel_stream_flush(s));
        CALL(&c, STREAM_DESTROY, OK, accel_stream_destroy(s));
        break;
      }
      case 3: {
        accel_event_t *e = NULL;
        if (CALL(&c, EVENT_CREATE, OK, accel_event_create(g_dev, 0, &e)) == ACCEL_OK)
          CALL(&c, EVENT_DESTROY, OK, accel_event_destroy(e));
        break;
      }
      case 4: {
        void *p = NULL;
        if (CALL(&c, MALLOC, OK, accel_malloc(g_dev, 3000, &p)) == ACCEL_OK)
          CALL(&c, FREE, OK, accel_free(g_dev, p));
        break;
      }
      default: {
        accel_device_info_t info;
        CALL(&c, GET_INFO, OK, accel_device_get_info(g_dev, &info));
        break;
      }
    }
  }
  if (locked) pthread_rwlock_unlock(&g_life);
  atomic_store(c.cur, "(idle)");
  free(h);
  atomic_fetch_add(&g_hostfn_ran, 1);
}

static void op_hostfn(worker_t *w) {
  hostfn_ctx_t *h = malloc(sizeof *h);
  if (!h) return;
  h->owner = w->id;
  h->action = rndn(w, 6);
  accel_stream_t *s = rndn(w, 3) ? any_stream(w) : w->temp[rndn(w, TEMPS)];
  if (!s) s = w->lane[0].s;
  atomic_fetch_add(&g_hostfn_launched, 1);
  if (CALL(&w->c, HOST_FUNC, OK, accel_launch_host_func(s, host_fn, h)) != ACCEL_OK) {
    atomic_fetch_sub(&g_hostfn_launched, 1);
    free(h);
  }
}

/* --- the worker's own graphs ---------------------------------------------------------------- */

static void count_graph_hostfn(void *user) { atomic_fetch_add((atomic_long *)user, 1); }

static const accel_capture_mode_t k_modes[] = {
    ACCEL_CAPTURE_MODE_GLOBAL, ACCEL_CAPTURE_MODE_THREAD_LOCAL, ACCEL_CAPTURE_MODE_RELAXED};

/* Captures fill(a, value), scale(a, sc[0]), L1 norm -> sc[1], a host function and a pool
 * temporary on lane l. With `illegal`, a synchronize of the capturing stream (or a second
 * capture on it) in the middle must invalidate the capture. Returns 1 when the graph is ready. */
static int capture_lane(worker_t *w, lane_t *l, accel_graph_t *g, accel_pool_t *pool,
                        float value, int illegal) {
  caller_t *c = &w->c;
  accel_capture_mode_t mode = k_modes[rndn(w, 3)];
  int global = mode == ACCEL_CAPTURE_MODE_GLOBAL;
  unsigned in = global ? IN_GLOBAL : OK;
  if (global) global_enter();
  if (CALL(c, CAPTURE_BEGIN, OK, accel_graph_capture_begin(g, l->s, pool, mode)) != ACCEL_OK) {
    if (global) global_leave();
    return 0;
  }
  float *tmp = NULL;
  accel_tensor_t a = ten(l->a, l->n, ACCEL_F32);
  if (CALL(c, MALLOC_ASYNC, in, accel_malloc_async(l->s, 256 * 4, (void **)&tmp)) == ACCEL_OK) {
    accel_tensor_t t = ten(tmp, 256, ACCEL_F32);
    CALL(c, FILL, in, accel_fill(l->s, &t, 1, 1.0f));
    if (CALL(c, FREE_ASYNC, in, accel_free_async(l->s, tmp)) == ACCEL_OK) tmp = NULL;
  }
  CALL(c, FILL, in, accel_fill(l->s, &a, 1, value));
  if (illegal == 1) {
    CALL(c, STREAM_SYNC, M(ACCEL_ERROR_ILLEGAL_IN_CAPTURE) | M(ACCEL_ERROR_CAPTURE_INVALIDATED),
         accel_stream_synchronize(l->s));
  } else if (illegal == 2) {
    accel_graph_t *g2 = NULL;
    if (CALL(c, GRAPH_CREATE, OK, accel_graph_create(g_dev, &g2)) == ACCEL_OK) {
      CALL(c, CAPTURE_BEGIN, M(ACCEL_ERROR_ILLEGAL_IN_CAPTURE),
           accel_graph_capture_begin(g2, l->s, NULL, ACCEL_CAPTURE_MODE_RELAXED));
      CALL(c, GRAPH_DESTROY, OK, accel_graph_destroy(g2));
    }
  }
  if (illegal) in |= M(ACCEL_ERROR_CAPTURE_INVALIDATED);
  CALL(c, SCALE, in, accel_scale(l->s, &a, 1, l->sc));
  CALL(c, NORM, in, accel_multi_tensor_norm(l->s, &a, 1, 1.0f, l->sc + 1));
  CALL(c, HOST_FUNC, in, accel_launch_host_func(l->s, count_graph_hostfn, &l->graph_hostfn));
  int capturing = -1;
  CALL(c, IS_CAPTURING, OK, accel_stream_is_capturing(l->s, &capturing));
  if (!global && !illegal && capturing != 1)
    failf(c, "a capturing stream says it is capturing: %d", capturing);
  accel_status_t st = CALL(c, CAPTURE_END, illegal ? M(ACCEL_ERROR_CAPTURE_INVALIDATED) : in,
                           accel_graph_capture_end(g));
  if (global) global_leave();
  /* an invalidated capture refused the free_async: the block stays live (GRAPHS.md: blocks
   * still allocated at capture_end are freed with accel_free) */
  if (tmp) CALL(c, FREE, OK, accel_free(g_dev, tmp));
  return st == ACCEL_OK;
}

static void op_own_graph(worker_t *w) {
  caller_t *c = &w->c;
  int li = rndn(w, 2);
  lane_t *l = &w->lane[li], *o = &w->lane[1 - li];
  if (!l->graph) {
    CALL(c, GRAPH_CREATE, OK, accel_graph_create(g_dev, &l->graph));
    return;
  }
  switch (rndn(w, 8)) {
    case 0: case 1: { /* (re)capture */
      if (l->graph_ready && CALL(c, GRAPH_RESET, OK, accel_graph_reset(l->graph)) == ACCEL_OK)
        l->graph_ready = 0;
      if (l->graph_ready) break;
      int illegal = rndn(w, 5) == 0 ? 1 + rndn(w, 2) : 0;
      l->gvalue = (double)(1 + rndn(w, 8));
      l->graph_ready = capture_lane(w, l, l->graph, rndn(w, 2) ? l->pool : NULL,
                                    (float)l->gvalue, illegal);
      break;
    }
    case 2: case 3: case 4: { /* replay on the lane, or on the other lane joined by events */
      if (!exact_value(l->gvalue * l->s0)) {
        if (CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(l->s, l->sc, &k_one, 4)) == ACCEL_OK)
          l->s0 = 1.0;
      }
      int hop = rndn(w, 2);
      accel_stream_t *s = hop ? o->s : l->s;
      if (hop) {
        CALL(c, EVENT_RECORD, OK, accel_event_record(w->hop[0], l->s));
        CALL(c, WAIT_EVENT, OK, accel_stream_wait_event(o->s, w->hop[0]));
      }
      accel_status_t st = CALL(c, REPLAY, l->graph_ready ? OK : M(ACCEL_ERROR_STATE),
                               accel_graph_replay(l->graph, s));
      if (st == ACCEL_OK) {
        l->va = l->gvalue * l->s0;
        l->norm = fabs(l->va) * (double)l->n;
        l->norm_known = 1;
        l->graph_replays++;
      }
      if (hop) {
        CALL(c, EVENT_RECORD, OK, accel_event_record(w->hop[1], o->s));
        CALL(c, WAIT_EVENT, OK, accel_stream_wait_event(l->s, w->hop[1]));
      }
      break;
    }
    case 5: { /* the graph's pool, shared with a later capture of this lane */
      accel_pool_t *p = NULL;
      accel_status_t st = CALL(c, GRAPH_POOL, OK | M(ACCEL_ERROR_STATE),
                               accel_graph_pool(l->graph, &p));
      if (st == ACCEL_OK && l->graph_ready) {
        if (l->pool) CALL(c, POOL_RELEASE, OK, accel_pool_release(l->pool));
        l->pool = p;
      } else if (st == ACCEL_OK) {
        CALL(c, POOL_RELEASE, OK, accel_pool_release(p));
      }
      break;
    }
    case 6: /* a fresh own pool, or none */
      if (l->pool) {
        if (CALL(c, POOL_RELEASE, OK, accel_pool_release(l->pool)) == ACCEL_OK) l->pool = NULL;
      } else {
        CALL(c, POOL_CREATE, OK, accel_graph_pool_create(g_dev, &l->pool));
      }
      break;
    default:
      if (CALL(c, GRAPH_DESTROY, OK, accel_graph_destroy(l->graph)) == ACCEL_OK) {
        l->graph = NULL;
        l->graph_ready = 0;
      }
      break;
  }
}

/* --- shared graphs -------------------------------------------------------------------------- */

static void op_shared_graph(worker_t *w) {
  caller_t *c = &w->c;
  int k = rndn(w, SHARED_GRAPHS);
  shared_graph_t *sg = &g_sgraph[k];
  pthread_mutex_lock(&sg->group->lock);
  if (rndn(w, 5) == 0) { /* reset and capture again on one of this worker's lanes */
    lane_t *l = &w->lane[rndn(w, 2)];
    CALL(c, GRAPH_RESET, OK, accel_graph_reset(sg->g));
    sg->ready = 0;
    accel_capture_mode_t mode = k_modes[rndn(w, 3)];
    int global = mode == ACCEL_CAPTURE_MODE_GLOBAL;
    unsigned in = global ? IN_GLOBAL : OK;
    float value = (float)(1 + rndn(w, 16));
    if (global) global_enter();
    float *tmp = NULL;
    if (CALL(c, CAPTURE_BEGIN, OK, accel_graph_capture_begin(sg->g, l->s, k < 2 ? g_shared_pool
                                                                                : NULL, mode)) ==
        ACCEL_OK) {
      accel_tensor_t out = ten(sg->out, SHARED_OUT, ACCEL_F32);
      if (CALL(c, MALLOC_ASYNC, in, accel_malloc_async(l->s, 1024 * 4, (void **)&tmp)) ==
          ACCEL_OK) {
        accel_tensor_t t = ten(tmp, 1024, ACCEL_F32);
        CALL(c, FILL, in, accel_fill(l->s, &t, 1, 2.0f));
        CALL(c, NORM, in, accel_multi_tensor_norm(l->s, &t, 1, 1.0f, sg->norm));
        if (CALL(c, FREE_ASYNC, in, accel_free_async(l->s, tmp)) == ACCEL_OK) tmp = NULL;
      }
      CALL(c, FILL, in, accel_fill(l->s, &out, 1, value));
      CALL(c, NORM, in, accel_multi_tensor_norm(l->s, &out, 1, 1.0f, sg->norm));
      sg->ready = CALL(c, CAPTURE_END, in, accel_graph_capture_end(sg->g)) == ACCEL_OK;
      sg->value = value;
    }
    if (global) global_leave();
    if (tmp) CALL(c, FREE, OK, accel_free(g_dev, tmp));
  } else { /* replay after the group's previous replay */
    accel_stream_t *s = any_stream(w);
    pending_t *pd = &w->pend[k];
    CALL(c, WAIT_EVENT, OK, accel_stream_wait_event(s, sg->group->done));
    if (CALL(c, REPLAY, sg->ready ? OK : M(ACCEL_ERROR_STATE), accel_graph_replay(sg->g, s)) ==
            ACCEL_OK &&
        !pd->active &&
        CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(s, pd->slot, sg->norm, 4)) == ACCEL_OK) {
      pd->active = 1;
      pd->s = s;
      pd->expect = sg->value * (float)SHARED_OUT;
    }
    CALL(c, EVENT_RECORD, OK, accel_event_record(sg->group->done, s));
  }
  pthread_mutex_unlock(&sg->group->lock);
}

static void check_pending(worker_t *w, int tries) {
  for (int k = 0; k < SHARED_GRAPHS; ++k) {
    pending_t *pd = &w->pend[k];
    if (!pd->active || sync_retry(w, pd->s, tries) != ACCEL_OK) continue;
    if (*pd->slot != pd->expect)
      failf(&w->c, "shared graph %d: replayed norm %g, want %g", k, (double)*pd->slot,
            (double)pd->expect);
    pd->active = 0;
  }
}

static void op_check_shared(worker_t *w) {
  caller_t *c = &w->c;
  int k = rndn(w, SHARED_STREAMS);
  float *region = g_shared_buf + ((size_t)w->id * SHARED_STREAMS + (size_t)k) * REGION;
  float *host = w->region_host + (size_t)k * REGION;
  if (rndn(w, 2)) {
    accel_tensor_t t = ten(region, REGION, ACCEL_F32);
    float v = (float)rndn(w, 1000);
    if (CALL(c, FILL, OK, accel_fill(g_shared[k], &t, 1, v)) == ACCEL_OK) {
      w->region_val[k] = v;
      w->region_known[k] = 1;
    }
  } else if (w->region_known[k]) {
    CALL(c, MEMCPY_ASYNC, OK, accel_memcpy_async(g_shared[k], host, region, REGION * 4));
    if (CALL(c, STREAM_SYNC, OK, accel_stream_synchronize(g_shared[k])) != ACCEL_OK) return;
    size_t bad = 0;
    for (size_t i = 0; i < REGION; ++i) bad += host[i] != w->region_val[k];
    if (bad) failf(c, "shared stream %d: %zu of %d values differ from %g", k, bad, REGION,
                   (double)w->region_val[k]);
  }
  check_pending(w, 1);
}

/* --- deliberate misuse (under the writer lock: nothing else creates or allocates) ------------- */

static void op_misuse(worker_t *w) {
  caller_t *c = &w->c;
  const unsigned bad_handle = M(ACCEL_ERROR_INVALID_HANDLE);
  const unsigned bad_arg = M(ACCEL_ERROR_INVALID_ARGUMENT);
  lane_t *l = &w->lane[rndn(w, 2)];
  switch (rndn(w, 7)) {
    case 0: {
      accel_stream_t *s = NULL;
      if (CALL(c, STREAM_CREATE, OK, accel_stream_create_ex(g_dev, 0, &s)) != ACCEL_OK) break;
      CALL(c, STREAM_DESTROY, OK, accel_stream_destroy(s));
      CALL(c, STREAM_SYNC, bad_handle, accel_stream_synchronize(s));
      CALL(c, STREAM_DESTROY, bad_handle, accel_stream_destroy(s));
      break;
    }
    case 1: {
      accel_event_t *e = NULL;
      if (CALL(c, EVENT_CREATE, OK, accel_event_create(g_dev, 0, &e)) != ACCEL_OK) break;
      CALL(c, EVENT_DESTROY, OK, accel_event_destroy(e));
      CALL(c, EVENT_RECORD, bad_handle, accel_event_record(e, l->s));
      CALL(c, EVENT_DESTROY, bad_handle, accel_event_destroy(e));
      break;
    }
    case 2: {
      accel_graph_t *g = NULL;
      if (CALL(c, GRAPH_CREATE, OK, accel_graph_create(g_dev, &g)) != ACCEL_OK) break;
      CALL(c, REPLAY, M(ACCEL_ERROR_STATE), accel_graph_replay(g, l->s));
      CALL(c, GRAPH_DESTROY, OK, accel_graph_destroy(g));
      CALL(c, REPLAY, bad_handle, accel_graph_replay(g, l->s));
      CALL(c, GRAPH_DESTROY, bad_handle, accel_graph_destroy(g));
      break;
    }
    case 3: {
      accel_pool_t *p = NULL;
      if (CALL(c, POOL_CREATE, OK, accel_graph_pool_create(g_dev, &p)) != ACCEL_OK) break;
      CALL(c, POOL_RELEASE, OK, accel_pool_release(p));
      CALL(c, POOL_RELEASE, bad_handle, accel_pool_release(p));
      break;
    }
    case 4: {
      void *p = NULL;
      if (CALL(c, MALLOC_ASYNC, OK, accel_malloc_async(l->s, 1000, &p)) != ACCEL_OK) break;
      CALL(c, FREE_ASYNC, OK, accel_free_async(l->s, p));
      CALL(c, FREE_ASYNC, bad_arg, accel_free_async(l->s, p));
      CALL(c, FREE, bad_arg, accel_free(g_dev, p));
      break;
    }
    case 5: {
      void *p = NULL;
      if (CALL(c, HOST_ALLOC, OK, accel_host_alloc(g_dev, 1000, &p)) != ACCEL_OK) break;
      CALL(c, HOST_FREE, OK, accel_host_free(g_dev, p));
      CALL(c, HOST_FREE, bad_arg, accel_host_free(g_dev, p));
      break;
    }
    default: { /* an idle stream is not capturing: a capture_end without begin is STATE */
      accel_graph_t *g = NULL;
      if (CALL(c, GRAPH_CREATE, OK, accel_graph_create(g_dev, &g)) != ACCEL_OK) break;
      CALL(c, CAPTURE_END, M(ACCEL_ERROR_STATE), accel_graph_capture_end(g));
      CALL(c, GRAPH_DESTROY, OK, accel_graph_destroy(g));
      break;
    }
  }
}

/* --- the operation table -------------------------------------------------------------------- */

typedef struct op {
  const char *name;
  int weight;
  void (*fn)(worker_t *w);
  int exclusive; /* runs under the writer lock */
} op_t;

static const op_t k_ops[] = {
    {"kernel", 30, op_kernel, 0},        {"check", 6, op_check, 0},
    {"memory", 10, op_memory, 0},        {"device", 3, op_device, 0},
    {"stream", 8, op_stream, 0},         {"event", 10, op_event, 0},
    {"host function", 6, op_hostfn, 0},  {"own graph", 10, op_own_graph, 0},
    {"shared graph", 8, op_shared_graph, 0}, {"shared stream", 6, op_check_shared, 0},
    {"misuse", 2, op_misuse, 1},
};
enum { NOPS = sizeof k_ops / sizeof k_ops[0] };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double g_end_time;
static long g_op_runs[WORKERS][NOPS];
static int g_weight[NOPS], g_total_weight;

static void set_weights(const char *skip) {
  for (int i = 0; i < NOPS; ++i) {
    const char *hit = skip ? strstr(skip, k_ops[i].name) : NULL;
    size_t len = strlen(k_ops[i].name);
    int skipped = hit && (hit == skip || hit[-1] == ',') && (hit[len] == ',' || !hit[len]);
    g_weight[i] = skipped ? 0 : k_ops[i].weight;
    g_total_weight += g_weight[i];
    if (skipped) printf("ACCEL_STRESS_SKIP: no '%s' operations\n", k_ops[i].name);
  }
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  while (g_total_weight && !atomic_load(&g_stop) && now_s() < g_end_time) {
    int r = rndn(w, g_total_weight), i = 0;
    while (r >= g_weight[i]) r -= g_weight[i++];
    if (k_ops[i].exclusive)
      pthread_rwlock_wrlock(&g_life);
    else
      pthread_rwlock_rdlock(&g_life);
    k_ops[i].fn(w);
    pthread_rwlock_unlock(&g_life);
    g_op_runs[w->id][i]++;
    atomic_fetch_add(&w->c.iter, 1);
  }
  /* settle: wait for the lanes and check them one last time, then drop what this worker made */
  caller_t *c = &w->c;
  pthread_rwlock_rdlock(&g_life);
  for (int li = 0; li < 2; ++li) check_lane(w, &w->lane[li], 5000);
  check_pending(w, 5000);
  for (int li = 0; li < 2; ++li) {
    lane_t *l = &w->lane[li];
    if (l->graph) CALL(c, GRAPH_DESTROY, OK, accel_graph_destroy(l->graph));
    if (l->pool) CALL(c, POOL_RELEASE, OK, accel_pool_release(l->pool));
    l->graph = NULL;
    l->pool = NULL;
  }
  for (int i = 0; i < TEMPS; ++i)
    if (w->temp[i]) CALL(c, STREAM_DESTROY, OK, accel_stream_destroy(w->temp[i]));
  for (int i = 0; i < 4; ++i)
    if (w->blocks[i]) CALL(c, FREE, OK, accel_free(g_dev, w->blocks[i]));
  for (int i = 0; i < 2; ++i)
    if (w->refs[i]) CALL(c, DEVICE_CLOSE, OK, accel_device_close(w->refs[i]));
  pthread_rwlock_unlock(&g_life);
  atomic_store(&w->cur, "(finished)");
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Watchdog, setup and teardown
 * ------------------------------------------------------------------------------------------- */

static double g_watchdog_s;
static atomic_int g_done;
static _Atomic(const char *) g_main_cur = "(setup)";

static void *watchdog_main(void *arg) {
  (void)arg;
  double start = now_s();
  while (!atomic_load(&g_done)) {
    if (now_s() - start > g_watchdog_s) {
      fprintf(stderr, "\nWATCHDOG: no end after %.0f s; what every thread was doing:\n",
              g_watchdog_s);
      fprintf(stderr, "  main: %s\n", atomic_load(&g_main_cur));
      for (int i = 0; i < WORKERS; ++i)
        fprintf(stderr, "  worker %d (iteration %ld): %s; its last host function: %s\n", i,
                atomic_load(&g_workers[i].c.iter), atomic_load(&g_workers[i].cur),
                atomic_load(&g_hostfn_cur[i]) ? atomic_load(&g_hostfn_cur[i]) : "(none)");
      fprintf(stderr, "  host functions launched %ld, ran %ld\n", atomic_load(&g_hostfn_launched),
              atomic_load(&g_hostfn_ran));
      fflush(stderr);
      _exit(1);
    }
    usleep(100 * 1000);
  }
  return NULL;
}

#define SETUP(call) REQUIRE_OK(call, exit(1))

static void setup_lane(worker_t *w, int li) {
  lane_t *l = &w->lane[li];
  l->n = 1536 + (size_t)w->id * 128;
  SETUP(accel_stream_create_ex(g_dev, li ? ACCEL_STREAM_LAZY : ACCEL_STREAM_EAGER, &l->s));
  SETUP(accel_malloc(g_dev, l->n * 4, (void **)&l->a));
  SETUP(accel_malloc(g_dev, l->n * 4, (void **)&l->p));
  SETUP(accel_malloc(g_dev, l->n * 4, (void **)&l->m));
  SETUP(accel_malloc(g_dev, l->n * 4, (void **)&l->v));
  SETUP(accel_malloc(g_dev, l->n * 2, (void **)&l->lp));
  SETUP(accel_malloc(g_dev, SCALARS * 4, (void **)&l->sc));
  l->args = (accel_adam_args_t *)(l->sc + 16);
  SETUP(accel_host_alloc(g_dev, l->n * 4, (void **)&l->host));
  SETUP(accel_host_alloc(g_dev, l->n * 4, (void **)&l->host_p));
  SETUP(accel_host_alloc(g_dev, l->n * 2, (void **)&l->host_lp));
  SETUP(accel_host_alloc(g_dev, 8 * 4, (void **)&l->host_sc));
  SETUP(accel_memset_async(l->s, l->a, 0, l->n * 4));
  SETUP(accel_memset_async(l->s, l->p, 0, l->n * 4));
  SETUP(accel_memset_async(l->s, l->m, 0, l->n * 4));
  SETUP(accel_memset_async(l->s, l->v, 0, l->n * 4));
  SETUP(accel_memset_async(l->s, l->lp, 0, l->n * 2));
  SETUP(accel_memset_async(l->s, l->sc, 0, SCALARS * 4));
  SETUP(accel_memcpy_async(l->s, l->sc, &k_one, 4));
  SETUP(accel_stream_synchronize(l->s));
  l->s0 = 1.0;
  atomic_init(&l->graph_hostfn, 0);
}

static void teardown_lane(lane_t *l) {
  REL_CHECK(accel_stream_destroy(l->s) == ACCEL_OK, "lane stream destroy");
  void *dev_ptrs[] = {l->a, l->p, l->m, l->v, l->lp, l->sc};
  for (size_t i = 0; i < sizeof dev_ptrs / sizeof dev_ptrs[0]; ++i)
    REL_CHECK(accel_free(g_dev, dev_ptrs[i]) == ACCEL_OK, "lane free");
  void *host_ptrs[] = {l->host, l->host_p, l->host_lp, l->host_sc};
  for (size_t i = 0; i < sizeof host_ptrs / sizeof host_ptrs[0]; ++i)
    REL_CHECK(accel_host_free(g_dev, host_ptrs[i]) == ACCEL_OK, "lane host free");
}

static void print_summary(void) {
  static const char *const short_name[NSTATUS] = {
      "OK", "INVALID_ARGUMENT", "INVALID_HANDLE", "OUT_OF_MEMORY", "UNAVAILABLE",
      "UNSUPPORTED", "NOT_READY", "ILLEGAL_IN_CAPTURE", "CAPTURE_INVALIDATED", "PLUGIN",
      "BACKEND", "STATE", "(unknown)"};
  printf("statuses per call:\n");
  for (int i = 0; i < NCALLS; ++i) {
    char line[512];
    int len = snprintf(line, sizeof line, "  %-30s", k_call_name[i]);
    for (int s = 0; s < NSTATUS; ++s) {
      long n = atomic_load(&g_counts[i][s]);
      if (n && len < (int)sizeof line)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %ld", short_name[s], n);
    }
    printf("%s\n", line);
  }
  printf("operations per worker:");
  for (int o = 0; o < NOPS; ++o) {
    long n = 0;
    for (int i = 0; i < WORKERS; ++i) n += g_op_runs[i][o];
    printf("%s %s %ld", o ? "," : "", k_ops[o].name, n);
  }
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_stress DEVICE [SECONDS]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *env = getenv("ACCEL_STRESS_SECONDS");
  double seconds = argc > 2 ? atof(argv[2]) : env && *env ? atof(env) : 8.0;
  if (!(seconds > 0)) seconds = 8.0;
  const char *seed_env = getenv("ACCEL_STRESS_SEED");
  uint64_t seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 0)
                                        : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  g_selector = argv[1];
  set_weights(getenv("ACCEL_STRESS_SKIP"));
  g_watchdog_s = seconds * 4 + 20;
  pthread_t watchdog;
  pthread_create(&watchdog, NULL, watchdog_main, NULL);

  g_dev = rel_open(g_selector);
  accel_memory_stats_t base = rel_settled_stats(g_dev);
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&g_life, &attr);
  pthread_rwlockattr_destroy(&attr);

  for (int k = 0; k < SHARED_STREAMS; ++k) SETUP(accel_stream_create(g_dev, &g_shared[k]));
  for (int k = 0; k < SHARED_EVENTS; ++k)
    SETUP(accel_event_create(g_dev, ACCEL_EVENT_DISABLE_TIMING, &g_shared_ev[k]));
  SETUP(accel_graph_pool_create(g_dev, &g_shared_pool));
  SETUP(accel_malloc(g_dev, (size_t)WORKERS * SHARED_STREAMS * REGION * 4,
                     (void **)&g_shared_buf));
  for (int i = 0; i < 2; ++i) {
    pthread_mutex_init(&g_groups[i].lock, NULL);
    SETUP(accel_event_create(g_dev, ACCEL_EVENT_DISABLE_TIMING, &g_groups[i].done));
  }
  for (int k = 0; k < SHARED_GRAPHS; ++k) {
    shared_graph_t *sg = &g_sgraph[k];
    sg->group = &g_groups[k < 2 ? 0 : 1];
    SETUP(accel_graph_create(g_dev, &sg->g));
    SETUP(accel_malloc(g_dev, SHARED_OUT * 4, (void **)&sg->out));
    SETUP(accel_malloc(g_dev, 4, (void **)&sg->norm));
  }
  for (int i = 0; i < WORKERS; ++i) {
    worker_t *w = &g_workers[i];
    w->id = i;
    w->seed = w->rng = seed + (uint64_t)i * 0x2545F4914F6CDD1Dull;
    snprintf(w->c.who, sizeof w->c.who, "worker %d", i);
    atomic_init(&w->cur, "(not started)");
    w->c.cur = &w->cur;
    for (int li = 0; li < 2; ++li) setup_lane(w, li);
    for (int e = 0; e < 2; ++e) {
      SETUP(accel_event_create(g_dev, ACCEL_EVENT_DISABLE_TIMING, &w->hop[e]));
      SETUP(accel_event_create(g_dev, ACCEL_EVENT_DEFAULT, &w->timing[e]));
    }
    SETUP(accel_host_alloc(g_dev, SHARED_STREAMS * REGION * 4, (void **)&w->region_host));
    SETUP(accel_host_alloc(g_dev, SHARED_GRAPHS * 4, (void **)&w->sg_host));
    for (int k = 0; k < SHARED_GRAPHS; ++k) w->pend[k].slot = w->sg_host + k;
    SETUP(accel_malloc(g_dev, 256, (void **)&w->quiet));
    printf("worker %d: seed 0x%016llx\n", i, (unsigned long long)w->seed);
  }
  printf("test_stress on '%s': %d workers for %.1f s (ACCEL_STRESS_SEED=0x%016llx)\n",
         g_selector, WORKERS, seconds, (unsigned long long)seed);

  atomic_store(&g_main_cur, "(joining workers)");
  g_end_time = now_s() + seconds;
  pthread_t threads[WORKERS];
  for (int i = 0; i < WORKERS; ++i) pthread_create(&threads[i], NULL, worker_main, &g_workers[i]);
  for (int i = 0; i < WORKERS; ++i) pthread_join(threads[i], NULL);

  atomic_store(&g_main_cur, "accel_device_synchronize (after the workers)");
  REL_CHECK(accel_device_synchronize(g_dev) == ACCEL_OK, "device synchronize");
  long launched = atomic_load(&g_hostfn_launched), ran = atomic_load(&g_hostfn_ran);
  REL_CHECK(launched == ran, "%ld host functions launched, %ld ran", launched, ran);
  for (int i = 0; i < WORKERS; ++i)
    for (int li = 0; li < 2; ++li) {
      lane_t *l = &g_workers[i].lane[li];
      long runs = atomic_load(&l->graph_hostfn);
      REL_CHECK(runs == l->graph_replays, "worker %d lane %d: captured host function ran %ld "
                "times for %ld replays", i, li, runs, l->graph_replays);
    }

  atomic_store(&g_main_cur, "teardown");
  for (int k = 0; k < SHARED_GRAPHS; ++k) {
    REL_CHECK(accel_graph_destroy(g_sgraph[k].g) == ACCEL_OK, "shared graph destroy");
    REL_CHECK(accel_free(g_dev, g_sgraph[k].out) == ACCEL_OK, "free");
    REL_CHECK(accel_free(g_dev, g_sgraph[k].norm) == ACCEL_OK, "free");
  }
  REL_CHECK(accel_pool_release(g_shared_pool) == ACCEL_OK, "shared pool release");
  for (int i = 0; i < 2; ++i) {
    REL_CHECK(accel_event_destroy(g_groups[i].done) == ACCEL_OK, "event destroy");
    pthread_mutex_destroy(&g_groups[i].lock);
  }
  for (int i = 0; i < WORKERS; ++i) {
    worker_t *w = &g_workers[i];
    for (int li = 0; li < 2; ++li) teardown_lane(&w->lane[li]);
    for (int e = 0; e < 2; ++e) {
      REL_CHECK(accel_event_destroy(w->hop[e]) == ACCEL_OK, "event destroy");
      REL_CHECK(accel_event_destroy(w->timing[e]) == ACCEL_OK, "event destroy");
    }
    REL_CHECK(accel_host_free(g_dev, w->region_host) == ACCEL_OK, "host free");
    REL_CHECK(accel_host_free(g_dev, w->sg_host) == ACCEL_OK, "host free");
    REL_CHECK(accel_free(g_dev, w->quiet) == ACCEL_OK, "free");
  }
  for (int k = 0; k < SHARED_EVENTS; ++k)
    REL_CHECK(accel_event_destroy(g_shared_ev[k]) == ACCEL_OK, "event destroy");
  for (int k = 0; k < SHARED_STREAMS; ++k)
    REL_CHECK(accel_stream_destroy(g_shared[k]) == ACCEL_OK, "shared stream destroy");
  REL_CHECK(accel_free(g_dev, g_shared_buf) == ACCEL_OK, "free");

  atomic_store(&g_main_cur, "settled memory statistics");
  accel_memory_stats_t end = rel_settled_stats(g_dev);
  REL_CHECK(end.allocated_bytes == base.allocated_bytes && end.active_blocks == base.active_blocks,
            "leak: allocated_bytes %llu -> %llu, active_blocks %llu -> %llu",
            (unsigned long long)base.allocated_bytes, (unsigned long long)end.allocated_bytes,
            (unsigned long long)base.active_blocks, (unsigned long long)end.active_blocks);
  REL_CHECK(end.reserved_bytes == base.reserved_bytes &&
                end.graph_pool_reserved_bytes == base.graph_pool_reserved_bytes,
            "reserved_bytes %llu -> %llu, graph pools %llu -> %llu",
            (unsigned long long)base.reserved_bytes, (unsigned long long)end.reserved_bytes,
            (unsigned long long)base.graph_pool_reserved_bytes,
            (unsigned long long)end.graph_pool_reserved_bytes);
  REL_CHECK(accel_device_close(g_dev) == ACCEL_OK, "device close");
  pthread_rwlock_destroy(&g_life);
  atomic_store(&g_done, 1);
  pthread_join(watchdog, NULL);

  print_summary();
  int failures = atomic_load(&g_failures);
  if (failures) {
    fprintf(stderr, "test_stress: %d call(s) or result(s) against the contract%s\n", failures,
            failures >= MAX_FAILURES ? " (stopped early)" : "");
    rel_failures += failures;
  }
  return rel_finish("test_stress");
}
