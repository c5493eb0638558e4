/*
 * A stand-in for the vendor runtime (tests only), built twice from these files as the plugins
 * are: libcuda.so.1 for the CUDA plugin (fake_cuda.c: contexts, cuGetProcAddress_v2) and
 * libamdhip64.so.7 for the HIP plugin (fake_hip.c: the current device, exports by name). This
 * file holds what both vendors share: devices, streams, events, copies, captures and graphs,
 * on the CPU, with the driver's rules that a plugin can get wrong without a GPU. It proves the
 * plugin's logic, not the GPU: kernels run through their CPU build (fake_kernels.c), and
 * timing, memory and concurrency are the host's.
 *
 * Rules enforced:
 *  - no driver call from a host function (cuLaunchHostFunc's callback): CUDA_ERROR_NOT_PERMITTED
 *    (HIP: hipErrorNotSupported), counted in fake_not_permitted for the tests;
 *  - CUDA: a context must be current on the calling thread for context-bound calls
 *    (CUDA_ERROR_INVALID_CONTEXT), one current context per thread (cuCtxSetCurrent);
 *  - a copy of pageable host memory (neither device- nor host-allocated by the fake) on a
 *    capturing stream is STREAM_CAPTURE_UNSUPPORTED and invalidates the capture (EndCapture:
 *    STREAM_CAPTURE_INVALIDATED); so is a synchronize or query.
 * Streams run their work on one thread each, in order; stream memory operations
 * (WaitValue32 / WriteValue32) and captures (with fork/join through events) behave as
 * documented in cuda.h. Exported for tests: fake_not_permitted, fake_alloc_unowned /
 * fake_free_unowned (fake_mem.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_driver.h"

EXPORT int fake_not_permitted;
struct CUctx_st fake_primary = {0};

_Thread_local int fake_in_callback;
#if GPU_VENDOR_HIP
/* HIP initialises itself, and device 0 is current on every thread until hipSetDevice. */
_Thread_local gpuContext_t fake_current = &fake_primary;
int fake_initialized = 1;
#else
_Thread_local gpuContext_t fake_current;
int fake_initialized;
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;  /* any progress of any stream */

typedef struct graph graph_t;
struct graph { op_t *head, *tail; int invalid; };
struct CUgraphExec_st { graph_t own; }; /* its own copy of the graph's commands */

struct CUstream_st {
  pthread_t thread;
  op_t *head, *tail;
  uint64_t submitted, completed;
  int stop;
  graph_t *capture;
  struct CUstream_st *next_stream;
};
static struct CUstream_st *streams;

struct CUevent_st {
  uint64_t recorded, done;
  int refs;      /* queued ops that use it: cuEventDestroy with work pending is legal */
  int destroyed; /* freed when the last of them ran */
  graph_t *captured; /* recorded while a capture ran: joins a stream that waits on it */
  struct timespec when;
};

static void run_op(op_t *o) {
  switch (o->kind) {
    case OP_KERNEL: fake_run_kernel(o); break;
    case OP_HOSTFN:
      fake_in_callback = 1;
      o->fn(o->user);
      fake_in_callback = 0;
      break;
    case OP_COPY: memmove(o->dst, o->src, o->size); break;
    case OP_SET: memset(o->dst, (int)o->value, o->size); break;
    case OP_RECORD:
      pthread_mutex_lock(&lock);
      clock_gettime(CLOCK_MONOTONIC, &o->event->when);
      if (o->event->done < o->seq) o->event->done = o->seq;
      pthread_mutex_unlock(&lock);
      break;
    case OP_WAIT_EVENT:
      pthread_mutex_lock(&lock);
      while (o->event->done < o->seq) pthread_cond_wait(&changed, &lock);
      pthread_mutex_unlock(&lock);
      break;
    case OP_WAIT32:
      /* the host writes the flag without telling anyone: poll, as the GPU does */
      while (__atomic_load_n((uint32_t *)o->dst, __ATOMIC_SEQ_CST) != o->value) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
      }
      break;
    case OP_WRITE32: __atomic_store_n((uint32_t *)o->dst, o->value, __ATOMIC_SEQ_CST); break;
  }
}

