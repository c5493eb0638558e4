/*
 * libFuzzer target: the input is decoded as a sequence of API calls on the CPU device, and a
 * small reference model says what status each call must return (handles valid, destroyed or
 * default; sizes 0, huge or overflowing; dtypes; captures begun, invalidated and abandoned;
 * illegal-in-capture calls; replays; pools shared between graphs; lazy streams; kernels on
 * random small tensor lists; native-handle calls, which the CPU backend refuses; communicator
 * calls: on non-communicators, and all-reduces on a live one-rank communicator of a test engine
 * that needs no MPI, see op_comm; launches of a user kernel loaded at setup, see op_module; bundles refused, see op_bundle). Any disagreement aborts with a message naming the call, the
 * expected and the actual status. At the end of every input everything is torn down and the
 * memory statistics must be back to their baseline: leaked blocks are failures too.
 *
 * The model is single-threaded, so THREAD_LOCAL captures behave like GLOBAL ones. Kernels and
 * copies only touch a persistent scratch buffer, never memory the input frees, so a replay can
 * never write freed memory (that would be a user error, not a library bug).
 *
 * External memory (accel_memory_register) and DLPack imports work on NR accel_host_alloc
 * blocks: registered (read-only or not), unregistered, registered by imports (one registration
 * shared by every import of a range inside it: the whole block or its upper half), held by
 * imports and by graphs whose captured kernels use them; kernels and fills on them must be
 * refused past their end, after the end of the registration and when they write a read-only
 * one; an unregister must be refused while a graph or an import holds the range, and a free of
 * the block (accel_host_free) while any registration covers it. Every import's deleter must
 * have run exactly once (never for a borrowed one) when the input is torn down: one in a shared
 * registration when that ends (its last import released and no graph left), others at their
 * release.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_comm.h"
#include "accel/accel_interop.h"
#include "accel/accel_kernels.h"
#include "accel/accel_module.h"
#include "module_bundle.h"
#include "accel/accel_random.h"
#include "fuzz_api.h"

#define NS 4 /* streams */
#define NG 3 /* graphs */
#define NE 2 /* events */
#define NP 3 /* pool objects (user-created or exposed by accel_graph_pool) */
#define NA 8 /* allocations */
#define NR 3 /* registrable host buffers */
#define NI 2 /* DLPack imports */
#define SLOT_FLOATS 256
#define NSLOTS 8
#define SCRATCH_BYTES (NSLOTS * SLOT_FLOATS * sizeof(float))

typedef enum { H_NONE = 0, H_LIVE, H_DEAD } hstate_t;
enum { G_EMPTY, G_CAPTURING, G_READY };

typedef struct { hstate_t st; accel_stream_t *h; int cap; /* capturing graph or -1 */ } mstream_t;
typedef struct {
  hstate_t st;
  accel_graph_t *h;
  int state, stream, mode, invalid;
  int pool;  /* pool object index, -1: a private pool no user holds */
  int arena; /* id of the pool the capture allocates from */
  unsigned regs; /* bit r: the recorded work uses registration r (a pin) */
} mgraph_t;
typedef struct { hstate_t st; accel_event_t *h; } mevent_t;
typedef struct { hstate_t st; accel_pool_t *h; int user_refs, id; } mpool_t;
/* arena: -1 the default arena, else the id of a graph pool (ids are never reused) */
typedef struct { hstate_t st; void *p; int arena; } malloc_t;
/* A registrable buffer: ZOMBIE: a shared registration whose imports were all released while a
 * graph pins it (ended at the last unpin); UNCERTAIN: its last pin went in a release that may
 * still be retired (a sync decides). */
enum { R_NONE = 0, R_LIVE, R_ZOMBIE, R_UNCERTAIN };
/* shared: made by imports (else the user's); half: it covers only the block's upper half */
typedef struct { int st, shared, half, ro; } mreg_t;
/* shared: the import lies in a shared registration (its deleter waits for that one's end) */
typedef struct { hstate_t st; accel_dlpack_import_t *h; int reg, shared, borrow; } mimport_t;

static accel_device_t *dev;
static accel_stream_t *default_stream;
static float *scratch; /* NSLOTS slots of SLOT_FLOATS floats */
static float *scalars; /* [0] scale, [1] norm output */
/* A generator that lives as long as the device, and one released at setup (a dead handle). */
static accel_generator_t *gen, *dead_gen;

/* A user kernel (accel_module.h) that lives as long as the device, t *= s[0] over one list of
 * any dtype, and the kernel of a module released at setup (a dead handle). NULL when the
 * machine has no C compiler (op_module then does nothing). */
static accel_module_t *umod;
static accel_kernel_t *ukernel, *dead_ukernel;
static const char kUserScale[] =
    "ACC_INLINE void fz_elem(acc_idx i, acc_u64 t, acc_u32 dt, acc_f32 s) {\n"
    "  acc_store(t, i, dt, acc_load(t, i, dt) * s);\n"
    "}\n"
    "ACC_INLINE void fz_chunk(ACC_GPTR(const acc_chunk_t) c, acc_u32 b, acc_f32 s, acc_u32 dt) {\n"
    "  ACC_ELEM_MAP(c[b].count, fz_elem, c[b].ptr[0], dt, s);\n"
    "}\n"
    "ACC_KERNEL(fz_k_scale, fz_params_t, P) {\n"
    "  const acc_f32 s = ACC_PTR(const acc_f32, P.s)[0];\n"
    "  ACC_FOR_BLOCKS(b, P.num_chunks)\n"
    "  ACC_DTYPE_CALL(P.dtype, fz_chunk, ACC_PTR(const acc_chunk_t, P.chunks), b, s);\n"
    "}\n"
    "ACCEL_KERNEL(FZ_SCALE, fz_k_scale, fz_params_t, ACC_OP(\"fz_scale\", ACC_TABLE_SHARED),\n"
    "             (ACC_LIST(\"t\", ACC_IO(RW), ACC_ANY_DT(dtype), ACC_NO_ALIAS)),\n"
    "             (ACC_SCALAR(\"s_dev\", ACC_FIELD(s), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS)))\n";

/* The mixed-precision step's state: accel_loss_scaler_t at 0, found_inf at 24, step at 28. */
static unsigned char *amp_state;
#define AMP_STATE_BYTES 32
static float host_buf[SLOT_FLOATS];
static accel_memory_stats_t baseline;
static int next_arena_id;

static mstream_t S[NS];
static mgraph_t G[NG];
static mevent_t E[NE];
static mpool_t P[NP];
static malloc_t A[NA];
static mreg_t R[NR];
static mimport_t I[NI];
/* The communicator: the fuzzhost engine (tests/fuzz/fuzz_host_engine.c), one rank, no MPI. */
static struct { hstate_t st; accel_comm_t *h; } C;
static float *reg_buf[NR]; /* accel_host_alloc blocks of SLOT_FLOATS floats */
#define REG_BYTES (SLOT_FLOATS * sizeof(float))
static accel_dl_managed_tensor_versioned_t managed_v[NI];
static accel_dl_managed_tensor_t managed_l[NI];
static int64_t import_shape[NI];
static unsigned deletes_seen[NI], deletes_expected[NI];

static const uint8_t *in_data;
static size_t in_size, in_pos;
static unsigned op_index;

static unsigned u8(void) { return in_pos < in_size ? in_data[in_pos++] : 0; }

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz_api: op #%u: ", op_index);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " [last error: %s]\n", accel_last_error());
  va_end(ap);
  abort();
}

static void expect(const char *call, accel_status_t got, accel_status_t want) {
  if (got != want)
    fail("%s returned %s, the model expects %s", call, accel_status_name(got),
         accel_status_name(want));
  if (got != ACCEL_OK && accel_last_error()[0] == '\0') fail("%s failed without a message", call);
}

static void expect2(const char *call, accel_status_t got, accel_status_t a, accel_status_t b) {
  if (got == b) return;
  expect(call, got, a);
}

/* ---------------------------------------------------------------------------------------- */
/* model helpers */

/* A bundle of kUserScale with only an OpenCL C form (made at setup; the CPU refuses it). */
static char *ubundle;
static size_t ubundle_size;

static void make_bundle(void) {
  const accel_bundle_section_t sec[2] = {
      {ACCEL_BUNDLE_SOURCE, "", (const unsigned char *)kUserScale, sizeof kUserScale - 1},
      {ACCEL_MODULE_FORM_OPENCL_C, "", NULL, 0}};
  FILE *f = open_memstream(&ubundle, &ubundle_size);
  const int ok = f && accel_bundle_write(f, sec, 2, "fuzz") == 0;
  if (!f || fclose(f) != 0 || !ok) fail("setup: bundle");
}

/* umod, ukernel and dead_ukernel (a second module of the same source, released). */
static void load_user_kernel(void) {
  accel_module_t *dead = NULL;
  const accel_status_t st = accel_module_load_source(dev, kUserScale, NULL, &umod);
  if (st == ACCEL_ERROR_UNSUPPORTED) return; /* no compiler here */
  if (st != ACCEL_OK || accel_module_get_kernel(umod, "fz_scale", &ukernel) != ACCEL_OK ||
      accel_module_load_source(dev, kUserScale, NULL, &dead) != ACCEL_OK ||
      accel_module_get_kernel(dead, "fz_scale", &dead_ukernel) != ACCEL_OK ||
      accel_module_release(dead) != ACCEL_OK)
    fail("setup: user kernel: %s", accel_last_error());
}

static void ensure_device(void) {
  if (dev) return;
  /* collectives on idle streams run on the calling thread (ACCEL_CPU_RUN_ON_CALLER), busy
   * ones queue: both paths under the model */
  setenv("ACCEL_CPU_RUN_ON_CALLER", "1", 1);
  if (accel_device_open("cpu", &dev) != ACCEL_OK ||
      accel_stream_default(dev, &default_stream) != ACCEL_OK ||
      accel_malloc(dev, SCRATCH_BYTES, (void **)&scratch) != ACCEL_OK ||
      accel_malloc(dev, 2 * sizeof(float), (void **)&scalars) != ACCEL_OK ||
      accel_malloc(dev, AMP_STATE_BYTES, (void **)&amp_state) != ACCEL_OK ||
      accel_generator_create(dev, 1, &gen) != ACCEL_OK ||
      accel_generator_create(dev, 2, &dead_gen) != ACCEL_OK ||
      accel_generator_release(dead_gen) != ACCEL_OK)
    fail("setup: %s", accel_last_error());
  load_user_kernel();
  make_bundle();
  const float one = 1.0f;
  if (accel_memcpy(dev, scalars, &one, sizeof one) != ACCEL_OK) fail("setup copy");
  for (int r = 0; r < NR; ++r)
    if (accel_host_alloc(dev, REG_BYTES, (void **)&reg_buf[r]) != ACCEL_OK) fail("setup blocks");
  if (accel_empty_cache(dev) != ACCEL_OK || accel_memory_stats(dev, &baseline) != ACCEL_OK)
    fail("setup stats");
}

