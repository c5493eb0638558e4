/*
 * Branches on a device flag (docs/GRAPHS.md, "Branches on a device flag"): accel_graph_capture_if
 * / _while and their ends. In graph mode the regions are recorded into the capture of the body
 * and replayed; in eager and lazy modes each region is captured privately and replayed when it
 * closes. The flag is written in stream order by the body itself (a memset, or a kernel:
 * accel_step_count adds 1 to a flag that starts at -k, so a WHILE runs k passes), never read by
 * the host; a host function in the WHILE's body counts the passes it ran in. On a device whose ACCEL_ATTR_CONDITIONALS is NONE every case checks instead that
 * the calls are refused with UNSUPPORTED (cond_refused).
 */
#include <stdio.h>
#include <string.h>

#include "cts.h"
#include "cts_cond.h"
#include "cts_internal.h"

accel_status_t cond_supported(cts_ctx_t *ctx, int *yes) {
  int64_t v = 0;
  accel_status_t st = accel_device_get_attribute(ctx->dev, ACCEL_ATTR_CONDITIONALS, &v);
  *yes = v == ACCEL_CONDITIONALS_NATIVE || v == ACCEL_CONDITIONALS_PREDICATED;
  return st;
}

static accel_status_t fix_make(cts_ctx_t *ctx, cond_fix_t *f) {
  memset(f, 0, sizeof *f);
  static const float two = 2.0f, zeros[COND_N];
  accel_status_t st = accel_malloc(ctx->dev, sizeof(int32_t), (void **)&f->flag);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, sizeof(int32_t), (void **)&f->flag2);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, COND_N * sizeof(float), (void **)&f->value);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, COND_N * sizeof(float), (void **)&f->dst);
  if (st == ACCEL_OK) st = accel_malloc(ctx->dev, sizeof(float), (void **)&f->two);
  if (st == ACCEL_OK) st = cts_upload(ctx, f->two, &two, sizeof two);
  if (st == ACCEL_OK) st = cts_upload(ctx, f->dst, zeros, sizeof zeros);
  return st;
}

static void fix_free(cts_ctx_t *ctx, cond_fix_t *f) {
  void *p[] = {f->flag, f->flag2, f->value, f->dst, f->two};
  for (size_t i = 0; i < sizeof p / sizeof *p; ++i)
    if (p[i]) accel_free(ctx->dev, p[i]);
}

/* value = 1; flag = byte pattern; if (flag) { value = 5; dst[0] = value[0] } */
static accel_status_t if_body(accel_stream_t *s, void *user) {
  cond_fix_t *f = user;
  accel_tensor_t t = {f->value, COND_N, ACCEL_F32};
  accel_status_t st = accel_fill(s, &t, 1, 1.0f);
  if (st == ACCEL_OK) st = accel_memset_async(s, f->flag, f->byte, sizeof(int32_t));
  if (st == ACCEL_OK) st = accel_graph_capture_if(s, f->flag);
  if (st == ACCEL_OK) st = accel_fill(s, &t, 1, 5.0f);
  if (st == ACCEL_OK) st = accel_memcpy_async(s, f->dst, f->value, sizeof(float));
  accel_status_t end = st == ACCEL_OK ? accel_graph_capture_end_if(s) : st;
  return st != ACCEL_OK ? st : end;
}

static void count_pass(void *user) {
  cond_fix_t *f = user;
  __atomic_add_fetch(&f->host_calls, 1, __ATOMIC_RELAXED);
}

/* value = 1; while (flag, max) { value *= 2; flag += 1; a host function counts the pass }
 * with flag uploaded as -k before. */
static accel_status_t while_body(accel_stream_t *s, void *user) {
  cond_fix_t *f = user;
  accel_tensor_t t = {f->value, COND_N, ACCEL_F32};
  accel_status_t st = accel_fill(s, &t, 1, 1.0f);
  if (st == ACCEL_OK) st = accel_graph_capture_while(s, f->flag, f->max);
  if (st == ACCEL_OK) st = accel_scale(s, &t, 1, f->two);
  if (st == ACCEL_OK) st = accel_step_count(s, (uint32_t *)(void *)f->flag, NULL);
  if (st == ACCEL_OK) st = accel_launch_host_func(s, count_pass, f);
  accel_status_t end = st == ACCEL_OK ? accel_graph_capture_end_while(s) : st;
  return st != ACCEL_OK ? st : end;
}

