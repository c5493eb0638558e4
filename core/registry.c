/*
 * The backend registry: the backends registered (the built-in ones and the plugins the loader,
 * core/loader.c, found), their one-time init and shutdown at exit, and the public registry API.
 * Filled once, under accel_registry_ensure_loaded; read-only afterwards.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_kernel_ids.h"
#include "core_util.h"
#include "log.h"
#include "plugin_table.h"
#include "registry.h"

/* A backend claiming more devices than this is broken (no runtime exposes that many). */
#define MAX_DEVICE_COUNT (1 << 16)

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static accel_backend_t backends[ACCEL_MAX_BACKENDS];
static accel_backend_vtable_t vtable_copies[ACCEL_MAX_BACKENDS];
static int nbackends;

accel_backend_t *accel_registry_find(const char *name) {
  for (int i = 0; i < nbackends; ++i)
    if (strcmp(backends[i].name, name) == 0) return &backends[i];
  return NULL;
}

/* Whether a plugin states the kernel ABI it was built with (one built before the handshake has
 * a struct_size short of the fields). */
bool accel_vtable_declares_kernel_abi(const accel_backend_vtable_t *vt) {
  size_t end = offsetof(accel_backend_vtable_t, kernel_count) + sizeof vt->kernel_count;
  return vt->struct_size >= end && vt->kernel_abi_version != 0;
}

/* SQLite-VFS style: copy what the plugin has; later slots stay NULL. A kernel ABI not declared
 * is version 1 (the only one before the handshake) with every kernel of this libaccel: such a
 * plugin checks ids itself. */
void accel_vtable_copy(accel_backend_vtable_t *copy, const accel_backend_vtable_t *vt) {
  memset(copy, 0, sizeof *copy);
  memcpy(copy, vt, vt->struct_size < sizeof *copy ? vt->struct_size : sizeof *copy);
  copy->struct_size = sizeof *copy;
  if (!accel_vtable_declares_kernel_abi(vt)) {
    copy->kernel_abi_version = 1;
    copy->kernel_count = ACCEL_KERNEL_COUNT;
  }
}

const accel_backend_t *accel_registry_add(const accel_backend_vtable_t *vt, const char *path,
                                          void *dl) {
  if (nbackends == ACCEL_MAX_BACKENDS) return NULL;
  accel_backend_t *b = &backends[nbackends];
  accel_vtable_copy(&vtable_copies[nbackends], vt);
  memset(b, 0, sizeof *b);
  snprintf(b->name, sizeof b->name, "%s", vt->name);
  /* cut to the field, as %s would be; the precision says so to -Wformat-truncation */
  snprintf(b->path, sizeof b->path, "%.*s", (int)sizeof b->path - 1, path ? path : "");
  b->vt = &vtable_copies[nbackends];
  b->dl = dl;
  pthread_mutex_init(&b->lock, NULL);
  nbackends++;
  return b;
}

/*
 * ACCEL_VISIBLE_DEVICES selects devices for every backend. A vendor runtime reads its own
 * variable (the plugin names it: vtable visible_devices_env) once, when it initialises, so it
 * has to be in the environment before the plugin's backend_init. It is applied here, once per
 * process under load_once, after the plugins are registered and before any of them is
 * initialised (backend_init runs only after accel_registry_ensure_loaded returns): plugins never
 * touch the environment, which setenv would make unsafe while other threads read it. A value
 * the user set for the vendor variable wins; "" means unset, as for every accel variable
 * (accel_env), so ACCEL_VISIBLE_DEVICES= hides nothing.
 */
void accel_registry_apply_visible_devices(void) {
  const char *want = accel_env("ACCEL_VISIBLE_DEVICES");
  if (!want) return;
  for (int i = 0; i < nbackends; ++i) {
    const char *var = backends[i].vt->visible_devices_env; /* zero in an older plugin's copy */
    if (!var || !var[0]) continue;
    const char *have = getenv(var);
    if (have)
      accel_log(ACCEL_LOG_INFO, "loader",
                "ACCEL_VISIBLE_DEVICES=%s not applied to %s: %s=%s was set explicitly", want,
                backends[i].name, var, have);
    else if (setenv(var, want, 0) == 0)
      accel_log(ACCEL_LOG_INFO, "loader", "set %s=%s from ACCEL_VISIBLE_DEVICES", var, want);
  }
}

