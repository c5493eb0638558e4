/*
 * Collective-engine plugins (include/accel/accel_comm_engine.h): libaccelcomm-<name>.so, looked
 * up by name in the backend plugins' search path (ACCEL_PLUGIN_PATH, the installed plugin dir,
 * the directory of libaccel), opened and checked by the one plugin loader (core/plugin_loader.c:
 * the same file, ELF and vtable header checks as a backend plugin), checked here for the
 * engine's slots and initialised once. Engines are loaded on first use (not at accel start:
 * most processes never communicate) and never dlclose'd. The names differ from libaccel-*.so
 * so that the backend scan does not take engines for broken backends.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "comm_internal.h"
#include "core_util.h"
#include "log.h"
#include "plugin_loader.h"

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

/* The engine's own checks of a vtable whose header passed (plugin_loader.c); ctx: the slot. */
static const char *check_vtable(const void *header, void *ctx, char *buf, size_t len) {
  const accel_comm_engine_vtable_t *vt = header;
  const engine_slot_t *e = ctx;
  if (strcmp(vt->name, e->name) != 0) {
    snprintf(buf, len, "engine name '%s' does not match its file (libaccelcomm-%s.so)",
             vt->name, e->name);
    return buf;
  }
  if (!vt->engine_init || !vt->comm_split || !vt->comm_destroy || !vt->abort)
    return "required slot missing (engine_init, comm_split, comm_destroy, abort)";
  if (vt->host_engine ? !vt->run || !vt->comm_create_mpi || !vt->host_all_gather
                      : !vt->enqueue || !vt->comm_create_bootstrap)
    return vt->host_engine ? "host engine without run, comm_create_mpi or host_all_gather"
                           : "stream engine without enqueue or comm_create_bootstrap";
  return NULL;
}

static accel_status_t engine_query(void *entry, const void **out) {
  const accel_comm_engine_vtable_t *vt = NULL;
  accel_status_t st = ((accel_comm_engine_query_fn)entry)(ACCEL_COMM_ENGINE_ABI_VERSION,
                                                          &accel_host_api, &vt);
  *out = vt;
  return st;
}

static const accel_plugin_kind_t engine_kind = {
    .query_symbol = ACCEL_COMM_ENGINE_QUERY_SYMBOL,
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .query = engine_query,
    .min_size = ACCEL_COMM_ENGINE_VTABLE_MIN_SIZE,
    .name_size = sizeof engines[0].name,
    .check = check_vtable,
};

/* Loads the engine from file and initialises it (slot filled either way). */
static void load_engine(const char *path, engine_slot_t *e) {
  accel_plugin_file_t f;
  if (accel_plugin_open(&engine_kind, path, e, &f) != ACCEL_OK) {
    e->status = ACCEL_ERROR_PLUGIN;
    snprintf(e->message, sizeof e->message, "%.500s refused: %s", path, f.why);
    accel_log(ACCEL_LOG_WARN, "comm", "engine %s: %s", e->name, e->message);
    return;
  }
  const accel_comm_engine_vtable_t *vt = f.vtable;
  accel_clear_error();
  e->status = vt->engine_init(&accel_host_api);
  if (e->status != ACCEL_OK)
    snprintf(e->message, sizeof e->message, "%.500s: %.500s", path, accel_last_error());
  /* SQLite-VFS style: what the engine has; the slots it predates stay NULL */
  memset(&e->copy, 0, sizeof e->copy);
  memcpy(&e->copy, vt, vt->struct_size < sizeof e->copy ? vt->struct_size : sizeof e->copy);
  e->copy.struct_size = sizeof e->copy;
  e->vt = &e->copy; /* kept loaded: an UNAVAILABLE engine still reports why on every create */
  accel_log(ACCEL_LOG_INFO, "comm", "engine %s from %s: %s", e->name, path,
            e->status == ACCEL_OK ? "ready" : e->message);
}

/* accel_plugin_search's visit: the first directory that has the engine's file ends the search,
 * whether the file loads or not (a broken engine is reported, not passed over). */
static int try_dir(const char *dir, void *ctx) {
  engine_slot_t *e = ctx;
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/libaccelcomm-%s.so", dir, e->name) >= (int)sizeof path)
    return 0;
  if (access(path, F_OK) != 0) return 0;
  load_engine(path, e);
  return 1;
}

static void search(engine_slot_t *e) {
  char searched[2048];
  if (accel_plugin_search(try_dir, e, searched, sizeof searched)) return;
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
