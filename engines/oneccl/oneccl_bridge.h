/*
 * The C interface between the oneCCL engine (oneccl_engine.c, always built) and its SYCL bridge
 * (oneccl_bridge.cpp: libaccel_oneccl_sycl.so, built only with -Doneccl_sdk=DIR). oneCCL's
 * device API is C++ over SYCL objects, so the bridge is host-only C++ compiled with the system
 * compiler against the SYCL and oneCCL headers; the engine dlopens it after libccl, so neither
 * the engine nor libaccel depends on the Intel runtime. The bridge exports one symbol,
 * ACCEL_ONECCL_BRIDGE_SYMBOL, a function returning this table.
 *
 * Every entry returns ACCEL_OK or an error status; on error it writes the reason (the text of
 * the SYCL or oneCCL exception) into err, or leaves err empty when the bootstrap all-gather
 * failed (that one has set the accel error itself).
 */
#ifndef ACCEL_ONECCL_BRIDGE_H
#define ACCEL_ONECCL_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "accel/accel_comm_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_ONECCL_BRIDGE_FILE "libaccel_oneccl_sycl.so"
#define ACCEL_ONECCL_BRIDGE_SYMBOL "accel_oneccl_bridge"
#define ACCEL_ONECCL_BRIDGE_VERSION 1u

typedef struct accel_oneccl_bridge {
  uint32_t version; /* ACCEL_ONECCL_BRIDGE_VERSION */
  /* ccl::init; version gets oneCCL's full version string. */
  accel_status_t (*init)(char *version, size_t version_size, char *err, size_t err_size);
  /* A communicator of boot->size ranks on the Level Zero device of `device` (accel_device_native:
   * driver, device, context). The KVS address of rank 0 travels over boot->all_gather. */
  accel_status_t (*comm_create)(const accel_comm_bootstrap_t *boot, const accel_native_t *device,
                                void **comm, char *err, size_t err_size);
  /* Collective; color < 0: this rank joins no group (*out NULL). */
  accel_status_t (*comm_split)(void *comm, int color, int key, void **out, int *rank, int *size,
                               char *err, size_t err_size);
  void (*comm_destroy)(void *comm);
  /* Issues op on the immediate command list stream->queue without waiting. */
  accel_status_t (*enqueue)(void *comm, const accel_comm_op_t *op, const accel_native_t *stream,
                            char *err, size_t err_size);
} accel_oneccl_bridge_t;

typedef const accel_oneccl_bridge_t *(*accel_oneccl_bridge_fn)(void);

#ifdef __cplusplus
}
#endif

#endif
