/*
 * The oneCCL engine (libaccelcomm-oneccl.so) for Level Zero devices: a stream engine that
 * issues every collective on the immediate command list under the accel stream. oneCCL's
 * device API is C++ over SYCL, so the work is done by a SYCL bridge (oneccl_bridge.cpp,
 * libaccel_oneccl_sycl.so beside this file, built with -Doneccl_sdk=DIR); this C part is
 * always built and loads anywhere. engine_init checks that the bridge was built, loads
 * libccl.so.1 with RTLD_GLOBAL (the bridge's ccl:: symbols resolve against it), then the bridge
 * (which needs libsycl); the first step that fails makes the engine UNAVAILABLE with the
 * loader's message.
 *
 * Verified here only by compiling, loading and reporting UNAVAILABLE (no Level Zero GPU, no
 * oneCCL runtime). Not done, as for NCCL: capture into accel graphs (the core refuses it),
 * ACCEL_COMM_TIMEOUT (oneCCL's own failure handling applies), fused downcast.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel_comm_engine.h"
#include "oneccl_bridge.h"
#include "vendor_lib.h"

static const accel_host_api_t *host;
static const accel_oneccl_bridge_t *bridge;

/* This plugin's directory (the bridge is installed beside it). */
static int plugin_dir(char *dir, size_t size) {
  Dl_info info;
  if (!dladdr((void *)&plugin_dir, &info) || !info.dli_fname) return 0;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return snprintf(dir, size, ".") < (int)size;
  int len = (int)(slash - info.dli_fname);
  return snprintf(dir, size, "%.*s", len, info.dli_fname) < (int)size;
}

static accel_status_t bridge_error(accel_status_t st, const char *call, const char *err) {
  if (!err[0]) return st; /* the bootstrap all-gather reported it already */
  return host->set_error(st, "oneccl engine: %s: %s", call, err);
}

static accel_status_t oneccl_init(const accel_host_api_t *h) {
  host = h;
  char path[4096];
  if (!plugin_dir(path, sizeof path - sizeof ACCEL_ONECCL_BRIDGE_FILE - 1))
    return host->set_error(ACCEL_ERROR_UNAVAILABLE, "oneccl engine: cannot locate its own "
                           "directory to load " ACCEL_ONECCL_BRIDGE_FILE);
  strcat(path, "/" ACCEL_ONECCL_BRIDGE_FILE);
  if (access(path, F_OK) != 0)
    return host->set_error(ACCEL_ERROR_UNAVAILABLE, "oneccl engine: %s is absent (accel was "
                           "built without -Doneccl_sdk; docs/DISTRIBUTED.md)", path);
  static const char *const ccl_names[] = {"libccl.so.1", "libccl.so"};
  const char *chosen = NULL;
  char tried[1024];
  if (!accel_vendor_open_flags(ccl_names, 2, RTLD_NOW | RTLD_GLOBAL, &chosen, tried,
                               sizeof tried))
    return host->set_error(ACCEL_ERROR_UNAVAILABLE, "oneccl engine: no oneCCL runtime: %s",
                           tried);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return host->set_error(ACCEL_ERROR_UNAVAILABLE, "oneccl engine: SYCL bridge: %s",
                           dlerror());
  accel_oneccl_bridge_fn get = (accel_oneccl_bridge_fn)dlsym(lib, ACCEL_ONECCL_BRIDGE_SYMBOL);
  const accel_oneccl_bridge_t *b = get ? get() : NULL;
  if (!b || b->version != ACCEL_ONECCL_BRIDGE_VERSION)
    return host->set_error(ACCEL_ERROR_PLUGIN, "oneccl engine: %s: no " ACCEL_ONECCL_BRIDGE_SYMBOL
                           " of version %u", path, ACCEL_ONECCL_BRIDGE_VERSION);
  char version[256], err[1024];
  accel_status_t st = b->init(version, sizeof version, err, sizeof err);
  if (st != ACCEL_OK) return bridge_error(ACCEL_ERROR_UNAVAILABLE, "ccl::init", err);
  bridge = b;
  host->log(ACCEL_LOG_INFO, "comm", "oneccl engine: %s (%s) through %s", chosen, version, path);
  return ACCEL_OK;
}

static accel_status_t oneccl_create(const accel_comm_bootstrap_t *boot,
                                    const accel_native_t *device, accel_ce_comm_t **out) {
  char err[1024];
  accel_status_t st = bridge->comm_create(boot, device, out, err, sizeof err);
  return st == ACCEL_OK ? st : bridge_error(st, "ccl::create_communicator", err);
}

static accel_status_t oneccl_split(accel_ce_comm_t *comm, int color, int key,
                                   accel_ce_comm_t **out, int *rank, int *size) {
  char err[1024];
  accel_status_t st = bridge->comm_split(comm, color, key, out, rank, size, err, sizeof err);
  return st == ACCEL_OK ? st : bridge_error(st, "ccl::split_communicator", err);
}

static void oneccl_destroy(accel_ce_comm_t *comm) { bridge->comm_destroy(comm); }

static const char *call_name(uint32_t kind) {
  static const char *const names[] = {"ccl::allreduce", "ccl::reduce_scatter", "ccl::allgather",
                                      "ccl::broadcast", "ccl::send", "ccl::recv"};
  return kind < sizeof names / sizeof names[0] ? names[kind] : "ccl collective";
}

static accel_status_t oneccl_enqueue(accel_ce_comm_t *comm, const accel_comm_op_t *op,
                                     const accel_native_t *stream) {
  char err[1024];
  accel_status_t st = bridge->enqueue(comm, op, stream, err, sizeof err);
  return st == ACCEL_OK ? st : bridge_error(st, call_name(op->kind), err);
}

/* oneCCL has no communicator abort (onecclCommAbort is declared "not implemented"): the job
 * ends here and the peers see the failure through their own transport. */
static void oneccl_abort(accel_ce_comm_t *comm, int code) {
  (void)comm;
  _exit(code);
}

static const accel_comm_engine_vtable_t vtable = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_vtable_t),
    .name = "oneccl",
    .description = "oneCCL on Level Zero command lists (dlopen libccl + SYCL bridge)",
    .host_engine = 0,
    .engine_init = oneccl_init,
    .comm_create_bootstrap = oneccl_create,
    .comm_split = oneccl_split,
    .comm_destroy = oneccl_destroy,
    .enqueue = oneccl_enqueue,
    .abort = oneccl_abort,
};

ACCEL_COMM_ENGINE_DEFINE_QUERY(vtable, "oneccl")
