/*
 * Persistent requests for replayed graphs, run under mpirun with ACCEL_COMM_MPI_PERSISTENT=1:
 *   comm_persist --device cpu
 * For every collective, reduce op and dtype (and the in-place forms, send/recv pairs, the fused
 * downcast): the eager result, then a graph (restore the output buffer, the collective)
 * captured once and replayed 100 times; after every replay the output equals the eager one
 * bitwise. While the graph lives the MPI engine holds one persistent request per recorded
 * collective (its live count, read through dlsym on the plugin, proves the persistent path
 * ran); destroying the graph frees them. Exit 77 when the device or the MPI engine is absent.
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "comm_util.h"

#define REPLAYS 100

typedef enum { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, SEND_RECV, DOWNCAST } kind_t;
static const char *const kind_names[] = {"all_reduce", "reduce_scatter", "all_gather",
                                         "broadcast",  "send_recv",      "all_gather_downcast"};
static const char *const op_names[] = {"sum", "max", "min"};

typedef struct ctx {
  accel_device_t *dev;
  accel_stream_t *s;
  accel_comm_t *comm;
  int rank, size;
  long (*live)(void); /* the MPI engine's count of prepared requests */
} ctx_t;

/* One case: what is issued and on which buffers. out is what the collective writes (in
 * place: it also holds the input); pristine is out's content before the collective. */
typedef struct coll {
  kind_t kind;
  accel_dtype_t dt;
  int op, in_place;
  size_t n;           /* per-rank count of the public call */
  void *send, *out, *pristine;
  size_t send_bytes, out_bytes;
} coll_t;

static void *dev_alloc(ctx_t *c, size_t bytes) {
  void *p = NULL;
  OK(accel_malloc(c->dev, bytes ? bytes : 1, &p));
  return p;
}

/* A host array of n elements of dt (or F32 for the downcast's input) from rough values. */
static void *host_input(ctx_t *c, accel_dtype_t dt, size_t n, unsigned salt) {
  void *h = malloc(n * accel_dtype_size(dt) + 1);
  for (size_t i = 0; i < n; ++i) elem_set(h, dt, i, rough_value(c->rank * 31 + (int)salt, i));
  return h;
}

static void setup(ctx_t *c, coll_t *k) {
  const size_t es = accel_dtype_size(k->kind == DOWNCAST ? ACCEL_F32 : k->dt);
  const size_t oes = accel_dtype_size(k->dt), size = (size_t)c->size;
  size_t send_n = k->n, out_n = k->n;
  if (k->kind == REDUCE_SCATTER) send_n = k->n * size;
  if (k->kind == ALL_GATHER || k->kind == DOWNCAST) out_n = k->n * size;
  k->send_bytes = send_n * es;
  k->out_bytes = out_n * oes;
  k->out = dev_alloc(c, k->out_bytes);
  k->pristine = dev_alloc(c, k->out_bytes);
  /* out starts as a poison pattern, with the input where an in-place collective reads it */
  unsigned char *init = malloc(k->out_bytes + 1);
  memset(init, 0xa5, k->out_bytes);
  void *in = host_input(c, k->kind == DOWNCAST ? ACCEL_F32 : k->dt, send_n,
                        (unsigned)k->kind * 7u + (unsigned)k->op);
  if (k->in_place) {
    size_t at = k->kind == ALL_GATHER ? (size_t)c->rank * k->n * es : 0;
    memcpy(init + at, in, k->send_bytes);
    k->send = (char *)k->out + at;
  } else {
    k->send = dev_alloc(c, k->send_bytes);
    OK(accel_memcpy(c->dev, k->send, in, k->send_bytes));
  }
  OK(accel_memcpy(c->dev, k->pristine, init, k->out_bytes));
  free(init);
  free(in);
}

static void teardown(ctx_t *c, coll_t *k) {
  if (!k->in_place) accel_free(c->dev, k->send);
  accel_free(c->dev, k->out);
  accel_free(c->dev, k->pristine);
}

/* Issues the case on c->s; returns how many collectives it issued. */
static int issue(ctx_t *c, const coll_t *k) {
  const accel_reduce_op_t op = (accel_reduce_op_t)k->op;
  switch (k->kind) {
    case ALL_REDUCE:
      OK(accel_all_reduce(c->comm, c->s, k->send, k->out, k->n, k->dt, op));
      return 1;
    case REDUCE_SCATTER:
      OK(accel_reduce_scatter(c->comm, c->s, k->send, k->out, k->n, k->dt, op));
      return 1;
    case ALL_GATHER:
      OK(accel_all_gather(c->comm, c->s, k->send, k->out, k->n, k->dt));
      return 1;
    case BROADCAST:
      OK(accel_broadcast(c->comm, c->s, k->out, k->n, k->dt, c->size - 1));
      return 1;
    case SEND_RECV: { /* pairs (0,1), (2,3): the even rank sends first */
      const int peer = c->rank ^ 1;
      if (peer >= c->size) return 0;
      if (c->rank % 2 == 0) OK(accel_send(c->comm, c->s, k->send, k->n, k->dt, peer));
      OK(accel_recv(c->comm, c->s, k->out, k->n, k->dt, peer));
      if (c->rank % 2 == 1) OK(accel_send(c->comm, c->s, k->send, k->n, k->dt, peer));
      return 2;
    }
    default: /* DOWNCAST */
      OK(accel_all_gather_downcast(c->comm, c->s, k->send, k->out, k->n, k->dt));
      return 1;
  }
}

