/*
 * Streams: an in-order queue of commands drained by one worker thread per stream, so that
 * submission returns at once and the stream is busy until the worker has run everything, as on
 * a real device. The core serialises calls that submit to one stream object; stream_synchronize
 * and stream_query may run concurrently with a submission from another thread, hence the lock.
 *
 * Contract kept (docs/PLUGINS.md): memcpy_async reads a host source when the worker reaches the
 * copy (the core keeps it valid until then); host functions run on the worker once earlier work
 * finished and block later work; stream_query is NOT_READY while anything is queued; kernels run
 * through host->run_kernel_c on the worker; a command that fails on the worker is a deferred
 * error, reported once by the next stream_synchronize, after which the stream stays usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_internal.h"

typedef enum { CMD_COPY, CMD_FILL, CMD_HOST_FN, CMD_KERNEL, CMD_RECORD, CMD_WAIT } cmd_kind_t;

struct example_cmd {
  example_cmd_t *next;
  cmd_kind_t kind;
  union {
    struct { void *dst; const void *src; size_t size; } copy;
    struct { void *dst; size_t size; uint8_t value; } fill;
    struct { accel_host_fn_t fn; void *user; } host_fn;
    accel_kernel_launch_t kernel; /* params point into params[] below */
    example_fence_t *fence;       /* RECORD signals it, WAIT waits for it */
  } u;
  _Alignas(ACCEL_KERNEL_PARAMS_ALIGN) unsigned char params[]; /* the copied parameter block */
};

/* Runs one command on the worker; nonzero status: a deferred error with *message set. */
static accel_status_t run_command(example_cmd_t *c, char *message, size_t size) {
  switch (c->kind) {
    case CMD_COPY: memcpy(c->u.copy.dst, c->u.copy.src, c->u.copy.size); break;
    case CMD_FILL: memset(c->u.fill.dst, c->u.fill.value, c->u.fill.size); break;
    case CMD_HOST_FN: c->u.host_fn.fn(c->u.host_fn.user); break;
    case CMD_RECORD: example_fence_signal(c->u.fence); break;
    case CMD_WAIT: example_fence_wait(c->u.fence); break;
    case CMD_KERNEL: {
      /* run_kernel_c sets the message on this (the worker) thread; keep a copy for the thread
       * that synchronizes. kernel_name is libaccel's constant: valid after the launch call. */
      accel_status_t st = example_host->run_kernel_c(&c->u.kernel);
      if (st != ACCEL_OK)
        snprintf(message, size, EXAMPLE_NAME ": kernel %s failed on the device: %s",
                 c->u.kernel.kernel_name,
                 EXAMPLE_HOST_HAS(example_host, last_error) ? example_host->last_error()
                                                            : "(no message: libaccel too old)");
      return st;
    }
  }
  return ACCEL_OK;
}

static void free_command(example_cmd_t *c) {
  if (c->kind == CMD_RECORD || c->kind == CMD_WAIT) example_fence_release(c->u.fence);
  free(c);
}

static void *worker_main(void *arg) {
  example_stream_t *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&s->changed, &s->lock);
    if (!s->head) break; /* stop, and nothing left */
    example_cmd_t *c = s->head;
    pthread_mutex_unlock(&s->lock); /* host functions may call back into accel */
    char message[sizeof s->deferred_message];
    accel_status_t st = run_command(c, message, sizeof message);
    pthread_mutex_lock(&s->lock);
    if (st != ACCEL_OK && s->deferred == ACCEL_OK) {
      s->deferred = st;
      memcpy(s->deferred_message, message, sizeof message);
    }
    s->head = c->next; /* removed only after it ran: the queue is empty only when idle */
    if (!s->head) s->tail = NULL;
    s->completed++;
    free_command(c);
    pthread_cond_broadcast(&s->changed);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static accel_status_t enqueue(example_stream_t *s, example_cmd_t *c) {
  c->next = NULL;
  pthread_mutex_lock(&s->lock);
  if (s->tail) s->tail->next = c;
  else s->head = c;
  s->tail = c;
  s->submitted++;
  pthread_cond_broadcast(&s->changed);
  pthread_mutex_unlock(&s->lock);
  return ACCEL_OK;
}

static example_cmd_t *new_command(cmd_kind_t kind, size_t extra, const char *what) {
  example_cmd_t *c = calloc(1, sizeof *c + extra);
  if (!c)
    example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                            EXAMPLE_NAME ": out of host memory queueing %s", what);
  else
    c->kind = kind;
  return c;
}

accel_status_t example_stream_create(accel_be_device_t *device, accel_be_stream_t **out) {
  example_stream_t *s = calloc(1, sizeof *s);
  if (!s)
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": calloc(%zu) for a stream failed", sizeof *s);
  s->device = device;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->changed, NULL);
  int err = pthread_create(&s->worker, NULL, worker_main, s);
  if (err != 0) {
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return example_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                   EXAMPLE_NAME ": pthread_create for a stream worker: %s",
                                   strerror(err));
  }
  *out = s;
  return ACCEL_OK;
}

/* The core synchronized the stream before: the queue is empty; the worker just exits. */
void example_stream_destroy(accel_be_stream_t *stream) {
  example_stream_t *s = stream;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->changed);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->worker, NULL);
  pthread_cond_destroy(&s->changed);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* Waits for what was submitted before the call (a concurrent submission is not waited for). */
