/*
 * OpenCL backend (libaccel-opencl.so): internal types shared by the plugin's files.
 *
 * Device memory is OpenCL SVM (clSVMAlloc), so the core sees plain `void *` addresses. Kernels
 * read device addresses out of parameter structs and chunk tables (u64 -> __global pointer), so
 * every kernel object carries the list of live SVM allocations (CL_KERNEL_EXEC_INFO_SVM_PTRS)
 * unless the device has fine-grained system SVM.
 */
#ifndef ACCEL_OPENCL_INTERNAL_H
#define ACCEL_OPENCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel_plugin.h"
#include "accel_kernel_ids.h"
#include "backend_slots.h"
#include "cond_walk.h"
#include "kernel_cache.h"
#include "opencl/accel_cl_launch.h"

#define ACL_DOMAIN "opencl"

/* The plugin's host services (set once by accel_plugin_query). */
extern const accel_host_api_t *acl_host;

/* Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL_UNKNOWN_ERROR". */
const char *acl_error_name(cl_int code);
/* host->set_error(ACCEL_ERROR_BACKEND or OUT_OF_MEMORY, "<call>: <name> (<code>)"). */
accel_status_t acl_fail(const char *call, cl_int code);

/* --- cl_khr_command_buffer 0.9.0 entry points (NULL when the extension is absent) ---------- */
typedef struct acl_cmdbuf_fns {
  clCreateCommandBufferKHR_fn create;
  clFinalizeCommandBufferKHR_fn finalize;
  clReleaseCommandBufferKHR_fn release;
  clEnqueueCommandBufferKHR_fn enqueue;
  clCommandNDRangeKernelKHR_fn ndrange;
  clCommandCopyBufferKHR_fn copy_buffer;
  clCommandFillBufferKHR_fn fill_buffer;
} acl_cmdbuf_fns_t;

/* One OpenCL device as enumerated at backend_init (index = position across all platforms). */
typedef struct acl_phys {
  cl_platform_id platform;
  cl_device_id id;
  char name[256];
  char vendor[128];
  char driver[64];
  cl_device_type type;
  cl_ulong global_mem;
  cl_uint compute_units;
  cl_device_svm_capabilities svm_caps;
  int fp16;
  int has_cmdbuf;           /* cl_khr_command_buffer with simultaneous use, all entry points */
  acl_cmdbuf_fns_t cb;
  int correct_div_sqrt;     /* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT */
  /* In-memory program binary cache (survives device close/reopen). */
  pthread_mutex_t lock;
  unsigned char *binary;
  size_t binary_size;
  uint64_t allocated;       /* bytes of SVM this process holds on the device (atomic) */
} acl_phys_t;

typedef struct acl_backend {
  int count;
  acl_phys_t *devs;
} acl_backend_t;

/* A live SVM allocation (device memory or SVM host memory). clSVMAlloc cannot promise more
 * alignment than the largest OpenCL C type (128 bytes), so device memory is over-allocated and
 * ptr rounded up to 256: base/span is what clSVMAlloc returned, ptr/size what the core sees. */
typedef struct acl_alloc {
  void *ptr;
  size_t size;
  void *base;
  size_t span;
  int host; /* from host_alloc (not counted as device memory) */
  int foreign; /* registered (accel_memory_register): not ours to free */
} acl_alloc_t;

typedef struct acl_device {
  acl_backend_t *backend;
  acl_phys_t *phys;
  int index;
  cl_context ctx;
  cl_mem_flags svm_flags;        /* flags for device allocations */
  int host_svm;                  /* host_alloc uses fine-grained SVM */
  int fine_grain_system;         /* kernels may dereference any host address */
  acc_cl_form_t form;            /* how the kernels run (acc_cl_kernel_form) */
  uint32_t max_blocks;           /* cap on logical blocks running at once per launch */
  int use_command_buffer;        /* native graphs chosen (ACCEL_OPENCL_COMMAND_BUFFER=1) */
  const char *build_options;

  pthread_mutex_t program_lock;  /* guards program (held while building) */
  cl_program program;            /* built on first kernel launch */

  pthread_mutex_t lock;          /* guards the allocation table below */
  acl_alloc_t *allocs;           /* live SVM allocations, sorted by address */
  size_t alloc_count, alloc_cap;
  void **svm_ptrs;               /* their bases, for CL_KERNEL_EXEC_INFO_SVM_PTRS */
  uint64_t alloc_generation;     /* bumped on every alloc/free (atomic: read without lock) */
} acl_device_t;

/* A user kernel's object in a kernel set (acl_module.c). */
typedef struct acl_user_kernel {
  uint32_t id;
  cl_kernel k;
  uint64_t svm_generation;
} acl_user_kernel_t;

/* A kernel object per kernel id, owned by one stream or one graph (clSetKernelArg is not
 * thread-safe on a shared cl_kernel). */
