/*
 * Native handles on OpenCL, for real (PoCL here): the test plays a runtime that owns its
 * context, queues and kernels.
 *
 *  1. runtime-owned queue: the test creates a context and an in-order queue with the OpenCL
 *     API, builds its own kernels, opens an accel device over the context
 *     (accel_device_wrap_native), wraps the queue (accel_stream_wrap_native) and interleaves
 *     its kernels with accel's on that queue; the values (non-commuting affine maps and
 *     scalings, a snapshot into the test's own cl_mem between them) show the order.
 *  2. accel-owned queue: the test takes accel's context and queue (accel_device_native,
 *     accel_stream_native), builds its kernel there and runs it between accel's, on accel
 *     memory (clSetKernelArgSVMPointer). With ACCEL_LAZY=1 this checks the flush rule.
 *  3. events across the boundary: a native user event blocks an accel stream
 *     (accel_stream_wait_native_event); a native queue waits on an accel event's cl_event
 *     (accel_event_native) and provably runs only after it.
 *  4. accel's own graph captured on and replayed into the wrapped queue between native work.
 *  5. bad input: NULL, struct_size, wrong backend, handles of another context, an
 *     out-of-order queue, destroyed handles, calls during capture; the device stays usable.
 *  6. ownership: accel releases exactly the references it took (context and queue reference
 *     counts return to their values before the wrap) and the runtime's queue stays usable.
 *
 * Exit 77 (SKIP) when no OpenCL device with SVM exists.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel.h"
#include "accel/accel_interop.h"
#include "accel/accel_kernels.h"
#include "check.h"
#include "require.h"

#define N 1024

#define CL_OK(call)                                                               \
  do {                                                                            \
    cl_int err_ = (call);                                                         \
    if (err_ != CL_SUCCESS) {                                                     \
      fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, err_); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)
/* An accel call the test cannot go on without. */
#define A_OK(call) REQUIRE_OK(call, exit(1))
/* The call fails with want and a message containing sub. */
static const char *kernel_src =
    "__kernel void affine(__global float *x, float a, float b) {\n"
    "  size_t i = get_global_id(0); x[i] = x[i] * a + b;\n"
    "}\n"
    "__kernel void snapshot(__global const float *x, __global float *out) {\n"
    "  size_t i = get_global_id(0); out[i] = x[i];\n"
    "}\n";

typedef struct runtime { /* what the test owns, as a training runtime would */
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx;
  cl_program program;
  cl_kernel affine, snapshot;
} runtime_t;

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

static accel_native_t native_init(void) {
  accel_native_t n;
  memset(&n, 0, sizeof n);
  n.struct_size = sizeof n;
  return n;
}

/* The first OpenCL device with SVM; 0 when there is none. */
static int find_device(runtime_t *rt) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return 0;
  cl_platform_id plats[16];
  if (np > 16) np = 16;
  CL_OK(clGetPlatformIDs(np, plats, NULL));
  for (cl_uint p = 0; p < np; p++) {
    cl_device_id ids[16];
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, ids, &nd) != CL_SUCCESS) continue;
    for (cl_uint d = 0; d < nd && d < 16; d++) {
      cl_device_svm_capabilities svm = 0;
      if (clGetDeviceInfo(ids[d], CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL) ==
              CL_SUCCESS &&
          svm) {
        rt->platform = plats[p];
        rt->device = ids[d];
        return 1;
      }
    }
  }
  return 0;
}

/* Builds the test's kernels in ctx. */
static void build_kernels(runtime_t *rt, cl_context ctx, cl_device_id dev) {
  cl_int err;
  rt->program = clCreateProgramWithSource(ctx, 1, &kernel_src, NULL, &err);
  CL_OK(err);
  CL_OK(clBuildProgram(rt->program, 1, &dev, "", NULL, NULL));
  rt->affine = clCreateKernel(rt->program, "affine", &err);
  CL_OK(err);
  rt->snapshot = clCreateKernel(rt->program, "snapshot", &err);
  CL_OK(err);
}

static void release_kernels(runtime_t *rt) {
  clReleaseKernel(rt->affine);
  clReleaseKernel(rt->snapshot);
  clReleaseProgram(rt->program);
}

