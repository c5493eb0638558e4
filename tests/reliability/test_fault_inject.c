/*
 * Fault injection (ACCEL_FAULT_INJECT, core/env.c): one scenario per process, because the
 * N-th-call counters are global and read once.
 *
 *   test_fault_inject DEVICE SCENARIO [N]
 *
 * SCENARIO
 *   alloc N        the N-th raw device/host allocation fails once while a workload of
 *                  accel_malloc, accel_host_alloc and kernels (whose chunk tables are raw
 *                  allocations) runs. Either the caching allocator absorbed it (alloc_retries
 *                  rose by one, every call succeeded) or exactly one call returned
 *                  OUT_OF_MEMORY naming the injected failure.
 *   retry          a cached free segment exists and the next raw allocation fails: the cache is
 *                  emptied (the cached segment goes back), the allocation is retried and
 *                  succeeds.
 *   oom            an allocation the device cannot satisfy: cache emptied, retried, then
 *                  OUT_OF_MEMORY with a message; alloc_retries and ooms count it.
 *   kernel_build N the N-th kernel build fails (OpenCL: the kernel program; CPU, whose kernels
 *                  are compiled into libaccel: user kernel modules, accel_module.h, whose
 *                  second load of a source builds nothing).
 *   launch N       the N-th launch fails (eager stream).
 *   launch_lazy N  the same on a lazy stream: a backend launch failure surfaces at the flush.
 * Every scenario then checks that no bytes leaked (allocated_bytes back to the baseline,
 * reserved_bytes back after emptying the cache) and that the device still computes correct
 * results (rel_round_trip).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accel/accel_module.h"

#include "rel_common.h"

/* A huge request is part of the test: let sanitizer allocators return NULL like libc does. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

#define ITERS 8
#define BIG (3u << 20) /* above the 1 MiB small-request limit: one segment per allocation */

typedef struct outcome {
  int failures;
  accel_status_t status;
  char message[512];
} outcome_t;

/* Records a failed call (the first one's status and message are kept). */
static void note(outcome_t *o, accel_status_t st, const char *what) {
  if (st == ACCEL_OK) return;
  if (o->failures++ == 0) {
    o->status = st;
    snprintf(o->message, sizeof o->message, "%s", accel_last_error());
  }
  printf("  %s -> %s: %s\n", what, accel_status_name(st), accel_last_error());
}

/* Exactly one failure with the given status and a message naming the injected fault. */
static void expect_one_injected(const outcome_t *o, accel_status_t want) {
  REL_CHECK(o->failures == 1, "%d calls failed, want exactly 1", o->failures);
  if (o->failures < 1) return;
  REL_CHECK(o->status == want, "status %s, want %s", accel_status_name(o->status),
            accel_status_name(want));
  REL_CHECK(strstr(o->message, "inject") != NULL, "message does not say it was injected: '%s'",
            o->message);
}

static void scenario_alloc(accel_device_t *dev, accel_stream_t *s, long n) {
  accel_memory_stats_t before = rel_settled_stats(dev);
  outcome_t o = {0};
  void *big[ITERS] = {0};
  for (int i = 0; i < ITERS; ++i) {
    note(&o, accel_malloc(dev, BIG, &big[i]), "accel_malloc");
    void *h = NULL;
    note(&o, accel_host_alloc(dev, 4096, &h), "accel_host_alloc");
    if (h) REL_CHECK(accel_host_free(dev, h) == ACCEL_OK, "host free");
    if (big[i]) {
      /* a new tensor list every time: a new chunk table (a raw allocation) */
      accel_tensor_t t = {big[i], 1024 + (size_t)i * 4096, ACCEL_F32};
      note(&o, accel_fill(s, &t, 1, (float)i), "accel_fill");
    }
    note(&o, accel_stream_synchronize(s), "accel_stream_synchronize");
  }
  const accel_memory_stats_t mid = rel_stats(dev);
  const uint64_t retries = mid.alloc_retries - before.alloc_retries;
  printf("alloc:%ld: %d failed call(s), %llu cache retr%s\n", n, o.failures,
         (unsigned long long)retries, retries == 1 ? "y" : "ies");
  if (o.failures == 0) {
    REL_CHECK(retries == 1, "no call failed, so the caching allocator must have retried once "
                            "(alloc_retries +%llu)", (unsigned long long)retries);
  } else {
    expect_one_injected(&o, ACCEL_ERROR_OUT_OF_MEMORY);
    REL_CHECK(retries == 0, "a failed call and a cache retry: the fault fired twice?");
  }
  REL_CHECK(mid.ooms == before.ooms, "ooms rose by %llu",
            (unsigned long long)(mid.ooms - before.ooms));
  for (int i = 0; i < ITERS; ++i) REL_CHECK(accel_free(dev, big[i]) == ACCEL_OK, "free");
}

