/*
 * Communicator conformance cases, run under mpirun on one device per rank:
 *   comm_cts --device cpu|opencl --mode eager|graph|lazy
 * Every collective and dtype is checked on rank 0 against a double-precision reference built
 * from every rank's inputs, gathered with plain MPI (independent of accel). In graph mode each
 * case is captured and replayed; in lazy mode the stream is lazy. Exit 77 when the device or
 * the MPI engine is absent (meson: SKIP).
 */
#include <accel/accel.h>
#include <accel/accel_comm.h>
#include <accel/accel_interop.h>
#include <accel/accel_kernels.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/check.h"
#include "comm_util.h"

typedef struct ctx {
  accel_device_t *dev;
  accel_stream_t *s;
  accel_comm_t *comm;
  int rank, size;
  int graph; /* capture every case and replay it */
  int lazy;
} ctx_t;

static const accel_dtype_t dtypes[] = {ACCEL_F32, ACCEL_F16, ACCEL_BF16};
static const char *const op_names[] = {"sum", "max", "min"};

static void *dev_alloc(ctx_t *c, size_t bytes) {
  void *p = NULL;
  OK(accel_malloc(c->dev, bytes ? bytes : 1, &p));
  return p;
}

/* Starts a case: in graph mode a capture on c->s. */
static accel_graph_t *case_begin(ctx_t *c) {
  accel_graph_t *g = NULL;
  if (!c->graph) return NULL;
  OK(accel_graph_create(c->dev, &g));
  OK(accel_graph_capture_begin(g, c->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  return g;
}

/* Ends a case: replays the capture, waits, and checks the communicator is healthy. */
static void case_end(ctx_t *c, accel_graph_t *g) {
  if (g) {
    OK(accel_graph_capture_end(g));
    OK(accel_graph_replay(g, c->s));
  }
  OK(accel_stream_synchronize(c->s));
  if (g) OK(accel_graph_destroy(g));
  OK(accel_comm_get_error(c->comm));
}

static float tol_eps(accel_dtype_t dt) {
  return dt == ACCEL_F32 ? 0x1p-23f : dt == ACCEL_F16 ? 0x1p-10f : 0x1p-7f;
}

/* Gathers n floats from every rank to rank 0 (NULL elsewhere). */
static float *gather0(ctx_t *c, const float *mine, size_t n) {
  float *all = c->rank == 0 ? malloc((size_t)c->size * n * sizeof(float) + 1) : NULL;
  MPI_Gather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
  return all;
}

static void to_floats(const void *host, accel_dtype_t dt, size_t n, float *out) {
  for (size_t i = 0; i < n; ++i) out[i] = elem_get(host, dt, i);
}

/* Copies a device buffer of n elements to host floats. */
static float *dev_floats(ctx_t *c, const void *dev, accel_dtype_t dt, size_t n) {
  size_t es = accel_dtype_size(dt);
  void *h = malloc(n * es + 1);
  float *f = malloc(n * sizeof(float) + 1);
  OK(accel_memcpy(c->dev, h, dev, n * es));
  to_floats(h, dt, n, f);
  free(h);
  return f;
}

/* Fills a device buffer with grid values of (rank, salt). Returns the host floats. */
static float *dev_fill(ctx_t *c, void *dev, accel_dtype_t dt, size_t n, unsigned salt) {
  size_t es = accel_dtype_size(dt);
  void *h = malloc(n * es + 1);
  float *f = malloc(n * sizeof(float) + 1);
  for (size_t i = 0; i < n; ++i) {
    f[i] = grid_value(c->rank, i, salt);
    elem_set(h, dt, i, f[i]);
  }
  OK(accel_memcpy(c->dev, dev, h, n * es));
  free(h);
  return f;
}

static double fold(int op, double acc, double x) {
  return op == ACCEL_REDUCE_SUM ? acc + x : op == ACCEL_REDUCE_MAX ? (x > acc ? x : acc)
                                                                     : (x < acc ? x : acc);
}

/* Rank 0: checks out[r][i] against the reduction over ranks of in[q][base(r) + i]. */
static int check_reduced(ctx_t *c, const char *what, accel_dtype_t dt, int op, const float *in,
                         size_t in_n, const float *out, size_t out_n, int scatter) {
  int bad = 0;
  for (int r = 0; r < c->size; ++r)
    for (size_t i = 0; i < out_n; ++i) {
      size_t j = scatter ? (size_t)r * out_n + i : i;
      double ref = in[j], mag = fabs(in[j]);
      for (int q = 1; q < c->size; ++q) {
        ref = fold(op, ref, in[(size_t)q * in_n + j]);
        mag += fabs(in[(size_t)q * in_n + j]);
      }
      double got = out[(size_t)r * out_n + i];
      double tol = op == ACCEL_REDUCE_SUM ? (double)c->size * tol_eps(dt) * mag : 0.0;
      if (!(fabs(got - ref) <= tol) && bad++ < 3)
        fprintf(stderr, "%s %s %s: rank %d [%zu] = %.9g, reference %.9g (tol %.3g)\n", what,
                accel_dtype_name(dt), op_names[op], r, i, got, ref, tol);
    }
  return bad;
}

/* What rank 0 checks after a case: every rank's input and output, gathered (NULL elsewhere). */
typedef struct {
  float *ins, *outs;
} gathered_t;

/* Ends the case's collective (case_end), reads its output (out_n elements of dt at recv) and
 * gathers that and the rank's input (in: in_n floats, freed here) to rank 0. */
static gathered_t case_gather(ctx_t *c, accel_graph_t *g, float *in, size_t in_n, const void *recv,
                              accel_dtype_t dt, size_t out_n) {
  case_end(c, g);
  float *out = dev_floats(c, recv, dt, out_n);
  gathered_t r = {gather0(c, in, in_n), gather0(c, out, out_n)};
  free(in);
  free(out);
  return r;
}

static void case_all_reduce(ctx_t *c, accel_dtype_t dt, int op, int in_place) {
  const size_t n = 1001, es = accel_dtype_size(dt);
  void *send = dev_alloc(c, n * es), *recv = in_place ? send : dev_alloc(c, n * es);
  float *in = dev_fill(c, send, dt, n, 1u + (unsigned)op);
  accel_graph_t *g = case_begin(c);
  OK(accel_all_reduce(c->comm, c->s, send, recv, n, dt, (accel_reduce_op_t)op));
  gathered_t r = case_gather(c, g, in, n, recv, dt, n);
  if (c->rank == 0)
    CHECK(check_reduced(c, in_place ? "all_reduce(in place)" : "all_reduce", dt, op, r.ins, n,
                        r.outs, n, 0) == 0, "all_reduce %s %s", accel_dtype_name(dt), op_names[op]);
  free(r.ins), free(r.outs);
  accel_free(c->dev, send);
  if (!in_place) accel_free(c->dev, recv);
}

static void case_reduce_scatter(ctx_t *c, accel_dtype_t dt, int op) {
  const size_t n = 257, es = accel_dtype_size(dt), total = n * (size_t)c->size;
  void *send = dev_alloc(c, total * es), *recv = dev_alloc(c, n * es);
  float *in = dev_fill(c, send, dt, total, 7u + (unsigned)op);
  accel_graph_t *g = case_begin(c);
  OK(accel_reduce_scatter(c->comm, c->s, send, recv, n, dt, (accel_reduce_op_t)op));
  gathered_t r = case_gather(c, g, in, total, recv, dt, n);
  if (c->rank == 0)
    CHECK(check_reduced(c, "reduce_scatter", dt, op, r.ins, total, r.outs, n, 1) == 0,
          "reduce_scatter %s %s", accel_dtype_name(dt), op_names[op]);
  free(r.ins), free(r.outs);
  accel_free(c->dev, send);
  accel_free(c->dev, recv);
}

/* On rank 0: how many elements of every rank's output (outs: len a rank, gathered) differ
 * from want (len elements). */
static int wrong_on_any_rank(const ctx_t *c, const float *outs, const float *want, size_t len) {
  int bad = 0;
  for (int r = 0; r < c->size; ++r)
    for (size_t i = 0; i < len; ++i) bad += outs[(size_t)r * len + i] != want[i];
  return bad;
}

static void case_all_gather(ctx_t *c, accel_dtype_t dt, int in_place) {
  const size_t n = 333, es = accel_dtype_size(dt), total = n * (size_t)c->size;
  void *recv = dev_alloc(c, total * es);
  void *send = in_place ? (char *)recv + (size_t)c->rank * n * es : dev_alloc(c, n * es);
  float *in = dev_fill(c, send, dt, n, 11u);
  accel_graph_t *g = case_begin(c);
  OK(accel_all_gather(c->comm, c->s, send, recv, n, dt));
  gathered_t r = case_gather(c, g, in, n, recv, dt, total);
  const int bad = c->rank == 0 ? wrong_on_any_rank(c, r.outs, r.ins, total) : 0;
  CHECK(bad == 0, "all_gather%s %s: %d wrong elements", in_place ? "(in place)" : "",
        accel_dtype_name(dt), bad);
  free(r.ins), free(r.outs);
  if (!in_place) accel_free(c->dev, send);
  accel_free(c->dev, recv);
}

static void case_broadcast(ctx_t *c, accel_dtype_t dt) {
  const size_t n = 500, es = accel_dtype_size(dt);
  const int root = c->size - 1;
  void *buf = dev_alloc(c, n * es);
  float *in = dev_fill(c, buf, dt, n, 13u);
  accel_graph_t *g = case_begin(c);
  OK(accel_broadcast(c->comm, c->s, buf, n, dt, root));
  gathered_t r = case_gather(c, g, in, n, buf, dt, n);
  const int bad = c->rank == 0 ? wrong_on_any_rank(c, r.outs, r.ins + (size_t)root * n, n) : 0;
  CHECK(bad == 0, "broadcast %s: %d wrong elements", accel_dtype_name(dt), bad);
  free(r.ins), free(r.outs);
  accel_free(c->dev, buf);
}

/* A ring in which every rank sends to the next and receives from the previous in one
 * accel_sendrecv: 1 Mi elements, past MPI's eager limit, where every rank issuing accel_send
 * before accel_recv would deadlock. The receive count differs from the send count (the
 * previous rank sends one element more per rank index) to check each side's own count. */
static void case_sendrecv_ring(ctx_t *c, accel_dtype_t dt) {
  const size_t base = (size_t)1 << 20, es = accel_dtype_size(dt);
  const int next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
  const size_t n_send = base + (size_t)c->rank, n_recv = base + (size_t)prev;
  void *mine = dev_alloc(c, n_send * es), *theirs = dev_alloc(c, n_recv * es);
  float *in = dev_fill(c, mine, dt, n_send, 23u);
  accel_graph_t *g = case_begin(c);
  OK(accel_sendrecv(c->comm, c->s, mine, n_send, next, theirs, n_recv, prev, dt));
  case_end(c, g);
  float *out = dev_floats(c, theirs, dt, n_recv);
  int bad = 0;
  for (size_t i = 0; i < n_recv; ++i) bad += out[i] != grid_value(prev, i, 23u);
  CHECK(bad == 0, "sendrecv %s rank %d <- %d: %d wrong", accel_dtype_name(dt), c->rank, prev,
        bad);
  free(in), free(out);
  accel_free(c->dev, mine);
  accel_free(c->dev, theirs);
}

/* Pairs (0,1), (2,3)...: the even rank sends then receives, the odd one the reverse. */
static void case_send_recv(ctx_t *c, accel_dtype_t dt) {
  const size_t n = 4099, es = accel_dtype_size(dt);
  const int peer = c->rank ^ 1;
  const int active = peer < c->size;
  void *mine = dev_alloc(c, n * es), *theirs = dev_alloc(c, n * es);
  float *in = dev_fill(c, mine, dt, n, 17u);
  accel_graph_t *g = case_begin(c);
  if (active && c->rank % 2 == 0) {
    OK(accel_send(c->comm, c->s, mine, n, dt, peer));
    OK(accel_recv(c->comm, c->s, theirs, n, dt, peer));
  } else if (active) {
    OK(accel_recv(c->comm, c->s, theirs, n, dt, peer));
    OK(accel_send(c->comm, c->s, mine, n, dt, peer));
  }
  case_end(c, g);
  if (active) {
    float *out = dev_floats(c, theirs, dt, n);
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
      float want = grid_value(peer, i, 17u);
      bad += out[i] != want;
    }
    CHECK(bad == 0, "send/recv %s rank %d <- %d: %d wrong", accel_dtype_name(dt), c->rank, peer,
          bad);
    free(out);
  }
  free(in);
  accel_free(c->dev, mine);
  accel_free(c->dev, theirs);
}

/* Data-parallel groups (rank % 2) and model-parallel groups (rank / 2), as DeepSpeed builds
 * them; an all_reduce in each checked against the reference of its members. */
static void case_groups(ctx_t *c) {
  for (int kind = 0; kind < 2; ++kind) {
    const int color = kind == 0 ? c->rank % 2 : c->rank / 2;
    accel_comm_t *grp = NULL;
    OK(accel_comm_split(c->comm, color, c->rank, &grp));
    if (!grp) continue;
    int grank = -1, gsize = -1, want_size = 0;
    for (int r = 0; r < c->size; ++r) want_size += (kind == 0 ? r % 2 : r / 2) == color;
    OK(accel_comm_rank(grp, &grank));
    OK(accel_comm_size(grp, &gsize));
    CHECK(gsize == want_size, "group size %d, want %d", gsize, want_size);
    const size_t n = 129;
    float *buf = dev_alloc(c, n * 4);
    float *in = dev_fill(c, buf, ACCEL_F32, n, 23u);
    accel_graph_t *g = case_begin(c);
    OK(accel_all_reduce(grp, c->s, buf, buf, n, ACCEL_F32, ACCEL_REDUCE_SUM));
    case_end(c, g);
    float *out = dev_floats(c, buf, ACCEL_F32, n);
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
      double ref = 0;
      for (int r = 0; r < c->size; ++r)
        if ((kind == 0 ? r % 2 : r / 2) == color) ref += grid_value(r, i, 23u);
      bad += fabs(out[i] - ref) > 1e-6 * fabs(ref) + 1e-6;
    }
    CHECK(bad == 0, "group kind %d color %d: %d wrong", kind, color, bad);
    free(in), free(out);
    accel_free(c->dev, buf);
    OK(accel_comm_destroy(grp));
  }
  /* color < 0: no group */
  accel_comm_t *none = (accel_comm_t *)1;
  OK(accel_comm_split(c->comm, c->rank == 0 ? -1 : 0, 0, &none));
  CHECK((c->rank == 0) == (none == NULL), "color -1 gives no communicator");
  if (none) OK(accel_comm_destroy(none));
}