void accel_registry_ensure_loaded(void) { pthread_once(&load_once, accel_loader_load_all); }

/* ---------------------------------------------------------------------------------------- */
/* backend init and the public registry API */

/*
 * backend_shutdown at process teardown. After each successful backend_init an atexit handler
 * is registered; atexit runs handlers last-in first-out, so each run shuts down the most
 * recently initialised backend still up, before the exit handlers its vendor runtime registered
 * during that backend_init (which would otherwise run first and pull the runtime out from under
 * it). A backend with a device still open (never closed by its user) is not shut down: its
 * state is in use. Each backend is shut down at most once; afterwards it reports UNAVAILABLE.
 */
static pthread_mutex_t shutdown_lock = PTHREAD_MUTEX_INITIALIZER;
static accel_backend_t *initialised[ACCEL_MAX_BACKENDS];
static int ninitialised;

static void shutdown_latest(void) {
  pthread_mutex_lock(&shutdown_lock);
  accel_backend_t *b = ninitialised ? initialised[--ninitialised] : NULL;
  pthread_mutex_unlock(&shutdown_lock);
  if (!b) return;
  pthread_mutex_lock(&b->lock);
  int open_devices = 0;
  for (int i = 0; i < b->device_count; ++i) open_devices += b->devices[i] != NULL;
  if (open_devices) {
    pthread_mutex_unlock(&b->lock);
    accel_log(ACCEL_LOG_DEBUG, "loader", "backend '%s' not shut down at exit: %d device(s) "
              "still open", b->name, open_devices);
    return;
  }
  b->vt->backend_shutdown(b->state);
  b->state = NULL;
  free(b->devices);
  b->devices = NULL;
  b->device_count = 0;
  b->init_status = ACCEL_ERROR_UNAVAILABLE;
  snprintf(b->init_message, sizeof b->init_message, "shut down at process exit");
  pthread_mutex_unlock(&b->lock);
}

static void shutdown_at_exit(accel_backend_t *b) {
  pthread_mutex_lock(&shutdown_lock);
  initialised[ninitialised++] = b; /* at most once per backend: under its init_done */
  pthread_mutex_unlock(&shutdown_lock);
  if (atexit(shutdown_latest) != 0)
    accel_log(ACCEL_LOG_WARN, "loader", "atexit failed: backend '%s' will not be shut down at "
              "exit", b->name);
}

accel_status_t accel_backend_ensure_init(accel_backend_t *b) {
  pthread_mutex_lock(&b->lock);
  if (!b->init_done) {
    accel_clear_error();
    b->init_status = b->vt->backend_init(&accel_host_api, &b->state);
    if (b->init_status == ACCEL_OK) shutdown_at_exit(b);
    if (b->init_status == ACCEL_OK) {
      b->init_status = b->vt->device_count(b->state, &b->device_count);
      if (b->init_status == ACCEL_OK &&
          (b->device_count < 0 || b->device_count > MAX_DEVICE_COUNT))
        b->init_status = accel_set_error(ACCEL_ERROR_PLUGIN,
                                         "plugin reported an invalid device count %d (valid: 0 "
                                         "to %d)",
                                         b->device_count, MAX_DEVICE_COUNT);
      if (b->init_status == ACCEL_OK && b->device_count > 0) {
        b->devices = calloc((size_t)b->device_count, sizeof *b->devices);
        if (!b->devices)
          b->init_status = accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY, "out of host memory");
      }
    }
    if (b->init_status == ACCEL_OK && b->device_count == 0)
      b->init_status = accel_set_error(ACCEL_ERROR_UNAVAILABLE, "no devices");
    snprintf(b->init_message, sizeof b->init_message, "%s",
             b->init_status == ACCEL_OK ? "ok" : accel_last_error());
    if (b->init_status != ACCEL_OK) b->device_count = 0;
    b->init_done = true;
  }
  accel_status_t st = b->init_status;
  pthread_mutex_unlock(&b->lock);
  if (st != ACCEL_OK)
    return accel_set_error(st, "backend '%s' unavailable: %s", b->name, b->init_message);
  return ACCEL_OK;
}