static void scenario_retry(accel_device_t *dev) {
  /* first raw allocation: a segment that goes into the cache */
  void *a = NULL, *b = NULL;
  REL_CHECK(accel_malloc(dev, 4u << 20, &a) == ACCEL_OK, "first allocation");
  REL_CHECK(accel_free(dev, a) == ACCEL_OK, "free");
  const accel_memory_stats_t s0 = rel_stats(dev);
  REL_CHECK(s0.reserved_bytes == 4u << 20, "cache holds %llu bytes, want 4 MiB",
            (unsigned long long)s0.reserved_bytes);
  /* second raw allocation (too big for the cached segment) fails once: retried */
  accel_status_t st = accel_malloc(dev, 8u << 20, &b);
  const accel_memory_stats_t s1 = rel_stats(dev);
  REL_CHECK(st == ACCEL_OK, "allocation after one injected failure: %s", accel_status_name(st));
  REL_CHECK(s1.alloc_retries == s0.alloc_retries + 1, "alloc_retries %llu -> %llu, want +1",
            (unsigned long long)s0.alloc_retries, (unsigned long long)s1.alloc_retries);
  REL_CHECK(s1.ooms == s0.ooms, "ooms rose");
  REL_CHECK(s1.reserved_bytes == 8u << 20,
            "reserved %llu bytes: the cached 4 MiB segment was not released before the retry",
            (unsigned long long)s1.reserved_bytes);
  printf("retry: reserved %llu -> %llu bytes, alloc_retries %llu -> %llu\n",
         (unsigned long long)s0.reserved_bytes, (unsigned long long)s1.reserved_bytes,
         (unsigned long long)s0.alloc_retries, (unsigned long long)s1.alloc_retries);
  if (b) REL_CHECK(accel_free(dev, b) == ACCEL_OK, "free");
}

static void scenario_oom(accel_device_t *dev) {
  void *keep = NULL, *p = NULL;
  /* something in the cache that the retry can release */
  REL_CHECK(accel_malloc(dev, 1u << 20, &keep) == ACCEL_OK && accel_free(dev, keep) == ACCEL_OK,
            "small allocation");
  const accel_memory_stats_t s0 = rel_stats(dev);
  const size_t huge = SIZE_MAX >> 2; /* valid argument, impossible allocation */
  accel_status_t st = accel_malloc(dev, huge, &p);
  const accel_memory_stats_t s1 = rel_stats(dev);
  REL_CHECK(st == ACCEL_ERROR_OUT_OF_MEMORY, "accel_malloc(%zu) -> %s, want OUT_OF_MEMORY", huge,
            accel_status_name(st));
  REL_CHECK(p == NULL, "output written on failure");
  REL_CHECK(accel_last_error()[0] != '\0', "no message");
  REL_CHECK(s1.alloc_retries == s0.alloc_retries + 1, "alloc_retries did not rise by 1");
  REL_CHECK(s1.ooms == s0.ooms + 1, "ooms did not rise by 1");
  REL_CHECK(s1.reserved_bytes == 0, "the cache was not emptied before the retry (%llu bytes)",
            (unsigned long long)s1.reserved_bytes);
  printf("oom: %s\n", accel_last_error());
}

/* Loads user kernel modules (accel_module.h) into o: a new source A, A again (from the kernel
 * cache: no build), a new source B. Returns the index (0 A, 1 A again, 2 B) of the first load
 * that failed, or -1. */