accel_status_t example_stream_synchronize(accel_be_stream_t *stream) {
  example_stream_t *s = stream;
  pthread_mutex_lock(&s->lock);
  uint64_t target = s->submitted;
  while (s->completed < target) pthread_cond_wait(&s->changed, &s->lock);
  accel_status_t st = s->deferred;
  char message[sizeof s->deferred_message];
  memcpy(message, s->deferred_message, sizeof message);
  s->deferred = ACCEL_OK;
  pthread_mutex_unlock(&s->lock);
  if (st != ACCEL_OK) return example_host->set_error(st, "%s", message);
  return ACCEL_OK;
}

accel_status_t example_stream_query(accel_be_stream_t *stream) {
  example_stream_t *s = stream;
  pthread_mutex_lock(&s->lock);
  int idle = s->completed == s->submitted;
  pthread_mutex_unlock(&s->lock);
  return idle ? ACCEL_OK : ACCEL_ERROR_NOT_READY; /* NOT_READY is no error: no message */
}

accel_status_t example_stream_wait_event(accel_be_stream_t *stream, accel_be_event_t *event) {
  example_fence_t *f = example_event_last(event);
  if (!f) return ACCEL_OK; /* never recorded: nothing to wait for (the core avoids this) */
  example_cmd_t *c = new_command(CMD_WAIT, 0, "an event wait");
  if (!c) {
    example_fence_release(f);
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }
  c->u.fence = f;
  return enqueue(stream, c);
}

accel_status_t example_stream_record(example_stream_t *stream, example_fence_t *fence) {
  example_cmd_t *c = new_command(CMD_RECORD, 0, "an event record");
  if (!c) return ACCEL_ERROR_OUT_OF_MEMORY;
  c->u.fence = fence;
  return enqueue(stream, c);
}

/* Every kind is a host-to-host copy here. The core has checked that both ranges lie inside
 * live allocations or are host memory, and that they do not overlap. */
accel_status_t example_memcpy_async(accel_be_stream_t *stream, void *dst, const void *src,
                                    size_t size, accel_copy_kind_t kind) {
  (void)kind;
  example_cmd_t *c = new_command(CMD_COPY, 0, "a copy");
  if (!c) return ACCEL_ERROR_OUT_OF_MEMORY;
  c->u.copy.dst = dst;
  c->u.copy.src = src;
  c->u.copy.size = size;
  return enqueue(stream, c);
}

accel_status_t example_memset_async(accel_be_stream_t *stream, void *dst, uint8_t value,
                                    size_t size) {
  example_cmd_t *c = new_command(CMD_FILL, 0, "a fill");
  if (!c) return ACCEL_ERROR_OUT_OF_MEMORY;
  c->u.fill.dst = dst;
  c->u.fill.size = size;
  c->u.fill.value = value;
  return enqueue(stream, c);
}

accel_status_t example_launch_host_func(accel_be_stream_t *stream, accel_host_fn_t fn,
                                        void *user) {
  example_cmd_t *c = new_command(CMD_HOST_FN, 0, "a host function");
  if (!c) return ACCEL_ERROR_OUT_OF_MEMORY;
  c->u.host_fn.fn = fn;
  c->u.host_fn.user = user;
  return enqueue(stream, c);
}

/* accel's kernels in their portable C form, run by the host (kernel form HOST_C) on this
 * device's host-accessible memory. The launch is checked here, at submission, against the
 * installed kernel ABI, so that a bad launch fails the call rather than the device later. The
 * loader's handshake (the vtable's kernel_abi_version and kernel_count) makes a mismatch
 * impossible with a correct libaccel; one that gets here is an ABI failure: PLUGIN. */
accel_status_t example_launch_kernel(accel_be_stream_t *stream,
                                     const accel_kernel_launch_t *launch) {
  static const size_t params_size[] = ACCEL_KERNEL_ABI_PARAM_SIZES;
  if (!EXAMPLE_HOST_HAS(example_host, run_kernel_c))
    return example_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                   EXAMPLE_NAME ": kernel '%s': this libaccel has no "
                                   "run_kernel_c (host table too old)",
                                   launch->kernel_name);
  if (launch->kernel_id >= ACCEL_KERNEL_ID_COUNT ||
      launch->params_size != params_size[launch->kernel_id])
    return example_host->set_error(ACCEL_ERROR_PLUGIN,
                                   EXAMPLE_NAME ": kernel '%s' (id %u, %u parameter bytes) is "
                                   "not in the kernel ABI this plugin was built with (%u "
                                   "kernels, version %u)",
                                   launch->kernel_name, launch->kernel_id, launch->params_size,
                                   ACCEL_KERNEL_ID_COUNT, ACCEL_KERNEL_ABI_VERSION);
  example_cmd_t *c = new_command(CMD_KERNEL, launch->params_size, "a kernel launch");
  if (!c) return ACCEL_ERROR_OUT_OF_MEMORY;
  c->u.kernel = *launch;
  memcpy(c->params, launch->params, launch->params_size);
  c->u.kernel.params = c->params;
  return enqueue(stream, c);
}
