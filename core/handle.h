/*
 * Layer 1, handle (docs/ARCHITECTURE.md, "Rooms and layers"): every public object starts with
 * accel_handle_t (backend vtable + reference count), IREE HAL style; the live-handle registry
 * (handle.c) lets every entry point reject destroyed or foreign handles.
 */
#ifndef ACCEL_CORE_HANDLE_H
#define ACCEL_CORE_HANDLE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "accel/accel_plugin.h"

typedef enum accel_handle_kind {
  ACCEL_HANDLE_DEVICE = 1,
  ACCEL_HANDLE_STREAM,
  ACCEL_HANDLE_EVENT,
  ACCEL_HANDLE_GRAPH,
  ACCEL_HANDLE_POOL,
  ACCEL_HANDLE_DLPACK_IMPORT,
  ACCEL_HANDLE_COMM,
  ACCEL_HANDLE_GENERATOR,
  ACCEL_HANDLE_MODULE,
  ACCEL_HANDLE_KERNEL,
  ACCEL_HANDLE_KIND_END /* one past the last kind: sizes handle.c's table of names */
} accel_handle_kind_t;

/* Ownership (docs/RELIABILITY.md): refcount counts every reference to the object, the user's
 * included; the object is torn down when it drops to zero. user_refs counts the references the
 * user holds (one per create/open/accel_graph_pool); the handle is in the live-handle registry
 * exactly while user_refs > 0, so a release too many is INVALID_HANDLE while everything the
 * object's internal holders (graphs, captures, streams) need stays alive. */
typedef struct accel_handle {
  const accel_backend_vtable_t *vt;
  atomic_int refcount;
  accel_handle_kind_t kind;
  int user_refs; /* guarded by the registry's lock */
} accel_handle_t;

/* Live-handle registry: lets every entry point reject destroyed or foreign handles. register
 * sets refcount and user_refs to 1. */
void accel_handle_register(accel_handle_t *h, accel_handle_kind_t kind,
                           const accel_backend_vtable_t *vt);
void accel_handle_unregister(accel_handle_t *h);
/* One more user reference (re-registers a handle whose user references were all dropped). */
void accel_handle_add_user(accel_handle_t *h);
/* Drops one user reference of a live handle of that kind: ACCEL_OK, or INVALID_HANDLE with a
 * message naming fn when h is not one (of two concurrent drops of the last reference, exactly
 * one succeeds). The caller then drops the object reference that went with it. */
accel_status_t accel_handle_drop_user(const void *h, accel_handle_kind_t kind, const char *fn);
bool accel_handle_is_live(const void *h, accel_handle_kind_t kind);
/* Changes whenever a handle enters or leaves the registry; odd while a change is under way.
 * Handles a thread found live after reading an even version are still live (and the same
 * objects) while the version reads the same: a hot path may remember them instead of looking
 * them up again. */
unsigned accel_handle_registry_version(void);
/* ACCEL_OK for a live handle of that kind; else INVALID_HANDLE with a message naming fn. */
accel_status_t accel_handle_check(const void *h, accel_handle_kind_t kind, const char *fn);

/* A public release and its older name (docs/API.md, "Lifetime verbs"): both drop the user's
 * reference through impl(handle, fn), each under its own name in error messages, and both stay
 * exported for binaries linked against either. */
#define ACCEL_DEFINE_RELEASE(type, release, alias, impl)          \
  accel_status_t release(type *h) { return impl(h, #release); } \
  accel_status_t alias(type *h) { return impl(h, #alias); }

#endif
