/*
 * Unit test: status names are distinct and stable; the last-error message is per thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "accel/accel.h"
#include "check.h"


static const accel_status_t k_all[] = {
    ACCEL_OK, ACCEL_ERROR_INVALID_ARGUMENT, ACCEL_ERROR_INVALID_HANDLE,
    ACCEL_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_UNAVAILABLE, ACCEL_ERROR_UNSUPPORTED,
    ACCEL_ERROR_NOT_READY, ACCEL_ERROR_ILLEGAL_IN_CAPTURE, ACCEL_ERROR_CAPTURE_INVALIDATED,
    ACCEL_ERROR_PLUGIN, ACCEL_ERROR_BACKEND, ACCEL_ERROR_STATE, ACCEL_ERROR_GRAPH_MISMATCH,
};
enum { N_STATUS = sizeof(k_all) / sizeof(k_all[0]) };

static void test_names(void) {
  for (int i = 0; i < N_STATUS; i++) {
    const char *a = accel_status_name(k_all[i]);
    CHECK(a && a[0], "status %d has no name", (int)k_all[i]);
    if (!a) continue;
    CHECK(strncmp(a, "ACCEL_", 6) == 0, "status %d name '%s' lacks the ACCEL_ prefix", (int)k_all[i], a);
    for (int j = 0; j < i; j++) {
      const char *b = accel_status_name(k_all[j]);
      CHECK(!b || strcmp(a, b) != 0, "statuses %d and %d share the name '%s'", (int)k_all[i],
            (int)k_all[j], a);
    }
  }
  CHECK(strcmp(accel_status_name(ACCEL_OK), "ACCEL_OK") == 0, "ACCEL_OK is named '%s'",
        accel_status_name(ACCEL_OK));
  CHECK(strcmp(accel_status_name(ACCEL_ERROR_INVALID_ARGUMENT), "ACCEL_ERROR_INVALID_ARGUMENT") == 0,
        "INVALID_ARGUMENT is named '%s'", accel_status_name(ACCEL_ERROR_INVALID_ARGUMENT));
  /* Out-of-range values still get a (non-NULL) name, distinct from every real one. */
  const char *bogus = accel_status_name((accel_status_t)12345);
  CHECK(bogus != NULL, "accel_status_name(12345) is NULL");
  for (int i = 0; bogus && i < N_STATUS; i++)
    CHECK(strcmp(bogus, accel_status_name(k_all[i])) != 0, "unknown status named like %d",
          (int)k_all[i]);
}

/* Each thread provokes its own error and checks that it sees its own message, also after the
 * other thread has produced a different one. */
typedef struct thread_arg {
  const char *selector;    /* an invalid selector that names the thread */
  pthread_barrier_t *barrier;
  char message[512];
  int cleared_ok;
} thread_arg_t;

static void *thread_main(void *user) {
  thread_arg_t *t = user;
  accel_device_t *d = NULL;
  accel_device_open(t->selector, &d);
  pthread_barrier_wait(t->barrier); /* both threads have set their error */
  pthread_barrier_wait(t->barrier); /* the main thread cleared its own */
  snprintf(t->message, sizeof(t->message), "%s", accel_last_error());
  accel_clear_error();
  t->cleared_ok = accel_last_error()[0] == '\0';
  return NULL;
}

static void test_thread_local_error(void) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 3);
  thread_arg_t a = {.selector = "no_such_backend_alpha", .barrier = &barrier};
  thread_arg_t b = {.selector = "no_such_backend_beta", .barrier = &barrier};
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, thread_main, &a) == 0, "pthread_create failed");
  CHECK(pthread_create(&tb, NULL, thread_main, &b) == 0, "pthread_create failed");
  accel_device_t *d = NULL;
  accel_device_open("no_such_backend_main", &d);
  pthread_barrier_wait(&barrier);
  char mine[512];
  snprintf(mine, sizeof(mine), "%s", accel_last_error());
  accel_clear_error();
  CHECK(accel_last_error()[0] == '\0', "accel_clear_error left '%s'", accel_last_error());
  pthread_barrier_wait(&barrier);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  CHECK(strstr(mine, "no_such_backend_main") != NULL, "main thread sees '%s'", mine);
  CHECK(strstr(a.message, "no_such_backend_alpha") != NULL, "thread a sees '%s'", a.message);
  CHECK(strstr(b.message, "no_such_backend_beta") != NULL, "thread b sees '%s'", b.message);
  CHECK(a.cleared_ok && b.cleared_ok, "accel_clear_error did not clear a thread's message");
}

int main(void) {
  test_names();
  test_thread_local_error();
  CHECK(accel_version_string() && accel_version_string()[0], "no version string");
  return CHECK_EXIT("test_status");
}