/* Native work: x = x * a + b on q (x is accel memory: an SVM pointer of q's context). */
static void native_affine(runtime_t *rt, cl_command_queue q, float *x, float a, float b) {
  size_t global = N;
  CL_OK(clSetKernelArgSVMPointer(rt->affine, 0, x));
  CL_OK(clSetKernelArg(rt->affine, 1, sizeof a, &a));
  CL_OK(clSetKernelArg(rt->affine, 2, sizeof b, &b));
  CL_OK(clEnqueueNDRangeKernel(q, rt->affine, 1, NULL, &global, NULL, 0, NULL, NULL));
}

/* Native work: out (the test's own buffer) = x, optionally returning the command's event. */
static void native_snapshot(runtime_t *rt, cl_command_queue q, const float *x, cl_mem out,
                            cl_event *ev) {
  size_t global = N;
  CL_OK(clSetKernelArgSVMPointer(rt->snapshot, 0, x));
  CL_OK(clSetKernelArg(rt->snapshot, 1, sizeof out, &out));
  CL_OK(clEnqueueNDRangeKernel(q, rt->snapshot, 1, NULL, &global, NULL, 0, NULL, ev));
}

static float x0_of(int i) { return (float)(i % 17 - 8); }

static int check_values(const char *what, const float *got, float (*want)(float)) {
  int bad = 0;
  for (int i = 0; i < N; i++) {
    float w = want(x0_of(i));
    if (got[i] != w) {
      if (bad++ < 3) fprintf(stderr, "%s[%d] = %g, want %g\n", what, i, got[i], w);
    }
  }
  CHECK(bad == 0, "%s: %d of %d values wrong (the order of native and accel work)", what, bad, N);
  return bad == 0;
}

static float want_snap1(float x) { return (x * 2.0f + 1.0f) * 3.0f; }
static float want_case1(float x) { return ((x * 2.0f + 1.0f) * 3.0f - 5.0f) * 0.5f; }
static float want_case2(float x) { return ((x * 3.0f) * 2.0f + 1.0f) * 0.5f; }
static float want_times3(float x) { return x * 3.0f; }
static float want_graph(float x) { return ((x * 2.0f + 1.0f) * 2.0f + 1.0f) * 2.0f; }

static cl_uint ref_count_ctx(cl_context c) {
  cl_uint n = 0;
  CL_OK(clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}

static cl_uint ref_count_queue(cl_command_queue q) {
  cl_uint n = 0;
  CL_OK(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, NULL));
  return n;
}

static cl_command_queue make_queue(runtime_t *rt, cl_context ctx, cl_command_queue_properties p) {
  cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, p, 0};
  cl_int err;
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx, rt->device, p ? props : NULL, &err);
  CL_OK(err);
  return q;
}

/* Device scalar s (accel memory of dev). */
static float *device_scalar(accel_device_t *dev, float v) {
  float *p = NULL;
  A_OK(accel_malloc(dev, sizeof v, (void **)&p));
  A_OK(accel_memcpy(dev, p, &v, sizeof v));
  return p;
}

/* x (N floats of accel memory) uploaded from host (x0_of) on s, the device scalars 3 and 0.5,
 * and x as a tensor: what the cases that interleave accel and native work on x share. */
typedef struct {
  float host[N];
  float *x, *three, *half;
  accel_tensor_t t;
} operands_t;

static void operands_upload(accel_device_t *dev, accel_stream_t *s, operands_t *o) {
  for (int i = 0; i < N; i++) o->host[i] = x0_of(i);
  o->x = NULL;
  A_OK(accel_malloc(dev, sizeof o->host, (void **)&o->x));
  o->three = device_scalar(dev, 3.0f);
  o->half = device_scalar(dev, 0.5f);
  o->t = (accel_tensor_t){o->x, N, ACCEL_F32};
  A_OK(accel_memcpy_async(s, o->x, o->host, sizeof o->host));
}

static void operands_free(accel_device_t *dev, operands_t *o) {
  A_OK(accel_free(dev, o->x));
  A_OK(accel_free(dev, o->three));
  A_OK(accel_free(dev, o->half));
}