void fuzz_api_teardown(void) {
  if (!dev) return;
  accel_free(dev, scratch);
  accel_free(dev, scalars);
  accel_free(dev, amp_state);
  if (accel_generator_release(gen) != ACCEL_OK) fail("generator release");
  if (umod && accel_module_release(umod) != ACCEL_OK) fail("module release");
  umod = NULL;
  ukernel = dead_ukernel = NULL;
  free(ubundle);
  ubundle = NULL;
  if (accel_device_close(dev) != ACCEL_OK) fail("device close");
  dev = NULL;
}

/* A freshly created handle may reuse the address of a destroyed one: forget the old one. */
static void forget_dead(void *h) {
  for (int i = 0; i < NS; ++i) if (S[i].st == H_DEAD && (void *)S[i].h == h) S[i].st = H_NONE;
  for (int i = 0; i < NG; ++i) if (G[i].st == H_DEAD && (void *)G[i].h == h) G[i].st = H_NONE;
  for (int i = 0; i < NE; ++i) if (E[i].st == H_DEAD && (void *)E[i].h == h) E[i].st = H_NONE;
  for (int i = 0; i < NP; ++i) if (P[i].st == H_DEAD && (void *)P[i].h == h) P[i].st = H_NONE;
  for (int i = 0; i < NA; ++i) if (A[i].st == H_DEAD && A[i].p == h) A[i].st = H_NONE;
  if (C.st == H_DEAD && (void *)C.h == h) C.st = H_NONE;
}

/* Pool handle references: user references plus graphs holding it. */
static int pool_refs(int p) {
  int r = P[p].user_refs;
  for (int g = 0; g < NG; ++g) r += G[g].st == H_LIVE && G[g].state != G_EMPTY && G[g].pool == p;
  return r;
}

static void pool_maybe_dead(int p) {
  if (p >= 0 && P[p].st == H_LIVE && pool_refs(p) == 0) P[p].st = H_DEAD;
}

/* The graph drops its pool (reset, destroy, failed capture). */
static int reg_pinned(int r);

static void graph_clear(int g) {
  int p = G[g].pool;
  G[g].state = G_EMPTY;
  G[g].pool = -1;
  G[g].regs = 0;
  pool_maybe_dead(p);
  for (int r = 0; r < NR; ++r) /* the graph's release may be retired: a sync decides */
    if (R[r].st == R_ZOMBIE && !reg_pinned(r)) R[r].st = R_UNCERTAIN;
}

/* A call that is illegal during capture (on stream, -1: none): invalidates every capture that
 * covers it, and is refused when there is one. */
static accel_status_t unsafe(int stream) {
  accel_status_t st = ACCEL_OK;
  for (int g = 0; g < NG; ++g)
    if (G[g].st == H_LIVE && G[g].state == G_CAPTURING &&
        (G[g].stream == stream || G[g].mode != ACCEL_CAPTURE_MODE_RELAXED)) {
      G[g].invalid = 1;
      st = ACCEL_ERROR_ILLEGAL_IN_CAPTURE;
    }
  return st;
}

/* A call illegal while any stream captures, in any mode (communicator creation): invalidates
 * every capture (core/capture.c, accel_capture_check_none). */
static accel_status_t unsafe_any(void) {
  accel_status_t st = ACCEL_OK;
  for (int g = 0; g < NG; ++g)
    if (G[g].st == H_LIVE && G[g].state == G_CAPTURING) {
      G[g].invalid = 1;
      st = ACCEL_ERROR_ILLEGAL_IN_CAPTURE;
    }
  return st;
}

/* Status of submitting commands to stream slot s (live): recorded, or run. */
static accel_status_t submit_status(int s) {
  if (s < 0 || S[s].cap < 0) return ACCEL_OK;
  return G[S[s].cap].invalid ? ACCEL_ERROR_CAPTURE_INVALIDATED : ACCEL_OK;
}

/* Picks a stream operand: -1 is the default stream. Returns 0 when the slot is unusable. */
static int pick_stream(int *slot, accel_stream_t **h, accel_status_t *handle_st) {
  unsigned b = u8() % (NS + 1);
  *handle_st = ACCEL_OK;
  if (b == NS) {
    *slot = -1;
    *h = default_stream;
    return 1;
  }
  *slot = (int)b;
  if (S[b].st == H_NONE) return 0;
  *h = S[b].h;
  if (S[b].st == H_DEAD) *handle_st = ACCEL_ERROR_INVALID_HANDLE;
  return 1;
}

static size_t pick_size(void) {
  static const size_t sizes[] = {0, 1, 300, 5000, 2u << 20, SIZE_MAX, (SIZE_MAX >> 1) + 1, 256};
  return sizes[u8() % (sizeof sizes / sizeof sizes[0])];
}

static int free_alloc_slot(void) {
  for (int i = 0; i < NA; ++i) if (A[i].st != H_LIVE) return i;
  return -1;
}

static void record_alloc(void *p, int arena) {
  forget_dead(p);
  int i = free_alloc_slot();
  if (i < 0) fail("no allocation slot (callers check first)");
  A[i].st = H_LIVE;
  A[i].p = p;
  A[i].arena = arena;
}

static int capture_arena(int g) { return G[g].arena; }

/* ---------------------------------------------------------------------------------------- */
/* operations */

static void op_stream_create(void) {
  unsigned i = u8() % NS, flags = u8() % 4; /* 3 = LAZY|EAGER: invalid */
  if (S[i].st == H_LIVE) return;
  accel_stream_t *h = NULL;
  accel_status_t st = accel_stream_create_ex(dev, flags, &h);
  expect("accel_stream_create_ex", st, flags == 3 ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_OK);
  if (st != ACCEL_OK) return;
  forget_dead(h);
  S[i] = (mstream_t){H_LIVE, h, -1};
}

/* The lifetime verbs (docs/API.md): a release is made under its name and its old alias in turn
 * (the same call), without drawing a byte, so the corpus replays as before. */
static bool alias_turn(void) {
  static unsigned turn;
  return turn++ & 1;
}
#define RELEASE_OR_ALIAS(release, alias, h) (alias_turn() ? alias(h) : release(h))

static void op_stream_destroy(void) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  accel_status_t want = hs != ACCEL_OK ? hs
                        : s < 0        ? ACCEL_ERROR_INVALID_ARGUMENT
                        : S[s].cap >= 0 ? ACCEL_ERROR_STATE
                                        : ACCEL_OK;
  expect("accel_stream_release/destroy",
         RELEASE_OR_ALIAS(accel_stream_release, accel_stream_destroy, h), want);
  if (want == ACCEL_OK) S[s].st = H_DEAD;
}

static void op_stream_sync_query(int query) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  accel_status_t want = hs != ACCEL_OK ? hs : unsafe(s < 0 ? NS : s);
  if (query)
    expect2("accel_stream_query", accel_stream_query(h), want,
            want == ACCEL_OK ? ACCEL_ERROR_NOT_READY : want);
  else
    expect("accel_stream_synchronize", accel_stream_synchronize(h), want);
}

static void op_stream_flush(void) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  expect("accel_stream_flush", accel_stream_flush(h), hs);
}

static void op_malloc(void) {
  size_t size = pick_size();
  int slot = free_alloc_slot();
  if (slot < 0 && size != 0) return;
  void *p = (void *)&p;
  accel_status_t want = size > (SIZE_MAX >> 1) ? ACCEL_ERROR_INVALID_ARGUMENT : unsafe(-1);
  accel_status_t st = accel_malloc(dev, size, &p);
  expect("accel_malloc", st, want);
  if (st != ACCEL_OK) return;
  if (size == 0) {
    if (p != NULL) fail("accel_malloc(0) gave %p, want NULL", p);
    return;
  }
  record_alloc(p, -1);
}

/* An allocation operand: a live or freed block, NULL, or a host pointer. */
static void *pick_ptr(int *slot) {
  unsigned b = u8() % (NA + 2);
  *slot = -1;
  if (b == NA) return NULL;
  if (b == NA + 1) return host_buf;
  if (A[b].st == H_NONE) return NULL;
  *slot = (int)b;
  return A[b].p;
}

static void op_free(void) {
  int a;
  void *p = pick_ptr(&a);
  accel_status_t want = p == NULL ? ACCEL_OK
                        : a >= 0 && A[a].st == H_LIVE ? ACCEL_OK
                                                      : ACCEL_ERROR_INVALID_ARGUMENT;
  expect("accel_free", accel_free(dev, p), want);
  if (want == ACCEL_OK && a >= 0) A[a].st = H_DEAD;
}

static void op_malloc_async(void) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  size_t size = pick_size();
  int slot = free_alloc_slot();
  if (slot < 0 && size != 0) return;
  void *p = (void *)&p;
  accel_status_t want = hs != ACCEL_OK ? hs
                        : size > (SIZE_MAX >> 1) ? ACCEL_ERROR_INVALID_ARGUMENT
                                                 : ACCEL_OK;
  accel_status_t st = accel_malloc_async(h, size, &p);
  expect("accel_malloc_async", st, want);
  if (st != ACCEL_OK || size == 0) return;
  record_alloc(p, s >= 0 && S[s].cap >= 0 ? capture_arena(S[s].cap) : -1);
}

static void op_free_async(void) {
  int s, a;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  void *p = pick_ptr(&a);
  int live = a >= 0 && A[a].st == H_LIVE;
  accel_status_t want;
  if (hs != ACCEL_OK) want = hs;
  else if (!p) want = ACCEL_OK;
  else if (s >= 0 && S[s].cap >= 0) {
    int g = S[s].cap;
    if (G[g].invalid) want = ACCEL_ERROR_CAPTURE_INVALIDATED;
    else if (!live || A[a].arena != capture_arena(g)) {
      want = ACCEL_ERROR_ILLEGAL_IN_CAPTURE;
      G[g].invalid = 1;
    } else want = ACCEL_OK;
  } else want = live ? ACCEL_OK : ACCEL_ERROR_INVALID_ARGUMENT;
  expect("accel_free_async", accel_free_async(h, p), want);
  if (want == ACCEL_OK && a >= 0) A[a].st = H_DEAD;
}