/* if (flag2) { the while loop } : a region nested in another. */
static accel_status_t nested_body(accel_stream_t *s, void *user) {
  cond_fix_t *f = user;
  accel_status_t st = accel_graph_capture_if(s, f->flag2);
  if (st == ACCEL_OK) st = while_body(s, f);
  accel_status_t end = st == ACCEL_OK ? accel_graph_capture_end_if(s) : st;
  return st != ACCEL_OK ? st : end;
}

/* value[] all equal to want, and the flag (when flag_want is not NULL) equal to *flag_want. */
static const char *expect(cts_ctx_t *ctx, const cond_fix_t *f, float want, float dst_want,
                          const int32_t *flag_want, accel_status_t *st) {
  static char why[160];
  float v[COND_N], d = -1.0f;
  int32_t flag = 0;
  *st = cts_download(ctx, v, f->value, sizeof v);
  if (*st == ACCEL_OK) *st = cts_download(ctx, &d, f->dst, sizeof d);
  if (*st == ACCEL_OK) *st = cts_download(ctx, &flag, f->flag, sizeof flag);
  if (*st != ACCEL_OK) return accel_last_error();
  for (int i = 0; i < COND_N; ++i)
    if (v[i] != want) {
      snprintf(why, sizeof why, "value[%d] = %g, want %g", i, (double)v[i], (double)want);
      return why;
    }
  if (d != dst_want) {
    snprintf(why, sizeof why, "the copy wrote %g, want %g", (double)d, (double)dst_want);
    return why;
  }
  if (flag_want && flag != *flag_want) {
    snprintf(why, sizeof why, "the flag ends at %d, want %d", (int)flag, (int)*flag_want);
    return why;
  }
  return NULL;
}

/* ACCEL_ATTR_CONDITIONALS NONE: every case checks instead that the calls are refused with
 * UNSUPPORTED and a message naming the attribute, and that nothing was left open. */
cts_result_t cond_refused(cts_ctx_t *ctx) {
  cond_fix_t f;
  accel_stream_t *s = NULL;
  CTS_OK(fix_make(ctx, &f));
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  accel_status_t st_if = accel_graph_capture_if(s, f.flag);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", accel_last_error());
  accel_status_t st_while = accel_graph_capture_while(s, f.flag, 4);
  accel_status_t st_end = accel_graph_capture_end_if(s);
  accel_stream_destroy(s);
  fix_free(ctx, &f);
  CTS_CHECK(st_if == ACCEL_ERROR_UNSUPPORTED && st_while == ACCEL_ERROR_UNSUPPORTED &&
                strstr(msg, "ACCEL_ATTR_CONDITIONALS"),
            "conditionals NONE, yet if %s, while %s: %s", accel_status_name(st_if),
            accel_status_name(st_while), msg);
  CTS_CHECK(st_end == ACCEL_ERROR_STATE, "end_if with nothing open: %s",
            accel_status_name(st_end));
  return CTS_PASS;
}

/* Checks the refusal where the device has no regions; runs `run` on a fresh fixture. */
cts_result_t cond_case(cts_ctx_t *ctx, cond_run_fn run, void *user) {
  int yes = 0;
  CTS_OK(cond_supported(ctx, &yes));
  if (!yes) return cond_refused(ctx);
  cond_fix_t f;
  accel_status_t st = fix_make(ctx, &f);
  f.user = user;
  const char *why = st == ACCEL_OK ? run(ctx, &f, &st) : NULL;
  char msg[256];
  snprintf(msg, sizeof msg, "%s", st != ACCEL_OK ? accel_last_error() : why ? why : "");
  fix_free(ctx, &f);
  CTS_CHECK(st == ACCEL_OK && !why, "%s %s", accel_status_name(st), msg);
  return CTS_PASS;
}

static const char *if_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  const char *why = NULL;
  for (int taken = 0; taken < 2 && *st == ACCEL_OK && !why; ++taken) {
    f->byte = taken ? 0x01 : 0x00;
    *st = cts_exec(ctx, if_body, f, 1);
    if (*st == ACCEL_OK) why = expect(ctx, f, taken ? 5.0f : 1.0f, taken ? 5.0f : 0.0f, NULL, st);
  }
  return why;
}