static int load_modules(accel_device_t *dev, outcome_t *o) {
  static const char body[] =
      "ACC_INLINE void rel_elem(acc_idx i, ACC_GPTR(acc_f32) t) { t[i] = t[i] + 1.0f; }\n"
      "ACC_KERNEL(rel_k_inc, rel_params_t, P) {\n"
      "  ACC_GPTR(const acc_chunk_t) c = ACC_PTR(const acc_chunk_t, P.chunks);\n"
      "  ACC_FOR_BLOCKS(b, P.num_chunks)\n"
      "  ACC_ELEM_MAP(c[b].count, rel_elem, ACC_PTR(acc_f32, c[b].ptr[0]));\n"
      "}\n"
      "ACCEL_KERNEL(REL_INC, rel_k_inc, rel_params_t, ACC_OP(\"rel_inc\", ACC_TABLE_SHARED),\n"
      "             (ACC_LIST(\"t\", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)), ())\n";
  char a[1024], b[1024];
  snprintf(a, sizeof a, "/* A %ld.%ld */\n%s", (long)getpid(), (long)time(NULL), body);
  snprintf(b, sizeof b, "/* B %ld.%ld */\n%s", (long)getpid(), (long)time(NULL), body);
  const char *src[3] = {a, a, b}, *what[3] = {"load A", "load A again", "load B"};
  int failed_at = -1;
  for (int i = 0; i < 3; ++i) {
    accel_module_t *m = NULL;
    const accel_status_t st = accel_module_load_source(dev, src[i], NULL, &m);
    if (st != ACCEL_OK && failed_at < 0) failed_at = i;
    note(o, st, what[i]);
    if (m) REL_CHECK(accel_module_release(m) == ACCEL_OK, "module release");
  }
  return failed_at;
}

/* The builds, in order: the kernel program (OpenCL: once per device and process, at the first
 * kernel op; the CPU's kernels are compiled into libaccel), then modules A and B (A's second
 * load builds nothing). N picks the build that fails: the program's (its first op fails, the
 * next one builds it), A's (its second load then builds A, B is the build after), B's (which
 * shows that A's second load built nothing), or none. */
static void scenario_kernel_build(accel_device_t *dev, accel_stream_t *s, long n) {
  accel_device_info_t info;
  if (accel_device_get_info(dev, &info) != ACCEL_OK) {
    REL_CHECK(0, "accel_device_get_info");
    return;
  }
  const long program = strcmp(info.backend, "cpu") == 0 ? 0 : 1; /* builds before A */
  float *buf = NULL;
  REL_CHECK(accel_malloc(dev, 4096 * sizeof(float), (void **)&buf) == ACCEL_OK, "malloc");
  outcome_t o = {0};
  for (int i = 0; i < 6 && buf; ++i) {
    accel_tensor_t t = {buf, 4096, ACCEL_F32};
    note(&o, accel_fill(s, &t, 1, 1.0f), "accel_fill");
    note(&o, accel_stream_synchronize(s), "accel_stream_synchronize");
  }
  const int failed_module = load_modules(dev, &o);
  printf("kernel_build:%ld: %d failed call(s)\n", n, o.failures);
  const long m = n - program; /* the module build that fails: 1 A, 2 B */
  if (m <= 2) expect_one_injected(&o, ACCEL_ERROR_BACKEND);
  else REL_CHECK(o.failures == 0, "%d calls failed, want none", o.failures);
  if (m >= 1) REL_CHECK(failed_module == (m == 1 ? 0 : m == 2 ? 2 : -1),
                        "module load %d failed, want %d", failed_module,
                        m == 1 ? 0 : m == 2 ? 2 : -1);
  if (buf) REL_CHECK(accel_free(dev, buf) == ACCEL_OK, "free");
}

