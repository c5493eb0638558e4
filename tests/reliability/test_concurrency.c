/*
 * Concurrency: 8 worker threads, each with its own stream (half eager, half lazy), doing copies,
 * stream-ordered allocations, kernels (accel_fill, accel_scale, accel_multi_tensor_norm) and
 * graph captures (THREAD_LOCAL mode, so that captures on different threads do not invalidate
 * each other) with replays, all at once; meanwhile 4 more threads enqueue to ONE shared stream
 * (the API allows it: operations are ordered in the order the calls return) and synchronize it
 * concurrently. Every result is checked exactly. Meant to run under ThreadSanitizer and ASan.
 *
 *   test_concurrency DEVICE [ITERATIONS]
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rel_common.h"

#define WORKERS 8
#define SHARERS 4
#define SHARED_N 2048 /* floats per sharer region */

static accel_device_t *g_dev;
static int g_iters = 20;
static pthread_barrier_t g_start;


#define T_OK(call) T_CHECK((call) == ACCEL_OK, "%s", #call)

typedef struct worker {
  int id;
  accel_stream_t *stream;
  float *buf, *scalars; /* scalars[0] = scale, scalars[1] = norm */
  size_t n;
} worker_t;

/* Reads the norm back and checks it against want (small integers: exact in fp32). */
static void check_norm(worker_t *w, float want, const char *what, int iter) {
  float got = -1.0f;
  T_OK(accel_memcpy_async(w->stream, &got, w->scalars + 1, sizeof got));
  T_OK(accel_stream_synchronize(w->stream));
  T_CHECK(got == want, "worker %d iteration %d %s: norm %g, want %g", w->id, iter, what,
          (double)got, (double)want);
}

static void eager_step(worker_t *w, int iter) {
  const float value = (float)(w->id + 1), scale = (float)(iter % 3 + 1);
  accel_tensor_t t = {w->buf, w->n, ACCEL_F32};
  T_OK(accel_memcpy_async(w->stream, w->scalars, &scale, sizeof scale));
  T_OK(accel_fill(w->stream, &t, 1, value));
  T_OK(accel_scale(w->stream, &t, 1, w->scalars));
  T_OK(accel_multi_tensor_norm(w->stream, &t, 1, 1.0f, w->scalars + 1));
  check_norm(w, value * scale * (float)w->n, "eager", iter);

  /* a stream-ordered temporary: set, copied back, freed */
  unsigned char *tmp = NULL, host[777];
  T_OK(accel_malloc_async(w->stream, sizeof host, (void **)&tmp));
  if (!tmp) return;
  T_OK(accel_memset_async(w->stream, tmp, w->id + iter, sizeof host));
  T_OK(accel_memcpy_async(w->stream, host, tmp, sizeof host));
  T_OK(accel_free_async(w->stream, tmp));
  T_OK(accel_stream_synchronize(w->stream));
  size_t bad = 0;
  for (size_t i = 0; i < sizeof host; ++i) bad += host[i] != (unsigned char)(w->id + iter);
  T_CHECK(bad == 0, "worker %d iteration %d: %zu bytes wrong after memset/copy", w->id, iter, bad);
}

static void graph_step(worker_t *w, int iter) {
  accel_graph_t *g = NULL;
  accel_tensor_t t = {w->buf, w->n, ACCEL_F32};
  const float value = (float)(w->id + 2);
  T_OK(accel_graph_create(g_dev, &g));
  if (!g) return;
  T_OK(accel_graph_capture_begin(g, w->stream, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL));
  /* a pool allocation used and freed inside the capture */
  float *tmp = NULL;
  T_OK(accel_malloc_async(w->stream, 64 * sizeof(float), (void **)&tmp));
  accel_tensor_t tt = {tmp, 64, ACCEL_F32};
  T_OK(accel_fill(w->stream, &tt, 1, 0.0f));
  T_OK(accel_free_async(w->stream, tmp));
  T_OK(accel_fill(w->stream, &t, 1, value));
  T_OK(accel_scale(w->stream, &t, 1, w->scalars));
  T_OK(accel_multi_tensor_norm(w->stream, &t, 1, 1.0f, w->scalars + 1));
  T_OK(accel_graph_capture_end(g));
  /* the scale is a device scalar: each replay sees the new value */
  for (int r = 1; r <= 3; ++r) {
    const float scale = (float)r;
    T_OK(accel_memcpy_async(w->stream, w->scalars, &scale, sizeof scale));
    T_OK(accel_graph_replay(g, w->stream));
    check_norm(w, value * scale * (float)w->n, "replay", iter);
  }
  T_OK(accel_graph_destroy(g));
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < g_iters; ++i) {
    eager_step(w, i);
    if (i % 4 == 0) graph_step(w, i);
  }
  return NULL;
}