static void op_copy(void) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  unsigned kind = u8() % 4, slot = u8() % NSLOTS;
  size_t size = (size_t)(u8() % 5) * 256; /* 0 .. 1024 bytes: one slot */
  int past_end = u8() % 8 == 0;
  char *dst = (char *)(scratch + slot * SLOT_FLOATS);
  if (past_end) dst = (char *)scratch + SCRATCH_BYTES - 128; /* size > 128 runs past the end */
  accel_status_t want = hs;
  if (want == ACCEL_OK && size > 0) {
    if (past_end && size > 128) want = ACCEL_ERROR_INVALID_ARGUMENT;
    else want = submit_status(s);
  }
  accel_status_t st;
  switch (kind) {
    case 0: st = accel_memcpy_async(h, dst, host_buf, size); break;
    case 1: st = accel_memcpy_async(h, host_buf, dst, size); break;
    case 2: st = accel_memset_async(h, dst, (int)slot, size); break;
    default: {
      /* device to device: the other half of the scratch buffer never overlaps dst */
      char *src = (char *)scratch + ((slot + NSLOTS / 2) % NSLOTS) * SLOT_FLOATS * sizeof(float);
      if (past_end) src = (char *)scratch; /* no overlap with the last 128 bytes */
      st = accel_memcpy_async(h, dst, src, size);
    }
  }
  expect(kind == 2 ? "accel_memset_async" : "accel_memcpy_async", st, want);
}

static void op_kernel(void) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  unsigned which = u8() % 3; /* fill, scale, norm */
  size_t n = u8() % 5;
  accel_tensor_t t[4];
  int invalid = 0, used[NSLOTS] = {0};
  uint64_t chunks = 0;
  for (size_t i = 0; i < n; ++i) {
    unsigned b = u8(), slot = b % NSLOTS, dt = (b >> 3) % 8, misalign = (b >> 6) == 3;
    size_t numel = u8() % (SLOT_FLOATS / 2 + 1); /* fits in a slot whatever the dtype */
    t[i].dtype = dt < 7 ? (accel_dtype_t)(dt % 3) : (accel_dtype_t)9;
    t[i].numel = numel;
    t[i].data = (char *)(scratch + slot * SLOT_FLOATS) + misalign;
    if (accel_dtype_size(t[i].dtype) == 0 || t[i].dtype != t[0].dtype) invalid = 1;
    if (numel > 0 && misalign) invalid = 1;
    if (numel > 0 && used[slot]++ && which != 2) invalid = 1; /* written tensors overlap */
    chunks += numel > 0;
  }
  float norm_type = (float)(u8() % 4); /* 0 is not a valid norm */
  accel_status_t want = hs;
  if (want == ACCEL_OK) {
    if ((which == 2 && norm_type == 0.0f) || invalid) want = ACCEL_ERROR_INVALID_ARGUMENT;
    else if (which == 2 || chunks > 0) want = submit_status(s);
  }
  accel_status_t st;
  const char *name;
  if (which == 0) {
    name = "accel_fill";
    st = accel_fill(h, n ? t : NULL, n, 0.5f);
  } else if (which == 1) {
    name = "accel_scale";
    st = accel_scale(h, n ? t : NULL, n, scalars);
  } else {
    name = "accel_multi_tensor_norm";
    st = accel_multi_tensor_norm(h, n ? t : NULL, n, norm_type, scalars + 1);
  }
  expect(name, st, want);
}

/* accel_cast over pairs of scratch slots: any dtype pair, numel mismatches, misaligned
 * sources, a destination sharing a slot with another tensor, and the skip flag valid, NULL,
 * in host memory or misaligned. */
static void op_cast(int s, accel_stream_t *h, accel_status_t hs) {
  size_t n = u8() % 5;
  accel_tensor_t src[4], dst[4];
  unsigned src_slot[4], dst_slot[4];
  int invalid = 0;
  uint64_t chunks = 0;
  for (size_t i = 0; i < n; ++i) {
    unsigned b = u8(), c = u8(), sdt = (b >> 3) % 8, ddt = (c >> 3) % 8;
    int misalign = (b >> 6) == 3, mismatch = (c >> 6) == 3;
    size_t numel = u8() % (SLOT_FLOATS / 2 + 1);
    src_slot[i] = b % NSLOTS;
    dst_slot[i] = c % NSLOTS;
    src[i] = (accel_tensor_t){(char *)(scratch + src_slot[i] * SLOT_FLOATS) + misalign, numel,
                              sdt < 7 ? (accel_dtype_t)(sdt % 3) : (accel_dtype_t)9};
    dst[i] = (accel_tensor_t){scratch + dst_slot[i] * SLOT_FLOATS, numel + (size_t)mismatch,
                              ddt < 7 ? (accel_dtype_t)(ddt % 3) : (accel_dtype_t)9};
    if (accel_dtype_size(src[i].dtype) == 0 || src[i].dtype != src[0].dtype) invalid = 1;
    if (accel_dtype_size(dst[i].dtype) == 0 || dst[i].dtype != dst[0].dtype) invalid = 1;
    if ((numel > 0 && misalign) || mismatch) invalid = 1;
    chunks += numel > 0;
  }
  /* a written destination may share its slot with no other non-empty tensor */
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < n && dst[i].numel > 0; ++k) {
      if (src[k].numel > 0 && src_slot[k] == dst_slot[i]) invalid = 1;
      if (k != i && dst[k].numel > 0 && dst_slot[k] == dst_slot[i]) invalid = 1;
    }
  const float *flag = NULL;
  switch (u8() % 4) {
    case 0: break;
    case 1: flag = (const float *)(void *)(amp_state + 24); break;
    case 2: flag = host_buf; invalid = 1; break;
    default: flag = (const float *)(void *)(amp_state + 25); invalid = 1; break;
  }
  accel_status_t want = hs;
  if (want == ACCEL_OK && invalid) want = ACCEL_ERROR_INVALID_ARGUMENT;
  else if (want == ACCEL_OK && chunks > 0) want = submit_status(s);
  expect("accel_cast", accel_cast(h, n ? src : NULL, n ? dst : NULL, n, flag), want);
}

/* The fused step (accel_adam_step_norm / _update) over up to two tensors per list: list l in
 * scratch slot l (tensor i at float i * 128, at most 64 elements; AMSGrad's max_exp_avg_sq in
 * slot 7), its scalars in slot 6 (Adam args at 0, found_inf = args.found_inf, inv_scale at 8,
 * the norm at 9, coef at 10, a step count per tensor at 12, a has-gradient flag per tensor at
 * 14), any dtypes and flags, optional lists and per-tensor arrays present or not, and one
 * injected fault: none, a NULL descriptor or one that ends before flags, an unknown flag, CLIP
 * without a norm, F16 master weights, model weights on the master weights, a misaligned
 * gradient, has-gradient flags in host memory; the moments in any dtype (the state format: F32
 * or BF16, F16 refused by the update), the last tensor's second moment in the other format
 * (13) or its first moment one element short or long (14), both refused by the update; the
 * master weights F32 or BF16, with the generator or without (BF16 with U8 moments or model
 * weights, and the generator with F32 ones, refused by the update); or the per-tensor step
 * counts (accel_step_counts) over the same arrays. */
static void op_adam_step(int s, accel_stream_t *h, accel_status_t hs) {
  enum { NT_ = 2 };
  const size_t n = u8() % (NT_ + 1);
  const unsigned b = u8(), flags = u8() % 32u, fault = u8() % 15u, call = u8() % 3u;
  const accel_dtype_t gdt = (accel_dtype_t)(b % 3), mdt = (accel_dtype_t)((b >> 2) % 3);
  const int has_hp = (b >> 4) & 1, has_model = (b >> 5) & 1, has_vmax = (b >> 6) & 1;
  const int per_tensor = (b >> 7) & 1;
  const accel_dtype_t sdt = (accel_dtype_t)(u8() % 4); /* the moments' dtype: F32 .. U8 */
  const unsigned master = u8() % 4u; /* bit 0: the generator; bit 1: BF16 master weights */
  const int b16 = (master & 2u) != 0;
  accel_tensor_t L[7][NT_], scales[NT_];
  uint64_t chunks = 0;
  int invalid = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t numel = u8() % 65;
    chunks += numel > 0;
    for (int l = 0; l < 7; ++l) {
      const accel_dtype_t dt = l == 0                ? gdt
                               : l == 5              ? mdt
                               : l == 3 || l == 4    ? sdt
                               : l == 2 && b16       ? ACCEL_BF16
                                                     : ACCEL_F32;
      const size_t slot = l == 6 ? 7 : (size_t)l;
      L[l][i] = (accel_tensor_t){scratch + slot * SLOT_FLOATS + i * 128, numel, dt};
    }
    /* U8 moments' block scales, 2 per 256 elements, beside the step's scalars */
    scales[i] = (accel_tensor_t){scratch + 6 * SLOT_FLOATS + 32 + i * 4, numel ? 2 : 0, ACCEL_F32};
    if (fault == 11 && numel > 0) { /* a misaligned gradient */
      L[0][i].data = (char *)L[0][i].data + 1;
      invalid = 1;
    }
    if (fault == 9) L[2][i].dtype = ACCEL_F16; /* master weights must be F32 */
    if (fault == 10) L[5][i].data = L[2][i].data; /* model weights on the master weights */
  }
  if (fault == 13 && n > 0) /* mixed state formats */
    L[4][n - 1].dtype = L[4][n - 1].dtype == ACCEL_BF16 ? ACCEL_F32 : ACCEL_BF16;
  if (fault == 14 && n > 0) /* a first moment of the wrong size */
    L[3][n - 1].numel = L[3][n - 1].numel ? L[3][n - 1].numel - 1 : 1;
  if (fault == 8 && n > 0) /* U8: one scale too many; else scales beside other moments */
    scales[n - 1].numel += sdt == ACCEL_U8;
  float *sc = scratch + 6 * SLOT_FLOATS;
  const uint32_t *has_grad = fault == 12 ? (const uint32_t *)(const void *)host_buf
                             : per_tensor ? (const uint32_t *)(const void *)(sc + 14)
                                          : NULL;
  if (call == 2) { /* the step counts */
    const accel_status_t want = hs != ACCEL_OK                 ? hs
                                : fault == 12 && n > 0         ? ACCEL_ERROR_INVALID_ARGUMENT
                                : n > 0                        ? submit_status(s)
                                                               : ACCEL_OK;
    expect("accel_step_counts", accel_step_counts(h, sc + 12, has_grad, n, sc + 7), want);
    return;
  }
  accel_adam_step_t d = {.struct_size = sizeof d, .n = n, .grads = n ? L[0] : NULL,
                         .hp_grads = has_hp && n ? L[1] : NULL, .params = n ? L[2] : NULL,
                         .exp_avg = n ? L[3] : NULL, .exp_avg_sq = n ? L[4] : NULL,
                         .model_params = has_model && n ? L[5] : NULL,
                         .args_dev = (const accel_adam_args_t *)(void *)sc,
                         .inv_scale_dev = sc + 8, .found_inf_dev = sc + 7, .norm_type = 2.0f,
                         .norm_dev = fault == 7 ? NULL : sc + 9, .max_norm = 1.0f,
                         .clip_eps = 1e-6f, .coef_out_dev = sc + 10, .flags = flags,
                         .max_exp_avg_sq = has_vmax && n ? L[6] : NULL,
                         .steps_dev = per_tensor ? sc + 12 : NULL, .has_grad_dev = has_grad,
                         .state_scales = n && (sdt == ACCEL_U8 || fault == 8) ? scales : NULL,
                         .generator = (master & 1u) ? gen : NULL};
  if (fault == 5) d.struct_size = offsetof(accel_adam_step_t, flags);
  if (fault == 6) d.flags |= 0x80u;
  const int accumulate = (d.flags & ACCEL_ADAM_STEP_ACCUMULATE) != 0;
  const int amsgrad = (d.flags & ACCEL_ADAM_STEP_AMSGRAD) != 0;
  /* what both calls check, then what only the update checks */
  invalid |= fault == 4 || fault == 5 || fault == 6 || (accumulate && !d.hp_grads && n > 0) ||
             (fault == 12 && n > 0);
  if (call == 1) {
    invalid |= ((d.flags & ACCEL_ADAM_STEP_CLIP) && !d.norm_dev) ||
               (fault == 9 && n > 0) || (fault == 10 && has_model && chunks > 0) ||
               (amsgrad != has_vmax && n > 0) || (sdt == ACCEL_F16 && n > 0) ||
               ((fault == 13 || fault == 14 || fault == 8) && n > 0) ||
               (sdt == ACCEL_U8 && amsgrad && n > 0) ||
               (n > 0 && (master == 1u || (b16 && (sdt == ACCEL_U8 || has_model))));
  }
  int launches;
  if (call == 1) launches = chunks > 0 || (d.flags & ACCEL_ADAM_STEP_CLIP);
  else launches = d.norm_dev != NULL || chunks > 0;
  accel_status_t want = hs;
  if (want == ACCEL_OK) want = invalid ? ACCEL_ERROR_INVALID_ARGUMENT
                             : launches ? submit_status(s) : ACCEL_OK;
  const accel_adam_step_t *dp = fault == 4 ? NULL : &d;
  if (call == 1) expect("accel_adam_step_update", accel_adam_step_update(h, dp), want);
  else expect("accel_adam_step_norm", accel_adam_step_norm(h, dp), want);
}

