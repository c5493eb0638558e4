/*
 * Drives every traced kind of operation once (copies, a memset, kernel launches, a lazy flush,
 * graph capture and replay, event record/wait, synchronizes) on the default stream and two
 * created streams, for check_trace.py. With argument "error" it then makes an invalid call and
 * leaves through exit(1), as a program does on an error path: the trace must still be valid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"
#include "require.h"

#define TRY(call) REQUIRE_OK(call, exit(2))

int main(int argc, char **argv) {
  const int error_exit = argc > 1 && !strcmp(argv[1], "error");
  accel_device_t *dev;
  accel_stream_t *def, *a, *lazy;
  accel_event_t *ev;
  accel_graph_t *g;
  float *buf, host[64] = {0};
  TRY(accel_device_open("cpu", &dev));
  TRY(accel_stream_default(dev, &def));
  TRY(accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &a));
  TRY(accel_stream_create_ex(dev, ACCEL_STREAM_LAZY, &lazy));
  TRY(accel_event_create(dev, ACCEL_EVENT_DEFAULT, &ev));
  TRY(accel_malloc(dev, sizeof host, (void **)&buf));
  accel_tensor_t t = {buf, 64, ACCEL_F32};

  TRY(accel_memcpy_async(def, buf, host, sizeof host));
  TRY(accel_memset_async(def, buf, 0, sizeof host));
  TRY(accel_event_record(ev, def));
  TRY(accel_stream_wait_event(a, ev));
  TRY(accel_fill(a, &t, 1, 1.0f));
  TRY(accel_graph_create(dev, &g));
  TRY(accel_graph_capture_begin(g, a, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  TRY(accel_fill(a, &t, 1, 2.0f));
  TRY(accel_memset_async(a, buf, 0, 4));
  TRY(accel_graph_capture_end(g));
  TRY(accel_graph_replay(g, a));
  TRY(accel_stream_synchronize(a));
  TRY(accel_fill(lazy, &t, 1, 3.0f));
  TRY(accel_stream_flush(lazy));
  TRY(accel_stream_synchronize(lazy));
  TRY(accel_memcpy(dev, host, buf, sizeof host));
  TRY(accel_device_synchronize(dev));

  if (error_exit) {
    /* An invalid argument, reported the way an application would, then exit(1). */
    accel_status_t st = accel_memset_async(a, NULL, 0, 4);
    fprintf(stderr, "trace_program: expected failure: %s: %s\n", accel_status_name(st),
            accel_last_error());
    exit(st == ACCEL_OK ? 3 : 1);
  }
  TRY(accel_graph_destroy(g));
  TRY(accel_event_destroy(ev));
  TRY(accel_free(dev, buf));
  TRY(accel_stream_destroy(lazy));
  TRY(accel_stream_destroy(a));
  TRY(accel_device_close(dev));
  return 0;
}
