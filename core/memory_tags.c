/*
 * Memory tags (accel_memory_tag_push/pop): a per-thread stack of names; the innermost one is
 * accel_memory_tag_top, which every allocation stores in its block (one thread-local read,
 * allocator.c). Tag strings are interned for the life of the process so that a block may keep
 * pointing at one after its pop: a program uses a handful of distinct tags.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "core_util.h"

#define TAG_DEPTH 64
#define TAG_MAX 127
#define TAG_DISTINCT 4096 /* interned names at most: a tag per step number would be a leak */

static _Thread_local const char *stack[TAG_DEPTH];
static _Thread_local unsigned depth;

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char **interned;
static size_t ninterned;

static const char *intern(const char *tag) {
  pthread_mutex_lock(&intern_lock);
  const char *found = NULL;
  for (size_t i = 0; i < ninterned && !found; ++i)
    if (strcmp(interned[i], tag) == 0) found = interned[i];
  if (!found && ninterned < TAG_DISTINCT) {
    char **grown = interned ? interned : calloc(TAG_DISTINCT, sizeof *interned);
    char *copy = grown ? strdup(tag) : NULL;
    interned = grown;
    if (copy) found = interned[ninterned++] = copy;
  }
  pthread_mutex_unlock(&intern_lock);
  return found;
}

accel_status_t accel_memory_tag_push(const char *tag) {
  ACCEL_REQUIRE_ARG(tag, __func__, "tag is NULL");
  if (!*tag || strlen(tag) > TAG_MAX)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: a tag is 1 to %d bytes (got %zu)", __func__, TAG_MAX,
                           strlen(tag));
  if (depth == TAG_DEPTH)
    return accel_set_error(ACCEL_ERROR_STATE, "%s: tags nest %d deep at most", __func__,
                           TAG_DEPTH);
  const char *name = intern(tag);
  if (!name)
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                           "%s: %d distinct tags at most (or out of host memory)", __func__,
                           TAG_DISTINCT);
  stack[depth++] = name;
  accel_memory_tag_top = name;
  return ACCEL_OK;
}

accel_status_t accel_memory_tag_pop(void) {
  if (!depth)
    return accel_set_error(ACCEL_ERROR_STATE, "%s: no tag pushed on this thread", __func__);
  --depth;
  accel_memory_tag_top = depth ? stack[depth - 1] : NULL;
  return ACCEL_OK;
}