static void *stream_main(void *arg) {
  struct CUstream_st *s = arg;
  pthread_mutex_lock(&lock);
  for (;;) {
    while (!s->head && !s->stop) pthread_cond_wait(&changed, &lock);
    op_t *o = s->head;
    if (!o) break;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&lock);
    run_op(o);
    struct CUevent_st *e = o->event;
    free(o);
    pthread_mutex_lock(&lock);
    if (e && --e->refs == 0 && e->destroyed) free(e);
    s->completed++;
    pthread_cond_broadcast(&changed);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

static void append(op_t **head, op_t **tail, op_t *o) {
  o->next = NULL;
  if (*tail) (*tail)->next = o;
  else *head = o;
  *tail = o;
}

static void free_ops(op_t *o) {
  for (op_t *n; o; o = n) n = o->next, free(o);
}

/* Queues o on s, or records it into the capture s belongs to (lock held). */
static gpuError_t submit(struct CUstream_st *s, op_t *o) {
  if (s->capture) {
    append(&s->capture->head, &s->capture->tail, o);
    return GPU_SUCCESS;
  }
  append(&s->head, &s->tail, o);
  s->submitted++;
  pthread_cond_broadcast(&changed);
  return GPU_SUCCESS;
}

gpuError_t fake_submit(gpuStream_t s, op_t proto) {
  if (!s) return E_INVALID_HANDLE; /* the plugin never uses the legacy NULL stream */
  op_t *o = malloc(sizeof *o);
  if (!o) return E_OUT_OF_MEMORY;
  *o = proto;
  pthread_mutex_lock(&lock);
  if (o->event) o->event->refs++;
  gpuError_t r = submit(s, o);
  pthread_mutex_unlock(&lock);
  return r;
}

/* A call that a capture forbids on s: invalidates it (lock held). */
static gpuError_t capture_violation(struct CUstream_st *s) {
  s->capture->invalid = 1;
  return GPU_ERROR_CAPTURE_FIRST; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
}

/* ----------------------------------------------------------------------- entry points */
gpuError_t fake_DriverGetVersion(int *v) { ENTER(); *v = FAKE_DRIVER_VERSION; return GPU_SUCCESS; }
gpuError_t fake_DeviceGetCount(int *n) {
  ENTER();
  if (!fake_initialized) return E_NOT_INITIALIZED;
  *n = 1;
  return GPU_SUCCESS;
}
gpuError_t fake_DeviceGet(gpuDevice_t *d, int ordinal) {
  ENTER();
  if (ordinal != 0) return E_INVALID_VALUE;
  *d = 0;
  return GPU_SUCCESS;
}
gpuError_t fake_DeviceGetName(char *name, int len, gpuDevice_t d) {
  ENTER();
  if (d != 0 || len <= 0) return E_INVALID_VALUE;
  strncpy(name, FAKE_DEVICE_NAME, (size_t)len - 1);
  name[len - 1] = '\0';
  return GPU_SUCCESS;
}
gpuError_t fake_DeviceGetAttribute(int *v, unsigned attr, gpuDevice_t d) {
  ENTER();
  if (d != 0) return E_INVALID_VALUE;
  *v = attr == GPU_ATTR_MULTIPROCESSOR_COUNT ? 4 : attr == GPU_ATTR_CC_MAJOR ? 9 : 0;
  return GPU_SUCCESS;
}
gpuError_t fake_DeviceTotalMem(size_t *bytes, gpuDevice_t d) {
  ENTER();
  (void)d;
  *bytes = (size_t)1 << 30;
  return GPU_SUCCESS;
}
gpuError_t fake_StreamCreate(gpuStream_t *out, unsigned flags) {
  NEED_CONTEXT();
  (void)flags;
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) return 2u;
  if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
    free(s);
    return 2u;
  }
  pthread_mutex_lock(&lock);
  s->next_stream = streams;
  streams = s;
  pthread_mutex_unlock(&lock);
  *out = s;
  return GPU_SUCCESS;
}
gpuError_t fake_StreamDestroy(gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  for (struct CUstream_st **l = &streams; *l; l = &(*l)->next_stream)
    if (*l == s) {
      *l = s->next_stream;
      break;
    }
  s->stop = 1; /* the thread drains the queue first, as the driver finishes the work */
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
  pthread_join(s->thread, NULL);
  free(s);
  return GPU_SUCCESS;
}
static gpuError_t wait_stream_locked(struct CUstream_st *s) {
  while (s->completed < s->submitted) pthread_cond_wait(&changed, &lock);
  return GPU_SUCCESS;
}
gpuError_t fake_StreamSynchronize(gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  gpuError_t r = s->capture ? capture_violation(s) : wait_stream_locked(s);
  pthread_mutex_unlock(&lock);
  return r;
}
gpuError_t fake_StreamQuery(gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  gpuError_t r = s->capture ? capture_violation(s)
                            : s->completed < s->submitted ? GPU_ERROR_NOT_READY : GPU_SUCCESS;
  pthread_mutex_unlock(&lock);
  return r;
}
gpuError_t fake_DeviceSynchronize(void) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  for (struct CUstream_st *s = streams; s; s = s->next_stream) wait_stream_locked(s);
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
gpuError_t fake_StreamWaitEvent(gpuStream_t s, gpuEvent_t e, unsigned flags) {
  NEED_CONTEXT();
  (void)flags;
  pthread_mutex_lock(&lock);
  if (e->captured) { /* a fork: s joins the capture */
    s->capture = e->captured;
    pthread_mutex_unlock(&lock);
    return GPU_SUCCESS;
  }
  uint64_t seq = e->recorded;
  pthread_mutex_unlock(&lock);
  return fake_submit(s, (op_t){.kind = OP_WAIT_EVENT, .event = e, .seq = seq});
}
gpuError_t fake_EventCreate(gpuEvent_t *out, unsigned flags) {
  NEED_CONTEXT();
  (void)flags;
  *out = calloc(1, sizeof **out);
  return *out ? GPU_SUCCESS : 2u;
}
gpuError_t fake_EventDestroy(gpuEvent_t e) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  e->destroyed = 1;
  int unused = e->refs == 0;
  pthread_mutex_unlock(&lock);
  if (unused) free(e);
  return GPU_SUCCESS;
}
gpuError_t fake_EventRecord(gpuEvent_t e, gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  if (s->capture) {
    e->captured = s->capture;
    pthread_mutex_unlock(&lock);
    return GPU_SUCCESS;
  }
  e->captured = NULL;
  uint64_t seq = ++e->recorded;
  pthread_mutex_unlock(&lock);
  return fake_submit(s, (op_t){.kind = OP_RECORD, .event = e, .seq = seq});
}
gpuError_t fake_EventSynchronize(gpuEvent_t e) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  while (e->done < e->recorded) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
gpuError_t fake_EventQuery(gpuEvent_t e) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  gpuError_t r = e->done < e->recorded ? GPU_ERROR_NOT_READY : GPU_SUCCESS;
  pthread_mutex_unlock(&lock);
  return r;
}
gpuError_t fake_EventElapsedTime(float *ms, gpuEvent_t a, gpuEvent_t b) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  int ready = a->done >= a->recorded && b->done >= b->recorded && a->recorded && b->recorded;
  if (ready)
    *ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
                  (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
  pthread_mutex_unlock(&lock);
  return ready ? GPU_SUCCESS : GPU_ERROR_NOT_READY;
}
static gpuError_t copy_async(void *dst, const void *src, size_t size, gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  int pageable = !fake_known_memory(dst) || !fake_known_memory(src);
  if (s && s->capture && pageable) {
    gpuError_t r = capture_violation(s);
    pthread_mutex_unlock(&lock);
    return r;
  }
  pthread_mutex_unlock(&lock);
  return fake_submit(s, (op_t){.kind = OP_COPY, .dst = dst, .src = src, .size = size});
}
#if GPU_VENDOR_HIP
gpuError_t fake_MemcpyAsync(void *dst, const void *src, size_t size, unsigned kind,
                            gpuStream_t s) {
  if (kind > GPU_MEMCPY_DEFAULT) return E_INVALID_VALUE; /* hipMemcpyHostToHost .. Default */
  return copy_async(dst, src, size, s);
}
#else
gpuError_t fake_MemcpyAsync(gpuDevicePtr_t dst, gpuDevicePtr_t src, size_t size,
                            gpuStream_t s) {
  return copy_async(GPU_VPTR(dst), GPU_VPTR(src), size, s);
}
#endif
gpuError_t fake_MemsetD8Async(gpuDevicePtr_t dst, unsigned char v, size_t size,
                                     gpuStream_t s) {
  NEED_CONTEXT();
  return fake_submit(s, (op_t){.kind = OP_SET, .dst = GPU_VPTR(dst), .value = v, .size = size});
}
gpuError_t fake_LaunchHostFunc(gpuStream_t s, gpuHostFn_t fn, void *user) {
  NEED_CONTEXT();
  return fake_submit(s, (op_t){.kind = OP_HOSTFN, .fn = fn, .user = user});
}
gpuError_t fake_StreamWaitValue32Eq(gpuStream_t s, void *addr, uint32_t value) {
  NEED_CONTEXT();
  return fake_submit(s, (op_t){.kind = OP_WAIT32, .dst = addr, .value = value});
}
gpuError_t fake_StreamWriteValue32(gpuStream_t s, gpuDevicePtr_t addr, uint32_t value,
                                          unsigned flags) {
  NEED_CONTEXT();
  (void)flags;
  return fake_submit(s, (op_t){.kind = OP_WRITE32, .dst = GPU_VPTR(addr), .value = value});
}
gpuError_t fake_StreamBeginCapture(gpuStream_t s, unsigned mode) {
  NEED_CONTEXT();
  (void)mode;
  graph_t *g = calloc(1, sizeof *g);
  if (!g) return 2u;
  pthread_mutex_lock(&lock);
  s->capture = g;
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
gpuError_t fake_StreamEndCapture(gpuStream_t s, gpuGraph_t *out) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  graph_t *g = s->capture;
  if (!g) {
    pthread_mutex_unlock(&lock);
    return GPU_ERROR_CAPTURE_FIRST + 3; /* CUDA_ERROR_STREAM_CAPTURE_UNMATCHED */
  }
  for (struct CUstream_st *t = streams; t; t = t->next_stream)
    if (t->capture == g) t->capture = NULL;
  pthread_mutex_unlock(&lock);
  if (g->invalid) {
    free_ops(g->head);
    free(g);
    *out = NULL;
    return GPU_ERROR_CAPTURE_INVALIDATED;
  }
  *out = (gpuGraph_t)g;
  return GPU_SUCCESS;
}
/* The executable graph keeps its own copy of the graph's commands, as a driver does: the
 * graph may be destroyed or updated from another one afterwards. */