static void scenario_launch(accel_device_t *dev, accel_stream_t *s, long n, int lazy) {
  float *buf = NULL, *scale = NULL;
  const float two = 2.0f;
  REL_CHECK(accel_malloc(dev, 4096 * sizeof(float), (void **)&buf) == ACCEL_OK, "malloc");
  REL_CHECK(accel_malloc(dev, sizeof(float), (void **)&scale) == ACCEL_OK, "malloc");
  REL_CHECK(accel_memcpy(dev, scale, &two, sizeof two) == ACCEL_OK, "memcpy");
  outcome_t o = {0};
  for (int i = 0; i < 6 && buf && scale; ++i) {
    accel_tensor_t t = {buf, 4096, ACCEL_F32};
    note(&o, accel_fill(s, &t, 1, 1.0f), "accel_fill");
    note(&o, accel_scale(s, &t, 1, scale), "accel_scale");
    if (lazy) note(&o, accel_stream_flush(s), "accel_stream_flush");
  }
  note(&o, accel_stream_synchronize(s), "accel_stream_synchronize");
  printf("launch:%ld (%s): %d failed call(s)\n", n, lazy ? "lazy" : "eager", o.failures);
  expect_one_injected(&o, ACCEL_ERROR_BACKEND);
  if (buf) REL_CHECK(accel_free(dev, buf) == ACCEL_OK, "free");
  if (scale) REL_CHECK(accel_free(dev, scale) == ACCEL_OK, "free");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_fault_inject DEVICE alloc|retry|oom|kernel_build|launch|"
                    "launch_lazy [N]\n");
    return 2;
  }
  const char *selector = argv[1], *scenario = argv[2];
  const long n = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
  char spec[64] = "";
  if (strcmp(scenario, "retry") == 0) snprintf(spec, sizeof spec, "alloc:2");
  else if (strncmp(scenario, "launch", 6) == 0) snprintf(spec, sizeof spec, "launch:%ld", n);
  else if (strcmp(scenario, "oom") != 0) snprintf(spec, sizeof spec, "%s:%ld", scenario, n);
  /* read once, at the first fault check: set before any accel call */
  if (spec[0]) setenv("ACCEL_FAULT_INJECT", spec, 1);
  printf("%s on %s, ACCEL_FAULT_INJECT=%s\n", scenario, selector, spec[0] ? spec : "(unset)");

  accel_device_t *dev = rel_open(selector);
  accel_stream_t *s = NULL;
  const int lazy = strcmp(scenario, "launch_lazy") == 0;
  if (accel_stream_create_ex(dev, lazy ? ACCEL_STREAM_LAZY : ACCEL_STREAM_EAGER, &s) != ACCEL_OK) {
    fprintf(stderr, "stream: %s\n", accel_last_error());
    return 1;
  }
  /* the baseline: nothing allocated through the caching allocator yet */
  const accel_memory_stats_t base = rel_stats(dev);

  if (strcmp(scenario, "alloc") == 0) scenario_alloc(dev, s, n);
  else if (strcmp(scenario, "retry") == 0) scenario_retry(dev);
  else if (strcmp(scenario, "oom") == 0) scenario_oom(dev);
  else if (strcmp(scenario, "kernel_build") == 0) scenario_kernel_build(dev, s, n);
  else if (strncmp(scenario, "launch", 6) == 0) scenario_launch(dev, s, n, lazy);
  else {
    fprintf(stderr, "unknown scenario '%s'\n", scenario);
    return 2;
  }

  accel_memory_stats_t after = rel_settled_stats(dev);
  REL_CHECK(after.allocated_bytes == base.allocated_bytes && after.active_blocks == 0,
            "leak: allocated_bytes %llu -> %llu, active_blocks %llu",
            (unsigned long long)base.allocated_bytes, (unsigned long long)after.allocated_bytes,
            (unsigned long long)after.active_blocks);
  REL_CHECK(after.reserved_bytes == base.reserved_bytes,
            "reserved_bytes %llu -> %llu after emptying the cache",
            (unsigned long long)base.reserved_bytes, (unsigned long long)after.reserved_bytes);
  /* the device is still usable, and still gives exact results */
  rel_round_trip(dev, s, 10000);
  accel_memory_stats_t end = rel_settled_stats(dev);
  REL_CHECK(end.allocated_bytes == base.allocated_bytes, "the round trip leaked");
  REL_CHECK(accel_stream_destroy(s) == ACCEL_OK, "stream destroy");
  REL_CHECK(accel_device_close(dev) == ACCEL_OK, "device close");
  return rel_finish("test_fault_inject");
}