/* Decodes n (<= 3) tensors of scratch slots that a call writes, of any dtype, misaligned or
 * sharing a slot: *invalid when the call must refuse them, *chunks counts the non-empty ones. */
static void decode_written(accel_tensor_t *t, size_t n, int *invalid, uint64_t *chunks) {
  int used[NSLOTS] = {0};
  for (size_t i = 0; i < n; ++i) {
    unsigned b = u8(), slot = b % NSLOTS, dt = (b >> 3) % 8, misalign = (b >> 6) == 3;
    size_t numel = u8() % (SLOT_FLOATS / 2 + 1);
    t[i] = (accel_tensor_t){(char *)(scratch + slot * SLOT_FLOATS) + misalign, numel,
                            dt < 7 ? (accel_dtype_t)(dt % 3) : (accel_dtype_t)9};
    if (accel_dtype_size(t[i].dtype) == 0 || t[i].dtype != t[0].dtype) *invalid = 1;
    if (numel > 0 && (misalign || used[slot]++)) *invalid = 1; /* written tensors overlap */
    *chunks += numel > 0;
  }
}

/* The random operations (accel_random.h) on the persistent generator, a released one or NULL:
 * raw words into a scratch slot (misaligned, NULL or empty), uniform / normal / dropout (in
 * place) over up to three tensors of scratch slots with any dtype, misaligned or sharing a
 * slot, and values that are refused (NaN). Handles are checked first, then the values, then
 * the tensors. */
static void op_random(int s, accel_stream_t *h, accel_status_t hs) {
  const unsigned call = u8() % 4, g = u8() % 8;
  const int bad_value = u8() % 8 == 0;
  accel_generator_t *gh = g == 0 ? NULL : g == 1 ? dead_gen : gen;
  size_t n = u8() % 4;
  accel_tensor_t t[3];
  int invalid = 0;
  uint64_t chunks = 0;
  if (call != 0) decode_written(t, n, &invalid, &chunks);
  uint32_t *out = NULL;
  if (call == 0) { /* raw: n words (0, 1, 5, a slot) at a slot, misaligned or NULL */
    static const size_t words[4] = {0, 1, 5, SLOT_FLOATS};
    const unsigned b = u8();
    n = words[n];
    out = b % 4 == 0 ? NULL : (uint32_t *)(void *)((char *)(scratch + (b >> 2) % NSLOTS *
                                                              SLOT_FLOATS) + (b % 4 == 1 ? 2 : 0));
    if (n > 0 && (out == NULL || b % 4 == 1)) invalid = 1;
    chunks = n > 0;
  }
  accel_status_t want = hs;
  if (want == ACCEL_OK && (gh == NULL || gh == dead_gen)) want = ACCEL_ERROR_INVALID_HANDLE;
  if (want == ACCEL_OK && ((bad_value && call != 0) || invalid))
    want = ACCEL_ERROR_INVALID_ARGUMENT;
  if (want == ACCEL_OK && chunks > 0) want = submit_status(s);
  const float v = bad_value ? NAN : 0.25f;
  const accel_tensor_t *tl = n ? t : NULL;
  switch (call) {
    case 0: expect("accel_generator_raw", accel_generator_raw(h, gh, out, n), want); break;
    case 1: expect("accel_rand_uniform", accel_rand_uniform(h, gh, tl, n, v, 1.0f), want); break;
    case 2: expect("accel_rand_normal", accel_rand_normal(h, gh, tl, n, v, 2.0f), want); break;
    default: expect("accel_dropout", accel_dropout(h, gh, tl, tl, n, v), want); break;
  }
}

/* A launch of the user kernel (live, released or NULL) over up to three tensors of scratch
 * slots with any dtype, misaligned or sharing a slot; the list or scalar count wrong, the
 * scalar NULL or misaligned. The stream is checked first, then the kernel, the counts and the
 * row's rules. */
static void op_bundle(void);

static void op_module(int s, accel_stream_t *h, accel_status_t hs) {
  if (!ukernel) return;
  const unsigned kbyte = u8(); /* 248..255: a bundle (the corpus before it has none) */
  if (kbyte >= 248) {
    op_bundle();
    return;
  }
  const unsigned k = kbyte % 8, shape = u8() % 8;
  const accel_kernel_t *kh = k == 0 ? NULL : k == 1 ? dead_ukernel : ukernel;
  size_t n = u8() % 4;
  accel_tensor_t t[3];
  int invalid = 0;
  uint64_t chunks = 0;
  decode_written(t, n, &invalid, &chunks);
  /* shape 1: two lists, 2: no scalar, 3: the scalar NULL, 4: misaligned */
  const size_t nlists = shape == 1 ? 2 : 1, nscalars = shape == 2 ? 0 : 1;
  const void *sc[1] = {shape == 3 ? NULL : shape == 4 ? (const char *)scalars + 2
                                                      : (const void *)scalars};
  const accel_tensor_t *lists[2] = {n ? t : NULL, n ? t : NULL};
  accel_status_t want = hs;
  if (want == ACCEL_OK && kh != ukernel) want = ACCEL_ERROR_INVALID_HANDLE;
  if (want == ACCEL_OK && (shape >= 1 && shape <= 4)) want = ACCEL_ERROR_INVALID_ARGUMENT;
  if (want == ACCEL_OK && invalid) want = ACCEL_ERROR_INVALID_ARGUMENT;
  if (want == ACCEL_OK && chunks > 0) want = submit_status(s);
  expect("accel_launch", accel_launch(h, kh, lists, nlists, n, sc, nscalars), want);
}

/* accel_module_load_bundle on the setup's bundle: intact (the CPU has no form in it:
 * UNSUPPORTED), one bit flipped or truncated (INVALID_ARGUMENT: bad bundle), no data or no out
 * (INVALID_ARGUMENT). No module is ever made. */
static void op_bundle(void) {
  const unsigned how = u8() % 5, at = (u8() << 8 | u8()) % (unsigned)(8 * ubundle_size);
  char *copy = malloc(ubundle_size);
  if (!copy) fail("no memory");
  memcpy(copy, ubundle, ubundle_size);
  size_t size = how == 3 ? at / 8 : ubundle_size;
  if (how == 2) copy[at / 8] ^= (char)(1u << at % 8);
  accel_module_t *m = NULL;
  const accel_status_t want = how == 1 ? ACCEL_ERROR_UNSUPPORTED : ACCEL_ERROR_INVALID_ARGUMENT;
  expect("accel_module_load_bundle",
         accel_module_load_bundle(dev, how == 4 ? NULL : copy, size, how == 0 ? NULL : &m), want);
  free(copy);
  if (m) fail("accel_module_load_bundle made a module from a refused bundle");
}

/* The one-block calls of the mixed-precision step on the state block, each pointer valid,
 * NULL, in host memory, misaligned, or overlapping the other; the cast; the fused step. */
static void op_amp(void) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  /* begin, update, step count, cast, fused step, random, user kernel */
  const unsigned which = u8() % 7;
  if (which == 6) {
    op_module(s, h, hs);
    return;
  }
  if (which == 5) {
    op_random(s, h, hs);
    return;
  }
  if (which == 3) {
    op_cast(s, h, hs);
    return;
  }
  if (which == 4) {
    op_adam_step(s, h, hs);
    return;
  }
  /* first: the scaler (begin, update) or the step (count); second: found_inf / the flag */
  unsigned char *first_ok = which == 2 ? amp_state + 28 : amp_state;
  unsigned char *second_ok = amp_state + 24;
  void *ptr[2];
  int invalid = 0;
  for (int k = 0; k < 2; ++k) {
    unsigned char *ok = k == 0 ? first_ok : second_ok;
    switch (u8() % 6) {
      case 2: ptr[k] = NULL; invalid |= which != 2 || k == 0; break; /* the flag is optional */
      case 3: ptr[k] = host_buf; invalid = 1; break;
      case 4: ptr[k] = ok + 2; invalid = 1; break;
      case 5: ptr[k] = k == 0 ? ok : (void *)(first_ok + 4 * (which != 2)); /* overlaps first */
        invalid |= k == 1;
        break;
      default: ptr[k] = ok; break;
    }
  }
  accel_status_t want = hs;
  if (want == ACCEL_OK) want = invalid ? ACCEL_ERROR_INVALID_ARGUMENT : submit_status(s);
  if (which == 0)
    expect("accel_amp_begin_step", accel_amp_begin_step(h, ptr[0], ptr[1]), want);
  else if (which == 1)
    expect("accel_amp_update_scale", accel_amp_update_scale(h, ptr[0], ptr[1]), want);
  else
    expect("accel_step_count", accel_step_count(h, ptr[0], ptr[1]), want);
}