CTS_CASE(graph_cond_if_taken_and_skipped, CTS_TAG_KERNELS) {
  return cond_case(ctx, if_run, NULL);
}

/* The WHILE against a host loop: k passes for a flag of -k, at most max. */
static const char *run_while(cts_ctx_t *ctx, cond_fix_t *f, cts_body_fn body, int32_t k,
                             uint32_t max, int outer, accel_status_t *st) {
  f->max = max;
  __atomic_store_n(&f->host_calls, 0, __ATOMIC_RELAXED);
  int32_t init = -k, one = outer ? 1 : 0;
  *st = cts_upload(ctx, f->flag, &init, sizeof init);
  if (*st == ACCEL_OK) *st = cts_upload(ctx, f->flag2, &one, sizeof one);
  if (*st == ACCEL_OK) *st = cts_exec(ctx, body, f, 1);
  if (*st != ACCEL_OK) return accel_last_error();
  if (!outer && body == nested_body) return NULL; /* the caller checks that nothing ran */
  float want = 1.0f; /* the host loop */
  int32_t flag = init;
  int passes = 0;
  for (uint32_t pass = 0; pass < max && flag != 0; ++pass, ++passes) {
    want *= 2.0f;
    flag += 1;
  }
  const int calls = __atomic_load_n(&f->host_calls, __ATOMIC_RELAXED);
  if (calls != passes) {
    static char why[96];
    snprintf(why, sizeof why, "the body's host function ran %d times for %d passes", calls,
             passes);
    return why;
  }
  return expect(ctx, f, want, 0.0f, &flag, st);
}

static const char *while_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  static const struct { int32_t k; uint32_t max; } runs[] = {{0, 8}, {1, 8}, {5, 8}, {8, 8},
                                                             {10, 4}};
  static char why[256];
  for (size_t i = 0; i < sizeof runs / sizeof *runs; ++i) {
    const char *bad = run_while(ctx, f, while_body, runs[i].k, runs[i].max, 1, st);
    if (*st != ACCEL_OK) return NULL;
    if (!bad) continue;
    snprintf(why, sizeof why, "k = %d, max %u: %s", (int)runs[i].k, runs[i].max, bad);
    return why;
  }
  return NULL;
}

CTS_CASE(graph_cond_while_counts_on_device, CTS_TAG_KERNELS) {
  return cond_case(ctx, while_run, NULL);
}

/* A WHILE nested in an IF: runs when the outer flag is set, is skipped whole otherwise. */
static const char *nested_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  const float marker[COND_N] = {42.0f};
  const char *why = run_while(ctx, f, nested_body, 3, 8, 1, st);
  if (*st == ACCEL_OK && !why) *st = cts_upload(ctx, f->value, marker, sizeof marker);
  if (*st == ACCEL_OK && !why) why = run_while(ctx, f, nested_body, 3, 8, 0, st);
  float v = 0.0f;
  int32_t flag = 0;
  if (*st == ACCEL_OK && !why) *st = cts_download(ctx, &v, f->value, sizeof v);
  if (*st == ACCEL_OK && !why) *st = cts_download(ctx, &flag, f->flag, sizeof flag);
  if (*st == ACCEL_OK && !why && (v != 42.0f || flag != -3))
    why = "the outer IF was not taken but its WHILE ran";
  return why;
}

CTS_CASE(graph_cond_nested, CTS_TAG_KERNELS) { return cond_case(ctx, nested_run, NULL); }

/* if (flag) value = v, captured into *g on s. */
static accel_status_t if_graph(cts_ctx_t *ctx, accel_stream_t *s, const int32_t *flag,
                               float *value, float v, accel_graph_t **g) {
  accel_tensor_t t = {value, COND_N, ACCEL_F32};
  accel_status_t st = accel_graph_create(ctx->dev, g);
  if (st == ACCEL_OK) st = accel_graph_capture_begin(*g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL);
  if (st != ACCEL_OK) return st;
  if (flag) st = accel_graph_capture_if(s, flag);
  if (st == ACCEL_OK) st = accel_fill(s, &t, 1, v);
  if (st == ACCEL_OK && flag) st = accel_graph_capture_end_if(s);
  accel_status_t end = accel_graph_capture_end(*g);
  return st != ACCEL_OK ? st : end;
}

