/*
 * Layer 3, device (docs/ARCHITECTURE.md, "Rooms and layers"): a registered backend (registry.c)
 * and the devices it opened. The registry's own functions for the plugin search are in
 * registry.h.
 */
#ifndef ACCEL_CORE_BACKEND_H
#define ACCEL_CORE_BACKEND_H

#include <pthread.h>
#include <stdbool.h>

#include "accel/accel_plugin.h"

struct accel_backend {
  char name[32];
  char path[1024];                /* plugin file, "" for built-in */
  const accel_backend_vtable_t *vt;
  void *dl;                       /* dlopen handle (never closed while the process runs) */
  pthread_mutex_t lock;
  bool init_done;
  accel_status_t init_status;
  char init_message[512];
  accel_be_backend_t *state;
  int device_count;
  accel_device_t **devices;       /* opened devices by index (NULL if not open) */
};

/* Loads plugins once; returns the backend list. */
void accel_registry_ensure_loaded(void);
/* Runs backend_init once; returns its status (message copied into backend->init_message). */
accel_status_t accel_backend_ensure_init(accel_backend_t *backend);
/* The collective engine for the backend's devices: its vtable's comm_engine, else the build's
 * plugin table (core/plugin_table.h), else the host engine. */
const char *accel_backend_comm_engine(const accel_backend_t *backend);
/* The collective engine that runs on the host and bootstraps the others (the build's table). */
const char *accel_host_comm_engine(void);
extern const accel_host_api_t accel_host_api;

#endif
