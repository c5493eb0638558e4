/* The core's fault-injection sites (see fault.h). */
#include "fault.h"

#include "core_util.h"

typedef accel_status_t (*raw_alloc_fn)(accel_be_device_t *device, size_t size, void **ptr);

static accel_status_t alloc_site(const accel_backend_vtable_t *vt, raw_alloc_fn fn,
                                 const char *what, accel_be_device_t *impl, size_t size,
                                 void **ptr) {
  if (accel_fault_should_fail(ACCEL_FAULT_ALLOC))
    return accel_set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                           "%s: %s(%zu bytes): injected failure (ACCEL_FAULT_ALLOC)", vt->name,
                           what, size);
  return fn(impl, size, ptr);
}

accel_status_t accel_fault_mem_alloc(const accel_backend_vtable_t *vt, accel_be_device_t *impl,
                                     size_t size, void **ptr) {
  return alloc_site(vt, vt->mem_alloc, "mem_alloc", impl, size, ptr);
}

accel_status_t accel_fault_host_alloc(const accel_backend_vtable_t *vt, accel_be_device_t *impl,
                                      size_t size, void **ptr) {
  return alloc_site(vt, vt->host_alloc, "host_alloc", impl, size, ptr);
}

accel_status_t accel_fault_launches(const accel_cmd_t *cmds, size_t n, const char *what) {
  if (!accel_fault_armed(ACCEL_FAULT_LAUNCH)) return ACCEL_OK;
  const char *failed = NULL;
  for (size_t i = 0; i < n; ++i) /* every kernel counts, as if launched one by one */
    if (cmds[i].type == ACCEL_CMD_KERNEL && accel_fault_should_fail(ACCEL_FAULT_LAUNCH) &&
        !failed)
      failed = cmds[i].u.kernel.kernel_name;
  if (!failed) return ACCEL_OK;
  return accel_set_error(ACCEL_ERROR_BACKEND, "%s(%s): injected failure (ACCEL_FAULT_LAUNCH)",
                         what, failed ? failed : "kernel");
}