/* Replays g with the flags set to a and b: value (from 1) must end as want. */
static const char *replay_flags(cts_ctx_t *ctx, accel_stream_t *s, accel_graph_t *g,
                                cond_fix_t *f, int32_t a, int32_t b, float want,
                                accel_status_t *st) {
  float ones[COND_N];
  for (int i = 0; i < COND_N; ++i) ones[i] = 1.0f;
  *st = cts_upload(ctx, f->flag, &a, sizeof a);
  if (*st == ACCEL_OK) *st = cts_upload(ctx, f->flag2, &b, sizeof b);
  if (*st == ACCEL_OK) *st = cts_upload(ctx, f->value, ones, sizeof ones);
  if (*st == ACCEL_OK) *st = accel_graph_replay(g, s);
  if (*st == ACCEL_OK) *st = accel_stream_synchronize(s);
  return *st == ACCEL_OK ? expect(ctx, f, want, 0.0f, NULL, st) : NULL;
}

/* accel_graph_update of a graph with a region: the flag is an argument (the updated graph
 * reads the source's flag), the region part of the topology (a graph without it is refused,
 * naming the region). */
static const char *update_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  accel_stream_t *s = NULL;
  accel_graph_t *g[3] = {0};
  const char *why = NULL;
  *st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s);
  if (*st == ACCEL_OK) *st = if_graph(ctx, s, f->flag, f->value, 5.0f, &g[0]);
  if (*st == ACCEL_OK) *st = if_graph(ctx, s, f->flag2, f->value, 7.0f, &g[1]);
  if (*st == ACCEL_OK) *st = if_graph(ctx, s, NULL, f->value, 9.0f, &g[2]);
  if (*st == ACCEL_OK) why = replay_flags(ctx, s, g[0], f, 1, 0, 5.0f, st);
  if (*st == ACCEL_OK && !why) *st = accel_graph_update(g[0], g[1]);
  if (*st == ACCEL_OK && !why) why = replay_flags(ctx, s, g[0], f, 1, 0, 1.0f, st);
  if (*st == ACCEL_OK && !why) why = replay_flags(ctx, s, g[0], f, 0, 1, 7.0f, st);
  if (*st == ACCEL_OK && !why) {
    accel_status_t mismatch = accel_graph_update(g[0], g[2]);
    if (mismatch != ACCEL_ERROR_GRAPH_MISMATCH || !strstr(accel_last_error(), "if region"))
      why = "an update that drops the region is not refused naming it";
  }
  for (int i = 0; i < 3; ++i)
    if (g[i]) accel_graph_destroy(g[i]);
  if (s) accel_stream_destroy(s);
  return why;
}

CTS_CASE(graph_cond_update, CTS_TAG_KERNELS) { return cond_case(ctx, update_run, NULL); }

/* Refusals: bad flags and bounds, ends without a start or of the other kind, an event record in
 * a region, a synchronize in a region opened outside a capture, a capture ended with a region
 * open. Each leaves the stream usable. */
