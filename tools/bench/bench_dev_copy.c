/*
 * The device-copy reference (bench.h): on a device whose memory the host cannot reach (a
 * discrete GPU), a host loop over host copies of the buffers measures the host's memory, not the
 * device's. There the kernels are compared with accel_memcpy_async within the device instead:
 * the fastest of COPY_RUNS copies of one half of a scratch buffer into the other, timed with
 * events on the device, gives a rate (bytes read + written per ms) and a row's reference is its
 * bytes at that rate. A copy is the vendor's own streaming kernel, not a strict upper bound: a
 * read-only kernel may beat it, so the tables call it a reference rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Bytes copied per run (read + written: twice this): large enough that the copy's launch is
 * noise next to its time on a 3-5 TB/s device. */
#define COPY_BYTES ((size_t)512 << 20)
#define COPY_RUNS 3

struct bench_dev_copy {
  accel_device_t *dev;
  accel_stream_t *s;
  accel_event_t *start, *end;
  char *buf; /* 2 * COPY_BYTES */
};

void bench_dev_copy_close(bench_dev_copy_t *c) {
  if (!c) return;
  if (c->buf) accel_free(c->dev, c->buf);
  if (c->start) accel_event_destroy(c->start);
  if (c->end) accel_event_destroy(c->end);
  if (c->s) accel_stream_destroy(c->s);
  free(c);
}

/* 0, or nonzero with the reason in why. */
static int dev_copy_open(accel_device_t *dev, bench_dev_copy_t **out, char *why, size_t cap) {
  *out = NULL;
  bench_dev_copy_t *c = calloc(1, sizeof *c);
  if (!c) return bench_why(why, cap, "out of host memory");
  c->dev = dev;
  accel_status_t st = accel_stream_create_ex(dev, ACCEL_STREAM_EAGER, &c->s);
  if (st == ACCEL_OK) st = accel_event_create(dev, ACCEL_EVENT_DEFAULT, &c->start);
  if (st == ACCEL_OK) st = accel_event_create(dev, ACCEL_EVENT_DEFAULT, &c->end);
  if (st == ACCEL_OK) st = accel_malloc(dev, 2 * COPY_BYTES, (void **)&c->buf);
  if (st == ACCEL_OK) st = accel_memset_async(c->s, c->buf, 0, 2 * COPY_BYTES);
  if (st == ACCEL_OK) st = accel_stream_synchronize(c->s);
  if (st != ACCEL_OK) {
    bench_why(why, cap, "%s: %s", accel_status_name(st), accel_last_error());
    bench_dev_copy_close(c);
    return 1;
  }
  *out = c;
  return 0;
}

double bench_dev_copy_ms(bench_dev_copy_t *c, double bytes) {
  float best = 0.0f;
  for (int r = 0; r < COPY_RUNS; r++) {
    float ms = 0.0f;
    BENCH_TRY(accel_event_record(c->start, c->s));
    BENCH_TRY(accel_memcpy_async(c->s, c->buf + COPY_BYTES, c->buf, COPY_BYTES));
    BENCH_TRY(accel_event_record(c->end, c->s));
    BENCH_TRY(accel_event_synchronize(c->end));
    BENCH_TRY(accel_event_elapsed_ms(c->start, c->end, &ms));
    if (r == 0 || ms < best) best = ms;
  }
  return (double)best * bytes / (2.0 * (double)COPY_BYTES);
fail:
  return -1.0;
}

int bench_dev_copy_for(const bench_opts_t *o, accel_device_t *dev,
                       const accel_device_info_t *info, bench_dev_copy_t **out) {
  *out = NULL;
  const int forced = o->bound && !strcmp(o->bound, "device-copy");
  if (!forced && info->host_accessible) return 0;
  if (!forced && o->bound) {
    fprintf(stderr, "accel-bench: --bound host: the host cannot reach %s's memory\n",
            info->name);
    return 1;
  }
  char why[256];
  if (!dev_copy_open(dev, out, why, sizeof why)) return 0;
  fprintf(stderr, "accel-bench: the device-copy reference: %s\n", why);
  return 1;
}