/* A graph holding collectives on a communicator whose handle was destroyed after capture,
 * replayed 100 times: every replay runs the all-reduce (a counter grows by size each time). */
static void case_graph_replay(ctx_t *c) {
  accel_comm_t *dup = NULL;
  OK(accel_comm_split(c->comm, 0, c->rank, &dup));
  const size_t n = 64;
  float *ones = dev_alloc(c, n * 4), *tmp = dev_alloc(c, n * 4), *counter = dev_alloc(c, n * 4);
  float *gath = dev_alloc(c, (size_t)c->size * 4), *stamp = dev_alloc(c, 4);
  accel_tensor_t t_ones = {ones, n, ACCEL_F32}, t_cnt = {counter, n, ACCEL_F32};
  accel_tensor_t t_stamp = {stamp, 1, ACCEL_F32}, t_tmp = {tmp, n, ACCEL_F32};
  OK(accel_fill(c->s, &t_ones, 1, 1.0f));
  OK(accel_fill(c->s, &t_cnt, 1, 0.0f));
  OK(accel_fill(c->s, &t_stamp, 1, (float)c->rank));
  OK(accel_stream_synchronize(c->s));
  accel_graph_t *g = NULL;
  OK(accel_graph_create(c->dev, &g));
  OK(accel_graph_capture_begin(g, c->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  OK(accel_all_reduce(dup, c->s, ones, tmp, n, ACCEL_F32, ACCEL_REDUCE_SUM));
  OK(accel_update_hp_grads(c->s, &t_tmp, &t_cnt, 1, 0));
  OK(accel_all_gather(dup, c->s, stamp, gath, 1, ACCEL_F32));
  OK(accel_graph_capture_end(g));
  OK(accel_comm_destroy(dup)); /* the graph holds the communicator */
  for (int i = 0; i < 100; ++i) OK(accel_graph_replay(g, c->s));
  OK(accel_stream_synchronize(c->s));
  float *cnt = dev_floats(c, counter, ACCEL_F32, n), *gh = dev_floats(c, gath, ACCEL_F32, (size_t)c->size);
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad += cnt[i] != 100.0f * (float)c->size;
  for (int r = 0; r < c->size; ++r) bad += gh[r] != (float)r;
  CHECK(bad == 0, "graph replayed 100x: counter %g (want %g), %d wrong", cnt[0],
        100.0 * c->size, bad);
  OK(accel_graph_destroy(g));
  free(cnt), free(gh);
  void *bufs[] = {ones, tmp, counter, gath, stamp};
  for (int i = 0; i < 5; ++i) accel_free(c->dev, bufs[i]);
}

/* Per-rank tensors of different sizes (rank 1 has an empty one), F32. */
#define NT 3
static size_t norm_len(int rank, int t) { return rank == 1 && t == 1 ? 0 : 100 + 37 * (size_t)rank + 211 * (size_t)t; }

static void case_global_norm(ctx_t *c, float p) {
  accel_tensor_t ts[NT];
  float *host[NT];
  size_t mine = 0;
  for (int t = 0; t < NT; ++t) {
    size_t n = norm_len(c->rank, t);
    ts[t] = (accel_tensor_t){dev_alloc(c, n * 4), n, ACCEL_F32};
    host[t] = malloc(n * 4 + 1);
    for (size_t i = 0; i < n; ++i) host[t][i] = rough_value(c->rank * 10 + t, i);
    OK(accel_memcpy(c->dev, ts[t].data, host[t], n * 4));
    mine += n;
  }
  float *out = dev_alloc(c, 4);
  accel_graph_t *g = case_begin(c);
  OK(accel_comm_global_norm(c->comm, c->s, ts, NT, p, out));
  case_end(c, g);
  float norm = 0;
  OK(accel_memcpy(c->dev, &norm, out, 4));
  /* bitwise identical on every rank */
  float *all = malloc((size_t)c->size * 4);
  MPI_Allgather(&norm, 1, MPI_FLOAT, all, 1, MPI_FLOAT, MPI_COMM_WORLD);
  for (int r = 0; r < c->size; ++r)
    CHECK(memcmp(&all[r], &norm, 4) == 0, "global norm p=%g: rank %d has %.9g, rank %d %.9g", p,
          r, all[r], c->rank, norm);
  /* rank 0: the single-process norm of the concatenation, and a double reference */
  float *flat = malloc(mine * 4 + 1);
  size_t k = 0;
  for (int t = 0; t < NT; ++t)
    for (size_t i = 0; i < ts[t].numel; ++i) flat[k++] = host[t][i];
  int *counts = malloc((size_t)c->size * sizeof(int)), *displs = malloc((size_t)c->size * sizeof(int));
  int m = (int)mine;
  MPI_Gather(&m, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  if (c->rank == 0)
    for (int r = 0; r < c->size; ++r) displs[r] = total, total += counts[r];
  float *cat = c->rank == 0 ? malloc((size_t)total * 4 + 1) : NULL;
  MPI_Gatherv(flat, m, MPI_FLOAT, cat, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
  if (c->rank == 0) {
    float *dcat = dev_alloc(c, (size_t)total * 4), *dout = dev_alloc(c, 4), single = 0;
    OK(accel_memcpy(c->dev, dcat, cat, (size_t)total * 4));
    accel_tensor_t whole = {dcat, (size_t)total, ACCEL_F32};
    accel_stream_t *def = NULL;
    OK(accel_stream_default(c->dev, &def));
    OK(accel_multi_tensor_norm(def, &whole, 1, p, dout));
    OK(accel_memcpy(c->dev, &single, dout, 4));
    double ref = 0;
    for (int i = 0; i < total; ++i)
      ref = isinf(p) ? fmax(ref, fabs(cat[i])) : ref + pow(fabs(cat[i]), p);
    if (!isinf(p)) ref = pow(ref, 1.0 / p);
    if (isinf(p))
      CHECK(memcmp(&single, &norm, 4) == 0, "p=inf: distributed %.9g != single-process %.9g",
            norm, single);
    else
      CHECK(fabs(norm - single) <= 1e-5 * single, "p=%g: distributed %.9g vs single %.9g", p,
            norm, single);
    CHECK(fabs(norm - ref) <= 1e-5 * ref, "p=%g: %.9g vs double reference %.9g", p, norm, ref);
    accel_free(c->dev, dcat);
    accel_free(c->dev, dout);
  }
  free(cat), free(counts), free(displs), free(flat), free(all);
  for (int t = 0; t < NT; ++t) free(host[t]), accel_free(c->dev, ts[t].data);
  accel_free(c->dev, out);
}

/* The fused step's distributed norm sweep (accel_comm_adam_step_norm) gives the bits of
 * accel_comm_global_norm over the same gradients, with a full descriptor and with one of the
 * first accel_adam_step_t's size (whose fields past flags read as absent). */
static void case_step_norm(ctx_t *c) {
  accel_tensor_t ts[NT];
  for (int t = 0; t < NT; ++t) {
    const size_t n = norm_len(c->rank, t);
    float *h = malloc(n * 4 + 1);
    for (size_t i = 0; i < n; ++i) h[i] = rough_value(c->rank * 10 + t + 5, i);
    ts[t] = (accel_tensor_t){dev_alloc(c, n * 4), n, ACCEL_F32};
    OK(accel_memcpy(c->dev, ts[t].data, h, n * 4));
    free(h);
  }
  float *out = dev_alloc(c, 3 * 4), got[3];
  accel_adam_step_t d = {.struct_size = sizeof d, .n = NT, .grads = ts, .norm_type = 2.0f,
                         .norm_dev = out};
  accel_graph_t *g = case_begin(c);
  OK(accel_comm_global_norm(c->comm, c->s, ts, NT, 2.0f, out));
  d.norm_dev = out + 1;
  OK(accel_comm_adam_step_norm(c->comm, c->s, &d));
  d.struct_size = ACCEL_ADAM_STEP_SIZE_MIN;
  d.norm_dev = out + 2;
  OK(accel_comm_adam_step_norm(c->comm, c->s, &d));
  case_end(c, g);
  OK(accel_memcpy(c->dev, got, out, sizeof got));
  CHECK(memcmp(&got[1], &got[0], 4) == 0 && memcmp(&got[2], &got[0], 4) == 0,
        "step norm %.9g, with the first descriptor's size %.9g, global norm %.9g", got[1],
        got[2], got[0]);
  for (int t = 0; t < NT; ++t) accel_free(c->dev, ts[t].data);
  accel_free(c->dev, out);
}

/* Clip by the global norm: the same coefficient on every rank, applied to every tensor. */
static void case_clip(ctx_t *c) {
  const size_t n = 300;
  float *x = dev_alloc(c, n * 4), *tn = dev_alloc(c, 4), *coef = dev_alloc(c, 4);
  float *h = malloc(n * 4);
  for (size_t i = 0; i < n; ++i) h[i] = rough_value(c->rank + 50, i);
  OK(accel_memcpy(c->dev, x, h, n * 4));
  accel_tensor_t t = {x, n, ACCEL_F32};
  accel_graph_t *g = case_begin(c);
  OK(accel_comm_clip_by_global_norm(c->comm, c->s, &t, 1, 1.0f, 2.0f, 1e-6f, tn, coef));
  case_end(c, g);
  float cf = 0, *after = dev_floats(c, x, ACCEL_F32, n);
  OK(accel_memcpy(c->dev, &cf, coef, 4));
  float *all = malloc((size_t)c->size * 4);
  MPI_Allgather(&cf, 1, MPI_FLOAT, all, 1, MPI_FLOAT, MPI_COMM_WORLD);
  for (int r = 0; r < c->size; ++r) CHECK(memcmp(&all[r], &cf, 4) == 0, "clip coef differs");
  CHECK(cf < 1.0f && cf > 0.0f, "clip coef %g", cf);
  int bad = 0;
  for (size_t i = 0; i < n; ++i) bad += after[i] != h[i] * cf;
  CHECK(bad == 0, "clip: %d elements not scaled by %g", bad, cf);
  free(h), free(after), free(all);
  accel_free(c->dev, x), accel_free(c->dev, tn), accel_free(c->dev, coef);
}

/* The overflow flag: MAX over ranks. */
static void case_overflow(ctx_t *c) {
  for (int who = -1; who < 1; ++who) {
    float *flag = dev_alloc(c, 4);
    float v = (who >= 0 && c->rank == c->size - 1) ? 1.0f : 0.0f, got = -1;
    OK(accel_memcpy(c->dev, flag, &v, 4));
    accel_graph_t *g = case_begin(c);
    OK(accel_comm_overflow_reduce(c->comm, c->s, flag));
    case_end(c, g);
    OK(accel_memcpy(c->dev, &got, flag, 4));
    CHECK(got == (who >= 0 ? 1.0f : 0.0f), "overflow flag %g (who %d)", got, who);
    accel_free(c->dev, flag);
  }
}

/* All-gather with the downcast fused: each block equals the reference rounding of its rank's
 * fp32 shard. */
static void case_downcast(ctx_t *c, accel_dtype_t dt) {
  const size_t n = 777, total = n * (size_t)c->size;
  float *send = dev_alloc(c, n * 4);
  uint16_t *recv = dev_alloc(c, total * 2);
  float *h = malloc(n * 4);
  for (size_t i = 0; i < n; ++i) h[i] = rough_value(c->rank + 90, i);
  OK(accel_memcpy(c->dev, send, h, n * 4));
  accel_graph_t *g = case_begin(c);
  OK(accel_all_gather_downcast(c->comm, c->s, send, recv, n, dt));
  case_end(c, g);
  uint16_t *out = malloc(total * 2);
  OK(accel_memcpy(c->dev, out, recv, total * 2));
  int bad = 0;
  for (int r = 0; r < c->size; ++r)
    for (size_t i = 0; i < n; ++i) {
      float v = rough_value(r + 90, i);
      uint16_t want = dt == ACCEL_BF16 ? ref_f32_to_bf16(v) : ref_f32_to_f16(v);
      bad += out[(size_t)r * n + i] != want;
    }
  CHECK(bad == 0, "all_gather_downcast %s: %d wrong", accel_dtype_name(dt), bad);
  free(h), free(out);
  accel_free(c->dev, send), accel_free(c->dev, recv);
}

#define EXPECT(call, want)                                                                 \
  do {                                                                                     \
    accel_status_t st_ = (call);                                                           \
    CHECK(st_ == (want), "%s -> %s, want %s", #call, accel_status_name(st_),               \
          accel_status_name(want));                                                        \
  } while (0)

/* Argument validation (local: nothing is issued). */
static void case_bad_arguments(ctx_t *c) {
  float *a = dev_alloc(c, 4096), host[4];
  const accel_dtype_t bad_dt = (accel_dtype_t)7;
  EXPECT(accel_all_reduce(NULL, c->s, a, a, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_HANDLE);
  EXPECT(accel_all_reduce(c->comm, NULL, a, a, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_HANDLE);
  EXPECT(accel_all_reduce(c->comm, c->s, a, a, 4, bad_dt, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_all_reduce(c->comm, c->s, a, a, 4, ACCEL_F32, (accel_reduce_op_t)9),
         ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_all_reduce(c->comm, c->s, a, a + 1, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT); /* overlap */
  EXPECT(accel_all_reduce(c->comm, c->s, NULL, a, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_all_reduce(c->comm, c->s, (char *)a + 1, a + 8, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT); /* misaligned */
  EXPECT(accel_all_reduce(c->comm, c->s, a, a + 8, 2000, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT); /* past the allocation */
  EXPECT(accel_all_reduce(c->comm, c->s, host, a, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT); /* host memory */
  EXPECT(accel_all_reduce(c->comm, c->s, a, a, SIZE_MAX / 2, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT); /* overflow */
  EXPECT(accel_reduce_scatter(c->comm, c->s, a, a, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_all_gather(c->comm, c->s, a + 1, a, 4, ACCEL_F32), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_broadcast(c->comm, c->s, a, 4, ACCEL_F32, c->size), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_broadcast(c->comm, c->s, a, 4, ACCEL_F32, -1), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_send(c->comm, c->s, a, 4, ACCEL_F32, c->rank), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_recv(c->comm, c->s, a, 4, ACCEL_F32, c->size), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_all_gather_downcast(c->comm, c->s, a, a + 512, 4, ACCEL_F32),
         ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_comm_split(c->comm, 0, 0, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_comm_create_mpi(NULL, NULL, "mpi", &(accel_comm_t *){NULL}),
         ACCEL_ERROR_INVALID_HANDLE);
  EXPECT(accel_comm_create_mpi(c->dev, NULL, "no/such", &(accel_comm_t *){NULL}),
         ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_comm_create_mpi(c->dev, NULL, "nosuchengine", &(accel_comm_t *){NULL}),
         ACCEL_ERROR_UNAVAILABLE);
  int x = 0;
  EXPECT(accel_comm_rank(c->comm, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_comm_size((accel_comm_t *)a, &x), ACCEL_ERROR_INVALID_HANDLE);
  CHECK(accel_comm_engine_name(NULL) == NULL, "engine name of NULL");
  CHECK(strcmp(accel_comm_engine_name(c->comm), "mpi") == 0, "engine name");
  /* a destroyed communicator */
  accel_comm_t *d = NULL;
  OK(accel_comm_split(c->comm, 0, c->rank, &d));
  OK(accel_comm_destroy(d));
  EXPECT(accel_comm_destroy(d), ACCEL_ERROR_INVALID_HANDLE);
  EXPECT(accel_all_reduce(d, c->s, a, a, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_HANDLE);
  /* split is illegal while capturing */
  accel_graph_t *g = NULL;
  OK(accel_graph_create(c->dev, &g));
  OK(accel_graph_capture_begin(g, c->s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  EXPECT(accel_comm_split(c->comm, 0, 0, &d), ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  EXPECT(accel_graph_capture_end(g), ACCEL_ERROR_CAPTURE_INVALIDATED);
  OK(accel_graph_destroy(g));
  /* a buffer freed after a collective used it is refused (the validation is not cached past
   * a free); every rank issues the valid one, so it runs */
  float *b = dev_alloc(c, 64);
  OK(accel_all_reduce(c->comm, c->s, b, b, 4, ACCEL_F32, ACCEL_REDUCE_SUM));
  OK(accel_stream_synchronize(c->s));
  accel_free(c->dev, b);
  EXPECT(accel_all_reduce(c->comm, c->s, b, b, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
         ACCEL_ERROR_INVALID_ARGUMENT);
  /* a read-only registration may be sent, never written (where the backend registers host
   * memory) */
  static float ro_host[64];
  void *ro = NULL;
  if (accel_memory_register(c->dev, ro_host, sizeof ro_host, ACCEL_REGISTER_READ_ONLY, &ro) ==
      ACCEL_OK) {
    EXPECT(accel_all_reduce(c->comm, c->s, ro, ro, 4, ACCEL_F32, ACCEL_REDUCE_SUM),
           ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(accel_last_error(), "read-only") != NULL, "read-only message: %s",
          accel_last_error());
    EXPECT(accel_all_gather(c->comm, c->s, a, ro, 4, ACCEL_F32), ACCEL_ERROR_INVALID_ARGUMENT);
    if (c->size > 1)
      EXPECT(accel_recv(c->comm, c->s, ro, 4, ACCEL_F32, (c->rank + 1) % c->size),
             ACCEL_ERROR_INVALID_ARGUMENT);
    EXPECT(accel_broadcast(c->comm, c->s, ro, 4, ACCEL_F32, (c->rank + 1) % c->size),
           c->size > 1 ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_OK);
    if (c->size == 1) OK(accel_stream_synchronize(c->s));
    OK(accel_memory_unregister(c->dev, ro_host));
  }
  accel_free(c->dev, a);
}

/* A receive of another count than was sent fails the receiver's communicator (eager). */
static void case_count_mismatch(ctx_t *c) {
  if (c->size < 2) return;
  accel_comm_t *pair = NULL;
  OK(accel_comm_split(c->comm, c->rank < 2 ? 0 : -1, c->rank, &pair));
  if (!pair) return;
  float *a = dev_alloc(c, 64 * 4);
  if (c->rank == 0) OK(accel_send(pair, c->s, a, 4, ACCEL_F32, 1));
  else OK(accel_recv(pair, c->s, a, 8, ACCEL_F32, 0));
  OK(accel_stream_synchronize(c->s));
  accel_status_t st = accel_comm_get_error(pair);
  if (c->rank == 1) {
    CHECK(st == ACCEL_ERROR_BACKEND && strstr(accel_last_error(), "mismatched"),
          "count mismatch not reported: %s %s", accel_status_name(st), accel_last_error());
    /* later collectives on the failed communicator are skipped, not waited for */
    float before = 0, after = 0;
    OK(accel_memcpy(c->dev, &before, a, 4));
    OK(accel_recv(pair, c->s, a, 8, ACCEL_F32, 0));
    OK(accel_stream_synchronize(c->s));
    OK(accel_memcpy(c->dev, &after, a, 4));
    CHECK(memcmp(&before, &after, 4) == 0, "a skipped receive wrote its buffer");
  } else {
    CHECK(st == ACCEL_OK, "sender failed: %s", accel_last_error());
  }
  accel_free(c->dev, a);
  OK(accel_comm_destroy(pair));
}

int main(int argc, char **argv) {
  const char *device = "cpu", *mode = "eager";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    else if (strcmp(argv[i], "--mode") == 0) mode = argv[i + 1];
  }
  ctx_t c = {.graph = strcmp(mode, "graph") == 0, .lazy = strcmp(mode, "lazy") == 0};
  const int early = comm_test_start(&argc, &argv, device, &c.rank, &c.size, &c.dev, &c.comm);
  if (early >= 0) return early;
  OK(accel_stream_create_ex(c.dev, c.lazy ? ACCEL_STREAM_LAZY : ACCEL_STREAM_EAGER, &c.s));
  for (size_t d = 0; d < 3; ++d) {
    for (int op = 0; op < 3; ++op) {
      case_all_reduce(&c, dtypes[d], op, 0);
      case_reduce_scatter(&c, dtypes[d], op);
    }
    case_all_reduce(&c, dtypes[d], ACCEL_REDUCE_SUM, 1);
    case_all_gather(&c, dtypes[d], 0);
    case_all_gather(&c, dtypes[d], 1);
    case_broadcast(&c, dtypes[d]);
    case_send_recv(&c, dtypes[d]);
    case_sendrecv_ring(&c, dtypes[d]);
  }
  case_groups(&c);
  case_global_norm(&c, INFINITY);
  case_global_norm(&c, 1.0f);
  case_global_norm(&c, 2.0f);
  case_step_norm(&c);
  case_clip(&c);
  case_overflow(&c);
  case_downcast(&c, ACCEL_BF16);
  case_downcast(&c, ACCEL_F16);
  if (c.graph) case_graph_replay(&c);
  if (!c.graph && !c.lazy) {
    case_bad_arguments(&c);
    case_count_mismatch(&c);
  }
  const int any = comm_test_finish(c.s, c.comm, c.dev);
  if (c.rank == 0)
    printf("comm_cts %s %s, %d ranks: %s\n", device, mode, c.size, any ? "FAIL" : "PASS");
  MPI_Finalize();
  return any ? 1 : 0;
}