typedef struct acl_kernel_set {
  cl_kernel k[ACCEL_KERNEL_COUNT];
  uint64_t svm_generation[ACCEL_KERNEL_COUNT]; /* alloc_generation last applied, 0 = never */
  acl_user_kernel_t *user; /* the user kernels this set launched (few: a linear search) */
  size_t nuser;
} acl_kernel_set_t;

typedef struct acl_hostq acl_hostq_t; /* host-function thread of a stream (acl_hostfn.c) */
typedef struct acl_pred acl_pred_t;   /* a stream's predicate slots (acl_predicate.c) */

/* Most commands are enqueued without a cl_event and without a clFlush (acl_stream.c explains
 * the flush rule and how stream_query works without per-command events). */
typedef struct acl_stream {
  acl_device_t *dev;
  acl_hostq_t *hostq; /* created on the first host function */
  cl_command_queue queue;
  /* The queue the stream used before its first timed event record switched it to a profiling
   * queue (acl_stream_use_profiling); kept until destroy. NULL: no switch happened. */
  cl_command_queue retired;
  int profiling;      /* queue has CL_QUEUE_PROFILING_ENABLE */
  /* Native code may enqueue on the queue too: it is a runtime's (stream_wrap_native) or was
   * handed out (stream_native), so it is never switched to a profiling queue. (Queries still
   * cover what accel enqueued, and in queue order everything enqueued before it.) */
  int shared;
  cl_event last;      /* event of the newest command that has one; NULL: none pending */
  uint32_t untracked; /* commands enqueued after last (or since idle) without an event */
  uint32_t unflushed; /* commands enqueued since the last clFlush */
  uint32_t flush_at;  /* unflushed count at which a plain command flushes (1 .. ACL_FLUSH_MAX) */
  /* Every call but stream_synchronize is serialized by the core; synchronize may run on
   * another thread meanwhile, so it only publishes how many commands it saw complete
   * (idle_at, out of seq enqueued so far) and the serialized calls apply it (acl_stream.c). */
  atomic_uint_fast64_t seq;
  atomic_uint_fast64_t idle_at;
  acl_kernel_set_t kernels;
  acl_pred_t *pred; /* created by the first conditional region */
} acl_stream_t;

typedef struct acl_event {
  acl_device_t *dev;
  int timed;          /* created without ACCEL_EVENT_DISABLE_TIMING */
  pthread_mutex_t lock;
  cl_event ev; /* marker of the last record; NULL when never recorded */
  int ev_timed; /* ev was enqueued on a profiling queue */
} acl_event_t;

/* --- backend.c ----------------------------------------------------------------------------- */
/* 1 when graphs are replayed through cl_khr_command_buffer on this device: the extension with
 * simultaneous use is present and ACCEL_OPENCL_COMMAND_BUFFER=1 (plain enqueue measured faster
 * on PoCL, see docs/backends/opencl.md). */
int acl_wants_command_buffer(const acl_phys_t *d);

/* --- device.c ------------------------------------------------------------------------------ */
accel_status_t acl_device_open(accel_be_backend_t *backend, int index, accel_be_device_t **out);
void acl_device_close(accel_be_device_t *device);
int acl_device_attribute(accel_be_device_t *device, uint32_t attr, int64_t *value);
/* Sets up dev for backend device index over ctx (retained: the device holds one reference). */
accel_status_t acl_device_init(acl_backend_t *be, int index, cl_context ctx, acl_device_t **out);
/* In-order queue on dev, with CL_QUEUE_PROFILING_ENABLE when profiling is nonzero. */
accel_status_t acl_queue_create(acl_device_t *dev, int profiling, cl_command_queue *out);

/* --- memory.c ------------------------------------------------------------------------------ */
ACCEL_BACKEND_DECLARE_MEMORY(acl);
/* accel_memory_register: SVM of the device's context, or any host memory with fine-grained
 * system SVM; entered in the allocation table so kernels and command buffers see it. */
accel_status_t acl_mem_register(accel_be_device_t *device, void *ptr, size_t size,
                                void **device_ptr);
void acl_mem_unregister(accel_be_device_t *device, void *ptr, void *device_ptr);
/* Finds the live SVM allocation containing [ptr, ptr+size); 0 when none (caller holds no lock). */
int acl_alloc_lookup(acl_device_t *dev, const void *ptr, size_t size, acl_alloc_t *out);

/* --- program.c ----------------------------------------------------------------------------- */
/* Builds (or loads from the caches) the kernel program on first use. */
accel_status_t acl_program_get(acl_device_t *dev, cl_program *out);
/* Prepares set->k[launch->kernel_id] for launch: kernel object, SVM pointer list, arguments
 * (the parameters, and pred: the predicate slot of a conditional region's body, or NULL);
 * computes the NDRange. */
accel_status_t acl_kernel_prepare(acl_device_t *dev, acl_kernel_set_t *set,
                                  const accel_kernel_launch_t *launch, const int32_t *pred,
                                  cl_kernel *kernel, size_t *global, size_t *local);
