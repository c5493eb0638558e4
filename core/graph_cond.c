/*
 * Device-flag control flow: accel_graph_capture_if / _while and their ends (docs/GRAPHS.md,
 * "Branches on a device flag"). A region is a COND_BEGIN ... COND_END pair of commands around
 * its work; the backend reads the flag when its stream reaches COND_BEGIN (the vtable's
 * conditionals says it can), so the host never reads it. On a capturing stream the pair is
 * recorded into the capture (capture.c enforces the rules: one stream, no event edges, balanced
 * at capture end). Outside a capture, on eager and lazy streams alike, the region is captured
 * privately (THREAD_LOCAL: a synchronize in the body invalidates it) and replayed on the stream
 * when it closes: one capture and instantiation per region, the price of running it in stream
 * order without the host.
 */
#include <stdint.h>
#include <stdio.h>

#include "capture.h"
#include "core_util.h"
#include "device.h"
#include "graph.h"
#include "graph_parts.h"
#include "stream.h"

static accel_status_t cond_open(accel_stream_t *s, const accel_cmd_t *begin, const char *fn) {
  pthread_mutex_lock(&s->lock);
  bool capturing = s->capture != NULL;
  accel_status_t st = capturing ? accel_capture_cond_begin_locked(s, begin, false) : ACCEL_OK;
  pthread_mutex_unlock(&s->lock);
  if (capturing) return st;
  accel_graph_t *g = NULL;
  st = accel_graph_create(s->dev, &g);
  if (st == ACCEL_OK) st = accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL);
  bool began = st == ACCEL_OK;
  if (began) {
    pthread_mutex_lock(&s->lock);
    st = s->capture ? accel_capture_cond_begin_locked(s, begin, true)
                    : accel_set_error(ACCEL_ERROR_STATE, "%s: the stream's capture ended", fn);
    pthread_mutex_unlock(&s->lock);
  }
  if (st == ACCEL_OK) return ACCEL_OK;
  accel_status_t keep = st; /* the first failure's message is the one to report */
  char msg[512];
  snprintf(msg, sizeof msg, "%s", accel_last_error());
  if (began) accel_graph_capture_end(g);
  if (g) accel_graph_release_owned(g, fn);
  return accel_set_error(keep, "%s", msg);
}

static accel_status_t cond_begin(accel_stream_t *s, const int32_t *flag, uint32_t kind,
                                 uint32_t max_iterations, const char *fn) {
  accel_device_t *dev = NULL;
  accel_status_t st = accel_stream_check(s, fn, &dev);
  if (st != ACCEL_OK) return st;
  if (!dev->backend->vt->conditionals)
    return accel_set_error(ACCEL_ERROR_UNSUPPORTED,
                           "%s: the %s backend has no conditional regions "
                           "(ACCEL_ATTR_CONDITIONALS is ACCEL_CONDITIONALS_NONE)",
                           fn, dev->backend->vt->name);
  if (!flag || (uintptr_t)flag % sizeof(int32_t))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the flag must be a 4-byte aligned pointer, not %p", fn,
                           (const void *)flag);
  if (!accel_allocator_range_valid(dev->mem, flag, sizeof(int32_t)))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the flag %p is not in a live allocation of the stream's device",
                           fn, (const void *)flag);
  if (max_iterations == 0)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: max_iterations must be at least 1", fn);
  accel_cmd_t begin = {.type = ACCEL_CMD_COND_BEGIN,
                       .u.cond = {.flag = flag, .kind = kind, .max_iterations = max_iterations}};
  return cond_open(s, &begin, fn);
}

static accel_status_t cond_end(accel_stream_t *s, uint32_t kind, const char *fn) {
  accel_status_t st = accel_stream_check(s, fn, NULL);
  if (st != ACCEL_OK) return st;
  accel_graph_t *finish = NULL;
  pthread_mutex_lock(&s->lock);
  st = s->capture ? accel_capture_cond_end_locked(s, kind, fn, &finish)
                  : accel_set_error(ACCEL_ERROR_STATE,
                                    "%s: no conditional region is open on this stream", fn);
  pthread_mutex_unlock(&s->lock);
  if (st != ACCEL_OK || !finish) return st;
  /* the private capture of a region opened outside a capture: run it in stream order */
  st = accel_graph_capture_end(finish);
  if (st == ACCEL_OK) st = accel_graph_replay(finish, s);
  accel_graph_release_owned(finish, fn); /* after its replay, which keeps what it runs */
  return st;
}

accel_status_t accel_graph_capture_if(accel_stream_t *stream, const int32_t *flag_dev) {
  return cond_begin(stream, flag_dev, ACCEL_COND_IF, 1, __func__);
}

accel_status_t accel_graph_capture_end_if(accel_stream_t *stream) {
  return cond_end(stream, ACCEL_COND_IF, __func__);
}

accel_status_t accel_graph_capture_while(accel_stream_t *stream, const int32_t *flag_dev,
                                         uint32_t max_iterations) {
  return cond_begin(stream, flag_dev, ACCEL_COND_WHILE, max_iterations, __func__);
}

accel_status_t accel_graph_capture_end_while(accel_stream_t *stream) {
  return cond_end(stream, ACCEL_COND_WHILE, __func__);
}