gpuError_t fake_GraphInstantiate(gpuGraphExec_t *exec, gpuGraph_t graph,
                                        unsigned long long flags) {
  NEED_CONTEXT();
  (void)flags;
  *exec = calloc(1, sizeof **exec);
  if (!*exec) return 2u;
  for (const op_t *o = ((graph_t *)graph)->head; o; o = o->next) {
    op_t *c = malloc(sizeof *c);
    if (!c) {
      free_ops((*exec)->own.head);
      free(*exec);
      return 2u;
    }
    *c = *o;
    append(&(*exec)->own.head, &(*exec)->own.tail, c);
  }
  return GPU_SUCCESS;
}

/* 0 when graph's commands pair with exec's one for one (same kinds, kernels and events). */
static unsigned update_mismatch(const graph_t *have, const graph_t *want) {
  const op_t *a = have->head, *b = want->head;
  for (; a && b; a = a->next, b = b->next) {
    if (a->kind != b->kind) return 3u; /* NODE_TYPE_CHANGED */
    if (a->kernel != b->kernel) return 4u; /* FUNCTION_CHANGED */
    if (a->event != b->event) return 5u; /* PARAMETERS_CHANGED */
  }
  return a || b ? 2u : 0u; /* TOPOLOGY_CHANGED */
}

