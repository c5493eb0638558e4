/*
 * Ownership and concurrency contract (DESIGN.md "Ownership and concurrency", docs/GRAPHS.md):
 * one case per process, so that a crash or a hang in one case cannot hide another.
 *
 *   test_ownership DEVICE CASE
 *
 * CASE
 *   hostfn_deadlock          a host function calls host alloc/free, stream create/destroy and
 *                            memory stats while the main thread synchronizes the device or
 *                            empties the cache: no lock may be held while waiting for the stream.
 *   empty_cache_race         accel_empty_cache in a loop against two streams that allocate, fill,
 *                            reduce and free stream-ordered: memory goes back to the backend only
 *                            after the work that used it finished (exact norms).
 *   capture_event_race       one thread captures (RELAXED) an event record into short-lived
 *                            graphs, another queries, waits on and synchronizes that event:
 *                            only the statuses the contract allows, no use-after-free.
 *   default_stream_join      the default stream never joins a capture: waiting on an event
 *                            recorded in a capture is ILLEGAL_IN_CAPTURE, and a blocking copy
 *                            afterwards still copies.
 *   nested_graph_pool        a graph that replays another graph inside its capture keeps the
 *                            inner graph's pool alive after the inner graph is destroyed.
 *   double_release           the user's reference is released once; the second release of a
 *                            device, pool, stream, event or graph is INVALID_HANDLE, and what
 *                            still uses the object keeps working.
 *   stream_churn             stream-ordered blocks of destroyed streams stay reusable: 300
 *                            create/alloc/free/destroy rounds do not grow reserved_bytes.
 *   replay_serialised        replays of one graph on two streams are serialised (no lost
 *                            updates to the tensor the graph scales in place).
 *   capture_end_wrong_thread a GLOBAL or THREAD_LOCAL capture cannot be ended from another
 *                            thread (STATE; it stays active); a RELAXED one can.
 *   free_graph_memory        accel_free of a buffer a live graph writes is deferred: the graph
 *                            still replays into memory nobody else was given, and the memory
 *                            goes back when the graph is destroyed.
 * Every case but double_release (which opens and closes devices itself) ends with the memory
 * statistics back at the baseline taken before it. A watchdog turns a deadlock into a failure
 * ("HANG in CASE") after WATCHDOG_S seconds.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rel_common.h"

#define WATCHDOG_S 15
#define MiB ((size_t)1 << 20)

static const char *g_sel, *g_case;


/* The call's status must be want; true when it was. */
static bool expect(accel_status_t got, accel_status_t want, const char *what) {
  T_CHECK(got == want, "%s -> %s, want %s", what, accel_status_name(got),
          accel_status_name(want));
  return got == want;
}

#define OK(call) expect((call), ACCEL_OK, #call)

/* An expected failure: the status must be want and the calling thread's message must mention
 * word (case-insensitive; any non-empty message when word is ""). The message is cleared
 * afterwards, so that later reports do not show it as if it were a new error. */
static bool expect_error(accel_status_t got, accel_status_t want, const char *word,
                         const char *what) {
  const bool ok = expect(got, want, what);
  if (ok) {
    const char *msg = accel_last_error();
    size_t n = strlen(word);
    bool found = msg[0] != '\0' && n == 0;
    for (const char *p = msg; *p && !found; ++p) {
      size_t i = 0;
      while (i < n && p[i] && (p[i] | 0x20) == (word[i] | 0x20)) ++i;
      found = i == n;
    }
    T_CHECK(found, "%s -> %s as wanted, but the message does not mention '%s': '%s'", what,
            accel_status_name(got), word, msg);
  }
  accel_clear_error();
  return ok;
}

/* A feature the device cannot do makes the case SKIPPED (exit 77), never passed. */
static void skip_if_unsupported(accel_status_t st, const char *what) {
  if (st != ACCEL_ERROR_UNSUPPORTED) return;
  printf("SKIP: %s on %s: %s is unsupported: %s\n", g_case, g_sel, what, accel_last_error());
  exit(REL_SKIP);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Copies n floats back through stream s and checks that each is want; true when all are. */
static bool check_f32(accel_stream_t *s, const float *dev_ptr, size_t n, float want,
                      const char *what) {
  float *host = malloc(n * sizeof *host);
  if (!host) return false;
  bool ok = OK(accel_memcpy_async(s, host, dev_ptr, n * sizeof *host)) &&
            OK(accel_stream_synchronize(s));
  if (ok) {
    size_t bad = 0, first = 0;
    for (size_t i = n; i-- > 0;)
      if (host[i] != want) bad++, first = i;
    T_CHECK(bad == 0, "%s: %zu of %zu values differ from %g (first: [%zu] = %g)", what, bad, n,
            (double)want, first, (double)host[first]);
    ok = bad == 0;
  }
  free(host);
  return ok;
}

static void *watchdog_main(void *arg) {
  (void)arg;
  sleep_ms(WATCHDOG_S * 1000);
  fprintf(stderr, "HANG in %s (on %s): still running after %d s\n", g_case, g_sel, WATCHDOG_S);
  fflush(stderr);
  _exit(1);
}

/* A two-party rendezvous that counts phases, for cases that hand a capture between threads. */
static pthread_barrier_t g_step;
#define STEP() pthread_barrier_wait(&g_step)

/* ------------------------------------------------------------------------------------------ */
/* 1. hostfn_deadlock */

typedef struct hostfn_calls {
  accel_device_t *dev;
  int ran;
  accel_status_t host_alloc, host_free, stream_create, stream_destroy, stats;
} hostfn_calls_t;

static void hostfn_body(void *arg) {
  hostfn_calls_t *c = arg;
  sleep_ms(50); /* the main thread is inside its synchronize / empty_cache by now */
  void *h = NULL;
  c->host_alloc = accel_host_alloc(c->dev, 4096, &h);
  c->host_free = h ? accel_host_free(c->dev, h) : ACCEL_ERROR_STATE;
  accel_stream_t *s2 = NULL;
  c->stream_create = accel_stream_create(c->dev, &s2);
  c->stream_destroy = s2 ? accel_stream_destroy(s2) : ACCEL_ERROR_STATE;
  accel_memory_stats_t st;
  c->stats = accel_memory_stats(c->dev, &st);
  __atomic_store_n(&c->ran, 1, __ATOMIC_RELEASE);
}

static void case_hostfn_deadlock(accel_device_t *dev) {
  accel_stream_t *s = NULL;
  if (!OK(accel_stream_create(dev, &s))) return;
  for (int i = 0; i < 6; ++i) {
    const bool empty = i % 2 == 1; /* odd rounds: accel_empty_cache instead of the device sync */
    hostfn_calls_t c = {.dev = dev};
    accel_status_t st = accel_launch_host_func(s, hostfn_body, &c);
    skip_if_unsupported(st, "accel_launch_host_func");
    if (!expect(st, ACCEL_OK, "accel_launch_host_func")) break;
    sleep_ms(5); /* let the host function start its sleep */
    if (empty) {
      OK(accel_empty_cache(dev));
      OK(accel_stream_synchronize(s));
    } else {
      OK(accel_device_synchronize(dev));
    }
    T_CHECK(__atomic_load_n(&c.ran, __ATOMIC_ACQUIRE) == 1,
            "round %d: the host function had not run after %s", i,
            empty ? "accel_stream_synchronize" : "accel_device_synchronize");
    const char *round = empty ? "with accel_empty_cache" : "with accel_device_synchronize";
    T_CHECK(c.host_alloc == ACCEL_OK, "%s: accel_host_alloc in the host function -> %s", round,
            accel_status_name(c.host_alloc));
    T_CHECK(c.host_free == ACCEL_OK, "%s: accel_host_free in the host function -> %s", round,
            accel_status_name(c.host_free));
    T_CHECK(c.stream_create == ACCEL_OK, "%s: accel_stream_create in the host function -> %s",
            round, accel_status_name(c.stream_create));
    T_CHECK(c.stream_destroy == ACCEL_OK, "%s: accel_stream_destroy in the host function -> %s",
            round, accel_status_name(c.stream_destroy));
    T_CHECK(c.stats == ACCEL_OK, "%s: accel_memory_stats in the host function -> %s", round,
            accel_status_name(c.stats));
  }
  OK(accel_stream_destroy(s));
}

/* ------------------------------------------------------------------------------------------ */
/* 2. empty_cache_race */

#define RACE_SECONDS 2.5

typedef struct race_worker {
  accel_device_t *dev;
  int id, iters;
  double deadline;
} race_worker_t;

static int g_stop;

static void *emptier_main(void *arg) {
  accel_device_t *dev = arg;
  while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE))
    if (!OK(accel_empty_cache(dev))) break;
  return NULL;
}

