/*
 * Collective-engine plugins (include/accel/accel_comm_engine.h): libaccelcomm-<name>.so, looked
 * up by name in the backend plugins' search path (ACCEL_PLUGIN_PATH, the installed plugin dir,
 * the directory of libaccel), opened RTLD_NOW | RTLD_LOCAL, checked like a backend plugin and
 * initialised once. Engines are loaded on first use (not at accel start: most processes never
 * communicate) and never dlclose'd. The names differ from libaccel-*.so so that the backend
 * loader does not take engines for broken backends.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel_config.h"
#include "comm_internal.h"

#define MAX_ENGINES 8

typedef struct engine_slot {
  char name[32];
  const accel_comm_engine_vtable_t *vt;
  accel_comm_engine_vtable_t copy; /* what the engine has; slots it predates stay NULL */
  accel_status_t status;
  char message[1024];
} engine_slot_t;

static pthread_mutex_t engines_lock = PTHREAD_MUTEX_INITIALIZER;
static engine_slot_t engines[MAX_ENGINES];
static int nengines;

static const char *check_vtable(const accel_comm_engine_vtable_t *vt, const char *name,
                                char *buf, size_t len) {
  if (vt->abi_version != ACCEL_COMM_ENGINE_ABI_VERSION) {
    snprintf(buf, len, "engine ABI %u, libaccel expects %u", vt->abi_version,
             ACCEL_COMM_ENGINE_ABI_VERSION);
    return buf;
  }
  if (vt->struct_size < ACCEL_COMM_ENGINE_VTABLE_MIN_SIZE) {
    snprintf(buf, len, "vtable of %u bytes, libaccel needs %zu", vt->struct_size,
             (size_t)ACCEL_COMM_ENGINE_VTABLE_MIN_SIZE);
    return buf;
  }
  if (!vt->name || strcmp(vt->name, name) != 0) return "engine name does not match its file";
  if (!vt->engine_init || !vt->comm_split || !vt->comm_destroy || !vt->abort)
    return "required slot missing (engine_init, comm_split, comm_destroy, abort)";
  if (vt->host_engine ? !vt->run || !vt->comm_create_mpi || !vt->host_all_gather
                      : !vt->enqueue || !vt->comm_create_bootstrap)
    return vt->host_engine ? "host engine without run, comm_create_mpi or host_all_gather"
                           : "stream engine without enqueue or comm_create_bootstrap";
  return NULL;
}

/* Tries dir/libaccelcomm-<name>.so: 1 when the file exists (slot filled either way). */
static int try_dir(const char *dir, engine_slot_t *e) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/libaccelcomm-%s.so", dir, e->name) >= (int)sizeof path ||
      access(path, F_OK) != 0)
    return 0;
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    e->status = ACCEL_ERROR_PLUGIN;
    snprintf(e->message, sizeof e->message, "%.500s: %.500s", path, dlerror());
    return 1;
  }
  accel_comm_engine_query_fn query =
      (accel_comm_engine_query_fn)dlsym(dl, ACCEL_COMM_ENGINE_QUERY_SYMBOL);
  const accel_comm_engine_vtable_t *vt = NULL;
  char why[256];
  const char *bad = NULL;
  if (!query) bad = "no " ACCEL_COMM_ENGINE_QUERY_SYMBOL " symbol";
  else if (query(ACCEL_COMM_ENGINE_ABI_VERSION, &accel_host_api, &vt) != ACCEL_OK || !vt)
    bad = accel_last_error()[0] ? accel_last_error() : "query refused the host";
  else bad = check_vtable(vt, e->name, why, sizeof why);
  if (bad) {
    e->status = ACCEL_ERROR_PLUGIN;
    snprintf(e->message, sizeof e->message, "%.500s refused: %.500s", path, bad);
    dlclose(dl); /* nothing from it is in use */
    return 1;
  }
  accel_clear_error();
  e->status = vt->engine_init(&accel_host_api);
  if (e->status != ACCEL_OK)
    snprintf(e->message, sizeof e->message, "%.500s: %.500s", path, accel_last_error());
  memset(&e->copy, 0, sizeof e->copy);
  memcpy(&e->copy, vt, vt->struct_size < sizeof e->copy ? vt->struct_size : sizeof e->copy);
  e->copy.struct_size = sizeof e->copy;
  e->vt = &e->copy; /* kept loaded: an UNAVAILABLE engine still reports why on every create */
  accel_log(ACCEL_LOG_INFO, "comm", "engine %s from %s: %s", e->name, path,
            e->status == ACCEL_OK ? "ready" : e->message);
  return 1;
}

static void search(engine_slot_t *e) {
  char searched[2048] = "";
  const char *env = accel_env("ACCEL_PLUGIN_PATH");
  if (env) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *save = NULL, *dir = strtok_r(buf, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
      if (try_dir(dir, e)) return;
      size_t used = strlen(searched);
      snprintf(searched + used, sizeof searched - used, "%.400s, ", dir);
    }
  }
  if (try_dir(ACCEL_PLUGIN_DIR, e)) return;
  size_t used = strlen(searched);
  snprintf(searched + used, sizeof searched - used, "%s", ACCEL_PLUGIN_DIR);
  Dl_info info;
  char self[PATH_MAX];
  if (dladdr((void *)search, &info) && info.dli_fname && realpath(info.dli_fname, self)) {
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      if (try_dir(self, e)) return;
      used = strlen(searched);
      snprintf(searched + used, sizeof searched - used, ", %.400s", self);
    }
  }
  e->status = ACCEL_ERROR_UNAVAILABLE;
  snprintf(e->message, sizeof e->message, "libaccelcomm-%s.so not found in: %.900s", e->name,
           searched);
}

accel_status_t accel_comm_engine_get(const char *name, const char *fn,
                                     const accel_comm_engine_vtable_t **out) {
  if (strlen(name) >= sizeof engines[0].name || strpbrk(name, "/."))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "%s: bad engine name '%s'", fn, name);
  pthread_mutex_lock(&engines_lock);
  engine_slot_t *e = NULL;
  for (int i = 0; i < nengines && !e; ++i)
    if (strcmp(engines[i].name, name) == 0) e = &engines[i];
  if (!e && nengines < MAX_ENGINES) {
    e = &engines[nengines++];
    snprintf(e->name, sizeof e->name, "%s", name);
    search(e);
  }
  pthread_mutex_unlock(&engines_lock);
  if (!e)
    return accel_set_error(ACCEL_ERROR_UNAVAILABLE, "%s: more than %d engines asked for", fn,
                           MAX_ENGINES);
  if (e->status != ACCEL_OK)
    return accel_set_error(e->status, "%s: engine '%s': %s", fn, name, e->message);
  *out = e->vt;
  return ACCEL_OK;
}
