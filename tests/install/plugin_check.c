/*
 * Checks the out-of-tree example plugin (examples/plugin) through the public API, as installed:
 * it is found through ACCEL_PLUGIN_PATH, opens by name, and copies, memsets, host functions,
 * events and a captured graph all work on it, and accel's kernels run on it (through the host's
 * portable C kernels) with the results of a double-precision reference. Prints one line per
 * check; exit status 0 when all pass.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/accel_kernels.h>

#define N 4096

static int failures;

static void check(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  failures += !ok;
}

static int status_ok(accel_status_t st, const char *call) {
  if (st != ACCEL_OK)
    printf("FAILED: %s: %s: %s\n", call, accel_status_name(st), accel_last_error());
  failures += st != ACCEL_OK;
  return st == ACCEL_OK;
}
#define OK(call) status_ok((call), #call)

static void count_call(void *user) { ++*(int *)user; }

static int is_filled(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != v) return 0;
  return 1;
}

int main(void) {
  static unsigned char in[N], out[N];
  for (int i = 0; i < N; ++i) in[i] = (unsigned char)(i * 31 + 7);
  accel_device_t *dev = NULL;
  accel_stream_t *s = NULL;
  accel_event_t *e0 = NULL, *e1 = NULL;
  accel_graph_t *g = NULL;
  unsigned char *buf = NULL;
  int calls = 0;
  if (!OK(accel_device_open("example", &dev))) return 1;
  accel_device_info_t info;
  if (OK(accel_device_get_info(dev, &info)))
    check(strcmp(info.backend, "example") == 0 && info.host_accessible && !info.native_graphs,
          "device info: backend example, host accessible, no native graphs");

  if (OK(accel_stream_create(dev, &s)) && OK(accel_malloc(dev, N, (void **)&buf)) &&
      OK(accel_event_create(dev, ACCEL_EVENT_DEFAULT, &e0)) &&
      OK(accel_event_create(dev, ACCEL_EVENT_DEFAULT, &e1))) {
    /* eager: copy in, copy out, a host function between events */
    float ms = -1.0f;
    if (OK(accel_event_record(e0, s)) && OK(accel_memcpy_async(s, buf, in, N)) &&
        OK(accel_launch_host_func(s, count_call, &calls)) &&
        OK(accel_memcpy_async(s, out, buf, N)) && OK(accel_event_record(e1, s)) &&
        OK(accel_stream_synchronize(s)) && OK(accel_event_elapsed_ms(e0, e1, &ms)))
      check(memcmp(in, out, N) == 0 && calls == 1 && ms >= 0.0f,
            "memcpy round trip, host function and event timing");

    /* a captured graph replays for real: memset, then copy back */
    size_t nodes = 0;
    if (OK(accel_graph_create(dev, &g)) &&
        OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL)) &&
        OK(accel_memset_async(s, buf, 0x5a, N)) && OK(accel_memcpy_async(s, out, buf, N)) &&
        OK(accel_graph_capture_end(g)) && OK(accel_graph_node_count(g, &nodes))) {
      memset(out, 0, N);
      check(nodes == 2 && is_filled(out, N, 0), "capture records without running");
      if (OK(accel_graph_replay(g, s)) && OK(accel_stream_synchronize(s)))
        check(is_filled(out, N, 0x5a), "graph replay ran the memset and the copy");
    }

    /* kernels: fill with a value per tensor, then the L2 norm over both tensors (fp32
     * accumulation, fixed order) against a double-precision reference */
    float *norm = NULL;
    if (OK(accel_malloc(dev, sizeof(float), (void **)&norm))) {
      enum { HALF = N / sizeof(float) / 2 };
      accel_tensor_t t0 = {buf, HALF, ACCEL_F32}, t1 = {buf + N / 2, HALF, ACCEL_F32};
      accel_tensor_t both[2] = {t0, t1};
      float got = -1.0f, first = 0.0f;
      if (OK(accel_fill(s, &t0, 1, 1.5f)) && OK(accel_fill(s, &t1, 1, -0.25f)) &&
          OK(accel_multi_tensor_norm(s, both, 2, 2.0f, norm)) &&
          OK(accel_memcpy_async(s, &got, norm, sizeof got)) &&
          OK(accel_memcpy_async(s, &first, buf, sizeof first)) && OK(accel_stream_synchronize(s))) {
        double want = sqrt(HALF * 1.5 * 1.5 + HALF * 0.25 * 0.25);
        printf("      (L2 norm %.9g, reference %.9g)\n", got, want);
        check(first == 1.5f && fabs(got - want) <= 1e-6 * want,
              "accel_fill and accel_multi_tensor_norm run on the example device");
      }
      accel_free(dev, norm);
    }
  }
  if (g) accel_graph_destroy(g);
  if (e0) accel_event_destroy(e0);
  if (e1) accel_event_destroy(e1);
  if (buf) accel_free(dev, buf);
  if (s) accel_stream_destroy(s);
  accel_device_close(dev);
  printf("example plugin: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