/* 1 + 3: the runtime's context and queue, wrapped. */
static void case_runtime_queue(runtime_t *rt, cl_context ctx, cl_command_queue q,
                               accel_device_t *dev) {
  accel_stream_t *s = NULL;
  accel_native_t n = native_init();
  n.queue = q;
  A_OK(accel_stream_wrap_native(dev, &n, &s));
  int lazy = -1;
  A_OK(accel_stream_is_lazy(s, &lazy));
  CHECK(lazy == 0, "a wrapped stream must be eager (is_lazy = %d)", lazy);
  accel_native_t out = native_init();
  A_OK(accel_stream_native(s, &out));
  CHECK(out.queue == q && out.context == ctx && out.device == rt->device &&
            out.platform == rt->platform && strcmp(out.backend, "opencl") == 0,
        "accel_stream_native of a wrapped stream gives back the runtime's objects");

  float result[N];
  operands_t o;
  operands_upload(dev, s, &o);
  cl_int err;
  cl_mem snap = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof o.host, NULL, &err);
  CL_OK(err);

  /* accel copy -> native affine -> accel scale -> native snapshot -> native affine ->
   * accel scale -> accel copy back: one queue, one order */
  native_affine(rt, q, o.x, 2.0f, 1.0f);
  A_OK(accel_scale(s, &o.t, 1, o.three));
  native_snapshot(rt, q, o.x, snap, NULL);
  native_affine(rt, q, o.x, 1.0f, -5.0f);
  A_OK(accel_scale(s, &o.t, 1, o.half));
  A_OK(accel_memcpy_async(s, result, o.x, sizeof result));
  A_OK(accel_stream_synchronize(s));
  check_values("runtime queue: x", result, want_case1);
  float snapped[N];
  CL_OK(clEnqueueReadBuffer(q, snap, CL_TRUE, 0, sizeof snapped, snapped, 0, NULL, NULL));
  check_values("runtime queue: snapshot between accel's kernels", snapped, want_snap1);

  /* a native user event holds accel's stream back */
  cl_event gate = clCreateUserEvent(ctx, &err);
  CL_OK(err);
  A_OK(accel_stream_wait_native_event(s, gate));
  A_OK(accel_memcpy_async(s, o.x, o.host, sizeof o.host));
  A_OK(accel_scale(s, &o.t, 1, o.three));
  accel_event_t *done = NULL;
  A_OK(accel_event_create(dev, ACCEL_EVENT_DISABLE_TIMING, &done));
  accel_native_t en = native_init();
  A_OK(accel_event_native(done, &en));
  CHECK(en.event == NULL, "accel_event_native before the first record gives NULL");
  A_OK(accel_event_record(done, s));
  A_OK(accel_event_native(done, &en));
  CHECK(en.event != NULL && strcmp(en.backend, "opencl") == 0 && en.context == ctx,
        "accel_event_native after a record gives the cl_event");
  /* the runtime's second queue waits for accel's event, then snapshots */
  cl_command_queue q2 = make_queue(rt, ctx, 0);
  cl_event accel_ev = en.event, snap_done = NULL;
  CL_OK(clEnqueueBarrierWithWaitList(q2, 1, &accel_ev, NULL));
  native_snapshot(rt, q2, o.x, snap, &snap_done);
  CL_OK(clFlush(q2));
  sleep_ms(50);
  CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY,
        "the stream must wait for the native user event");
  cl_int status = CL_COMPLETE;
  CL_OK(clGetEventInfo(snap_done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
  CHECK(status != CL_COMPLETE, "the native queue must wait for accel's event");
  CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  CL_OK(clFinish(q2));
  A_OK(accel_stream_synchronize(s));
  CL_OK(clEnqueueReadBuffer(q2, snap, CL_TRUE, 0, sizeof snapped, snapped, 0, NULL, NULL));
  check_values("accel event -> native queue", snapped, want_times3);
  clReleaseEvent(snap_done);
  clReleaseEvent(gate);
  clReleaseCommandQueue(q2);
  A_OK(accel_event_destroy(done));
  clReleaseMemObject(snap);
  operands_free(dev, &o);
  A_OK(accel_stream_destroy(s));
}

/* 4: accel's own graph, captured on the wrapped stream, replayed between native kernels. */
static void case_graph(runtime_t *rt, cl_command_queue q, accel_device_t *dev) {
  accel_stream_t *s = NULL;
  accel_native_t n = native_init();
  n.queue = q;
  A_OK(accel_stream_wrap_native(dev, &n, &s));
  float host[N], result[N];
  for (int i = 0; i < N; i++) host[i] = x0_of(i);
  float *x = NULL;
  A_OK(accel_malloc(dev, sizeof host, (void **)&x));
  float *two = device_scalar(dev, 2.0f);
  accel_tensor_t t = {x, N, ACCEL_F32};
  accel_graph_t *g = NULL;
  A_OK(accel_graph_create(dev, &g));
  A_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL));
  A_OK(accel_scale(s, &t, 1, two));
  A_OK(accel_graph_capture_end(g));
  A_OK(accel_memcpy_async(s, x, host, sizeof host));
  A_OK(accel_graph_replay(g, s));
  native_affine(rt, q, x, 2.0f / 2.0f, 1.0f);
  A_OK(accel_graph_replay(g, s));
  native_affine(rt, q, x, 1.0f, 1.0f);
  A_OK(accel_graph_replay(g, s));
  A_OK(accel_memcpy_async(s, result, x, sizeof result));
  A_OK(accel_stream_synchronize(s));
  check_values("graph replays on the runtime's queue", result, want_graph);
  A_OK(accel_graph_destroy(g));
  A_OK(accel_free(dev, x));
  A_OK(accel_free(dev, two));
  A_OK(accel_stream_destroy(s));
}

