/*
 * The oneCCL engine (libaccelcomm-oneccl.so) for Level Zero devices: a placeholder that loads
 * and reports why it cannot run. oneCCL's API is C++ only (ccl::communicator, ccl::stream over
 * a SYCL queue), so a real engine needs a C++ shim library built against oneCCL and SYCL; this
 * plugin looks for libccl and reports UNAVAILABLE either way, naming what it found. Verified
 * here only by compiling and loading.
 */
#include <dlfcn.h>

#include "accel/accel_comm_engine.h"
#include "vendor_lib.h"

static accel_status_t oneccl_init(const accel_host_api_t *host) {
  static const char *const names[] = {"libccl.so.1", "libccl.so"};
  const char *chosen = NULL;
  char tried[1024];
  void *lib = accel_vendor_open(names, sizeof names / sizeof names[0], &chosen, tried,
                                sizeof tried);
  if (!lib) return host->set_error(ACCEL_ERROR_UNAVAILABLE, "oneccl engine: %s", tried);
  return host->set_error(ACCEL_ERROR_UNAVAILABLE,
                         "oneccl engine: %s found, but oneCCL has only a C++ API and this "
                         "engine has no C++ shim yet (docs/DISTRIBUTED.md)", chosen);
}

static accel_status_t oneccl_unavailable(void) {
  return ACCEL_ERROR_UNAVAILABLE; /* never reached: engine_init refused */
}

static accel_status_t oneccl_create(const accel_comm_bootstrap_t *boot,
                                    const accel_native_t *device, accel_ce_comm_t **out) {
  (void)boot, (void)device, (void)out;
  return oneccl_unavailable();
}

static accel_status_t oneccl_split(accel_ce_comm_t *comm, int color, int key,
                                   accel_ce_comm_t **out, int *rank, int *size) {
  (void)comm, (void)color, (void)key, (void)out, (void)rank, (void)size;
  return oneccl_unavailable();
}

static void oneccl_destroy(accel_ce_comm_t *comm) { (void)comm; }

static accel_status_t oneccl_enqueue(accel_ce_comm_t *comm, const accel_comm_op_t *op,
                                     const accel_native_t *stream) {
  (void)comm, (void)op, (void)stream;
  return oneccl_unavailable();
}

static void oneccl_abort(accel_ce_comm_t *comm, int code) { (void)comm, (void)code; }

static const accel_comm_engine_vtable_t vtable = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_vtable_t),
    .name = "oneccl",
    .description = "oneCCL for Level Zero (placeholder: reports UNAVAILABLE)",
    .host_engine = 0,
    .engine_init = oneccl_init,
    .comm_create_bootstrap = oneccl_create,
    .comm_split = oneccl_split,
    .comm_destroy = oneccl_destroy,
    .enqueue = oneccl_enqueue,
    .abort = oneccl_abort,
};

ACCEL_PLUGIN_EXPORT accel_status_t accel_comm_engine_query(uint32_t host_abi,
                                                           const accel_host_api_t *h,
                                                           const accel_comm_engine_vtable_t **out) {
  if (host_abi != ACCEL_COMM_ENGINE_ABI_VERSION)
    return h->set_error(ACCEL_ERROR_PLUGIN, "oneccl engine: ABI %u, host has %u",
                        ACCEL_COMM_ENGINE_ABI_VERSION, host_abi);
  *out = &vtable;
  return ACCEL_OK;
}
