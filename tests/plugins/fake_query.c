/*
 * The exported entry point of the loader-test plugins. One source, one scenario per build
 * (selected with -DFAKE_SCENARIO_*):
 *   FAKE_SCENARIO_VALID       the fake backend as it is
 *   FAKE_SCENARIO_WRONG_ABI   vtable claims ABI version FAKE_WRONG_ABI_VERSION
 *   FAKE_SCENARIO_QUERY_FAILS accel_plugin_query returns an error with a message
 *   FAKE_SCENARIO_NULL_SLOTS  required vtable slots (mem_alloc, stream_create) are NULL
 *   FAKE_SCENARIO_ODD_STRUCT_SIZE  struct_size is 4 bytes short of the full vtable (not a
 *                             multiple of the pointer size: the last slot would be half copied)
 *   FAKE_SCENARIO_OLD_HEADER  struct_size ends before kernel_abi_version, as in a plugin built
 *                             before the kernel-ABI handshake
 * fake_backend.c takes FAKE_NAME (backend name) and FAKE_DEVICE_COUNT (what device_count says).
 */
#include <stddef.h>

#include "accel/accel_plugin.h"

/* The complete, valid vtable of the fake backend (fake_backend.c). */
const accel_backend_vtable_t *fake_backend_vtable(void);

/* Far from any real ABI version, so the loader's message is unambiguous. */
#define FAKE_WRONG_ABI_VERSION 4242u

ACCEL_PLUGIN_EXPORT accel_status_t accel_plugin_query(uint32_t host_abi,
                                                      const accel_host_api_t *host,
                                                      const accel_backend_vtable_t **out) {
  (void)host_abi;
#if defined(FAKE_SCENARIO_VALID)
  (void)host;
  *out = fake_backend_vtable();
  return ACCEL_OK;
#elif defined(FAKE_SCENARIO_WRONG_ABI)
  (void)host;
  static accel_backend_vtable_t vt;
  vt = *fake_backend_vtable();
  vt.abi_version = FAKE_WRONG_ABI_VERSION;
  *out = &vt;
  return ACCEL_OK;
#elif defined(FAKE_SCENARIO_QUERY_FAILS)
  (void)out;
  return host->set_error(ACCEL_ERROR_PLUGIN, "fake: refusing to load (test scenario query_fails)");
#elif defined(FAKE_SCENARIO_NULL_SLOTS)
  (void)host;
  static accel_backend_vtable_t vt;
  vt = *fake_backend_vtable();
  vt.mem_alloc = NULL;
  vt.stream_create = NULL;
  *out = &vt;
  return ACCEL_OK;
#elif defined(FAKE_SCENARIO_ODD_STRUCT_SIZE)
  (void)host;
  static accel_backend_vtable_t vt;
  vt = *fake_backend_vtable();
  vt.struct_size = (uint32_t)(sizeof(vt) - 4);
  *out = &vt;
  return ACCEL_OK;
#elif defined(FAKE_SCENARIO_OLD_HEADER)
  (void)host;
  static accel_backend_vtable_t vt;
  vt = *fake_backend_vtable();
  vt.struct_size = (uint32_t)offsetof(accel_backend_vtable_t, kernel_abi_version);
  *out = &vt;
  return ACCEL_OK;
#else
#error "define one FAKE_SCENARIO_*"
#endif
}