/* Timing on wrapped queues: with CL_QUEUE_PROFILING_ENABLE it works, without it accel cannot
 * replace the runtime's queue and says so. */
static void case_timing(runtime_t *rt, cl_context ctx, accel_device_t *dev) {
  for (int profiled = 0; profiled < 2; profiled++) {
    cl_command_queue q = make_queue(rt, ctx, profiled ? CL_QUEUE_PROFILING_ENABLE : 0);
    accel_stream_t *s = NULL;
    accel_native_t n = native_init();
    n.queue = q;
    A_OK(accel_stream_wrap_native(dev, &n, &s));
    accel_event_t *a = NULL, *b = NULL;
    A_OK(accel_event_create(dev, 0, &a));
    A_OK(accel_event_create(dev, 0, &b));
    A_OK(accel_event_record(a, s));
    A_OK(accel_event_record(b, s));
    A_OK(accel_event_synchronize(b));
    float ms = -1.0f;
    if (profiled) {
      A_OK(accel_event_elapsed_ms(a, b, &ms));
      CHECK(ms >= 0.0f, "elapsed_ms on a profiling queue: %g", (double)ms);
    } else {
      EXPECT_ERROR(accel_event_elapsed_ms(a, b, &ms), ACCEL_ERROR_UNSUPPORTED,
                   "CL_QUEUE_PROFILING_ENABLE");
    }
    A_OK(accel_event_destroy(a));
    A_OK(accel_event_destroy(b));
    A_OK(accel_stream_destroy(s));
    clReleaseCommandQueue(q);
  }
}

/* 2: accel's own context and queue, used by native code (on a lazy stream too). */
static void case_accel_queue(accel_device_t *dev) {
  runtime_t rt2;
  memset(&rt2, 0, sizeof rt2);
  accel_native_t dn = native_init();
  A_OK(accel_device_native(dev, &dn));
  CHECK(strcmp(dn.backend, "opencl") == 0 && dn.context && dn.device && dn.platform && !dn.queue &&
            !dn.event,
        "accel_device_native: backend, platform, device, context; nothing else");
  rt2.device = dn.device;
  build_kernels(&rt2, dn.context, dn.device);
  accel_stream_t *s = NULL;
  A_OK(accel_stream_create(dev, &s));
  float result[N];
  operands_t o;
  operands_upload(dev, s, &o);
  A_OK(accel_scale(s, &o.t, 1, o.three));
  /* a lazy stream is flushed here: the native kernel below must see the scaled values */
  accel_native_t sn = native_init();
  A_OK(accel_stream_native(s, &sn));
  CHECK(sn.queue && sn.context == dn.context, "accel_stream_native gives the stream's queue");
  native_affine(&rt2, sn.queue, o.x, 2.0f, 1.0f);
  A_OK(accel_scale(s, &o.t, 1, o.half));
  A_OK(accel_memcpy_async(s, result, o.x, sizeof result));
  A_OK(accel_stream_synchronize(s));
  check_values("accel's queue used natively", result, want_case2);
  /* a timed record on a queue handed out keeps that queue (no profiling switch) */
  accel_event_t *a = NULL;
  A_OK(accel_event_create(dev, 0, &a));
  A_OK(accel_event_record(a, s));
  accel_native_t again = native_init();
  A_OK(accel_stream_native(s, &again));
  CHECK(again.queue == sn.queue, "the queue handed out stays the stream's queue");
  A_OK(accel_event_destroy(a));
  release_kernels(&rt2);
  operands_free(dev, &o);
  A_OK(accel_stream_destroy(s));
}