static int pick_graph(accel_status_t *hs) {
  unsigned g = u8() % NG;
  if (G[g].st == H_NONE) return -1;
  *hs = G[g].st == H_DEAD ? ACCEL_ERROR_INVALID_HANDLE : ACCEL_OK;
  return (int)g;
}

static void op_graph_create(void) {
  unsigned g = u8() % NG;
  if (G[g].st == H_LIVE) return;
  accel_graph_t *h = NULL;
  expect("accel_graph_create", accel_graph_create(dev, &h), ACCEL_OK);
  forget_dead(h);
  G[g] = (mgraph_t){H_LIVE, h, G_EMPTY, -1, 0, 0, -1, -1, 0};
}

static void op_graph_destroy_reset(int destroy) {
  accel_status_t hs;
  int g = pick_graph(&hs);
  if (g < 0) return;
  accel_status_t want = hs != ACCEL_OK ? hs
                        : G[g].state == G_CAPTURING ? ACCEL_ERROR_STATE
                                                    : ACCEL_OK;
  if (destroy)
    expect("accel_graph_release/destroy",
           RELEASE_OR_ALIAS(accel_graph_release, accel_graph_destroy, G[g].h), want);
  else expect("accel_graph_reset", accel_graph_reset(G[g].h), want);
  if (want != ACCEL_OK) return;
  graph_clear(g);
  if (destroy) G[g].st = H_DEAD;
}

static void op_capture_begin(void) {
  accel_status_t gs, ss, ps = ACCEL_OK;
  int g = pick_graph(&gs), s;
  accel_stream_t *sh;
  if (g < 0 || !pick_stream(&s, &sh, &ss)) return;
  unsigned pb = u8() % (NP + 1), mode = u8() % 4; /* 3: invalid */
  int p = pb < NP ? (int)pb : -1;
  if (p >= 0 && P[p].st == H_NONE) p = -1;
  /* a pool only graphs still hold is no handle of the user's any more */
  if (p >= 0 && (P[p].st == H_DEAD || P[p].user_refs == 0)) ps = ACCEL_ERROR_INVALID_HANDLE;
  accel_status_t want = gs != ACCEL_OK ? gs : ss != ACCEL_OK ? ss : ps;
  if (want == ACCEL_OK) {
    if (mode == 3 || s < 0) want = ACCEL_ERROR_INVALID_ARGUMENT;
    else if (S[s].cap >= 0) {
      want = ACCEL_ERROR_ILLEGAL_IN_CAPTURE;
      G[S[s].cap].invalid = 1;
    } else if (G[g].state != G_EMPTY) want = ACCEL_ERROR_STATE;
  }
  expect("accel_graph_capture_begin",
         accel_graph_capture_begin(G[g].h, sh, p >= 0 ? P[p].h : NULL, (accel_capture_mode_t)mode),
         want);
  if (want != ACCEL_OK) return;
  G[g].state = G_CAPTURING;
  G[g].stream = s;
  G[g].mode = (int)mode;
  G[g].invalid = 0;
  G[g].pool = p;
  G[g].arena = p >= 0 ? P[p].id : next_arena_id++;
  S[s].cap = g;
}

static void end_capture(int g) {
  accel_status_t want = G[g].state != G_CAPTURING ? ACCEL_ERROR_STATE
                        : G[g].invalid            ? ACCEL_ERROR_CAPTURE_INVALIDATED
                                                  : ACCEL_OK;
  expect("accel_graph_capture_end", accel_graph_capture_end(G[g].h), want);
  if (G[g].state != G_CAPTURING) return;
  S[G[g].stream].cap = -1;
  if (want == ACCEL_OK) G[g].state = G_READY;
  else graph_clear(g);
}

static void op_capture_end(void) {
  accel_status_t hs;
  int g = pick_graph(&hs);
  if (g < 0) return;
  if (hs != ACCEL_OK) {
    expect("accel_graph_capture_end", accel_graph_capture_end(G[g].h), hs);
    return;
  }
  end_capture(g);
}

static void op_replay(void) {
  accel_status_t gs, ss;
  int g = pick_graph(&gs), s;
  accel_stream_t *sh;
  if (g < 0 || !pick_stream(&s, &sh, &ss)) return;
  accel_status_t want = gs != ACCEL_OK ? gs : ss;
  if (want == ACCEL_OK) {
    if (G[g].state != G_READY) want = ACCEL_ERROR_STATE;
    else if (s >= 0 && S[s].cap >= 0 && G[S[s].cap].invalid) {
      /* inlined into an invalidated capture: refused unless there is nothing to record (the
       * model does not count nodes; the library's count decides this one case) */
      size_t nodes = 0;
      expect("accel_graph_node_count", accel_graph_node_count(G[g].h, &nodes), ACCEL_OK);
      if (nodes > 0) want = ACCEL_ERROR_CAPTURE_INVALIDATED;
    }
  }
  expect("accel_graph_replay", accel_graph_replay(G[g].h, sh), want);
  /* replayed inside a capture: the capturing graph pins what g's work uses too */
  if (want == ACCEL_OK && s >= 0 && S[s].cap >= 0) G[S[s].cap].regs |= G[g].regs;
}

/* accel_graph_update(g, src). The model does not know the recorded topology: for two ready
 * graphs the library's answer (OK or GRAPH_MISMATCH) decides, and an update makes g hold what
 * src holds (its pool and its pins), dropping its own. A source whose private pool no user
 * holds is given a pool object first (accel_graph_pool, then the user reference released), so
 * that the two graphs share one model pool. */
static void op_graph_update(void) {
  accel_status_t gs, ss;
  int g = pick_graph(&gs), src = pick_graph(&ss);
  if (g < 0 || src < 0) return;
  accel_status_t want = gs != ACCEL_OK ? gs : ss;
  if (want == ACCEL_OK && g == src) want = ACCEL_ERROR_INVALID_ARGUMENT;
  if (want == ACCEL_OK && (G[g].state != G_READY || G[src].state != G_READY))
    want = ACCEL_ERROR_STATE;
  if (want == ACCEL_OK && G[src].pool < 0) {
    int p = -1;
    for (int i = 0; i < NP && p < 0; ++i) if (P[i].st != H_LIVE) p = i;
    if (p < 0) return; /* no room for the shared pool object: not modelled */
    accel_pool_t *h = NULL;
    expect("accel_graph_pool", accel_graph_pool(G[src].h, &h), ACCEL_OK);
    expect("accel_pool_release", accel_pool_release(h), ACCEL_OK);
    forget_dead(h);
    P[p] = (mpool_t){H_LIVE, h, 0, G[src].arena};
    G[src].pool = p;
  }
  accel_status_t st = accel_graph_update(G[g].h, G[src].h);
  if (want == ACCEL_OK && st == ACCEL_ERROR_GRAPH_MISMATCH) return; /* another topology */
  expect("accel_graph_update", st, want);
  if (st != ACCEL_OK) return;
  int old = G[g].pool;
  G[g].pool = G[src].pool;
  G[g].arena = G[src].arena;
  G[g].regs = G[src].regs;
  pool_maybe_dead(old);
  for (int r = 0; r < NR; ++r) /* the old contents' release may be retired: a sync decides */
    if (R[r].st == R_ZOMBIE && !reg_pinned(r)) R[r].st = R_UNCERTAIN;
}

/* accel_graph_capture_if / _while and their ends, balanced with nothing between (the model
 * does not track regions): on a capturing stream the region is recorded into its capture,
 * outside one it is captured privately and replayed at its end. The flag: NULL or a host
 * address (INVALID_ARGUMENT), or a model allocation, whose size and liveness the library
 * decides (OK or INVALID_ARGUMENT); max_iterations 0 is INVALID_ARGUMENT. An end of the other
 * kind first, or an end with nothing open, is STATE. */
static void op_cond(void) {
  accel_status_t ss;
  int s, a;
  accel_stream_t *sh;
  if (!pick_stream(&s, &sh, &ss)) return;
  const unsigned how = u8();
  const int32_t *flag = pick_ptr(&a);
  const int is_while = how & 1, wrong_end_first = how & 2;
  const uint32_t max = is_while ? (how >> 2) % 3 : 1;
  accel_status_t want = ss;
  if (want == ACCEL_OK && (a < 0 || max == 0)) want = ACCEL_ERROR_INVALID_ARGUMENT;
  /* a model allocation the library finds too small or freed */
  const accel_status_t other = ss == ACCEL_OK && a >= 0 ? ACCEL_ERROR_INVALID_ARGUMENT : want;
  if (want == ACCEL_OK && s < 0) want = ACCEL_ERROR_INVALID_ARGUMENT; /* the default stream */
  if (want == ACCEL_OK && S[s].cap >= 0 && G[S[s].cap].invalid)
    want = ACCEL_ERROR_CAPTURE_INVALIDATED;
  accel_status_t st = is_while ? accel_graph_capture_while(sh, flag, max)
                               : accel_graph_capture_if(sh, flag);
  expect2(is_while ? "accel_graph_capture_while" : "accel_graph_capture_if", st, want, other);
  accel_status_t end_want = ss != ACCEL_OK ? ss : ACCEL_ERROR_STATE;
  if (wrong_end_first || st != ACCEL_OK)
    expect("accel_graph_capture_end_(other kind)",
           is_while ? accel_graph_capture_end_if(sh) : accel_graph_capture_end_while(sh),
           end_want);
  if (st != ACCEL_OK) return;
  expect(is_while ? "accel_graph_capture_end_while" : "accel_graph_capture_end_if",
         is_while ? accel_graph_capture_end_while(sh) : accel_graph_capture_end_if(sh),
         ACCEL_OK);
}

static void op_graph_pool(void) {
  accel_status_t hs;
  int g = pick_graph(&hs);
  if (g < 0) return;
  accel_pool_t *h = NULL;
  accel_status_t want = hs != ACCEL_OK ? hs : G[g].state == G_EMPTY ? ACCEL_ERROR_STATE : ACCEL_OK;
  accel_status_t st = accel_graph_pool(G[g].h, &h);
  expect("accel_graph_pool", st, want);
  if (st != ACCEL_OK) return;
  if (G[g].pool >= 0) {
    if (h != P[G[g].pool].h) fail("accel_graph_pool returned another pool");
    P[G[g].pool].user_refs++;
    return;
  }
  int p = -1;
  for (int i = 0; i < NP && p < 0; ++i) if (P[i].st != H_LIVE) p = i;
  if (p < 0) {
    expect("accel_pool_release", accel_pool_release(h), ACCEL_OK);
    return;
  }
  forget_dead(h);
  P[p] = (mpool_t){H_LIVE, h, 1, G[g].arena};
  G[g].pool = p;
}

