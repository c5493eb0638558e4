/* Detached service threads (service_thread.h). */
#include "service_thread.h"

#include <pthread.h>

int accel_service_thread_start(void *(*fn)(void *), void *arg) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return 0;
  pthread_t t;
  const int started = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                      pthread_create(&t, &attr, fn, arg) == 0;
  pthread_attr_destroy(&attr);
  return started;
}