/* 5: bad input for every function; dev is wrapped over ctx, other is accel's own device. */
static void case_bad_input(runtime_t *rt, cl_context ctx, cl_command_queue q, accel_device_t *dev,
                           accel_device_t *other) {
  accel_native_t n = native_init();
  accel_stream_t *s = NULL;
  accel_device_t *d = NULL;
  EXPECT_ERROR(accel_device_native(NULL, &n), ACCEL_ERROR_INVALID_HANDLE, "accel_device_native");
  EXPECT_ERROR(accel_device_native(dev, NULL), ACCEL_ERROR_INVALID_ARGUMENT, "out is NULL");
  accel_native_t small = native_init();
  small.struct_size = 8;
  EXPECT_ERROR(accel_device_native(dev, &small), ACCEL_ERROR_INVALID_ARGUMENT, "struct_size");
  EXPECT_ERROR(accel_stream_native(NULL, &n), ACCEL_ERROR_INVALID_HANDLE, "accel_stream_native");
  EXPECT_ERROR(accel_event_native(NULL, &n), ACCEL_ERROR_INVALID_HANDLE, "accel_event_native");
  EXPECT_ERROR(accel_stream_wait_native_event(NULL, (void *)1), ACCEL_ERROR_INVALID_HANDLE,
               "accel_stream_wait_native_event");

  /* wrapping a device */
  n = native_init();
  n.context = ctx;
  EXPECT_ERROR(accel_device_wrap_native(NULL, &n, &d), ACCEL_ERROR_INVALID_ARGUMENT,
               "backend is NULL");
  EXPECT_ERROR(accel_device_wrap_native("opencl", NULL, &d), ACCEL_ERROR_INVALID_ARGUMENT,
               "native is NULL");
  EXPECT_ERROR(accel_device_wrap_native("opencl", &n, NULL), ACCEL_ERROR_INVALID_ARGUMENT,
               "out is NULL");
  EXPECT_ERROR(accel_device_wrap_native("opencl", &small, &d), ACCEL_ERROR_INVALID_ARGUMENT,
               "struct_size");
  EXPECT_ERROR(accel_device_wrap_native("nosuch", &n, &d), ACCEL_ERROR_INVALID_ARGUMENT,
               "unknown backend");
  EXPECT_ERROR(accel_device_wrap_native("cpu", &n, &d), ACCEL_ERROR_UNSUPPORTED, "cpu");
  snprintf(n.backend, sizeof n.backend, "cuda");
  EXPECT_ERROR(accel_device_wrap_native("opencl", &n, &d), ACCEL_ERROR_INVALID_ARGUMENT,
               "native->backend is 'cuda'");
  n = native_init();
  EXPECT_ERROR(accel_device_wrap_native("opencl", &n, &d), ACCEL_ERROR_INVALID_ARGUMENT,
               "native->context is NULL");
  n.context = ctx;
  n.platform = (void *)rt->device; /* not the platform */
  EXPECT_ERROR(accel_device_wrap_native("opencl", &n, &d), ACCEL_ERROR_INVALID_ARGUMENT,
               "native->platform");

  /* wrapping a queue */
  n = native_init();
  n.queue = q;
  EXPECT_ERROR(accel_stream_wrap_native(NULL, &n, &s), ACCEL_ERROR_INVALID_HANDLE,
               "accel_stream_wrap_native");
  EXPECT_ERROR(accel_stream_wrap_native(dev, NULL, &s), ACCEL_ERROR_INVALID_ARGUMENT,
               "native is NULL");
  EXPECT_ERROR(accel_stream_wrap_native(dev, &n, NULL), ACCEL_ERROR_INVALID_ARGUMENT,
               "out is NULL");
  EXPECT_ERROR(accel_stream_wrap_native(dev, &small, &s), ACCEL_ERROR_INVALID_ARGUMENT,
               "struct_size");
  n.queue = NULL;
  EXPECT_ERROR(accel_stream_wrap_native(dev, &n, &s), ACCEL_ERROR_INVALID_ARGUMENT,
               "native->queue is NULL");
  n.queue = q;
  snprintf(n.backend, sizeof n.backend, "level_zero");
  EXPECT_ERROR(accel_stream_wrap_native(dev, &n, &s), ACCEL_ERROR_INVALID_ARGUMENT, "level_zero");
  n = native_init();
  n.queue = q; /* a queue of the runtime's context on accel's own device: another context */
  EXPECT_ERROR(accel_stream_wrap_native(other, &n, &s), ACCEL_ERROR_INVALID_ARGUMENT,
               "accel_device_wrap_native");
  cl_command_queue ooo = make_queue(rt, ctx, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  n.queue = ooo;
  EXPECT_ERROR(accel_stream_wrap_native(dev, &n, &s), ACCEL_ERROR_UNSUPPORTED, "out of order");
  clReleaseCommandQueue(ooo);
  accel_device_t *cpu = NULL;
  A_OK(accel_device_open("cpu", &cpu));
  n.queue = q;
  EXPECT_ERROR(accel_stream_wrap_native(cpu, &n, &s), ACCEL_ERROR_UNSUPPORTED, "cpu");
  A_OK(accel_device_close(cpu));

  /* native events of another context; NULL */
  accel_stream_t *ds = NULL;
  A_OK(accel_stream_default(other, &ds));
  cl_int err;
  cl_event foreign = clCreateUserEvent(ctx, &err);
  CL_OK(err);
  EXPECT_ERROR(accel_stream_wait_native_event(ds, foreign), ACCEL_ERROR_INVALID_ARGUMENT,
               "belongs to cl_context");
  EXPECT_ERROR(accel_stream_wait_native_event(ds, NULL), ACCEL_ERROR_INVALID_ARGUMENT,
               "native_event is NULL");
  CL_OK(clSetUserEventStatus(foreign, CL_COMPLETE));
  clReleaseEvent(foreign);

  /* destroyed handles */
  n = native_init();
  n.queue = q;
  A_OK(accel_stream_wrap_native(dev, &n, &s));
  A_OK(accel_stream_destroy(s));
  accel_native_t out = native_init();
  EXPECT_ERROR(accel_stream_native(s, &out), ACCEL_ERROR_INVALID_HANDLE, "accel_stream_native");
  EXPECT_ERROR(accel_stream_wait_native_event(s, (void *)1), ACCEL_ERROR_INVALID_HANDLE,
               "accel_stream_wait_native_event");
  EXPECT_ERROR(accel_stream_destroy(s), ACCEL_ERROR_INVALID_HANDLE, "accel_stream_destroy");
  accel_event_t *e = NULL;
  A_OK(accel_event_create(dev, 0, &e));
  A_OK(accel_event_destroy(e));
  EXPECT_ERROR(accel_event_native(e, &out), ACCEL_ERROR_INVALID_HANDLE, "accel_event_native");
  n = native_init();
  n.context = ctx;
  A_OK(accel_device_wrap_native("opencl", &n, &d));
  A_OK(accel_device_close(d));
  EXPECT_ERROR(accel_device_native(d, &out), ACCEL_ERROR_INVALID_HANDLE, "accel_device_native");
  n.queue = q;
  EXPECT_ERROR(accel_stream_wrap_native(d, &n, &s), ACCEL_ERROR_INVALID_HANDLE,
               "accel_stream_wrap_native");
  EXPECT_ERROR(accel_device_close(d), ACCEL_ERROR_INVALID_HANDLE, "accel_device_close");

  /* during capture: waiting on a native event is illegal (the capture is invalidated);
   * a captured record has no native event; the stream and device stay usable */
  n = native_init();
  n.queue = q;
  A_OK(accel_stream_wrap_native(dev, &n, &s));
  accel_graph_t *g = NULL;
  A_OK(accel_graph_create(dev, &g));
  A_OK(accel_event_create(dev, ACCEL_EVENT_DISABLE_TIMING, &e));
  A_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  A_OK(accel_event_record(e, s));
  EXPECT_ERROR(accel_event_native(e, &out), ACCEL_ERROR_STATE, "captured");
  accel_native_t sn = native_init();
  A_OK(accel_stream_native(s, &sn)); /* handles only: allowed while capturing */
  CHECK(sn.queue == q, "accel_stream_native while capturing");
  cl_event gate = clCreateUserEvent(ctx, &err);
  CL_OK(err);
  EXPECT_ERROR(accel_stream_wait_native_event(s, gate), ACCEL_ERROR_ILLEGAL_IN_CAPTURE,
               "capturing");
  EXPECT_ERROR(accel_graph_capture_end(g), ACCEL_ERROR_CAPTURE_INVALIDATED,
               "accel_stream_wait_native_event");
  CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  clReleaseEvent(gate);
  /* a record captured by a capture that ended: still none (the earlier real record's cl_event
   * would not wait for the graph's record); nor a time */
  accel_event_t *timed = NULL;
  A_OK(accel_event_create(dev, 0, &timed));
  A_OK(accel_event_record(e, s));
  A_OK(accel_event_record(timed, s));
  A_OK(accel_graph_reset(g));
  A_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_RELAXED));
  A_OK(accel_event_record(e, s));
  A_OK(accel_event_record(timed, s));
  A_OK(accel_graph_capture_end(g));
  EXPECT_ERROR(accel_event_native(e, &out), ACCEL_ERROR_STATE, "captured");
  float ms = 0;
  EXPECT_ERROR(accel_event_elapsed_ms(timed, timed, &ms), ACCEL_ERROR_STATE, "outside a capture");
  A_OK(accel_event_destroy(timed));
  A_OK(accel_event_record(e, s));
  A_OK(accel_event_native(e, &out));
  CHECK(out.event != NULL, "a record after the capture has a native event again");
  A_OK(accel_event_destroy(e));
  A_OK(accel_graph_destroy(g));
  A_OK(accel_stream_destroy(s));
}