typedef struct sharer {
  int id;
  accel_stream_t *shared;
  float *region;
  float host[SHARED_N];
} sharer_t;

static void *sharer_main(void *arg) {
  sharer_t *s = arg;
  accel_tensor_t t = {s->region, SHARED_N, ACCEL_F32};
  pthread_barrier_wait(&g_start);
  for (int i = 0; i < g_iters; ++i) {
    const float value = (float)(s->id * 1000 + i);
    T_OK(accel_fill(s->shared, &t, 1, value));
    T_OK(accel_memcpy_async(s->shared, s->host, s->region, sizeof s->host));
    T_OK(accel_stream_synchronize(s->shared));
    size_t bad = 0;
    for (size_t k = 0; k < SHARED_N; ++k) bad += s->host[k] != value;
    T_CHECK(bad == 0, "sharer %d iteration %d: %zu values wrong", s->id, i, bad);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_concurrency DEVICE [ITERATIONS]\n");
    return 2;
  }
  if (argc > 2) g_iters = atoi(argv[2]);
  g_dev = rel_open(argv[1]);
  accel_memory_stats_t base = rel_settled_stats(g_dev);

  worker_t workers[WORKERS];
  sharer_t *sharers = calloc(SHARERS, sizeof *sharers);
  accel_stream_t *shared = NULL;
  float *shared_buf = NULL;
  if (!sharers) return 1;
  if (accel_stream_create(g_dev, &shared) != ACCEL_OK ||
      accel_malloc(g_dev, SHARERS * SHARED_N * sizeof(float), (void **)&shared_buf) != ACCEL_OK) {
    fprintf(stderr, "setup: %s\n", accel_last_error());
    return 1;
  }
  for (int i = 0; i < WORKERS; ++i) {
    worker_t *w = &workers[i];
    memset(w, 0, sizeof *w);
    w->id = i;
    w->n = 3000 + (size_t)i * 257; /* several chunks, different per thread */
    if (accel_stream_create_ex(g_dev, i % 2 ? ACCEL_STREAM_LAZY : ACCEL_STREAM_EAGER,
                               &w->stream) != ACCEL_OK ||
        accel_malloc(g_dev, w->n * sizeof(float), (void **)&w->buf) != ACCEL_OK ||
        accel_malloc(g_dev, 2 * sizeof(float), (void **)&w->scalars) != ACCEL_OK) {
      fprintf(stderr, "setup of worker %d: %s\n", i, accel_last_error());
      return 1;
    }
  }
  for (int i = 0; i < SHARERS; ++i) {
    sharers[i].id = i;
    sharers[i].shared = shared;
    sharers[i].region = shared_buf + (size_t)i * SHARED_N;
  }

  pthread_barrier_init(&g_start, NULL, WORKERS + SHARERS);
  pthread_t threads[WORKERS + SHARERS];
  for (int i = 0; i < WORKERS; ++i) pthread_create(&threads[i], NULL, worker_main, &workers[i]);
  for (int i = 0; i < SHARERS; ++i)
    pthread_create(&threads[WORKERS + i], NULL, sharer_main, &sharers[i]);
  for (int i = 0; i < WORKERS + SHARERS; ++i) pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&g_start);

  for (int i = 0; i < WORKERS; ++i) {
    REL_CHECK(accel_free(g_dev, workers[i].buf) == ACCEL_OK, "free");
    REL_CHECK(accel_free(g_dev, workers[i].scalars) == ACCEL_OK, "free");
    REL_CHECK(accel_stream_destroy(workers[i].stream) == ACCEL_OK, "stream destroy");
  }
  REL_CHECK(accel_free(g_dev, shared_buf) == ACCEL_OK, "free");
  REL_CHECK(accel_stream_destroy(shared) == ACCEL_OK, "stream destroy");
  free(sharers);
  accel_memory_stats_t end = rel_settled_stats(g_dev);
  REL_CHECK(end.allocated_bytes == base.allocated_bytes && end.active_blocks == 0,
            "leak: allocated_bytes %llu -> %llu", (unsigned long long)base.allocated_bytes,
            (unsigned long long)end.allocated_bytes);
  REL_CHECK(end.reserved_bytes == base.reserved_bytes && end.graph_pool_reserved_bytes == 0,
            "reserved_bytes %llu -> %llu (graph pools %llu)",
            (unsigned long long)base.reserved_bytes, (unsigned long long)end.reserved_bytes,
            (unsigned long long)end.graph_pool_reserved_bytes);
  REL_CHECK(accel_device_close(g_dev) == ACCEL_OK, "device close");
  printf("%d workers x %d iterations and %d threads on one shared stream\n", WORKERS, g_iters,
         SHARERS);
  return rel_finish("test_concurrency");
}