static void *norm_worker_main(void *arg) {
  race_worker_t *w = arg;
  accel_stream_t *s = NULL;
  float *norm_dev = NULL;
  if (!OK(accel_stream_create(w->dev, &s))) return NULL;
  if (OK(accel_malloc(w->dev, sizeof(float), (void **)&norm_dev))) {
    for (int it = 0; now_s() < w->deadline && it < 100000; ++it, ++w->iters) {
      const size_t numel = (size_t)1 << (18 + (it + w->id) % 3);     /* 2^18 .. 2^20 */
      const size_t bytes = numel * sizeof(float) * (1 + (it / 3) % 2); /* 1 .. 8 MiB */
      const float value = (float)(1 + (it + w->id) % 7); /* sums stay exact in fp32 */
      float *p = NULL, got = -1.0f;
      if (!OK(accel_malloc_async(s, bytes, (void **)&p))) break;
      accel_tensor_t t = {p, numel, ACCEL_F32};
      bool ok = OK(accel_fill(s, &t, 1, value)) &&
                OK(accel_multi_tensor_norm(s, &t, 1, 1.0f, norm_dev));
      ok = OK(accel_free_async(s, p)) && ok;
      ok = ok && OK(accel_memcpy_async(s, &got, norm_dev, sizeof got));
      ok = OK(accel_stream_synchronize(s)) && ok;
      if (!ok) break;
      const float want = value * (float)numel;
      T_CHECK(got == want, "worker %d iteration %d: L1 norm of %zu x %g = %.9g, want %.9g", w->id,
              it, numel, (double)value, (double)got, (double)want);
      if (got != want) break;
    }
    OK(accel_free(w->dev, norm_dev));
  }
  OK(accel_stream_destroy(s));
  return NULL;
}

static void case_empty_cache_race(accel_device_t *dev) {
  race_worker_t w[2];
  pthread_t emptier, workers[2];
  const double deadline = now_s() + RACE_SECONDS;
  __atomic_store_n(&g_stop, 0, __ATOMIC_RELEASE);
  pthread_create(&emptier, NULL, emptier_main, dev);
  for (int i = 0; i < 2; ++i) {
    w[i] = (race_worker_t){.dev = dev, .id = i, .deadline = deadline};
    pthread_create(&workers[i], NULL, norm_worker_main, &w[i]);
  }
  for (int i = 0; i < 2; ++i) pthread_join(workers[i], NULL);
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
  pthread_join(emptier, NULL);
  printf("empty_cache_race: %d + %d iterations\n", w[0].iters, w[1].iters);
}

/* ------------------------------------------------------------------------------------------ */
/* 3. capture_event_race */

typedef struct event_race {
  accel_device_t *dev;
  accel_stream_t *s1, *s2;
  accel_event_t *e;
  float *buf;
  double deadline;
  int captures, invalidated, probes;
} event_race_t;

/* Thread B's calls on E may see it between captures or recorded in a live capture, so the
 * contract allows exactly these outcomes:
 *   ACCEL_OK                        E's last record is not part of a live capture (E was never
 *                                   really recorded, so nothing is pending), or S2 joined the
 *                                   capture by waiting on E (a fork; legal in RELAXED mode);
 *   ACCEL_ERROR_ILLEGAL_IN_CAPTURE  query/synchronize of an event recorded in the live capture
 *                                   (illegal in every mode), or a wait from a stream that is
 *                                   itself part of another capture;
 *   ACCEL_ERROR_CAPTURE_INVALIDATED S2 joined a capture that was invalidated before it ended
 *                                   (work on it is refused until capture_end);
 *   ACCEL_ERROR_STATE               E's last record belongs to a capture that has ended.
 * Anything else (NOT_READY for an event with no real work, INVALID_HANDLE, BACKEND...) fails. */
