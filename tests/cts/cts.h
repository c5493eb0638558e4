/*
 * accel conformance test suite: the case registry and helpers shared by every case file.
 *
 * A case is a function registered with CTS_CASE(name, tags). The harness opens one device
 * (--device), and runs every case in one mode (--mode eager|graph|lazy). Cases that submit work
 * do so through cts_exec(), which runs the same body eagerly, captured into a graph and
 * replayed, or on a lazy stream then flushed — so one case covers all three modes.
 */
#ifndef ACCEL_CTS_H
#define ACCEL_CTS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"

typedef enum cts_mode { CTS_MODE_EAGER = 0, CTS_MODE_GRAPH = 1, CTS_MODE_LAZY = 2 } cts_mode_t;

typedef enum cts_result { CTS_PASS = 0, CTS_FAIL = 1, CTS_SKIP = 2 } cts_result_t;

typedef struct cts_ctx {
  accel_device_t *dev;
  accel_device_info_t info;
  cts_mode_t mode;
  const char *selector;   /* as given on the command line */
  char message[1024];     /* failure or skip reason of the running case */
  int verbose;
} cts_ctx_t;

typedef cts_result_t (*cts_case_fn)(cts_ctx_t *ctx);

/* Capability tags a case can require; a backend lacking one reports the case SKIPPED. */
enum {
  CTS_TAG_NONE = 0,
  CTS_TAG_KERNELS = 1u << 0,   /* needs the tensor kernels */
  CTS_TAG_TIMING = 1u << 1,    /* needs event timing */
  CTS_TAG_STRESS = 1u << 2,    /* long-running */
  CTS_TAG_HOST_ACCESS = 1u << 3 /* dereferences device pointers on the host */
};

void cts_register(const char *name, unsigned tags, cts_case_fn fn);

#define CTS_CASE(name, tags)                                                      \
  static cts_result_t cts_case_##name(cts_ctx_t *ctx);                            \
  __attribute__((constructor)) static void cts_register_##name(void) {            \
    cts_register(#name, (tags), cts_case_##name);                                 \
  }                                                                               \
  static cts_result_t cts_case_##name(cts_ctx_t *ctx)

/* Records a failure message (printf style) and returns CTS_FAIL. */
cts_result_t cts_fail(cts_ctx_t *ctx, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
cts_result_t cts_skip(cts_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CTS_CHECK(cond, ...)                                                      \
  do {                                                                            \
    if (!(cond)) return cts_fail(ctx, __FILE__, __LINE__, __VA_ARGS__);           \
  } while (0)

/* Checks that an accel call returns ACCEL_OK; on failure reports the status and message. */
#define CTS_OK(expr)                                                                          \
  do {                                                                                        \
    accel_status_t cts_st_ = (expr);                                                          \
    if (cts_st_ != ACCEL_OK)                                                                  \
      return cts_fail(ctx, __FILE__, __LINE__, "%s -> %s: %s", #expr,                        \
                      accel_status_name(cts_st_), accel_last_error());                        \
  } while (0)

/* Checks that an accel call returns a given status. */
#define CTS_STATUS(expr, want)                                                                \
  do {                                                                                        \
    accel_status_t cts_st_ = (expr);                                                          \
    if (cts_st_ != (want))                                                                    \
      return cts_fail(ctx, __FILE__, __LINE__, "%s -> %s, expected %s (%s)", #expr,          \
                      accel_status_name(cts_st_), accel_status_name(want), accel_last_error()); \
  } while (0)

/* A body submits work to stream s (it must not synchronize). */
typedef accel_status_t (*cts_body_fn)(accel_stream_t *s, void *user);

/* Runs body in the context's mode on a fresh non-default stream and waits for completion:
 *  eager: body(s); synchronize.
 *  graph: capture body(s) into a graph (capture errors are returned), replay `replays` times,
 *         synchronize. (Eager/lazy run the body `replays` times too, so results compare.)
 *  lazy:  body(s) on an ACCEL_STREAM_LAZY stream `replays` times; flush; synchronize.
 * Returns the first failing status (message in accel_last_error()). */
accel_status_t cts_exec(cts_ctx_t *ctx, cts_body_fn body, void *user, int replays);

/* Device buffers with guard bytes: cts_dev_alloc places `guard` bytes of a known pattern on
 * both sides of the returned region; cts_dev_guard_ok checks them (and frees with
 * cts_dev_free). */
typedef struct cts_buf {
  void *base;   /* allocation start */
  void *data;   /* usable region */
  size_t size;  /* usable bytes */
  size_t guard;
} cts_buf_t;

accel_status_t cts_dev_alloc(cts_ctx_t *ctx, size_t size, size_t guard, cts_buf_t *out);
/* 1 if both guards are intact. */
int cts_dev_guard_ok(cts_ctx_t *ctx, const cts_buf_t *buf);
void cts_dev_free(cts_ctx_t *ctx, cts_buf_t *buf);

/* Blocking host<->device copies through accel_memcpy. */
accel_status_t cts_upload(cts_ctx_t *ctx, void *dst_dev, const void *src, size_t size);
accel_status_t cts_download(cts_ctx_t *ctx, void *dst, const void *src_dev, size_t size);

/* Deterministic pseudo-random numbers (splitmix64 / xorshift) for test data. */
uint64_t cts_rand_u64(uint64_t *state);
float cts_rand_uniform(uint64_t *state, float lo, float hi);
float cts_rand_normal(uint64_t *state);

/* Normalised mean squared error of got vs a double reference: sum((g-r)^2) / sum(r^2)
 * (absolute MSE when the reference is all zero). */
double cts_nmse(const float *got, const double *ref, size_t n);

#endif
