/*
 * The part of a fake Level Zero driver table that tests/unit/test_ze_*.c share: a driver that
 * lists one extension of interest (ze_fake.name, when ze_fake.listed) beside another, and a
 * device whose properties answer that extension's structure (ze_fake.stype, by ze_fake.fill).
 */
#ifndef ACCEL_TEST_ZE_FAKE_CHAIN_H
#define ACCEL_TEST_ZE_FAKE_CHAIN_H

#include <string.h>

#include "fake_host.h"
#include "ze_internal.h"

typedef struct ze_fake {
  const char *name;
  int listed;
  ze_structure_type_t stype;
  void (*fill)(void *properties); /* writes the device's answer into the structure */
} ze_fake_t;
static ze_fake_t ze_fake;

/* zeDriverGetExtensionProperties */
static ze_result_t ZE_APICALL ze_fake_extensions(ze_driver_handle_t d, uint32_t *n,
                                                 ze_driver_extension_properties_t *ext) {
  (void)d;
  const char *const names[] = {"ZE_extension_float_atomics", ze_fake.name};
  const uint32_t have = ze_fake.listed ? 2u : 1u;
  if (ext)
    for (uint32_t i = 0; i < *n && i < have; ++i) {
      memset(&ext[i], 0, sizeof ext[i]);
      strcpy(ext[i].name, names[i]);
    }
  *n = have;
  return ZE_RESULT_SUCCESS;
}

/* zeDeviceGetProperties: fills the structure of type ze_fake.stype in the pNext chain. */
static ze_result_t ZE_APICALL ze_fake_properties(ze_device_handle_t d, ze_device_properties_t *p) {
  (void)d;
  for (ze_base_properties_t *next = p->pNext; next; next = next->pNext)
    if (next->stype == ze_fake.stype) ze_fake.fill(next);
  return ZE_RESULT_SUCCESS;
}

/* The plugin's host (fake_host) and a table with the two fakes above; the test adds its own. */
static void ze_fake_table(accel_ze_api_t *api) {
  static accel_host_api_t host;
  host = fake_host;
  accel_ze_host = &host;
  memset(api, 0, sizeof *api);
  api->zeDriverGetExtensionProperties = ze_fake_extensions;
  api->zeDeviceGetProperties = ze_fake_properties;
}

#endif