int accel_backend_count(void) {
  accel_registry_ensure_loaded();
  return nbackends;
}

accel_status_t accel_backend_get(int index, accel_backend_t **out) {
  accel_registry_ensure_loaded();
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  if (index < 0 || index >= nbackends)
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: index %d out of range [0, %d)", __func__, index, nbackends);
  *out = &backends[index];
  return ACCEL_OK;
}

/* Comma-separated names of the registered backends plus the known plugin names. */
static void known_names(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < nbackends && used < len; ++i)
    used += (size_t)snprintf(buf + used, len - used, "%s%.31s", i ? ", " : "", backends[i].name);
  for (size_t i = 0; i < accel_plugin_table.known_count && used < len; ++i)
    if (!accel_registry_find(accel_plugin_table.known[i].name))
      used += (size_t)snprintf(buf + used, len - used, ", %s (plugin not loaded)",
                               accel_plugin_table.known[i].name);
}

accel_status_t accel_backend_find(const char *name, accel_backend_t **out) {
  accel_registry_ensure_loaded();
  ACCEL_REQUIRE_ARG(name, __func__, "name is NULL");
  ACCEL_REQUIRE_ARG(out, __func__, "out is NULL");
  accel_backend_t *b = accel_registry_find(name);
  if (b) {
    *out = b;
    return ACCEL_OK;
  }
  const accel_plugin_report_t *r = accel_loader_report_for(name);
  if (r)
    return accel_set_error(r->outcome == ACCEL_PLUGIN_NOT_FOUND ? ACCEL_ERROR_UNAVAILABLE
                                                                : ACCEL_ERROR_PLUGIN,
                           "backend '%s': %.400s%s%.500s", name, r->path, r->path[0] ? ": " : "",
                           r->message);
  char names[512];
  known_names(names, sizeof names);
  return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT, "unknown backend '%s' (known: %s)", name,
                         names);
}

const char *accel_backend_comm_engine(const accel_backend_t *b) {
  if (b->vt->comm_engine && b->vt->comm_engine[0]) return b->vt->comm_engine;
  return accel_plugin_table.host_engine;
}

const char *accel_host_comm_engine(void) { return accel_plugin_table.host_engine; }

/* Only the exact address of a registry entry is a backend: a pointer into the middle of one
 * (or anywhere else) is compared, never dereferenced. */
static bool backend_is_valid(const accel_backend_t *b) {
  for (int i = 0; i < nbackends; ++i)
    if (b == &backends[i]) return true;
  return false;
}

const char *accel_backend_name(const accel_backend_t *b) {
  return b && backend_is_valid(b) ? b->name : "(invalid backend)";
}

accel_status_t accel_backend_status(const accel_backend_t *cb, const char **reason) {
  accel_registry_ensure_loaded();
  if (!cb || !backend_is_valid(cb))
    return accel_set_error(ACCEL_ERROR_INVALID_HANDLE, "%s: invalid backend", __func__);
  accel_backend_t *b = (accel_backend_t *)cb;
  accel_status_t st = accel_backend_ensure_init(b);
  if (reason) *reason = b->init_message;
  return st;
}

accel_status_t accel_device_count(const accel_backend_t *cb, int *count) {
  accel_registry_ensure_loaded();
  ACCEL_REQUIRE_ARG(count, __func__, "count is NULL");
  if (!cb || !backend_is_valid(cb))
    return accel_set_error(ACCEL_ERROR_INVALID_HANDLE, "%s: invalid backend", __func__);
  accel_backend_t *b = (accel_backend_t *)cb;
  accel_status_t st = accel_backend_ensure_init(b);
  *count = st == ACCEL_OK ? b->device_count : 0;
  return st;
}
