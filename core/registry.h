/*
 * Between the backend registry (core/registry.c) and the plugin search that fills it
 * (core/loader.c). The rest of core sees backends through backend.h (accel_backend_t,
 * accel_registry_ensure_loaded, accel_backend_ensure_init).
 */
#ifndef ACCEL_CORE_REGISTRY_H
#define ACCEL_CORE_REGISTRY_H

#include <stdbool.h>

#include "backend.h"

#define ACCEL_MAX_BACKENDS 16

/* registry.c (called only while the registry is being filled, under its one-time load) */
/* The registered backend of that name, or NULL. */
accel_backend_t *accel_registry_find(const char *name);
/* Registers a copy of vt (SQLite-VFS style) as backend vt->name from path ("" or NULL: built
 * in) with its dlopen handle; NULL when ACCEL_MAX_BACKENDS are registered already. */
const accel_backend_t *accel_registry_add(const accel_backend_vtable_t *vt, const char *path,
                                          void *dl);
/* Sets each backend's vendor variable from ACCEL_VISIBLE_DEVICES, once, before any init. */
void accel_registry_apply_visible_devices(void);
/* Whether a plugin states the kernel ABI it was built with. */
bool accel_vtable_declares_kernel_abi(const accel_backend_vtable_t *vt);
/* What the plugin's vtable has, later slots NULL, the kernel ABI defaulted when undeclared. */
void accel_vtable_copy(accel_backend_vtable_t *copy, const accel_backend_vtable_t *vt);

/* loader.c */
/* Registers the built-in backends and every plugin found (run once, by the registry). */
void accel_loader_load_all(void);
/* The first report that says why backend name is not registered, or NULL. */
const accel_plugin_report_t *accel_loader_report_for(const char *name);

#endif