static void run_case(ctx_t *c, coll_t *k) {
  setup(c, k);
  char what[96];
  snprintf(what, sizeof what, "%s %s%s%s%s", kind_names[k->kind], accel_dtype_name(k->dt),
           k->kind <= REDUCE_SCATTER ? " " : "", k->kind <= REDUCE_SCATTER ? op_names[k->op] : "",
           k->in_place ? " (in place)" : "");
  unsigned char *want = malloc(k->out_bytes + 1), *got = malloc(k->out_bytes + 1);
  unsigned char *before = malloc(k->out_bytes + 1);
  /* eager */
  OK(accel_memcpy(c->dev, k->out, k->pristine, k->out_bytes));
  issue(c, k);
  OK(accel_stream_synchronize(c->s));
  OK(accel_comm_get_error(c->comm));
  OK(accel_memcpy(c->dev, want, k->out, k->out_bytes));
  OK(accel_memcpy(c->dev, before, k->pristine, k->out_bytes));
  /* the root's broadcast buffer is its input, unchanged */
  if (!(k->kind == BROADCAST && c->rank == c->size - 1))
    CHECK(memcmp(want, before, k->out_bytes) != 0, "%s: the eager collective wrote nothing",
          what);
  /* captured once, replayed: the output is restored first, so each replay writes it anew */
  const long live0 = c->live();
  accel_graph_t *g = NULL;
  OK(accel_graph_create(c->dev, &g));
  OK(accel_graph_capture_begin(g, c->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  OK(accel_memcpy_async(c->s, k->out, k->pristine, k->out_bytes));
  /* 16-bit sums stay on the blocking call (their rounding depends on MPI's order) */
  const int sum16 = k->kind <= REDUCE_SCATTER && k->dt != ACCEL_F32 && k->op == ACCEL_REDUCE_SUM;
  const int ncoll = sum16 ? (issue(c, k), 0) : issue(c, k);
  OK(accel_graph_capture_end(g));
  int bad_replays = 0;
  for (int r = 0; r < REPLAYS; ++r) {
    OK(accel_graph_replay(g, c->s));
    OK(accel_stream_synchronize(c->s));
    OK(accel_memcpy(c->dev, got, k->out, k->out_bytes));
    if (memcmp(got, want, k->out_bytes) != 0 && bad_replays++ == 0)
      fprintf(stderr, "rank %d: %s: replay %d differs from eager\n", c->rank, what, r);
    if (r == 0)
      CHECK(c->live() == live0 + ncoll, "%s: %ld persistent requests after the first replay, "
            "want %ld", what, c->live(), live0 + ncoll);
  }
  CHECK(bad_replays == 0, "rank %d: %s: %d of %d replays differ from eager bitwise", c->rank,
        what, bad_replays, REPLAYS);
  OK(accel_comm_get_error(c->comm));
  OK(accel_graph_destroy(g));
  CHECK(c->live() == live0, "%s: %ld persistent requests after the graph was destroyed, want "
        "%ld", what, c->live(), live0);
  free(want), free(got), free(before);
  teardown(c, k);
}

static const accel_dtype_t dtypes[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};

static void run_all(ctx_t *c) {
  for (size_t d = 0; d < 3; ++d) {
    const accel_dtype_t dt = dtypes[d];
    for (int op = 0; op < 3; ++op) {
      run_case(c, &(coll_t){.kind = ALL_REDUCE, .dt = dt, .op = op, .n = 1001});
      run_case(c, &(coll_t){.kind = REDUCE_SCATTER, .dt = dt, .op = op, .n = 257});
    }
    run_case(c, &(coll_t){.kind = ALL_REDUCE, .dt = dt, .n = 1001, .in_place = 1});
    run_case(c, &(coll_t){.kind = ALL_GATHER, .dt = dt, .n = 333});
    run_case(c, &(coll_t){.kind = ALL_GATHER, .dt = dt, .n = 333, .in_place = 1});
    run_case(c, &(coll_t){.kind = BROADCAST, .dt = dt, .n = 500, .in_place = 1});
    run_case(c, &(coll_t){.kind = SEND_RECV, .dt = dt, .n = 4099});
    if (dt != ACCEL_F32) run_case(c, &(coll_t){.kind = DOWNCAST, .dt = dt, .n = 777});
  }
}

/* The engine's live count of prepared requests (the plugin is already loaded). */
static long (*find_live(void))(void) {
  const char *dir = getenv("ACCEL_PLUGIN_PATH");
  char path[4096];
  snprintf(path, sizeof path, "%s/libaccelcomm-mpi.so", dir ? dir : ".");
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  void *sym = h ? dlsym(h, "accel_comm_mpi_prepared_live") : NULL;
  long (*fn)(void) = NULL;
  memcpy(&fn, &sym, sizeof fn);
  return fn;
}

int main(int argc, char **argv) {
  const char *device = "cpu";
  for (int i = 1; i + 1 < argc; i += 2)
    if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
  ctx_t c = {0};
  const int early = comm_test_start(&argc, &argv, device, &c.rank, &c.size, &c.dev, &c.comm);
  if (early >= 0) return early;
  c.live = find_live();
  CHECK(c.live != NULL, "accel_comm_mpi_prepared_live not found in the MPI engine: %s",
        dlerror());
  OK(accel_stream_create(c.dev, &c.s));
  if (c.live) run_all(&c);
  const int any = comm_test_finish(c.s, c.comm, c.dev);
  if (c.rank == 0)
    printf("comm_persist %s, %d ranks, %d replays per case: %s\n", device, c.size, REPLAYS,
           any ? "FAIL" : "PASS");
  MPI_Finalize();
  return any ? 1 : 0;
}