int main(void) {
  runtime_t rt;
  memset(&rt, 0, sizeof rt);
  if (!find_device(&rt)) {
    printf("SKIP: no OpenCL device with SVM\n");
    return 77;
  }
  accel_device_t *own = NULL;
  accel_status_t st = accel_device_open("opencl", &own);
  if (st == ACCEL_ERROR_UNAVAILABLE) {
    printf("SKIP: opencl backend unavailable: %s\n", accel_last_error());
    return 77;
  }
  A_OK(st);
  cl_int err;
  cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)rt.platform, 0};
  rt.ctx = clCreateContext(cprops, 1, &rt.device, NULL, NULL, &err);
  CL_OK(err);
  build_kernels(&rt, rt.ctx, rt.device);
  cl_command_queue q = make_queue(&rt, rt.ctx, 0);
  /* PoCL's queue keeps its last command's event (which holds the queue and the context) until
   * a later command: the reference counts are compared with a native command last each time */
  float *buf = clSVMAlloc(rt.ctx, CL_MEM_READ_WRITE, N * sizeof(float), 0);
  CHECK(buf != NULL, "clSVMAlloc in the runtime's context");
  if (!buf) return 1;
  const float zero = 0.0f; /* x * 0 + 4 is 4 only for finite x: no uninitialized NaN */
  CL_OK(clEnqueueSVMMemFill(q, buf, &zero, sizeof zero, N * sizeof(float), 0, NULL, NULL));
  native_affine(&rt, q, buf, 0.0f, 4.0f);
  CL_OK(clFinish(q));
  sleep_ms(100);
  const cl_uint ctx_refs = ref_count_ctx(rt.ctx), q_refs = ref_count_queue(q);

  accel_device_t *dev = NULL;
  accel_native_t n = native_init();
  n.platform = rt.platform;
  n.device = rt.device;
  n.context = rt.ctx;
  A_OK(accel_device_wrap_native("opencl", &n, &dev));
  CHECK(dev != own, "a wrapped device is distinct from the opened one");
  CHECK(ref_count_ctx(rt.ctx) > ctx_refs, "the wrapped device holds a context reference");
  accel_native_t dn = native_init();
  A_OK(accel_device_native(dev, &dn));
  CHECK(dn.context == rt.ctx && dn.device == rt.device && dn.platform == rt.platform,
        "accel_device_native of a wrapped device gives back the runtime's objects");
  accel_device_info_t info;
  A_OK(accel_device_get_info(dev, &info));
  CHECK(strcmp(info.backend, "opencl") == 0, "wrapped device info names its backend");
  accel_stream_t *ds = NULL;
  int lazy = -1;
  A_OK(accel_stream_default(dev, &ds));
  A_OK(accel_stream_is_lazy(ds, &lazy));
  const char *lazy_env = getenv("ACCEL_LAZY");
  CHECK(lazy == (lazy_env && strcmp(lazy_env, "1") == 0),
        "the wrapped device's own streams follow ACCEL_LAZY (is_lazy = %d)", lazy);

  case_runtime_queue(&rt, rt.ctx, q, dev);
  case_graph(&rt, q, dev);
  case_timing(&rt, rt.ctx, dev);
  case_accel_queue(own);
  case_bad_input(&rt, rt.ctx, q, dev, own);

  /* 6: a stream and an event keep the wrapped device alive past its close; then accel lets
   * go of exactly its own references, and the runtime's queue is still the runtime's */
  accel_stream_t *s = NULL;
  n = native_init();
  n.queue = q;
  A_OK(accel_stream_wrap_native(dev, &n, &s));
  CHECK(ref_count_queue(q) > q_refs, "the wrapped stream holds a queue reference");
  accel_event_t *e = NULL;
  A_OK(accel_event_create(dev, 0, &e));
  /* a graph destroyed while its replay may still run: its remains are retired, and hold the
   * device until they are released */
  float *big = NULL, *two = device_scalar(dev, 2.0f);
  A_OK(accel_malloc(dev, 64 * N * sizeof(float), (void **)&big));
  accel_tensor_t bt = {big, 64 * N, ACCEL_F32};
  accel_graph_t *g = NULL;
  A_OK(accel_graph_create(dev, &g));
  A_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 8; i++) A_OK(accel_scale(s, &bt, 1, two));
  A_OK(accel_graph_capture_end(g));
  A_OK(accel_graph_replay(g, s));
  A_OK(accel_graph_destroy(g));
  A_OK(accel_free(dev, big));
  A_OK(accel_free(dev, two));
  A_OK(accel_device_close(dev));
  float *y = NULL;
  EXPECT_ERROR(accel_malloc(dev, 4, (void **)&y), ACCEL_ERROR_INVALID_HANDLE, "accel_malloc");
  A_OK(accel_event_record(e, s));
  A_OK(accel_stream_synchronize(s));
  A_OK(accel_event_destroy(e));
  A_OK(accel_stream_destroy(s));
  /* the runtime's queue is still the runtime's, and accel let go of exactly its references
   * (PoCL drops those of completed commands from its own threads: wait for that; a leaked
   * reference would never come back) */
  native_affine(&rt, q, buf, 0.0f, 4.0f);
  float got[N];
  CL_OK(clEnqueueSVMMemcpy(q, CL_TRUE, got, buf, sizeof got, 0, NULL, NULL));
  CHECK(got[0] == 4.0f && got[N - 1] == 4.0f, "the runtime's queue still works");
  CL_OK(clFinish(q));
  for (int i = 0; i < 500 && (ref_count_ctx(rt.ctx) != ctx_refs || ref_count_queue(q) != q_refs);
       i++)
    sleep_ms(10);
  CHECK(ref_count_ctx(rt.ctx) == ctx_refs,
        "context references after the wrapped device is "
        "gone: %u, before the wrap: %u",
        ref_count_ctx(rt.ctx), ctx_refs);
  CHECK(ref_count_queue(q) == q_refs,
        "queue references after the wrapped stream is gone: %u, "
        "before: %u",
        ref_count_queue(q), q_refs);
  clSVMFree(rt.ctx, buf);
  /* accel's own device is still usable after all of the above */
  float *z = NULL;
  A_OK(accel_malloc(own, N * sizeof(float), (void **)&z));
  A_OK(accel_stream_default(own, &ds));
  accel_tensor_t zt = {z, N, ACCEL_F32};
  A_OK(accel_fill(ds, &zt, 1, 2.5f));
  float zh[N];
  A_OK(accel_memcpy_async(ds, zh, z, sizeof zh));
  A_OK(accel_stream_synchronize(ds));
  CHECK(zh[0] == 2.5f && zh[N - 1] == 2.5f, "accel's own device still works");
  A_OK(accel_free(own, z));
  A_OK(accel_device_close(own));

  release_kernels(&rt);
  clReleaseCommandQueue(q);
  clReleaseContext(rt.ctx);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  else printf("native handles on OpenCL: all checks passed\n");
  return failures ? 1 : 0;
}