CTS_CASE(graph_cond_illegal_calls, CTS_TAG_NONE) {
  int yes = 0;
  CTS_OK(cond_supported(ctx, &yes));
  if (!yes) return cond_refused(ctx);
  cond_fix_t f;
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  accel_event_t *e = NULL;
  int32_t host_flag = 1;
  CTS_OK(fix_make(ctx, &f));
  CTS_OK(accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &s));
  CTS_OK(accel_graph_create(ctx->dev, &g));
  CTS_OK(accel_event_create(ctx->dev, ACCEL_EVENT_DEFAULT, &e));
  CTS_STATUS(accel_graph_capture_if(s, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_graph_capture_if(s, (const int32_t *)(void *)((char *)f.flag + 1)),
             ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_graph_capture_if(s, &host_flag), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_graph_capture_while(s, f.flag, 0), ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_graph_capture_if(NULL, f.flag), ACCEL_ERROR_INVALID_HANDLE);
  CTS_STATUS(accel_graph_capture_end_if(s), ACCEL_ERROR_STATE);
  CTS_STATUS(accel_graph_capture_end_while(s), ACCEL_ERROR_STATE);
  /* outside a capture: the wrong end is refused and the region stays open */
  CTS_OK(accel_graph_capture_if(s, f.flag));
  CTS_STATUS(accel_graph_capture_end_while(s), ACCEL_ERROR_STATE);
  CTS_OK(accel_graph_capture_end_if(s));
  /* a synchronize in a region opened outside a capture invalidates it */
  CTS_OK(accel_graph_capture_while(s, f.flag, 2));
  CTS_STATUS(accel_stream_synchronize(s), ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  CTS_STATUS(accel_graph_capture_end_while(s), ACCEL_ERROR_CAPTURE_INVALIDATED);
  /* in a capture: an event record inside a region, and an end with a region open */
  CTS_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  CTS_OK(accel_graph_capture_if(s, f.flag));
  CTS_STATUS(accel_event_record(e, s), ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  CTS_OK(accel_graph_capture_end_if(s));
  CTS_STATUS(accel_graph_capture_end(g), ACCEL_ERROR_CAPTURE_INVALIDATED);
  CTS_OK(accel_graph_reset(g));
  CTS_OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  CTS_OK(accel_graph_capture_while(s, f.flag, 3));
  accel_status_t unbalanced = accel_graph_capture_end(g);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", accel_last_error());
  /* the stream works after all that */
  CTS_OK(accel_memset_async(s, f.flag, 0, sizeof(int32_t)));
  CTS_OK(accel_stream_synchronize(s));
  accel_event_destroy(e);
  accel_graph_destroy(g);
  accel_stream_destroy(s);
  fix_free(ctx, &f);
  CTS_CHECK(unbalanced == ACCEL_ERROR_CAPTURE_INVALIDATED && strstr(msg, "still open"),
            "a capture ended with a region open: %s: %s", accel_status_name(unbalanced), msg);
  return CTS_PASS;
}

/* A region opened from a host function (RELIABILITY.md: a host function may call what does not
 * wait on its own stream): the host function runs if_body on `on`, its own stream or another
 * one, and the region is replayed there behind it. */
typedef struct host_cond {
  cond_fix_t *f;
  accel_stream_t *on; /* NULL: the stream the host function runs on */
  accel_stream_t *self;
  accel_status_t st;
} host_cond_t;

static void host_if(void *user) {
  host_cond_t *h = user;
  accel_status_t st = if_body(h->on ? h->on : h->self, h->f);
  if (st != ACCEL_OK && h->st == ACCEL_OK) h->st = st;
}

static accel_status_t host_if_body(accel_stream_t *s, void *user) {
  host_cond_t *h = user;
  h->self = s;
  return accel_launch_host_func(s, host_if, h);
}

static const char *host_run(cts_ctx_t *ctx, cond_fix_t *f, accel_status_t *st) {
  static char why[256];
  accel_stream_t *other = NULL;
  *st = accel_stream_create_ex(ctx->dev, cts_stream_flags(ctx), &other);
  const char *bad = NULL;
  for (int k = 0; k < 4 && *st == ACCEL_OK && !bad; ++k) {
    host_cond_t h = {f, k & 1 ? other : NULL, NULL, ACCEL_OK};
    f->byte = k & 2 ? 0x01 : 0x00; /* not taken first: dst keeps what a taken region copied */
    *st = cts_exec(ctx, host_if_body, &h, 1);
    if (*st == ACCEL_OK) *st = accel_stream_synchronize(other);
    if (*st == ACCEL_OK) *st = h.st;
    if (*st == ACCEL_OK) bad = expect(ctx, f, k & 2 ? 5.0f : 1.0f, k & 2 ? 5.0f : 0.0f, NULL, st);
    if (bad)
      snprintf(why, sizeof why, "a region from a host function on %s stream, flag %d: %s",
               k & 1 ? "another" : "its own", k >> 1, bad);
  }
  if (other) accel_stream_destroy(other);
  return bad ? why : NULL;
}

CTS_CASE(graph_cond_from_host_function, CTS_TAG_KERNELS) {
  return cond_case(ctx, host_run, NULL);
}
