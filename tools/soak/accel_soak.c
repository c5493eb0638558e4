/*
 * accel-soak: long-running leak and drift check (a benchmark-style tool, not a CI test).
 *
 *   accel-soak [--device SEL] [--replays N] [--allocs N] [--report-every N]
 *
 * Replays one captured graph (fill, scale, L2 norm, a pool allocation) N times (default
 * 1 000 000) and runs N alloc/free cycles (default 100 000) of mixed sizes through both
 * accel_malloc and accel_malloc_async, checking the result of every 1000th replay. At the end
 * the memory statistics must be back to their baseline, and RSS, thread count and open file
 * descriptors (from /proc/self) must not have grown; start, end and maximum are printed.
 * Exit status 0 only when nothing leaked or drifted.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"

typedef struct proc_sample {
  long rss_kib, threads, fds;
} proc_sample_t;

static long status_field(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t klen = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, klen) == 0) v = strtol(line + klen, NULL, 10);
  if (f) fclose(f);
  return v;
}

static proc_sample_t sample(void) {
  proc_sample_t s = {status_field("VmRSS:"), status_field("Threads:"), 0};
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) s.fds += e->d_name[0] != '.';
  if (d) closedir(d);
  s.fds -= 1; /* the directory stream itself */
  return s;
}

static void track(proc_sample_t *max, proc_sample_t now) {
  if (now.rss_kib > max->rss_kib) max->rss_kib = now.rss_kib;
  if (now.threads > max->threads) max->threads = now.threads;
  if (now.fds > max->fds) max->fds = now.fds;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define TRY(call)                                                                      \
  do {                                                                                 \
    accel_status_t st_ = (call);                                                       \
    if (st_ != ACCEL_OK) {                                                             \
      fprintf(stderr, "accel-soak: %s -> %s: %s\n", #call, accel_status_name(st_),     \
              accel_last_error());                                                     \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main(int argc, char **argv) {
  const char *selector = "cpu";
  long replays = 1000000, allocs = 100000, every = 100000;
  for (int i = 1; i < argc; i += 2) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL; /* every option takes a value */
    if (v && strcmp(argv[i], "--device") == 0) selector = v;
    else if (v && strcmp(argv[i], "--replays") == 0) replays = atol(v);
    else if (v && strcmp(argv[i], "--allocs") == 0) allocs = atol(v);
    else if (v && strcmp(argv[i], "--report-every") == 0) every = atol(v);
    else {
      fprintf(stderr, "usage: accel-soak [--device SEL] [--replays N] [--allocs N] "
                      "[--report-every N]\n");
      return 2;
    }
  }
  if (every <= 0) every = 1;
  accel_device_t *dev;
  accel_stream_t *s;
  TRY(accel_device_open(selector, &dev));
  TRY(accel_stream_create(dev, &s));
  enum { N = 4096 };
  float *data, *scalars; /* scalars: [0] scale, [1] norm */
  TRY(accel_malloc(dev, N * sizeof(float), (void **)&data));
  TRY(accel_malloc(dev, 2 * sizeof(float), (void **)&scalars));
  const float two = 2.0f;
  TRY(accel_memcpy(dev, scalars, &two, sizeof two));
  TRY(accel_empty_cache(dev));
  accel_memory_stats_t base;
  TRY(accel_memory_stats(dev, &base));
  accel_graph_t *g;
  accel_tensor_t t = {data, N, ACCEL_F32};
  TRY(accel_graph_create(dev, &g));
  TRY(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  float *tmp;
  TRY(accel_malloc_async(s, 1024, (void **)&tmp));
  accel_tensor_t tt = {tmp, 256, ACCEL_F32};
  TRY(accel_fill(s, &tt, 1, 1.0f));
  TRY(accel_free_async(s, tmp));
  TRY(accel_fill(s, &t, 1, 0.5f));
  TRY(accel_scale(s, &t, 1, scalars));
  TRY(accel_multi_tensor_norm(s, &t, 1, 2.0f, scalars + 1));
  TRY(accel_graph_capture_end(g));
  /* sampled after the capture: the first kernel op creates the device's upload stream (one
   * worker thread for the life of the device) */
  proc_sample_t start = sample(), max = start;

  double t0 = now_s();
  int bad = 0;
  for (long i = 1; i <= replays; ++i) {
    TRY(accel_graph_replay(g, s));
    if (i % 1000 == 0) {
      float norm = 0.0f;
      TRY(accel_memcpy_async(s, &norm, scalars + 1, sizeof norm));
      TRY(accel_stream_synchronize(s));
      bad += norm != 64.0f; /* sqrt(4096 * 1.0^2) */
    }
    if (i % every == 0) {
      proc_sample_t p = sample();
      track(&max, p);
      printf("replay %ld: rss %ld KiB, threads %ld, fds %ld\n", i, p.rss_kib, p.threads, p.fds);
      fflush(stdout);
    }
  }
  TRY(accel_stream_synchronize(s));
  double t_replay = now_s() - t0;

  static const size_t sizes[] = {256, 4096, 100000, 1u << 20, 3u << 20, 8, 70000};
  t0 = now_s();
  for (long i = 1; i <= allocs; ++i) {
    void *a, *b;
    const size_t nsizes = sizeof sizes / sizeof sizes[0];
    TRY(accel_malloc(dev, sizes[(size_t)i % nsizes], &a));
    TRY(accel_malloc_async(s, sizes[(size_t)(i + 3) % nsizes], &b));
    TRY(accel_free_async(s, b));
    TRY(accel_free(dev, a));
    if (i % 1000 == 0) TRY(accel_empty_cache(dev));
    if (i % every == 0) track(&max, sample());
  }
  TRY(accel_stream_synchronize(s));
  double t_alloc = now_s() - t0;

  TRY(accel_graph_destroy(g));
  TRY(accel_device_synchronize(dev));
  TRY(accel_empty_cache(dev));
  accel_memory_stats_t end;
  TRY(accel_memory_stats(dev, &end));
  proc_sample_t fin = sample();
  track(&max, fin);

  printf("replays: %ld in %.1f s (%.2f us each), %d wrong results\n", replays, t_replay,
         replays ? t_replay * 1e6 / (double)replays : 0.0, bad);
  printf("alloc/free cycles: %ld in %.1f s\n", allocs, t_alloc);
  printf("memory: allocated %llu -> %llu bytes, reserved %llu -> %llu, graph pools %llu, "
         "ooms %llu\n",
         (unsigned long long)base.allocated_bytes, (unsigned long long)end.allocated_bytes,
         (unsigned long long)base.reserved_bytes, (unsigned long long)end.reserved_bytes,
         (unsigned long long)end.graph_pool_reserved_bytes, (unsigned long long)end.ooms);
  printf("rss KiB: start %ld end %ld max %ld; threads: start %ld end %ld max %ld; fds: start "
         "%ld end %ld max %ld\n",
         start.rss_kib, fin.rss_kib, max.rss_kib, start.threads, fin.threads, max.threads,
         start.fds, fin.fds, max.fds);
  /* RSS may settle a little above the start (malloc arenas, kernel-table cache): allow 8 MiB */
  int ok = bad == 0 && end.allocated_bytes == base.allocated_bytes &&
           end.reserved_bytes == base.reserved_bytes && end.graph_pool_reserved_bytes == 0 &&
           end.ooms == base.ooms && fin.threads <= start.threads && fin.fds <= start.fds &&
           fin.rss_kib <= start.rss_kib + 8192;
  accel_free(dev, data);
  accel_free(dev, scalars);
  accel_stream_destroy(s);
  accel_device_close(dev);
  printf("accel-soak: %s\n", ok ? "ok (nothing leaked or drifted)" : "FAILED");
  return ok ? 0 : 1;
}