static void op_pool_create_release(int create) {
  unsigned p = u8() % NP;
  if (create) {
    if (P[p].st == H_LIVE) return;
    accel_pool_t *h = NULL;
    expect("accel_graph_pool_create", accel_graph_pool_create(dev, &h), ACCEL_OK);
    forget_dead(h);
    P[p] = (mpool_t){H_LIVE, h, 1, next_arena_id++};
    return;
  }
  if (P[p].st == H_NONE || (P[p].st == H_LIVE && P[p].user_refs == 0)) return;
  accel_status_t want = P[p].st == H_DEAD ? ACCEL_ERROR_INVALID_HANDLE : ACCEL_OK;
  expect("accel_pool_release", accel_pool_release(P[p].h), want);
  if (want != ACCEL_OK) return;
  P[p].user_refs--;
  pool_maybe_dead((int)p);
}

static void op_event(void) {
  unsigned what = u8() % 5, e = u8() % NE;
  if (what == 0) {
    if (E[e].st == H_LIVE) return;
    accel_event_t *h = NULL;
    expect("accel_event_create", accel_event_create(dev, u8() % 2, &h), ACCEL_OK);
    forget_dead(h);
    E[e] = (mevent_t){H_LIVE, h};
    return;
  }
  if (E[e].st == H_NONE) return;
  accel_status_t es = E[e].st == H_DEAD ? ACCEL_ERROR_INVALID_HANDLE : ACCEL_OK;
  if (what == 1) {
    expect("accel_event_release/destroy",
           RELEASE_OR_ALIAS(accel_event_release, accel_event_destroy, E[e].h), es);
    E[e].st = H_DEAD;
    return;
  }
  if (what == 2) {
    accel_status_t want = es != ACCEL_OK ? es : unsafe(-1);
    expect2("accel_event_query/synchronize",
            u8() % 2 ? accel_event_query(E[e].h) : accel_event_synchronize(E[e].h), want,
            want == ACCEL_OK ? ACCEL_ERROR_NOT_READY : want);
    return;
  }
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  accel_status_t want = es != ACCEL_OK ? es : hs;
  if (what == 3) {
    /* recording inside a capture creates fork/join edges the model does not follow */
    if (want == ACCEL_OK && s >= 0 && S[s].cap >= 0) return;
    expect("accel_event_record", accel_event_record(E[e].h, h), want);
  } else {
    if (want == ACCEL_OK && s >= 0 && S[s].cap >= 0) {
      want = ACCEL_ERROR_ILLEGAL_IN_CAPTURE; /* an event recorded outside the capture */
      G[S[s].cap].invalid = 1;
    }
    expect("accel_stream_wait_event", accel_stream_wait_event(h, E[e].h), want);
  }
}

/* Native handles on the CPU backend: argument and handle checks first, then UNSUPPORTED (no
 * vendor objects), with no effect on captures, streams or memory. */
static void op_native(unsigned call) {
  accel_native_t n;
  memset(&n, 0, sizeof n);
  unsigned shape = u8() % 4; /* 0: struct_size too small, 1: other backend named, else valid */
  n.struct_size = shape == 0 ? (uint32_t)(u8() % sizeof n) : (uint32_t)sizeof n;
  if (shape == 1) snprintf(n.backend, sizeof n.backend, "opencl");
  n.queue = u8() % 4 ? host_buf : NULL;
  accel_status_t small = shape == 0 ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_OK;
  accel_status_t want;
  if (call % 6 == 0) {
    want = small ? small : ACCEL_ERROR_UNSUPPORTED;
    expect("accel_device_native", accel_device_native(dev, &n), want);
    return;
  }
  if (call % 6 == 1) {
    accel_device_t *d = NULL;
    want = small ? small : shape == 1 ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_ERROR_UNSUPPORTED;
    expect("accel_device_wrap_native", accel_device_wrap_native("cpu", &n, &d), want);
    return;
  }
  if (call % 6 == 2) {
    accel_stream_t *w = NULL;
    want = small                          ? small
           : shape == 1 || !n.queue ? ACCEL_ERROR_INVALID_ARGUMENT
                                          : ACCEL_ERROR_UNSUPPORTED;
    expect("accel_stream_wrap_native", accel_stream_wrap_native(dev, &n, &w), want);
    return;
  }
  if (call % 6 == 3) {
    unsigned e = u8() % NE;
    if (E[e].st == H_NONE) return;
    want = E[e].st == H_DEAD ? ACCEL_ERROR_INVALID_HANDLE
           : small           ? small
                             : ACCEL_ERROR_UNSUPPORTED;
    expect("accel_event_native", accel_event_native(E[e].h, &n), want);
    return;
  }
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  if (call % 6 == 4) {
    want = hs ? hs : small ? small : ACCEL_ERROR_UNSUPPORTED;
    expect("accel_stream_native", accel_stream_native(h, &n), want);
  } else {
    want = hs ? hs : !n.queue ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_ERROR_UNSUPPORTED;
    expect("accel_stream_wait_native_event", accel_stream_wait_native_event(h, n.queue), want);
  }
}

/* Communicators without MPI in the process (the fuzzer never initialises it, so it names no
 * engine that would): creation with a malformed or absent engine name, and every call of
 * accel_comm.h on something that is not a communicator, which must be refused by its handle
 * check before anything else is looked at. */
/* ---------------------------------------------------------------------------------------- */
/* a live communicator (C): the fuzzhost engine, one rank */

/* An all-reduce as the model chose it. Sub-op 4 of op_live_comm issues the last one again
 * after whatever the input did in between (a stream, the communicator or a registration
 * destroyed, a capture begun): the core remembers a call it validated (core/comm_enqueue.c,
 * rerun_validated) and must see every such change. */
typedef struct {
  int set, stream;                /* stream slot, -1: the default stream */
  int reg;                        /* recv is reg_buf[reg]; -1: scratch slot recv_slot */
  unsigned send_slot, recv_slot, dtype, op, misalign, past_end;
  size_t count;
} mcall_t;
static mcall_t last_call;

static mcall_t pick_call(void) {
  mcall_t k = {.set = 1};
  k.stream = (int)(u8() % (NS + 1)) - 1;
  const unsigned b = u8();
  k.send_slot = b % NSLOTS;
  k.recv_slot = (b >> 3) % NSLOTS;
  k.reg = b >> 6 == 3 ? (int)(u8() % NR) : -1;
  const unsigned c = u8();
  k.dtype = c % 4;      /* 3: not a dtype */
  k.op = (c >> 2) % 4;  /* 3: not a reduce op */
  k.misalign = (c >> 4) % 8 == 0;
  k.past_end = (c >> 7) != 0 && u8() % 4 == 0;
  /* past_end: more than the whole scratch buffer, in any dtype */
  k.count = k.past_end ? 2u * NSLOTS * SLOT_FLOATS + 1 : u8() % (SLOT_FLOATS + 1);
  return k;
}

static void issue_call(const mcall_t *k) {
  if (C.st == H_NONE) return;
  accel_stream_t *h = default_stream;
  accel_status_t want = C.st == H_DEAD ? ACCEL_ERROR_INVALID_HANDLE : ACCEL_OK;
  if (k->stream >= 0) {
    if (S[k->stream].st == H_NONE) return;
    h = S[k->stream].h;
    if (S[k->stream].st == H_DEAD) want = ACCEL_ERROR_INVALID_HANDLE;
  }
  if (k->reg >= 0 && R[k->reg].st == R_UNCERTAIN) return;
  static const accel_dtype_t dtypes[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16, (accel_dtype_t)9};
  const accel_dtype_t dt = dtypes[k->dtype];
  const void *send = (char *)(scratch + k->send_slot * SLOT_FLOATS) + k->misalign;
  void *recv = k->reg >= 0 ? (void *)reg_buf[k->reg] : scratch + k->recv_slot * SLOT_FLOATS;
  if (want == ACCEL_OK) {
    int invalid = k->dtype == 3 || k->op == 3;
    if (k->count > 0) {
      invalid |= k->misalign || k->past_end; /* misaligned send; past the buffers' ends */
      invalid |= k->reg >= 0 && (R[k->reg].st != R_LIVE || R[k->reg].half ||
                                 R[k->reg].ro); /* recv written from the block's start */
    }
    want = invalid ? ACCEL_ERROR_INVALID_ARGUMENT : submit_status(k->stream);
  }
  accel_status_t st = accel_all_reduce(C.h, h, send, recv, k->count, dt,
                                       (accel_reduce_op_t)k->op);
  expect("accel_all_reduce (live communicator)", st, want);
  if (st == ACCEL_OK && k->reg >= 0 && k->count > 0 && k->stream >= 0 && S[k->stream].cap >= 0)
    G[S[k->stream].cap].regs |= 1u << k->reg;
}

/* Create or destroy the communicator, issue an all-reduce on it, or issue the last one again;
 * sub-op 0 is the older check of a destroy on a non-communicator. */
static void op_live_comm(accel_comm_t *bad) {
  switch (u8() % 5) {
    case 0:
      expect("accel_comm_destroy", accel_comm_destroy(bad), ACCEL_ERROR_INVALID_HANDLE);
      break;
    case 1:
      if (C.st == H_LIVE) {
        expect("accel_comm_release/destroy",
               RELEASE_OR_ALIAS(accel_comm_release, accel_comm_destroy, C.h), ACCEL_OK);
        C.st = H_DEAD;
      } else {
        accel_comm_t *c = NULL;
        accel_status_t want = unsafe_any();
        accel_status_t st = accel_comm_create_mpi(dev, NULL, "fuzzhost", &c);
        expect("accel_comm_create_mpi (fuzzhost)", st, want);
        if (st == ACCEL_OK) {
          forget_dead(c);
          C.st = H_LIVE;
          C.h = c;
        }
      }
      break;
    case 2:
    case 3:
      last_call = pick_call();
      issue_call(&last_call);
      break;
    default:
      if (last_call.set) issue_call(&last_call);
  }
}

