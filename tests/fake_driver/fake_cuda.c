/*
 * A stand-in for libcuda.so.1 (tests only): the driver calls the CUDA plugin makes, on the
 * CPU, with the driver's rules that a plugin can get wrong without a GPU. It proves the
 * plugin's logic, not the GPU: kernels run through their CPU build (fake_kernels.c), and
 * timing, memory and concurrency are the host's.
 *
 * Rules enforced:
 *  - no CUDA call from a host function (cuLaunchHostFunc's callback): CUDA_ERROR_NOT_PERMITTED;
 *  - a context must be current on the calling thread for context-bound calls
 *    (CUDA_ERROR_INVALID_CONTEXT), one current context per thread (cuCtxSetCurrent);
 *  - a copy of pageable host memory (neither cuMemAlloc'ed nor cuMemHostAlloc'ed) on a
 *    capturing stream is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture
 *    (cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); so is a synchronize or query.
 * Streams run their work on one thread each, in order; stream memory operations
 * (cuStreamWaitValue32 / cuStreamWriteValue32) and captures (with fork/join through events)
 * behave as documented in cuda.h. Entry points come from cuGetProcAddress_v2, as the plugin
 * asks for them; cuCtxGetCurrent / cuCtxSetCurrent are also exported (the NCCL engine's dlsym).
 * Exported for tests: fake_cuda_not_permitted (calls refused inside host functions),
 * fake_cuda_alloc_unowned / fake_cuda_free_unowned (fake_cuda_mem.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cuda.h"

EXPORT int fake_cuda_not_permitted;
_Thread_local gpuContext_t fake_current;
_Thread_local int fake_in_callback;
int fake_initialized;

struct CUctx_st { int device; };
static struct CUctx_st primary = {0};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;  /* any progress of any stream */