void acl_kernel_set_release(acl_kernel_set_t *set);
/* A program from a device binary built with options; NULL if the binary is rejected. */
cl_program acl_program_from_binary(acl_device_t *dev, const unsigned char *bin, size_t size,
                                   const char *options);
/* The device binary of a built program (malloc'ed); -1 when there is none. */
int acl_program_binary(cl_program p, unsigned char **out, size_t *size);
/* Kernel name of prog for dev: the work-group size checked, fine-grained SVM enabled. */
accel_status_t acl_kernel_create(acl_device_t *dev, cl_program prog, const char *name,
                                 cl_kernel *out);

/* --- module.c: user kernels (accel_module.h) ------------------------------------------------ */
accel_status_t acl_module_build(accel_be_device_t *device, const accel_module_build_t *build,
                                accel_be_module_t **out);
void acl_module_destroy(accel_be_module_t *module);
/* The set's kernel object for user kernel id (created on first use) and its SVM generation. */
accel_status_t acl_module_kernel(acl_device_t *dev, acl_kernel_set_t *set, uint32_t id,
                                 cl_kernel **k, uint64_t **generation);

/* --- the kernel cache (common/kernel_cache.h), files opencl-<hash>.bin ----------------------- */
#define acl_cache_load(key, data, size) \
  accel_kernel_cache_load(acl_host, ACL_DOMAIN, key, data, size)
#define acl_cache_store(key, data, size) \
  accel_kernel_cache_store(acl_host, ACL_DOMAIN, key, data, size)

/* --- stream.c ------------------------------------------------------------------------------ */
ACCEL_BACKEND_DECLARE_STREAMS(acl);
/* The commands; acl_launch_host_func is hostfn.c's. */
ACCEL_BACKEND_DECLARE_COMMANDS(acl);

/* clFlush(s->queue) after enqueueing: returns st, or the flush failure when st is ACCEL_OK
 * (the flush runs either way so that what was enqueued still starts). For every command that
 * another queue or the host may wait on (see the flush rule in acl_stream.c). */
accel_status_t acl_stream_flush(acl_stream_t *s, accel_status_t st);
/* Takes ownership of ev, the event of the command just enqueued on s. */
void acl_stream_set_last(acl_stream_t *s, cl_event ev);
/* Counts a command just enqueued on s without an event. */
void acl_stream_note(acl_stream_t *s);
/* Makes s->queue a profiling queue (once per stream; for timed event records). */
accel_status_t acl_stream_use_profiling(acl_stream_t *s);
/* Status of a command: ACCEL_OK when complete, NOT_READY while pending, an error (message
 * names what) when the command or one it waited for failed. */
accel_status_t acl_event_status(cl_event ev, const char *what);

/* --- predicate.c: conditional regions by predication ---------------------------------------- */
/* The predicate of the commands at depth (inside that many regions): NULL at depth 0. */
const int32_t *acl_pred_slot(acl_stream_t *s, uint32_t depth);
/* Enqueues the start of a region's pass at depth (>= 1): its slot = (first ? the enclosing
 * region's slot : its own) && *flag != 0, on the device. */
accel_status_t acl_pred_enter(acl_stream_t *s, uint32_t depth, int first, const int32_t *flag);
/* A copy / a fill that runs iff *pred != 0 (both ends must be memory kernels reach). */
accel_status_t acl_pred_copy(acl_stream_t *s, const int32_t *pred, void *dst, const void *src,
                             size_t size);
accel_status_t acl_pred_fill(acl_stream_t *s, const int32_t *pred, void *dst, uint8_t value,
                             size_t size);
/* Frees a stream's slots and kernels (its queue drained). NULL: no-op. */
void acl_pred_destroy(acl_device_t *dev, acl_pred_t *p);

/* --- hostfn.c ------------------------------------------------------------------------------ */
/* acl_launch_host_func without the final clFlush (for submit_batch); with pred (a region's
 * slot, or NULL) fn runs only when the slot is nonzero as the stream reaches it. */
accel_status_t acl_enqueue_host_func(acl_stream_t *s, accel_host_fn_t fn, void *user,
                                     const int32_t *pred);
/* Stops and joins a stream's host-function thread (its queue must be drained). NULL: no-op. */
void acl_hostq_destroy(acl_hostq_t *q);

/* --- event.c ------------------------------------------------------------------------------- */
ACCEL_BACKEND_DECLARE_EVENTS(acl);
/* The event's current marker with a new reference (NULL if never recorded). */
cl_event acl_event_retain_marker(acl_event_t *e);

/* --- native.c ------------------------------------------------------------------------------ */
ACCEL_BACKEND_DECLARE_NATIVE(acl);
/* A stream over queue q (retained) of dev; the caller checked q's context and device. */
accel_status_t acl_stream_adopt(acl_device_t *dev, cl_command_queue q, int profiling,
                                acl_stream_t **out);

/* --- graph.c ------------------------------------------------------------------------------- */
ACCEL_BACKEND_DECLARE_GRAPHS(acl);

#endif
