/*
 * Fault injection for tests (ACCEL_FAULT_INJECT="alloc:N,kernel_build:N,launch:N": the N-th
 * call at a site fails once; env.c). The core applies it where it calls a backend, the same for
 * every backend: raw allocations (alloc) and kernel submissions (launch: every kernel that an
 * eager launch, a batch or a graph replay submits counts once, and a failing submission submits
 * nothing). Only kernel builds happen out of the core's sight: a backend asks the host API's
 * fault_should_fail(ACCEL_FAULT_KERNEL_BUILD) there.
 */
#ifndef ACCEL_CORE_FAULT_H
#define ACCEL_CORE_FAULT_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/accel_plugin.h"

/* 1 when the N-th call at site is this one (counts the call). */
int accel_fault_should_fail(accel_fault_site_t site);
/* Whether an injection at site is still to come (one atomic load): callers that would have to
 * count many calls at once (a batch) skip the count when not. */
bool accel_fault_armed(accel_fault_site_t site);

/* The backend's raw allocators, with the alloc site applied. */
accel_status_t accel_fault_mem_alloc(const accel_backend_vtable_t *vt, accel_be_device_t *impl,
                                     size_t size, void **ptr);
accel_status_t accel_fault_host_alloc(const accel_backend_vtable_t *vt, accel_be_device_t *impl,
                                      size_t size, void **ptr);
/* The launch site for a submission of cmds[0..n) (its kernel commands count): ACCEL_OK, or
 * BACKEND with a message naming what (the submission must then not happen). */
accel_status_t accel_fault_launches(const accel_cmd_t *cmds, size_t n, const char *what);

#endif
