/*
 * Communicators (core/comm.c, core/comm_enqueue.c) and their engines (core/comm_loader.c).
 */
#ifndef ACCEL_CORE_COMM_INTERNAL_H
#define ACCEL_CORE_COMM_INTERNAL_H

#include "accel/accel_comm.h"
#include "accel/accel_comm_engine.h"
#include <pthread.h>
#include <stdbool.h>
#include "handle.h"

/* The engine named name, loaded and initialised once: ACCEL_OK, or UNAVAILABLE / PLUGIN (an
 * engine whose runtime is absent stays UNAVAILABLE) with a message naming fn. */
accel_status_t accel_comm_engine_get(const char *name, const char *fn,
                                     const accel_comm_engine_vtable_t **out);

/* The collective check (core/comm_check.c; ACCEL_COMM_CHECK): the ranks agree on each
 * collective's fingerprint before it runs: never (OFF, "0"), where the sequence so far does
 * not predict it (PATTERN, the default), or always (EVERY, "1"). */
typedef enum accel_comm_check_mode {
  ACCEL_COMM_CHECK_OFF,
  ACCEL_COMM_CHECK_PATTERN,
  ACCEL_COMM_CHECK_EVERY
} accel_comm_check_mode_t;
#define ACCEL_COMM_PATTERN_HISTORY 3 /* fingerprints that predict the next one */
#define ACCEL_COMM_PATTERN_SLOTS 64
typedef struct accel_comm_pattern_slot {
  uint64_t key; /* the history's hash; 0: empty */
  uint64_t meta, count; /* the collective that followed it */
} accel_comm_pattern_slot_t;
/* A communicator's check: only the thread running its collective uses it (one at a time). */
typedef struct accel_comm_checker {
  accel_comm_check_mode_t mode;
  const accel_comm_engine_vtable_t *ev;
  accel_ce_comm_t *impl;
  int rank, size;
  double timeout_s;
  uint64_t seq; /* collectives checked so far */
  uint64_t history[ACCEL_COMM_PATTERN_HISTORY];
  accel_comm_pattern_slot_t slots[ACCEL_COMM_PATTERN_SLOTS];
} accel_comm_checker_t;
accel_comm_check_mode_t accel_comm_check_mode(void);
/* The mode is OFF for stream engines and one-rank communicators. */
void accel_comm_checker_init(accel_comm_checker_t *k, accel_comm_check_mode_t mode,
                             const accel_comm_engine_vtable_t *ev, accel_ce_comm_t *impl,
                             int rank, int size, double timeout_s);
/* Before op runs: ACCEL_OK, or the error of a failed agreement (INVALID_ARGUMENT naming both
 * sides when the ranks differ; the engine's timeout when some rank never joined). */
accel_status_t accel_comm_checker_run(accel_comm_checker_t *k, const accel_comm_op_t *op);

/* comm_exit.c: every communicator is listed from its creation to its teardown; at process exit
 * the streams of their devices finish their work (bounded by the longest timeout) before the
 * engines' own exit handlers (MPI_Finalize) run. */
typedef struct accel_comm_live {
  accel_device_t *dev;
  double timeout_s;
  struct accel_comm_live *prev, *next;
} accel_comm_live_t;
void accel_comm_live_add(accel_comm_live_t *l);
void accel_comm_live_remove(accel_comm_live_t *l);

/* A communicator (core/comm.c: lifecycle; core/comm_enqueue.c: its collectives). */
struct accel_comm {
  accel_handle_t hdr;
  accel_device_t *dev; /* reference held */
  const accel_comm_engine_vtable_t *ev;
  accel_ce_comm_t *impl;
  int rank, size;
  double timeout_s;
  accel_comm_checker_t check; /* the ranks agree on collectives (ACCEL_COMM_CHECK) */
  uint64_t serial;           /* never reused: keys the issuing threads' validation caches */
  pthread_mutex_t lock;      /* guards the failure record */
  atomic_int failed;
  atomic_int cancelled; /* the engine's comm_cancel was called (stream engines' watchdog) */
  /* Orders enqueue against comm_cancel: NCCL's abort frees the communicator, so no enqueue may
   * be inside the engine while it runs, and none may start after it (held only while the
   * engine issues work, never while device work is waited for). */
  pthread_mutex_t engine_lock;
  accel_status_t error;
  char message[768];
  accel_comm_live_t live; /* on the list drained at process exit (comm_exit.c) */
};

/* ACCEL_COMM_TIMEOUT in seconds (300 when unset; a bad value is logged and ignored). */
double accel_comm_timeout(void);
/* ACCEL_OK for a live communicator; else INVALID_HANDLE with a message naming fn. */
accel_status_t accel_comm_handle_check(accel_comm_t *c, const char *fn);
static inline void accel_comm_retain(accel_comm_t *c) { atomic_fetch_add(&c->hdr.refcount, 1); }
/* Drops a reference; the last one destroys the engine's communicator and lets the device go. */
void accel_comm_release_ref(accel_comm_t *c);
/* Records the first failure (status, what) on c; later collectives on it are skipped. */
void accel_comm_fail(accel_comm_t *c, accel_status_t status, const char *what);

/* dst[i] = src[i] rounded to dtype (F16 or BF16, nearest even) as the kernels' conversions. */
void accel_comm_downcast(void *dst, const float *src, size_t n, accel_dtype_t dtype);

/* The checks every collective starts with (comm_enqueue.c): the communicator and the stream
 * are live and of one device, dtype is known; *esize gets its element size. */
accel_status_t accel_comm_check_args(accel_comm_t *c, accel_stream_t *s, accel_dtype_t dtype,
                                     const char *fn, size_t *esize);

/* ACCEL_COMM_TIMEOUT for stream engines (core/comm_watchdog.c): watches the work submitted to
 * the eager stream s so far. async_error (may be NULL) is polled while it runs; expired(owner,
 * why) is called from the watchdog thread when it reports an error or timeout_s passed first
 * (possibly more than once for one owner); release(owner) once the watch is gone. On failure
 * nothing is watched and release is not called. */
typedef struct accel_watch_ops {
  accel_status_t (*async_error)(void *owner);
  void (*expired)(void *owner, const char *why);
  void (*release)(void *owner);
} accel_watch_ops_t;
accel_status_t accel_watch_stream(accel_stream_t *s, double timeout_s, const char *what,
                                  const accel_watch_ops_t *ops, void *owner);

#endif