static void op_comm(unsigned call) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  accel_comm_t *c = NULL, *bad = u8() % 2 ? NULL : (accel_comm_t *)(void *)default_stream;
  float *p = scratch;
  switch (call % 4) {
    case 0: {
      const int malformed = u8() % 2;
      accel_status_t want = unsafe_any();
      if (want == ACCEL_OK)
        want = malformed ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_ERROR_UNAVAILABLE;
      expect("accel_comm_create_mpi",
             accel_comm_create_mpi(dev, NULL, malformed ? "no/such" : "nosuchengine", &c), want);
      if (c) fail("accel_comm_create_mpi returned a communicator with no engine");
      break;
    }
    case 1:
      if (!pick_stream(&s, &h, &hs)) return;
      expect("accel_all_reduce",
             accel_all_reduce(bad, h, p, p, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
             ACCEL_ERROR_INVALID_HANDLE);
      expect("accel_all_gather_downcast",
             accel_all_gather_downcast(bad, h, p, p + 8, 4, ACCEL_BF16),
             ACCEL_ERROR_INVALID_HANDLE);
      break;
    case 2: {
      int r = 0;
      expect("accel_comm_rank", accel_comm_rank(bad, &r), ACCEL_ERROR_INVALID_HANDLE);
      expect("accel_comm_get_error", accel_comm_get_error(bad), ACCEL_ERROR_INVALID_HANDLE);
      expect("accel_comm_split", accel_comm_split(bad, 0, 0, &c), ACCEL_ERROR_INVALID_HANDLE);
      if (accel_comm_engine_name(bad)) fail("accel_comm_engine_name of a non-communicator");
      break;
    }
    default:
      op_live_comm(bad);
  }
}

/* Memory you can see (docs/MEMORY.md): growable stats, a graph's figures, the snapshot and
 * tags. None is illegal during a capture; the model checks their rules and figures. */
static void op_memory_view(unsigned call) {
  accel_memory_stats_ex_t ex = {.struct_size = sizeof ex};
  accel_memory_stats_t ms;
  switch (call % 4) {
    case 0:
      expect("accel_memory_stats_ex", accel_memory_stats_ex(dev, &ex), ACCEL_OK);
      expect("accel_memory_stats", accel_memory_stats(dev, &ms), ACCEL_OK);
      if (ex.struct_size != sizeof ex || ex.stats.allocated_bytes != ms.allocated_bytes ||
          ex.largest_free_block > ms.reserved_bytes)
        fail("accel_memory_stats_ex disagrees with accel_memory_stats");
      ex.struct_size = sizeof(size_t);
      expect("accel_memory_stats_ex (short struct)", accel_memory_stats_ex(dev, &ex),
             ACCEL_ERROR_INVALID_ARGUMENT);
      break;
    case 1: {
      accel_status_t hs = ACCEL_OK;
      int g = pick_graph(&hs);
      if (g < 0) return;
      accel_graph_memory_info_t gi = {.struct_size = sizeof gi};
      expect("accel_graph_memory_info", accel_graph_memory_info(G[g].h, &gi), hs);
      if (hs == ACCEL_OK && (G[g].state == G_EMPTY) != (gi.pool_graphs == 0))
        fail("accel_graph_memory_info: pool_graphs %u for a graph in state %d", gi.pool_graphs,
             (int)G[g].state);
      break;
    }
    case 2: {
      char *json = NULL;
      size_t len = 0;
      expect("accel_memory_snapshot", accel_memory_snapshot(dev, &json, &len), ACCEL_OK);
      if (json && strlen(json) != len) fail("accel_memory_snapshot: length %zu", len);
      accel_memory_snapshot_free(json);
      expect("accel_memory_snapshot (NULL)", accel_memory_snapshot(dev, NULL, NULL),
             ACCEL_ERROR_INVALID_ARGUMENT);
      break;
    }
    default:
      expect("accel_memory_tag_pop (none)", accel_memory_tag_pop(), ACCEL_ERROR_STATE);
      expect("accel_memory_tag_push", accel_memory_tag_push("fuzz"), ACCEL_OK);
      expect("accel_memory_tag_push (NULL)", accel_memory_tag_push(NULL),
             ACCEL_ERROR_INVALID_ARGUMENT);
      expect("accel_memory_tag_pop", accel_memory_tag_pop(), ACCEL_OK);
  }
}