typedef struct graph graph_t;
struct graph { op_t *head, *tail; int invalid; };
struct CUgraphExec_st { graph_t *graph; };

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
static gpuError_t fake_Init(unsigned flags) {
  ENTER();
  if (flags) return E_INVALID_VALUE;
  fake_initialized = 1;
  return GPU_SUCCESS;
}
static gpuError_t fake_DriverGetVersion(int *v) { ENTER(); *v = 13000; return GPU_SUCCESS; }
static gpuError_t fake_DeviceGetCount(int *n) {
  ENTER();
  if (!fake_initialized) return E_NOT_INITIALIZED;
  *n = 1;
  return GPU_SUCCESS;
}
static gpuError_t fake_DeviceGet(gpuDevice_t *d, int ordinal) {
  ENTER();
  if (ordinal != 0) return E_INVALID_VALUE;
  *d = 0;
  return GPU_SUCCESS;
}
static gpuError_t fake_DeviceGetName(char *name, int len, gpuDevice_t d) {
  ENTER();
  if (d != 0 || len <= 0) return E_INVALID_VALUE;
  strncpy(name, "fake CUDA device (tests/fake_driver)", (size_t)len - 1);
  name[len - 1] = '\0';
  return GPU_SUCCESS;
}
static gpuError_t fake_DeviceGetAttribute(int *v, unsigned attr, gpuDevice_t d) {
  ENTER();
  if (d != 0) return E_INVALID_VALUE;
  *v = attr == GPU_ATTR_MULTIPROCESSOR_COUNT ? 4 : attr == GPU_ATTR_CC_MAJOR ? 9 : 0;
  return GPU_SUCCESS;
}
static gpuError_t fake_DeviceTotalMem(size_t *bytes, gpuDevice_t d) {
  ENTER();
  (void)d;
  *bytes = (size_t)1 << 30;
  return GPU_SUCCESS;
}
static gpuError_t fake_PrimaryCtxRetain(gpuContext_t *ctx, gpuDevice_t d) {
  ENTER();
  if (d != 0) return E_INVALID_VALUE;
  *ctx = &primary;
  return GPU_SUCCESS;
}
static gpuError_t fake_PrimaryCtxRelease(gpuDevice_t d) { ENTER(); (void)d; return GPU_SUCCESS; }
EXPORT gpuError_t cuCtxSetCurrent(gpuContext_t ctx) {
  ENTER();
  fake_current = ctx;
  return GPU_SUCCESS;
}
EXPORT gpuError_t cuCtxGetCurrent(gpuContext_t *ctx) {
  ENTER();
  *ctx = fake_current;
  return GPU_SUCCESS;
}
static gpuError_t fake_StreamCreate(gpuStream_t *out, unsigned flags) {
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
static gpuError_t fake_StreamDestroy(gpuStream_t s) {
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
static gpuError_t fake_StreamSynchronize(gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  gpuError_t r = s->capture ? capture_violation(s) : wait_stream_locked(s);
  pthread_mutex_unlock(&lock);
  return r;
}
static gpuError_t fake_StreamQuery(gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  gpuError_t r = s->capture ? capture_violation(s)
                            : s->completed < s->submitted ? GPU_ERROR_NOT_READY : GPU_SUCCESS;
  pthread_mutex_unlock(&lock);
  return r;
}
static gpuError_t fake_DeviceSynchronize(void) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  for (struct CUstream_st *s = streams; s; s = s->next_stream) wait_stream_locked(s);
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
static gpuError_t fake_StreamWaitEvent(gpuStream_t s, gpuEvent_t e, unsigned flags) {
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
static gpuError_t fake_EventCreate(gpuEvent_t *out, unsigned flags) {
  NEED_CONTEXT();
  (void)flags;
  *out = calloc(1, sizeof **out);
  return *out ? GPU_SUCCESS : 2u;
}
static gpuError_t fake_EventDestroy(gpuEvent_t e) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  e->destroyed = 1;
  int unused = e->refs == 0;
  pthread_mutex_unlock(&lock);
  if (unused) free(e);
  return GPU_SUCCESS;
}
static gpuError_t fake_EventRecord(gpuEvent_t e, gpuStream_t s) {
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
static gpuError_t fake_EventSynchronize(gpuEvent_t e) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  while (e->done < e->recorded) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
static gpuError_t fake_EventQuery(gpuEvent_t e) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  gpuError_t r = e->done < e->recorded ? GPU_ERROR_NOT_READY : GPU_SUCCESS;
  pthread_mutex_unlock(&lock);
  return r;
}
static gpuError_t fake_EventElapsedTime(float *ms, gpuEvent_t a, gpuEvent_t b) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  int ready = a->done >= a->recorded && b->done >= b->recorded && a->recorded && b->recorded;
  if (ready)
    *ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
                  (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
  pthread_mutex_unlock(&lock);
  return ready ? GPU_SUCCESS : GPU_ERROR_NOT_READY;
}
static gpuError_t fake_MemcpyAsync(gpuDevicePtr_t dst, gpuDevicePtr_t src, size_t size,
                                   gpuStream_t s) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  int pageable = !fake_known_memory(GPU_VPTR(dst)) || !fake_known_memory(GPU_VPTR(src));
  if (s && s->capture && pageable) {
    gpuError_t r = capture_violation(s);
    pthread_mutex_unlock(&lock);
    return r;
  }
  pthread_mutex_unlock(&lock);
  return fake_submit(s, (op_t){.kind = OP_COPY, .dst = GPU_VPTR(dst), .src = GPU_VPTR(src),
                              .size = size});
}
static gpuError_t fake_MemsetD8Async(gpuDevicePtr_t dst, unsigned char v, size_t size,
                                     gpuStream_t s) {
  NEED_CONTEXT();
  return fake_submit(s, (op_t){.kind = OP_SET, .dst = GPU_VPTR(dst), .value = v, .size = size});
}
static gpuError_t fake_LaunchHostFunc(gpuStream_t s, gpuHostFn_t fn, void *user) {
  NEED_CONTEXT();
  return fake_submit(s, (op_t){.kind = OP_HOSTFN, .fn = fn, .user = user});
}
static gpuError_t fake_StreamWaitValue32(gpuStream_t s, gpuDevicePtr_t addr, uint32_t value,
                                         unsigned flags) {
  NEED_CONTEXT();
  if (flags != GPU_WAIT_VALUE_EQ) return E_NOT_SUPPORTED; /* only what the plugin uses */
  return fake_submit(s, (op_t){.kind = OP_WAIT32, .dst = GPU_VPTR(addr), .value = value});
}
static gpuError_t fake_StreamWriteValue32(gpuStream_t s, gpuDevicePtr_t addr, uint32_t value,
                                          unsigned flags) {
  NEED_CONTEXT();
  (void)flags;
  return fake_submit(s, (op_t){.kind = OP_WRITE32, .dst = GPU_VPTR(addr), .value = value});
}
static gpuError_t fake_StreamBeginCapture(gpuStream_t s, unsigned mode) {
  NEED_CONTEXT();
  (void)mode;
  graph_t *g = calloc(1, sizeof *g);
  if (!g) return 2u;
  pthread_mutex_lock(&lock);
  s->capture = g;
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
static gpuError_t fake_StreamEndCapture(gpuStream_t s, gpuGraph_t *out) {
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
    for (op_t *o = g->head, *n; o; o = n) n = o->next, free(o);
    free(g);
    *out = NULL;
    return GPU_ERROR_CAPTURE_INVALIDATED;
  }
  *out = (gpuGraph_t)g;
  return GPU_SUCCESS;
}
static gpuError_t fake_GraphInstantiate(gpuGraphExec_t *exec, gpuGraph_t graph,
                                        unsigned long long flags) {
  NEED_CONTEXT();
  (void)flags;
  *exec = calloc(1, sizeof **exec);
  if (!*exec) return 2u;
  (*exec)->graph = (graph_t *)graph;
  return GPU_SUCCESS;
}
static gpuError_t fake_GraphLaunch(gpuGraphExec_t exec, gpuStream_t s) {
  NEED_CONTEXT();
  for (op_t *o = exec->graph->head; o; o = o->next) {
    gpuError_t r = fake_submit(s, *o);
    if (r != GPU_SUCCESS) return r;
  }
  return GPU_SUCCESS;
}
static gpuError_t fake_GraphExecDestroy(gpuGraphExec_t exec) { NEED_CONTEXT(); free(exec); return GPU_SUCCESS; }
static gpuError_t fake_GraphDestroy(gpuGraph_t graph) {
  NEED_CONTEXT();
  graph_t *g = (graph_t *)graph;
  for (op_t *o = g->head, *n; o; o = n) n = o->next, free(o);
  free(g);
  return GPU_SUCCESS;
}
static gpuError_t fake_StreamIsCapturing(gpuStream_t s, unsigned *status) {
  NEED_CONTEXT();
  pthread_mutex_lock(&lock);
  *status = s->capture ? GPU_CAPTURE_STATUS_ACTIVE : 0u;
  pthread_mutex_unlock(&lock);
  return GPU_SUCCESS;
}
static gpuError_t fake_GetErrorName(gpuError_t err, const char **name) {
  static const struct { gpuError_t e; const char *n; } names[] = {
      {0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {3, "CUDA_ERROR_NOT_INITIALIZED"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
      {400, "CUDA_ERROR_INVALID_HANDLE"}, {600, "CUDA_ERROR_NOT_READY"},
      {800, "CUDA_ERROR_NOT_PERMITTED"}, {801, "CUDA_ERROR_NOT_SUPPORTED"},
      {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
      {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].e == err) {
      *name = names[i].n;
      return GPU_SUCCESS;
    }
  *name = NULL;
  return E_INVALID_VALUE;
}
static gpuError_t fake_CtxSetCurrent(gpuContext_t ctx) { return cuCtxSetCurrent(ctx); }
/* Native handles (gpu_native.c): one device, one context. */
static gpuError_t fake_CtxGetDevice(gpuDevice_t *d) {
  NEED_CONTEXT();
  *d = 0;
  return GPU_SUCCESS;
}
static gpuError_t fake_PrimaryCtxGetState(gpuDevice_t d, unsigned *flags, int *active) {
  ENTER();
  if (d != 0) return E_INVALID_VALUE;
  *flags = 0;
  *active = 1;
  return GPU_SUCCESS;
}
static gpuError_t fake_StreamGetCtx(gpuStream_t s, gpuContext_t *ctx) {
  NEED_CONTEXT();
  (void)s;
  *ctx = &primary; /* every stream of this fake is the primary context's */
  return GPU_SUCCESS;
}

/* cuGetProcAddress_v2: every entry point of the plugin's table that this fake implements
 * (the prototypes are the table's, so a drift fails to compile). */
#define FAKE_PROTO(field, lookup, display, ret, params) \
  static __attribute__((unused)) ret(*const proto_##field) params = fake_##field;
#define FAKE_NONE(field, lookup, display, ret, params)
GPU_API_TABLE(FAKE_PROTO, FAKE_NONE)
FAKE_PROTO(GetErrorName, , , gpuError_t, (gpuError_t error, const char **name))
FAKE_PROTO(StreamIsCapturing, , , gpuError_t, (gpuStream_t stream, unsigned *status))
FAKE_PROTO(CtxGetDevice, , , gpuError_t, (gpuDevice_t * dev))
FAKE_PROTO(PrimaryCtxGetState, , , gpuError_t, (gpuDevice_t dev, unsigned *flags, int *active))
FAKE_PROTO(StreamGetCtx, , , gpuError_t, (gpuStream_t stream, gpuContext_t * ctx))
FAKE_PROTO(PointerGetAttribute, , , gpuError_t, (void *data, unsigned attribute, gpuDevicePtr_t ptr))
FAKE_PROTO(MemGetAddressRange, , , gpuError_t, (gpuDevicePtr_t * base, size_t *size, gpuDevicePtr_t ptr))
FAKE_PROTO(StreamWaitValue32, , , gpuError_t,
           (gpuStream_t stream, gpuDevicePtr_t addr, uint32_t value, unsigned flags))
FAKE_PROTO(StreamWriteValue32, , , gpuError_t,
           (gpuStream_t stream, gpuDevicePtr_t addr, uint32_t value, unsigned flags))

typedef struct entry { const char *name; void *fn; } entry_t;
#define FAKE_REQ(field, lookup, display, ret, params) {lookup, (void *)fake_##field},
static const entry_t entries[] = {
    GPU_API_TABLE(FAKE_REQ, FAKE_NONE)
    {"cuGetErrorName", (void *)fake_GetErrorName},
    {"cuPointerGetAttribute", (void *)fake_PointerGetAttribute},
    {"cuMemGetAddressRange", (void *)fake_MemGetAddressRange},
    {"cuStreamIsCapturing", (void *)fake_StreamIsCapturing},
    {"cuCtxGetDevice", (void *)fake_CtxGetDevice},
    {"cuDevicePrimaryCtxGetState", (void *)fake_PrimaryCtxGetState},
    {"cuStreamGetCtx", (void *)fake_StreamGetCtx},
    {"cuStreamWaitValue32", (void *)fake_StreamWaitValue32},
    {"cuStreamWriteValue32", (void *)fake_StreamWriteValue32},
    {"cuCtxGetCurrent", (void *)cuCtxGetCurrent},
};

EXPORT gpuError_t cuGetProcAddress_v2(const char *symbol, void **fn, int version,
                                      unsigned long long flags, int *status) {
  (void)version, (void)flags;
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(entries[i].name, symbol) == 0) {
      *fn = entries[i].fn;
      if (status) *status = 0;
      return GPU_SUCCESS;
    }
  *fn = NULL;
  if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return E_NOT_FOUND;
}