static bool event_status_allowed(accel_status_t st) {
  return st == ACCEL_OK || st == ACCEL_ERROR_ILLEGAL_IN_CAPTURE ||
         st == ACCEL_ERROR_CAPTURE_INVALIDATED || st == ACCEL_ERROR_STATE;
}

static void *event_prober_main(void *arg) {
  event_race_t *r = arg;
  while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
    accel_status_t st = accel_event_query(r->e);
    T_CHECK(event_status_allowed(st), "accel_event_query -> %s", accel_status_name(st));
    st = accel_stream_wait_event(r->s2, r->e);
    T_CHECK(event_status_allowed(st), "accel_stream_wait_event(S2, E) -> %s",
            accel_status_name(st));
    st = accel_event_synchronize(r->e);
    T_CHECK(event_status_allowed(st), "accel_event_synchronize -> %s", accel_status_name(st));
    r->probes++;
  }
  return NULL;
}

static void case_capture_event_race(accel_device_t *dev) {
  event_race_t r = {.dev = dev};
  if (!OK(accel_stream_create(dev, &r.s1)) || !OK(accel_stream_create(dev, &r.s2)) ||
      !OK(accel_event_create(dev, ACCEL_EVENT_DISABLE_TIMING, &r.e)) ||
      !OK(accel_malloc(dev, 1024 * sizeof(float), (void **)&r.buf)))
    return;
  accel_tensor_t t = {r.buf, 1024, ACCEL_F32};
  pthread_t prober;
  __atomic_store_n(&g_stop, 0, __ATOMIC_RELEASE);
  pthread_create(&prober, NULL, event_prober_main, &r);
  const double deadline = now_s() + RACE_SECONDS;
  while (now_s() < deadline) {
    accel_graph_t *g = NULL;
    if (!OK(accel_graph_create(dev, &g))) break;
    accel_status_t st = accel_graph_capture_begin(g, r.s1, NULL, ACCEL_CAPTURE_MODE_RELAXED);
    skip_if_unsupported(st, "graph capture");
    if (!expect(st, ACCEL_OK, "accel_graph_capture_begin(RELAXED)")) {
      accel_graph_destroy(g);
      break;
    }
    st = accel_event_record(r.e, r.s1);
    T_CHECK(st == ACCEL_OK || st == ACCEL_ERROR_CAPTURE_INVALIDATED,
            "accel_event_record in the capture -> %s", accel_status_name(st));
    st = accel_fill(r.s1, &t, 1, 1.0f);
    T_CHECK(st == ACCEL_OK || st == ACCEL_ERROR_CAPTURE_INVALIDATED,
            "accel_fill in the capture -> %s", accel_status_name(st));
    st = accel_graph_capture_end(g);
    T_CHECK(st == ACCEL_OK || st == ACCEL_ERROR_CAPTURE_INVALIDATED,
            "accel_graph_capture_end -> %s", accel_status_name(st));
    r.invalidated += st == ACCEL_ERROR_CAPTURE_INVALIDATED;
    r.captures++;
    if (!OK(accel_graph_destroy(g))) break;
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
  pthread_join(prober, NULL);
  printf("capture_event_race: %d captures (%d invalidated), %d probe rounds\n", r.captures,
         r.invalidated, r.probes);
  int cap1 = -1, cap2 = -1;
  OK(accel_stream_is_capturing(r.s1, &cap1));
  OK(accel_stream_is_capturing(r.s2, &cap2));
  T_CHECK(cap1 == 0 && cap2 == 0, "streams still capturing after the race: S1 %d, S2 %d", cap1,
          cap2);
  /* both streams and the event still work */
  OK(accel_event_record(r.e, r.s1));
  OK(accel_stream_wait_event(r.s2, r.e));
  rel_round_trip(dev, r.s2, 4096);
  rel_round_trip(dev, r.s1, 4096);
  OK(accel_event_synchronize(r.e));
  OK(accel_free(dev, r.buf));
  OK(accel_event_destroy(r.e));
  OK(accel_stream_destroy(r.s2));
  OK(accel_stream_destroy(r.s1));
}

/* ------------------------------------------------------------------------------------------ */
/* 4. default_stream_join */

#define JOIN_BYTES 4096

typedef struct join_ctx {
  accel_device_t *dev;
  accel_stream_t *s, *def;
  accel_event_t *e;
  accel_graph_t *g;
  float *buf;
  unsigned char *dev_bytes;
  accel_capture_mode_t mode;
} join_ctx_t;

static const char *mode_name(accel_capture_mode_t mode) {
  return mode == ACCEL_CAPTURE_MODE_GLOBAL         ? "GLOBAL"
         : mode == ACCEL_CAPTURE_MODE_THREAD_LOCAL ? "THREAD_LOCAL"
                                                   : "RELAXED";
}

/* Begins the capture on ctx->s and records E in it. */
static bool join_begin(join_ctx_t *c) {
  accel_tensor_t t = {c->buf, 256, ACCEL_F32};
  accel_status_t st = accel_graph_capture_begin(c->g, c->s, NULL, c->mode);
  skip_if_unsupported(st, "graph capture");
  return expect(st, ACCEL_OK, "accel_graph_capture_begin") && OK(accel_fill(c->s, &t, 1, 2.0f)) &&
         OK(accel_event_record(c->e, c->s));
}

/* From a thread that may make unsafe calls: the default stream refuses to join, then (unless
 * the capture is GLOBAL) blocking copies in both directions really run. */
static void join_refuse_and_copy(join_ctx_t *c) {
  char what[96];
  snprintf(what, sizeof what, "%s: accel_stream_wait_event(default stream, E recorded in capture)",
           mode_name(c->mode));
  expect_error(accel_stream_wait_event(c->def, c->e), ACCEL_ERROR_ILLEGAL_IN_CAPTURE, "default",
               what);
  int capturing = -1;
  OK(accel_stream_is_capturing(c->def, &capturing));
  T_CHECK(capturing == 0, "%s: the default stream reports capturing = %d after the refused join",
          mode_name(c->mode), capturing);
  if (c->mode == ACCEL_CAPTURE_MODE_GLOBAL) return; /* blocking copies are illegal in GLOBAL */
  unsigned char host[JOIN_BYTES], back[JOIN_BYTES];
  memset(host, 0, sizeof host);
  if (OK(accel_memcpy(c->dev, host, c->dev_bytes, sizeof host))) {
    size_t bad = 0;
    for (size_t i = 0; i < sizeof host; ++i) bad += host[i] != (unsigned char)(i * 7 + 1);
    T_CHECK(bad == 0, "%s: blocking accel_memcpy device->host after the refused join: %zu of "
            "%zu bytes differ (not copied)", mode_name(c->mode), bad, sizeof host);
  }
  for (size_t i = 0; i < sizeof host; ++i) host[i] = (unsigned char)(i * 3 + 5);
  OK(accel_memcpy(c->dev, c->dev_bytes, host, sizeof host));
  memset(back, 0, sizeof back);
  OK(accel_memcpy(c->dev, back, c->dev_bytes, sizeof back));
  T_CHECK(memcmp(back, host, sizeof back) == 0,
          "%s: blocking accel_memcpy host->device after the refused join did not copy",
          mode_name(c->mode));
}

static void *join_capturer_main(void *arg) {
  join_ctx_t *c = arg;
  bool began = join_begin(c);
  STEP(); /* 1: capture active, E recorded */
  STEP(); /* 2: the main thread tried to join and copied */
  if (began)
    expect_error(accel_graph_capture_end(c->g), ACCEL_ERROR_CAPTURE_INVALIDATED, "default",
                 "THREAD_LOCAL: capture_end after the refused default-stream join");
  return NULL;
}

static void join_variant(join_ctx_t *c, accel_capture_mode_t mode, bool other_thread) {
  unsigned char pattern[JOIN_BYTES];
  for (size_t i = 0; i < sizeof pattern; ++i) pattern[i] = (unsigned char)(i * 7 + 1);
  if (!OK(accel_memcpy(c->dev, c->dev_bytes, pattern, sizeof pattern))) return;
  if (!OK(accel_graph_create(c->dev, &c->g))) return;
  c->mode = mode;
  printf("default_stream_join: %s capture begun by %s thread\n", mode_name(mode),
         other_thread ? "another" : "this");
  if (other_thread) {
    pthread_t t;
    pthread_create(&t, NULL, join_capturer_main, c);
    STEP();
    join_refuse_and_copy(c);
    STEP();
    pthread_join(t, NULL);
  } else if (join_begin(c)) {
    join_refuse_and_copy(c);
    char what[80];
    snprintf(what, sizeof what, "%s: capture_end after the refused default-stream join",
             mode_name(mode));
    expect_error(accel_graph_capture_end(c->g), ACCEL_ERROR_CAPTURE_INVALIDATED, "default", what);
  }
  int capturing = -1;
  OK(accel_stream_is_capturing(c->s, &capturing));
  T_CHECK(capturing == 0, "%s: the stream is still capturing after capture_end", mode_name(mode));
  OK(accel_graph_destroy(c->g));
  c->g = NULL;
  /* the device and both streams are fully usable afterwards */
  rel_round_trip(c->dev, c->s, 1000);
  rel_round_trip(c->dev, c->def, 1000);
}

static void case_default_stream_join(accel_device_t *dev) {
  join_ctx_t c = {.dev = dev};
  if (!OK(accel_stream_create(dev, &c.s)) || !OK(accel_stream_default(dev, &c.def)) ||
      !OK(accel_event_create(dev, ACCEL_EVENT_DISABLE_TIMING, &c.e)) ||
      !OK(accel_malloc(dev, 256 * sizeof(float), (void **)&c.buf)) ||
      !OK(accel_malloc(dev, JOIN_BYTES, (void **)&c.dev_bytes)))
    return;
  pthread_barrier_init(&g_step, NULL, 2);
  join_variant(&c, ACCEL_CAPTURE_MODE_GLOBAL, false);
  join_variant(&c, ACCEL_CAPTURE_MODE_RELAXED, false);
  join_variant(&c, ACCEL_CAPTURE_MODE_THREAD_LOCAL, true);
  pthread_barrier_destroy(&g_step);
  OK(accel_stream_synchronize(c.s));
  OK(accel_free(dev, c.buf));
  OK(accel_free(dev, c.dev_bytes));
  OK(accel_event_destroy(c.e));
  OK(accel_stream_destroy(c.s));
}

/* ------------------------------------------------------------------------------------------ */
/* 5. nested_graph_pool */

#define NEST_N 1024 /* floats: 4096 bytes */

/* G1 on s: a pool temporary (*p) filled with 3.0, copied to out, freed; then G2 begins a
 * capture on s that replays G1. false when a step failed (reported). */
static bool capture_nested(accel_stream_t *s, accel_graph_t *g1, accel_graph_t *g2, float *out,
                           float **p) {
  accel_status_t st = accel_graph_capture_begin(g1, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  skip_if_unsupported(st, "graph capture");
  if (!expect(st, ACCEL_OK, "capture_begin(G1)")) return false;
  if (OK(accel_malloc_async(s, NEST_N * sizeof(float), (void **)p))) {
    accel_tensor_t t = {*p, NEST_N, ACCEL_F32};
    OK(accel_fill(s, &t, 1, 3.0f));
    OK(accel_memcpy_async(s, out, *p, NEST_N * sizeof(float)));
    OK(accel_free_async(s, *p));
  }
  if (!OK(accel_graph_capture_end(g1))) return false;
  if (!OK(accel_graph_capture_begin(g2, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL))) return false;
  st = accel_graph_replay(g1, s);
  skip_if_unsupported(st, "accel_graph_replay inside a capture");
  return expect(st, ACCEL_OK, "accel_graph_replay(G1) inside the capture of G2");
}

static void case_nested_graph_pool(accel_device_t *dev) {
  const accel_memory_stats_t base = rel_stats(dev);
  accel_stream_t *s = NULL;
  float *out = NULL, *p = NULL, *other = NULL;
  accel_graph_t *g1 = NULL, *g2 = NULL;
  if (!OK(accel_stream_create(dev, &s)) ||
      !OK(accel_malloc(dev, NEST_N * sizeof(float), (void **)&out)) ||
      !OK(accel_graph_create(dev, &g1)) || !OK(accel_graph_create(dev, &g2)))
    return;
  if (!capture_nested(s, g1, g2, out, &p) || !OK(accel_graph_capture_end(g2))) return;
  OK(accel_stream_synchronize(s));
  OK(accel_graph_destroy(g1));
  /* pools are not emptied, and whatever was G1's must not be handed out again */
  OK(accel_empty_cache(dev));
  if (OK(accel_malloc(dev, NEST_N * sizeof(float), (void **)&other))) {
    accel_tensor_t t = {other, NEST_N, ACCEL_F32};
    OK(accel_fill(s, &t, 1, 7.0f));
    T_CHECK(other != p, "a new accel_malloc got G1's pool block %p while G2 still uses it",
            (void *)p);
  }
  accel_memory_stats_t live = rel_stats(dev);
  T_CHECK(live.graph_pool_reserved_bytes > 0,
          "graph_pool_reserved_bytes is 0 while G2 (which replays G1's pool block) lives");
  for (int r = 0; r < 3; ++r) {
    OK(accel_memset_async(s, out, 0, NEST_N * sizeof(float)));
    if (!OK(accel_graph_replay(g2, s))) break;
    char what[64];
    snprintf(what, sizeof what, "out after replay %d of G2 (G1 destroyed)", r + 1);
    check_f32(s, out, NEST_N, 3.0f, what);
    if (other) check_f32(s, other, NEST_N, 7.0f, "an unrelated buffer after replaying G2");
  }
  OK(accel_graph_destroy(g2));
  OK(accel_stream_synchronize(s));
  if (other) OK(accel_free(dev, other));
  OK(accel_free(dev, out));
  accel_memory_stats_t end = rel_settled_stats(dev);
  T_CHECK(end.graph_pool_reserved_bytes == 0 && end.reserved_bytes == base.reserved_bytes,
          "after destroying G2 and emptying the cache: reserved %llu (baseline %llu), graph "
          "pools %llu", (unsigned long long)end.reserved_bytes,
          (unsigned long long)base.reserved_bytes,
          (unsigned long long)end.graph_pool_reserved_bytes);
  OK(accel_stream_destroy(s));
}

/* The same nesting, but G2's capture is invalidated and G1 destroyed before G2's capture ends:
 * ending it drops the last reference to G1's pool, whose memory is retired behind a fence on
 * every stream — the capture's own stream included, so nothing may hold that stream's lock
 * then (it deadlocked before the capture's last release moved out of the lock). */
static void case_invalid_nested_capture(accel_device_t *dev) {
  const accel_memory_stats_t base = rel_stats(dev);
  accel_stream_t *s = NULL;
  float *out = NULL, *p = NULL;
  accel_graph_t *g1 = NULL, *g2 = NULL;
  if (!OK(accel_stream_create(dev, &s)) ||
      !OK(accel_malloc(dev, NEST_N * sizeof(float), (void **)&out)) ||
      !OK(accel_graph_create(dev, &g1)) || !OK(accel_graph_create(dev, &g2)))
    return;
  if (!capture_nested(s, g1, g2, out, &p)) return;
  expect(accel_stream_synchronize(s), ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
         "accel_stream_synchronize on the capturing stream");
  OK(accel_graph_destroy(g1));
  expect(accel_graph_capture_end(g2), ACCEL_ERROR_CAPTURE_INVALIDATED, "capture_end(G2)");
  OK(accel_graph_destroy(g2));
  OK(accel_stream_synchronize(s));
  OK(accel_free(dev, out));
  accel_memory_stats_t end = rel_settled_stats(dev);
  T_CHECK(end.graph_pool_reserved_bytes == 0 && end.reserved_bytes == base.reserved_bytes,
          "after the invalid capture: reserved %llu (baseline %llu), graph pools %llu",
          (unsigned long long)end.reserved_bytes, (unsigned long long)base.reserved_bytes,
          (unsigned long long)end.graph_pool_reserved_bytes);
  OK(accel_stream_destroy(s));
}

/* ------------------------------------------------------------------------------------------ */
/* 6. double_release (opens and closes its own devices) */

/* The settled statistics of dev are back at zero blocks and no graph pool memory. */
static void expect_settled_empty(accel_device_t *dev, const accel_memory_stats_t *base,
                                 const char *what) {
  accel_memory_stats_t s = rel_settled_stats(dev);
  T_CHECK(s.allocated_bytes == base->allocated_bytes && s.active_blocks == base->active_blocks &&
          s.reserved_bytes == base->reserved_bytes && s.graph_pool_reserved_bytes == 0,
          "%s: allocated %llu (baseline %llu), reserved %llu (baseline %llu), graph pools %llu",
          what, (unsigned long long)s.allocated_bytes, (unsigned long long)base->allocated_bytes,
          (unsigned long long)s.reserved_bytes, (unsigned long long)base->reserved_bytes,
          (unsigned long long)s.graph_pool_reserved_bytes);
}

static void release_device_twice(void) {
  accel_device_t *d1 = NULL, *d2 = NULL;
  if (!OK(accel_device_open(g_sel, &d1)) || !OK(accel_device_open(g_sel, &d2))) return;
  T_CHECK(d1 == d2, "opening %s twice gave two handles", g_sel);
  OK(accel_device_close(d1));
  OK(accel_device_close(d2));
  expect_error(accel_device_close(d1), ACCEL_ERROR_INVALID_HANDLE, "accel_device_close",
               "(a) third accel_device_close");
}

static void release_pool_twice(void) {
  accel_device_t *d = NULL;
  accel_stream_t *s = NULL;
  accel_pool_t *pool = NULL, *p2 = NULL;
  accel_graph_t *g = NULL;
  float *out = NULL, *tmp = NULL;
  if (!OK(accel_device_open(g_sel, &d))) return;
  const accel_memory_stats_t base = rel_settled_stats(d);
  if (!OK(accel_stream_create(d, &s)) || !OK(accel_malloc(d, NEST_N * 4, (void **)&out)) ||
      !OK(accel_graph_pool_create(d, &pool)) || !OK(accel_graph_create(d, &g)))
    return;
  accel_status_t st = accel_graph_capture_begin(g, s, pool, ACCEL_CAPTURE_MODE_GLOBAL);
  skip_if_unsupported(st, "graph capture");
  if (!expect(st, ACCEL_OK, "(c) capture_begin with a created pool")) return;
  if (OK(accel_malloc_async(s, NEST_N * sizeof(float), (void **)&tmp))) {
    accel_tensor_t t = {tmp, NEST_N, ACCEL_F32};
    OK(accel_fill(s, &t, 1, 5.0f));
    OK(accel_memcpy_async(s, out, tmp, NEST_N * sizeof(float)));
    OK(accel_free_async(s, tmp));
  }
  if (!OK(accel_graph_capture_end(g))) return;
  OK(accel_pool_release(pool));
  expect_error(accel_pool_release(pool), ACCEL_ERROR_INVALID_HANDLE, "accel_pool_release",
               "(c) second accel_pool_release");
  OK(accel_memset_async(s, out, 0, NEST_N * sizeof(float)));
  if (OK(accel_graph_replay(g, s)))
    check_f32(s, out, NEST_N, 5.0f, "(c) replay after the user's pool reference was released");
  if (OK(accel_graph_pool(g, &p2))) {
    OK(accel_pool_release(p2));
    expect_error(accel_pool_release(p2), ACCEL_ERROR_INVALID_HANDLE, "accel_pool_release",
                 "(c) second release of the reference from accel_graph_pool");
  }
  OK(accel_memset_async(s, out, 0, NEST_N * sizeof(float)));
  if (OK(accel_graph_replay(g, s)))
    check_f32(s, out, NEST_N, 5.0f, "(c) replay after both pool references were released");
  OK(accel_graph_destroy(g));
  OK(accel_stream_synchronize(s));
  OK(accel_free(d, out));
  expect_settled_empty(d, &base, "(c) after destroying the graph");
  OK(accel_stream_destroy(s));
  OK(accel_device_close(d));
}

/* A release too many is refused under the name that was called. Each object is let go under
 * one of its lifetime names and released again under the other (docs/API.md, "Lifetime verbs":
 * create/release and the older open/close and destroy are the same calls). */
static void destroy_handles_twice(void) {
  accel_device_t *d = NULL, *d2 = NULL;
  accel_stream_t *s = NULL;
  accel_event_t *e = NULL;
  accel_graph_t *g = NULL;
  if (!OK(accel_device_create(g_sel, &d)) || !OK(accel_device_open(g_sel, &d2))) return;
  T_CHECK(d == d2, "accel_device_create and accel_device_open gave two handles for %s", g_sel);
  if (OK(accel_stream_create(d, &s)) && OK(accel_stream_release(s)))
    expect_error(accel_stream_destroy(s), ACCEL_ERROR_INVALID_HANDLE, "accel_stream_destroy",
                 "(d) accel_stream_destroy after accel_stream_release");
  if (OK(accel_event_create(d, 0, &e)) && OK(accel_event_destroy(e)))
    expect_error(accel_event_release(e), ACCEL_ERROR_INVALID_HANDLE, "accel_event_release",
                 "(d) accel_event_release after accel_event_destroy");
  if (OK(accel_graph_create(d, &g)) && OK(accel_graph_release(g)))
    expect_error(accel_graph_destroy(g), ACCEL_ERROR_INVALID_HANDLE, "accel_graph_destroy",
                 "(d) accel_graph_destroy after accel_graph_release");
  OK(accel_device_release(d));
  OK(accel_device_close(d2));
  expect_error(accel_device_release(d), ACCEL_ERROR_INVALID_HANDLE, "accel_device_release",
               "(a) accel_device_release after one create, one open, a release and a close");
}

static void close_device_under_stream(void) {
  accel_device_t *d = NULL;
  accel_stream_t *s = NULL;
  if (!OK(accel_device_open(g_sel, &d))) return;
  accel_graph_t *g = NULL;
  if (!OK(accel_stream_create(d, &s)) || !OK(accel_graph_create(d, &g))) return;
  OK(accel_device_close(d));
  expect_error(accel_device_close(d), ACCEL_ERROR_INVALID_HANDLE, "accel_device_close",
               "(b) second accel_device_close (a stream still lives)");
  accel_device_info_t info;
  void *p = NULL;
  expect_error(accel_device_get_info(d, &info), ACCEL_ERROR_INVALID_HANDLE, "",
               "(b) accel_device_get_info on the closed handle");
  expect_error(accel_malloc(d, 4096, &p), ACCEL_ERROR_INVALID_HANDLE, "",
               "(b) accel_malloc on the closed handle");
  /* the stream keeps its device alive: it still computes */
  float *buf = NULL;
  if (OK(accel_malloc_async(s, NEST_N * sizeof(float), (void **)&buf))) {
    accel_tensor_t t = {buf, NEST_N, ACCEL_F32};
    if (OK(accel_fill(s, &t, 1, 8.0f)))
      check_f32(s, buf, NEST_N, 8.0f, "(b) stream of a closed device");
    OK(accel_free_async(s, buf));
    OK(accel_stream_synchronize(s));
  }
  /* ... and a graph made before the close captures with a private pool (made without the
   * closed device handle) and replays */
  if (OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL))) {
    float *tmp = NULL;
    OK(accel_malloc_async(s, 4096, (void **)&tmp));
    if (tmp) OK(accel_free_async(s, tmp));
    OK(accel_graph_capture_end(g));
    OK(accel_graph_replay(g, s));
    OK(accel_stream_synchronize(s));
  }
  OK(accel_graph_destroy(g));
  OK(accel_stream_destroy(s)); /* the last user: the device goes away now (LSan checks) */
}