static void op_device(void) {
  unsigned raw = u8();
  if (raw >= 228 && raw < 240) { /* below the native handles (added after them) */
    op_memory_view(raw - 228);
    return;
  }
  if (raw >= 252) { /* the very top (added last): communicators */
    op_comm(raw - 252);
    return;
  }
  if (raw >= 240) { /* the top of the byte range: native handles (added later) */
    op_native(raw - 240);
    return;
  }
  unsigned what = raw % 5;
  accel_memory_stats_t ms;
  void *hp = NULL;
  switch (what) {
    case 0: expect("accel_device_synchronize", accel_device_synchronize(dev), unsafe(-1)); break;
    case 1: {
      accel_status_t want = unsafe(-1);
      expect("accel_memcpy", accel_memcpy(dev, scratch, host_buf, 64), want);
      break;
    }
    case 2: expect("accel_empty_cache", accel_empty_cache(dev), ACCEL_OK); break;
    case 3: expect("accel_memory_stats", accel_memory_stats(dev, &ms), ACCEL_OK); break;
    default:
      expect("accel_host_alloc", accel_host_alloc(dev, 100, &hp), ACCEL_OK);
      expect("accel_host_free", accel_host_free(dev, hp), ACCEL_OK);
      expect("accel_host_free (again)", accel_host_free(dev, hp), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

/* ---------------------------------------------------------------------------------------- */
/* external memory and DLPack */

/* Pins of registration r: live graphs whose work uses it, imports lying in it. */
static int reg_pinned(int r) {
  int n = 0;
  for (int g = 0; g < NG; ++g) n += G[g].st == H_LIVE && G[g].state != G_EMPTY && (G[g].regs >> r & 1);
  for (int i = 0; i < NI; ++i) n += I[i].st == H_LIVE && I[i].reg == r;
  return n;
}

static int capture_active(void) {
  for (int g = 0; g < NG; ++g) if (G[g].st == H_LIVE && G[g].state == G_CAPTURING) return 1;
  return 0;
}

/* Deleter calls import slot i must have seen: all but the one of a live import, or of a
 * released import in a shared registration that has not ended yet. */
static unsigned deletes_due(int i) {
  const int waits = !I[i].borrow && (I[i].st == H_LIVE || (I[i].st == H_DEAD && I[i].shared &&
                                                           R[I[i].reg].st != R_NONE));
  return deletes_expected[i] - (unsigned)waits;
}

static void check_deletes(void) {
  for (int i = 0; i < NI; ++i)
    if (deletes_seen[i] != deletes_due(i))
      fail("import slot %d: %u deleter calls, %u expected", i, deletes_seen[i], deletes_due(i));
}

/* Shared registration r ended: the deleters of its released imports ran. */
static void reg_ended(int r) {
  R[r].st = R_NONE;
  for (int k = 0; k < NI; ++k)
    if (I[k].st == H_DEAD && I[k].reg == r) I[k].shared = 0;
}

/* After a device synchronize outside captures: the retired releases ran, UNCERTAIN
 * registrations ended (and with them the deleters waiting for their end). */
static void synchronized(void) {
  for (int r = 0; r < NR; ++r) if (R[r].st == R_UNCERTAIN) reg_ended(r);
  check_deletes();
}

/* Settles UNCERTAIN registrations with a device synchronize. */
static void settle(void) {
  int any = 0;
  for (int r = 0; r < NR; ++r) any |= R[r].st == R_UNCERTAIN;
  if (!any || capture_active()) return;
  expect("accel_device_synchronize", accel_device_synchronize(dev), ACCEL_OK);
  synchronized();
}

static void op_register(void) {
  unsigned r = u8() % NR, variant = u8() % 6;
  settle();
  if (R[r].st == R_UNCERTAIN) return;
  void *dptr = NULL, *ptr = reg_buf[r];
  size_t size = REG_BYTES;
  unsigned flags = variant == 1 ? ACCEL_REGISTER_READ_ONLY : variant == 2 ? 0x40u : 0u;
  if (variant == 3) size = 0;
  if (variant == 4) ptr = scratch; /* an allocation: overlaps */
  if (variant == 5) size = SIZE_MAX; /* wraps */
  accel_status_t want = variant == 2 || variant == 3 ? ACCEL_ERROR_INVALID_ARGUMENT : unsafe(-1);
  if (want == ACCEL_OK && (variant >= 4 || R[r].st != R_NONE)) want = ACCEL_ERROR_INVALID_ARGUMENT;
  accel_status_t st = accel_memory_register(dev, ptr, size, flags, &dptr);
  expect("accel_memory_register", st, want);
  if (st != ACCEL_OK) return;
  if (dptr != ptr) fail("accel_memory_register gave %p for %p", dptr, ptr);
  R[r] = (mreg_t){R_LIVE, 0, 0, variant == 1};
}

static void op_unregister(void) {
  unsigned r = u8() % NR, interior = u8() % 4 == 0;
  settle();
  if (R[r].st == R_UNCERTAIN) return;
  accel_status_t want = unsafe(-1);
  if (want == ACCEL_OK) {
    if (R[r].st != R_LIVE || interior || R[r].shared) want = ACCEL_ERROR_INVALID_ARGUMENT;
    else if (reg_pinned((int)r)) want = ACCEL_ERROR_STATE;
  }
  expect("accel_memory_unregister", accel_memory_unregister(dev, reg_buf[r] + interior), want);
  if (want == ACCEL_OK) R[r].st = R_NONE;
}

/* Frees a registrable block: refused while any registration covers it (then a free through
 * accel_free, which is never the way to free it); a freed block is replaced at once. */
static void op_free_reg(void) {
  unsigned r = u8() % NR, through_free = u8() % 4 == 0;
  settle();
  if (R[r].st == R_UNCERTAIN) return;
  if (through_free) {
    expect("accel_free (host block)", accel_free(dev, reg_buf[r]), ACCEL_ERROR_INVALID_ARGUMENT);
    return;
  }
  const accel_status_t want = R[r].st == R_NONE ? ACCEL_OK : ACCEL_ERROR_STATE;
  expect("accel_host_free (registrable block)", accel_host_free(dev, reg_buf[r]), want);
  if (want == ACCEL_OK &&
      accel_host_alloc(dev, REG_BYTES, (void **)&reg_buf[r]) != ACCEL_OK)
    fail("accel_host_alloc of a new block: %s", accel_last_error());
}

/* fill, scale, norm or memset on a registrable buffer (registered or not, maybe past its end) */
static void op_kernel_reg(void) {
  int s;
  accel_stream_t *h;
  accel_status_t hs;
  if (!pick_stream(&s, &h, &hs)) return;
  unsigned r = u8() % NR, which = u8() % 4, past_end = u8() % 8 == 0;
  if (R[r].st == R_UNCERTAIN) return;
  size_t numel = past_end ? SLOT_FLOATS + 4 : 1 + u8() % SLOT_FLOATS;
  accel_tensor_t t = {reg_buf[r], numel, ACCEL_F32};
  accel_status_t want = hs;
  if (want == ACCEL_OK) {
    if (R[r].st != R_LIVE || R[r].half || past_end) want = ACCEL_ERROR_INVALID_ARGUMENT;
    else if (which != 2 && R[r].ro) want = ACCEL_ERROR_INVALID_ARGUMENT;
    else want = submit_status(s);
  }
  accel_status_t st;
  const char *name;
  switch (which) {
    case 0: name = "accel_fill (registered)"; st = accel_fill(h, &t, 1, 0.25f); break;
    case 1: name = "accel_scale (registered)"; st = accel_scale(h, &t, 1, scalars); break;
    case 2:
      name = "accel_multi_tensor_norm (registered)";
      st = accel_multi_tensor_norm(h, &t, 1, 2.0f, scalars + 1);
      break;
    default:
      name = "accel_memset_async (registered)";
      st = accel_memset_async(h, reg_buf[r], 0, numel * sizeof(float));
  }
  expect(name, st, want);
  if (st == ACCEL_OK && s >= 0 && S[s].cap >= 0) G[S[s].cap].regs |= 1u << r;
}

static void count_delete_v(accel_dl_managed_tensor_versioned_t *self) {
  deletes_seen[(uintptr_t)self->manager_ctx]++;
}

static void count_delete_l(accel_dl_managed_tensor_t *self) {
  deletes_seen[(uintptr_t)self->manager_ctx]++;
}

/* Imports block r (or its upper half) into slot i: a registration of its own when the range is
 * registered by nothing, else a hold on the registration it lies in (joining a shared one). */
static void op_import(void) {
  unsigned i = u8() % NI, r = u8() % NR, kb = u8(), kind = kb % 5, half = kb / 5 % 2;
  settle();
  /* the slot's structs are reused only once accel let go of the last ones */
  if (I[i].st == H_LIVE || R[r].st == R_UNCERTAIN || deletes_seen[i] != deletes_expected[i])
    return;
  const size_t skip = half ? SLOT_FLOATS / 2 : 0;
  import_shape[i] = (int64_t)(SLOT_FLOATS - skip);
  accel_dl_tensor_t t = {.data = reg_buf[r] + skip, .device = {ACCEL_DL_CPU, 0}, .ndim = 1,
                         .dtype = {ACCEL_DL_FLOAT, 32, 1}, .shape = &import_shape[i]};
  accel_tensor_t view;
  accel_dlpack_import_t *h = NULL;
  /* a released shared registration, or the whole block over a registration of its half:
   * overlaps */
  const int overlaps = R[r].st == R_ZOMBIE || (R[r].st == R_LIVE && R[r].half && !half);
  accel_status_t want = kind == 3 ? ACCEL_ERROR_UNSUPPORTED /* DLPack 2.0 */
                        : overlaps ? ACCEL_ERROR_INVALID_ARGUMENT
                                   : ACCEL_OK;
  accel_status_t st;
  if (kind == 0 || kind == 4) {
    managed_l[i] = (accel_dl_managed_tensor_t){t, (void *)(uintptr_t)i, count_delete_l};
    st = accel_dlpack_import_legacy(dev, &managed_l[i], kind == 4 ? ACCEL_DLPACK_IMPORT_BORROW : 0,
                                    &view, &h);
  } else {
    managed_v[i] = (accel_dl_managed_tensor_versioned_t){
        {kind == 3 ? 2u : 1u, 0}, (void *)(uintptr_t)i, count_delete_v,
        kind == 2 ? ACCEL_DL_FLAG_READ_ONLY : 0, t};
    st = accel_dlpack_import(dev, &managed_v[i], 0, &view, &h);
  }
  expect("accel_dlpack_import", st, want);
  if (st != ACCEL_OK) return;
  if (view.data != reg_buf[r] + skip || view.numel != SLOT_FLOATS - skip) fail("import view");
  for (int k = 0; k < NI; ++k) if (I[k].st == H_DEAD && I[k].h == h) I[k].st = H_NONE;
  deletes_expected[i] += kind != 4;
  if (R[r].st == R_NONE) R[r] = (mreg_t){R_LIVE, 1, (int)half, kind == 2};
  I[i] = (mimport_t){H_LIVE, h, (int)r, R[r].shared, kind == 4};
}

/* Releases import i (only outside captures: the synchronize after it settles the release). */
static void release_import(int i) {
  accel_status_t want = I[i].st == H_DEAD ? ACCEL_ERROR_INVALID_HANDLE : ACCEL_OK;
  expect("accel_dlpack_release", accel_dlpack_release(I[i].h), want);
  expect("accel_device_synchronize", accel_device_synchronize(dev), ACCEL_OK);
  if (want != ACCEL_OK) return;
  I[i].st = H_DEAD;
  const int r = I[i].reg;
  int live = 0; /* imports still in r */
  for (int k = 0; k < NI; ++k) live += I[k].st == H_LIVE && I[k].reg == r;
  if (I[i].shared && !live) {
    if (reg_pinned(r)) R[r].st = R_ZOMBIE;
    else reg_ended(r);
  }
  synchronized();
}

static void op_release(void) {
  unsigned i = u8() % NI;
  if (I[i].st == H_NONE || capture_active()) return;
  settle();
  release_import((int)i);
}

/* ---------------------------------------------------------------------------------------- */

static void teardown_input(void) {
  op_index = 100000;
  for (int g = 0; g < NG; ++g)
    if (G[g].st == H_LIVE && G[g].state == G_CAPTURING) end_capture(g); /* abandoned */
  for (int g = 0; g < NG; ++g)
    if (G[g].st == H_LIVE) {
      expect("accel_graph_destroy", accel_graph_destroy(G[g].h), ACCEL_OK);
      graph_clear(g);
    }
  for (int i = 0; i < NI; ++i)
    if (I[i].st == H_LIVE) release_import(i);
  settle();
  for (int r = 0; r < NR; ++r) {
    if (R[r].st == R_LIVE && !R[r].shared)
      expect("accel_memory_unregister", accel_memory_unregister(dev, reg_buf[r]), ACCEL_OK);
    else if (R[r].st != R_NONE)
      fail("registration %d left in state %d after teardown", r, R[r].st);
  }
  for (int i = 0; i < NI; ++i)
    if (deletes_seen[i] != deletes_expected[i])
      fail("import slot %d: %u deleter calls, %u expected", i, deletes_seen[i],
           deletes_expected[i]);
  for (int p = 0; p < NP; ++p)
    while (P[p].st == H_LIVE && P[p].user_refs > 0) {
      expect("accel_pool_release", accel_pool_release(P[p].h), ACCEL_OK);
      P[p].user_refs--;
    }
  if (C.st == H_LIVE) expect("accel_comm_destroy", accel_comm_destroy(C.h), ACCEL_OK);
  for (int a = 0; a < NA; ++a)
    if (A[a].st == H_LIVE) expect("accel_free", accel_free(dev, A[a].p), ACCEL_OK);
  for (int e = 0; e < NE; ++e)
    if (E[e].st == H_LIVE) expect("accel_event_destroy", accel_event_destroy(E[e].h), ACCEL_OK);
  for (int s = 0; s < NS; ++s)
    if (S[s].st == H_LIVE) expect("accel_stream_destroy", accel_stream_destroy(S[s].h), ACCEL_OK);
  expect("accel_device_synchronize", accel_device_synchronize(dev), ACCEL_OK);
  expect("accel_empty_cache", accel_empty_cache(dev), ACCEL_OK);
  accel_memory_stats_t ms;
  expect("accel_memory_stats", accel_memory_stats(dev, &ms), ACCEL_OK);
  if (ms.allocated_bytes != baseline.allocated_bytes || ms.active_blocks != baseline.active_blocks)
    fail("leak: allocated %llu bytes in %llu blocks, baseline %llu in %llu",
         (unsigned long long)ms.allocated_bytes, (unsigned long long)ms.active_blocks,
         (unsigned long long)baseline.allocated_bytes, (unsigned long long)baseline.active_blocks);
  if (ms.reserved_bytes != baseline.reserved_bytes || ms.graph_pool_reserved_bytes != 0)
    fail("reserved %llu bytes (graph pools %llu) after teardown, baseline %llu",
         (unsigned long long)ms.reserved_bytes, (unsigned long long)ms.graph_pool_reserved_bytes,
         (unsigned long long)baseline.reserved_bytes);
  memset(S, 0, sizeof S);
  memset(G, 0, sizeof G);
  memset(E, 0, sizeof E);
  memset(P, 0, sizeof P);
  memset(A, 0, sizeof A);
  memset(R, 0, sizeof R);
  memset(I, 0, sizeof I);
  memset(&C, 0, sizeof C);
  memset(&last_call, 0, sizeof last_call);
  memset(deletes_seen, 0, sizeof deletes_seen);
  memset(deletes_expected, 0, sizeof deletes_expected);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ensure_device();
  in_data = data;
  in_size = size;
  in_pos = 0;
  for (op_index = 0; in_pos < in_size && op_index < 256; ++op_index) {
    /* op bytes 240..255 select the operations added later (interop 240..245, graph update
     * 246, conditional regions 247, mixed precision 248..255), so the corpus written before
     * them (op bytes below 240) decodes as it did */
    const unsigned op = u8();
    if (op >= 248) {
      op_amp();
      continue;
    }
    switch (op < 240 ? op % 24 : op < 246 ? 24 + (op - 240) : 30) {
      case 0: case 1: op_stream_create(); break;
      case 2: op_stream_destroy(); break;
      case 3: op_stream_sync_query(0); break;
      case 4: op_stream_sync_query(1); break;
      case 5: op_stream_flush(); break;
      case 6: op_malloc(); break;
      case 7: op_free(); break;
      case 8: op_malloc_async(); break;
      case 9: op_free_async(); break;
      case 10: case 11: op_copy(); break;
      case 12: case 13: op_kernel(); break;
      case 14: op_graph_create(); break;
      case 15: op_graph_destroy_reset(u8() % 2); break;
      case 16: case 17: op_capture_begin(); break;
      case 18: op_capture_end(); break;
      case 19: op_replay(); break;
      case 20: op_graph_pool(); break;
      case 21: op_pool_create_release(u8() % 2); break;
      case 22: op_event(); break;
      case 23: op_device(); break;
      case 24: op_register(); break;
      case 25: op_unregister(); break;
      case 26: op_kernel_reg(); break;
      case 27: op_import(); break;
      case 28: op_release(); break;
      case 29: op_free_reg(); break;
      default: op == 247 ? op_cond() : op_graph_update(); break; /* op bytes 246, 247 */
    }
  }
  teardown_input();
  return 0;
}
