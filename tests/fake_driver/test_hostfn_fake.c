/*
 * Host functions that call accel, on the CUDA or HIP plugin (argv[1]) over the fake driver (fake_driver.c, which
 * refuses every driver call made from a host-function callback, as cuda.h says the real one
 * may): docs/API.md promises that a host function may allocate, free, create and destroy
 * streams and events and wait for other streams. Before the plugin ran host functions on its
 * own thread (gpu_hostfn.c) each of these calls failed with CUDA_ERROR_NOT_PERMITTED.
 *  - eager: one host function doing all of that on a second stream;
 *  - graph: a captured host function that allocates and frees, replayed 3 times (each replay
 *    runs it once, after the replayed memset before it);
 *  - the driver saw no call from inside a callback (fake_not_permitted stays 0).
 * 77 when the device is not the fake one (LD_LIBRARY_PATH must name it).
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "accel/accel.h"
#include "check.h"
#include "fake_open.h"

typedef struct work {
  accel_device_t *dev;
  accel_status_t st[8];
  int steps;
} work_t;

static void note(work_t *w, accel_status_t st) {
  if (w->steps < 8) w->st[w->steps] = st;
  w->steps++;
}

/* Everything the contract allows a host function, on another stream. */
static void busy_host_fn(void *user) {
  work_t *w = user;
  accel_stream_t *other = NULL;
  accel_event_t *ev = NULL;
  void *p = NULL;
  note(w, accel_stream_create(w->dev, &other));
  note(w, accel_malloc(w->dev, 4096, &p));
  note(w, other && p ? accel_memset_async(other, p, 7, 4096) : ACCEL_ERROR_STATE);
  note(w, other ? accel_stream_synchronize(other) : ACCEL_ERROR_STATE);
  note(w, accel_event_create(w->dev, 0, &ev));
  note(w, ev ? accel_event_destroy(ev) : ACCEL_ERROR_STATE);
  note(w, accel_free(w->dev, p));
  note(w, other ? accel_stream_destroy(other) : ACCEL_ERROR_STATE);
}

static atomic_int replays;
static atomic_int replay_errors;
static accel_device_t *graph_dev;
static unsigned char *graph_buf; /* the memset captured before the host function */

static void replay_host_fn(void *user) {
  (void)user;
  void *p = NULL;
  if (accel_malloc(graph_dev, 256, &p) != ACCEL_OK || accel_free(graph_dev, p) != ACCEL_OK)
    atomic_fetch_add(&replay_errors, 1);
  atomic_fetch_add(&replays, 1);
}

int main(int argc, char **argv) {
  accel_device_t *dev = NULL;
  void *drv = NULL;
  const int skip = fake_open_driver(argc, argv, &dev, &drv);
  if (skip) return skip;
  int *not_permitted = drv ? dlsym(drv, "fake_not_permitted") : NULL;
  CHECK(not_permitted != NULL, "fake_not_permitted not found: %s", dlerror());

  accel_stream_t *s = NULL;
  OK(accel_stream_create(dev, &s));
  work_t w = {.dev = dev};
  OK(accel_launch_host_func(s, busy_host_fn, &w));
  OK(accel_stream_synchronize(s));
  CHECK(w.steps == 8, "the host function made %d of 8 calls", w.steps);
  for (int i = 0; i < w.steps && i < 8; i++)
    CHECK(w.st[i] == ACCEL_OK, "call %d inside the host function: %s", i,
          accel_status_name(w.st[i]));

  /* captured: a copy, then the host function; replayed three times */
  graph_dev = dev;
  accel_graph_t *g = NULL;
  OK(accel_malloc(dev, 64, (void **)&graph_buf));
  OK(accel_graph_create(dev, &g));
  OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL));
  OK(accel_memset_async(s, graph_buf, 3, 64));
  OK(accel_launch_host_func(s, replay_host_fn, NULL));
  OK(accel_graph_capture_end(g));
  CHECK(atomic_load(&replays) == 0, "the host function ran during the capture");
  for (int r = 0; r < 3; r++) OK(accel_graph_replay(g, s));
  OK(accel_stream_synchronize(s));
  CHECK(atomic_load(&replays) == 3, "%d host functions ran in 3 replays", atomic_load(&replays));
  CHECK(atomic_load(&replay_errors) == 0, "%d replayed host functions failed an accel call",
        atomic_load(&replay_errors));
  if (not_permitted)
    CHECK(*not_permitted == 0, "the driver refused %d calls made inside host functions",
          *not_permitted);
  OK(accel_graph_destroy(g));
  OK(accel_free(dev, graph_buf));
  OK(accel_stream_destroy(s));
  accel_device_close(dev);
  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