static void case_double_release(accel_device_t *unused) {
  (void)unused;
  /* (b) last: it tears the device down under a live stream on 1b52d3f */
  release_device_twice();
  destroy_handles_twice();
  release_pool_twice();
  close_device_under_stream();
}

/* ------------------------------------------------------------------------------------------ */
/* 7. stream_churn */

static void case_stream_churn(accel_device_t *dev) {
  const accel_memory_stats_t base = rel_stats(dev);
  int i = 0;
  for (; i < 300; ++i) {
    accel_stream_t *s = NULL;
    void *p = NULL;
    if (!OK(accel_stream_create(dev, &s))) break;
    bool ok = OK(accel_malloc_async(s, MiB, &p)) && OK(accel_free_async(s, p));
    if (!OK(accel_stream_destroy(s)) || !ok) break;
  }
  const accel_memory_stats_t after = rel_stats(dev);
  T_CHECK(after.reserved_bytes <= base.reserved_bytes + 8 * MiB,
          "after %d streams that each allocated and freed 1 MiB: reserved_bytes %llu = baseline "
          "+ %.1f MiB (allowed: + 8 MiB); segments %llu", i,
          (unsigned long long)after.reserved_bytes,
          (double)(after.reserved_bytes - base.reserved_bytes) / (double)MiB,
          (unsigned long long)after.segment_count);
  T_CHECK(after.allocated_bytes == base.allocated_bytes,
          "allocated_bytes %llu after the churn, baseline %llu",
          (unsigned long long)after.allocated_bytes, (unsigned long long)base.allocated_bytes);
}