/* cuGraphExecUpdate / hipGraphExecUpdate: exec takes graph's arguments when they pair, and
 * is left as it was otherwise (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE). Launches already queued
 * hold copies of the commands, so they keep the old arguments. FAKE_REFUSE_GRAPH_UPDATE=1
 * refuses every update (NOT_SUPPORTED), as a driver may: the plugin's fallback's test. */
static gpuError_t exec_update(gpuGraphExec_t exec, gpuGraph_t graph, unsigned *result) {
  const graph_t *g = (const graph_t *)graph;
  const char *refuse = getenv("FAKE_REFUSE_GRAPH_UPDATE");
  *result = refuse && strcmp(refuse, "1") == 0 ? 6u : g ? update_mismatch(&exec->own, g) : 1u;
  if (*result) return 910u;
  for (op_t *a = exec->own.head, *b = g->head; a; a = a->next, b = b->next) {
    op_t *next = a->next;
    *a = *b;
    a->next = next;
  }
  return GPU_SUCCESS;
}
#if GPU_VENDOR_HIP
gpuError_t fake_GraphExecUpdate(gpuGraphExec_t exec, gpuGraph_t graph, gpuGraphNode_t *node,
                                unsigned *result) {
  NEED_CONTEXT();
  *node = NULL;
  return exec_update(exec, graph, result);
}
#else
gpuError_t fake_GraphExecUpdate(gpuGraphExec_t exec, gpuGraph_t graph,
                                gpuGraphExecUpdateInfo_t *info) {
  NEED_CONTEXT();
  info->error_node = info->error_from_node = NULL;
  return exec_update(exec, graph, &info->result);
}
#endif
gpuError_t fake_GraphLaunch(gpuGraphExec_t exec, gpuStream_t s) {
  NEED_CONTEXT();
  for (op_t *o = exec->own.head; o; o = o->next) {
    gpuError_t r = fake_submit(s, *o);
    if (r != GPU_SUCCESS) return r;
  }
  return GPU_SUCCESS;
}
gpuError_t fake_GraphExecDestroy(gpuGraphExec_t exec) {
  NEED_CONTEXT();
  free_ops(exec->own.head);
  free(exec);
  return GPU_SUCCESS;
}
gpuError_t fake_GraphDestroy(gpuGraph_t graph) {
  NEED_CONTEXT();
  graph_t *g = (graph_t *)graph;
  free_ops(g->head);
  free(g);
  return GPU_SUCCESS;
}
gpuError_t fake_StreamIsCapturing(gpuStream_t s, unsigned *status) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  *status = s->capture ? GPU_CAPTURE_STATUS_ACTIVE : 0u;
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