/* ------------------------------------------------------------------------------------------ */
/* 8. replay_serialised */

#define SERIAL_N ((size_t)1 << 20) /* 4 MiB of F32: one replay takes a measurable time */
#define SERIAL_REPLAYS 50

static void case_replay_serialised(accel_device_t *dev) {
  accel_stream_t *s1 = NULL, *s2 = NULL;
  float *x = NULL, *scale = NULL;
  accel_graph_t *g = NULL;
  const float two = 2.0f;
  if (!OK(accel_stream_create(dev, &s1)) || !OK(accel_stream_create(dev, &s2)) ||
      !OK(accel_malloc(dev, SERIAL_N * sizeof(float), (void **)&x)) ||
      !OK(accel_malloc(dev, sizeof(float), (void **)&scale)) || !OK(accel_graph_create(dev, &g)))
    return;
  accel_tensor_t t = {x, SERIAL_N, ACCEL_F32};
  OK(accel_memcpy_async(s1, scale, &two, sizeof two));
  OK(accel_stream_synchronize(s1));
  accel_status_t st = accel_graph_capture_begin(g, s1, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  skip_if_unsupported(st, "graph capture");
  if (!expect(st, ACCEL_OK, "capture_begin")) return;
  OK(accel_scale(s1, &t, 1, scale));
  if (!OK(accel_graph_capture_end(g))) return;
  const float want = ldexpf(1.0f, SERIAL_REPLAYS);
  const double deadline = now_s() + RACE_SECONDS;
  int rounds = 0;
  bool ok = true;
  while (ok && (rounds == 0 || now_s() < deadline) && rounds < 40) {
    ok = OK(accel_fill(s1, &t, 1, 1.0f)) && OK(accel_stream_synchronize(s1));
    for (int r = 0; ok && r < SERIAL_REPLAYS; ++r)
      ok = OK(accel_graph_replay(g, r % 2 ? s2 : s1));
    ok = OK(accel_stream_synchronize(s1)) && ok;
    ok = OK(accel_stream_synchronize(s2)) && ok;
    char what[96];
    snprintf(what, sizeof what, "round %d: x after %d replays alternating between two streams",
             rounds, SERIAL_REPLAYS);
    ok = ok && check_f32(s1, x, SERIAL_N, want, what);
    rounds++;
  }
  printf("replay_serialised: %d round(s) of %d replays\n", rounds, SERIAL_REPLAYS);
  OK(accel_graph_destroy(g));
  OK(accel_free(dev, x));
  OK(accel_free(dev, scale));
  OK(accel_stream_destroy(s2));
  OK(accel_stream_destroy(s1));
}

/* ------------------------------------------------------------------------------------------ */
/* 9. capture_end_wrong_thread */

typedef struct wrong_thread {
  accel_stream_t *s;
  accel_graph_t *g;
  float *buf;
  accel_capture_mode_t mode;
  bool began;
} wrong_thread_t;

static void *owner_main(void *arg) {
  wrong_thread_t *w = arg;
  accel_tensor_t t = {w->buf, NEST_N, ACCEL_F32};
  accel_status_t st = accel_graph_capture_begin(w->g, w->s, NULL, w->mode);
  w->began = st == ACCEL_OK;
  if (st != ACCEL_ERROR_UNSUPPORTED) expect(st, ACCEL_OK, "capture_begin in T1");
  if (w->began) OK(accel_fill(w->s, &t, 1, 6.0f));
  STEP(); /* 1: capture active */
  STEP(); /* 2: T2 tried to end it */
  if (w->began && w->mode != ACCEL_CAPTURE_MODE_RELAXED) {
    char what[80];
    snprintf(what, sizeof what, "%s: capture_end by the thread that began it", mode_name(w->mode));
    expect(accel_graph_capture_end(w->g), ACCEL_OK, what);
  }
  return NULL;
}

static void case_capture_end_wrong_thread(accel_device_t *dev) {
  const accel_capture_mode_t modes[] = {ACCEL_CAPTURE_MODE_THREAD_LOCAL,
                                        ACCEL_CAPTURE_MODE_GLOBAL, ACCEL_CAPTURE_MODE_RELAXED};
  wrong_thread_t w = {0};
  if (!OK(accel_stream_create(dev, &w.s)) ||
      !OK(accel_malloc(dev, NEST_N * sizeof(float), (void **)&w.buf)))
    return;
  pthread_barrier_init(&g_step, NULL, 2);
  for (size_t m = 0; m < sizeof modes / sizeof *modes; ++m) {
    w.mode = modes[m];
    const char *mode = mode_name(w.mode);
    char what[96];
    if (!OK(accel_graph_create(dev, &w.g))) break;
    pthread_t t1;
    pthread_create(&t1, NULL, owner_main, &w);
    STEP();
    if (w.began) {
      accel_status_t st = accel_graph_capture_end(w.g);
      snprintf(what, sizeof what, "%s: capture_end from another thread", mode);
      if (w.mode == ACCEL_CAPTURE_MODE_RELAXED) {
        expect(st, ACCEL_OK, what);
      } else {
        expect_error(st, ACCEL_ERROR_STATE, "thread", what);
        int capturing = -1;
        OK(accel_stream_is_capturing(w.s, &capturing));
        T_CHECK(capturing == 1, "%s: accel_stream_is_capturing = %d after the refused end", mode,
                capturing);
      }
    }
    STEP();
    pthread_join(t1, NULL);
    if (!w.began) {
      printf("SKIP: %s on %s: graph capture is unsupported\n", g_case, g_sel);
      exit(REL_SKIP);
    }
    int capturing = -1;
    OK(accel_stream_is_capturing(w.s, &capturing));
    T_CHECK(capturing == 0, "%s: the stream is still capturing after the capture ended", mode);
    OK(accel_memset_async(w.s, w.buf, 0, NEST_N * sizeof(float)));
    snprintf(what, sizeof what, "%s: replay of the graph", mode);
    if (expect(accel_graph_replay(w.g, w.s), ACCEL_OK, what))
      check_f32(w.s, w.buf, NEST_N, 6.0f, what);
    OK(accel_graph_destroy(w.g));
  }
  pthread_barrier_destroy(&g_step);
  OK(accel_free(dev, w.buf));
  OK(accel_stream_destroy(w.s));
}

/* ------------------------------------------------------------------------------------------ */
/* 10. free_graph_memory */

#define FREE_N 16384 /* floats: 64 KiB */

static void case_free_graph_memory(accel_device_t *dev) {
  const accel_memory_stats_t base = rel_stats(dev);
  accel_stream_t *s = NULL;
  float *b = NULL, *fresh = NULL;
  accel_graph_t *g = NULL;
  if (!OK(accel_stream_create(dev, &s)) ||
      !OK(accel_malloc(dev, FREE_N * sizeof(float), (void **)&b)) ||
      !OK(accel_graph_create(dev, &g)))
    return;
  accel_tensor_t tb = {b, FREE_N, ACCEL_F32};
  accel_status_t st = accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  skip_if_unsupported(st, "graph capture");
  if (!expect(st, ACCEL_OK, "capture_begin")) return;
  OK(accel_fill(s, &tb, 1, 4.0f));
  if (!OK(accel_graph_capture_end(g))) return;
  OK(accel_memset_async(s, b, 0, FREE_N * sizeof(float)));
  if (OK(accel_graph_replay(g, s))) check_f32(s, b, FREE_N, 4.0f, "B after a replay of G");

  /* the deferred free */
  expect(accel_free(dev, b), ACCEL_OK, "accel_free of a buffer a live graph writes");
  expect_error(accel_fill(s, &tb, 1, 1.0f), ACCEL_ERROR_INVALID_ARGUMENT, "",
               "accel_fill on B after accel_free(B)");
  OK(accel_stream_synchronize(s));
  expect_error(accel_free(dev, b), ACCEL_ERROR_INVALID_ARGUMENT, "", "a second accel_free(B)");

  /* the memory is not handed out again while G lives */
  if (OK(accel_malloc(dev, FREE_N * sizeof(float), (void **)&fresh))) {
    accel_tensor_t tf = {fresh, FREE_N, ACCEL_F32};
    T_CHECK(fresh != b, "a new allocation got B's address %p while G still writes it", (void *)b);
    OK(accel_fill(s, &tf, 1, 9.0f));
    OK(accel_stream_synchronize(s));
    if (OK(accel_graph_replay(g, s)))
      check_f32(s, fresh, FREE_N, 9.0f, "a new buffer after replaying G (B freed)");
    /* emptying the cache must not give B's memory back while G lives either */
    OK(accel_empty_cache(dev));
    if (OK(accel_graph_replay(g, s)))
      check_f32(s, fresh, FREE_N, 9.0f, "a new buffer after emptying the cache and replaying G");
    OK(accel_stream_synchronize(s));
    OK(accel_free(dev, fresh));
  }
  OK(accel_graph_destroy(g));
  OK(accel_stream_synchronize(s));
  OK(accel_empty_cache(dev));
  const accel_memory_stats_t end = rel_stats(dev);
  T_CHECK(end.allocated_bytes == base.allocated_bytes && end.active_blocks == base.active_blocks,
          "after destroying G: allocated_bytes %llu (baseline %llu), active blocks %llu",
          (unsigned long long)end.allocated_bytes, (unsigned long long)base.allocated_bytes,
          (unsigned long long)end.active_blocks);
  OK(accel_stream_destroy(s));
}

/* ------------------------------------------------------------------------------------------ */

typedef struct test_case {
  const char *name;
  void (*run)(accel_device_t *dev);
  bool own_device; /* opens and closes devices itself (no baseline taken by main) */
} test_case_t;

static const test_case_t cases[] = {
    {"hostfn_deadlock", case_hostfn_deadlock, false},
    {"empty_cache_race", case_empty_cache_race, false},
    {"capture_event_race", case_capture_event_race, false},
    {"default_stream_join", case_default_stream_join, false},
    {"nested_graph_pool", case_nested_graph_pool, false},
    {"invalid_nested_capture", case_invalid_nested_capture, false},
    {"double_release", case_double_release, true},
    {"stream_churn", case_stream_churn, false},
    {"replay_serialised", case_replay_serialised, false},
    {"capture_end_wrong_thread", case_capture_end_wrong_thread, false},
    {"free_graph_memory", case_free_graph_memory, false},
};

int main(int argc, char **argv) {
  const test_case_t *c = NULL;
  for (size_t i = 0; argc == 3 && i < sizeof cases / sizeof *cases; ++i)
    if (strcmp(argv[2], cases[i].name) == 0) c = &cases[i];
  if (!c) {
    fprintf(stderr, "usage: test_ownership DEVICE CASE\ncases:");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
  }
  g_sel = argv[1];
  g_case = c->name;
  pthread_t watchdog;
  pthread_create(&watchdog, NULL, watchdog_main, NULL);
  pthread_detach(watchdog);
  printf("%s on %s\n", g_case, g_sel);

  accel_device_t *dev = rel_open(g_sel); /* SKIP (77) when the device is absent */
  if (c->own_device) {
    REL_CHECK(accel_device_close(dev) == ACCEL_OK, "device close");
    c->run(NULL);
    return rel_finish(g_case);
  }
  const accel_memory_stats_t base = rel_settled_stats(dev);
  c->run(dev);
  const accel_memory_stats_t end = rel_settled_stats(dev);
  REL_CHECK(end.allocated_bytes == base.allocated_bytes && end.active_blocks == base.active_blocks,
            "leak: allocated_bytes %llu -> %llu, active_blocks %llu -> %llu",
            (unsigned long long)base.allocated_bytes, (unsigned long long)end.allocated_bytes,
            (unsigned long long)base.active_blocks, (unsigned long long)end.active_blocks);
  REL_CHECK(end.reserved_bytes == base.reserved_bytes && end.graph_pool_reserved_bytes == 0,
            "reserved_bytes %llu -> %llu after emptying the cache (graph pools %llu)",
            (unsigned long long)base.reserved_bytes, (unsigned long long)end.reserved_bytes,
            (unsigned long long)end.graph_pool_reserved_bytes);
  REL_CHECK(accel_device_close(dev) == ACCEL_OK, "device close");
  return rel_finish(g_case);
}
