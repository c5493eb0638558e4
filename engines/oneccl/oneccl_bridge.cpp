/*
 * The SYCL bridge of the oneCCL engine (libaccel_oneccl_sycl.so, see oneccl_bridge.h): the
 * oneCCL C++ API on SYCL objects made from accel's Level Zero handles. Host code only, compiled
 * with the system C++ compiler (no DPC++): the SYCL headers compile without -fsycl when no
 * kernel is defined, and CCL_ENABLE_SYCL / CCL_ENABLE_ZE are set by meson because oneCCL's
 * config.h sets them only under SYCL_LANGUAGE_VERSION (i.e. -fsycl) while the shipped libccl
 * is built with them. The ccl:: symbols stay undefined here and are resolved against the
 * libccl.so.1 that the engine loaded with RTLD_GLOBAL; libsycl is a normal dependency.
 *
 * Verified here only by compiling and linking (no Level Zero GPU, no libccl.so): see
 * docs/DISTRIBUTED.md, "oneCCL".
 */
#include <level_zero/ze_api.h>
#include <sycl/sycl.hpp>
#include <sycl/ext/oneapi/backend/level_zero.hpp>
#include <oneapi/ccl.hpp>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include "oneccl_bridge.h"

namespace {

namespace zel0 = sycl::ext::oneapi::level_zero;
constexpr sycl::backend l0 = sycl::backend::ext_oneapi_level_zero;

/* The engine's communicator: the SYCL device and context the device communicator was made
 * for, to wrap each stream's command list into a queue of the same context. */
struct bridge_comm {
  sycl::device device;
  sycl::context context;
  ccl::communicator comm;
};

void put(char *err, size_t n, const char *what) {
  if (n) std::snprintf(err, n, "%s", what);
}

/* Runs f, turning every exception into BACKEND (OUT_OF_MEMORY for bad_alloc) and its text. */
template <class F>
accel_status_t guarded(char *err, size_t n, F &&f) {
  if (n) err[0] = '\0';
  try {
    return f();
  } catch (const std::bad_alloc &) {
    put(err, n, "out of host memory");
    return ACCEL_ERROR_OUT_OF_MEMORY;
  } catch (const sycl::exception &e) {
    put(err, n, (std::string("SYCL: ") + e.what()).c_str());
  } catch (const std::exception &e) { /* ccl::exception's text starts with "oneCCL: " */
    put(err, n, e.what());
  } catch (...) {
    put(err, n, "unknown C++ exception");
  }
  return ACCEL_ERROR_BACKEND;
}

ccl::datatype dtype_of(uint32_t dt) {
  switch (dt) {
    case ACCEL_F16: return ccl::datatype::float16;
    case ACCEL_BF16: return ccl::datatype::bfloat16;
    default: return ccl::datatype::float32; /* ACCEL_F32; the core admits no other dtype */
  }
}

ccl::reduction reduction_of(uint32_t op) {
  switch (op) {
    case ACCEL_REDUCE_MAX: return ccl::reduction::max;
    case ACCEL_REDUCE_MIN: return ccl::reduction::min;
    default: return ccl::reduction::sum; /* ACCEL_REDUCE_SUM */
  }
}

accel_status_t bridge_init(char *version, size_t version_size, char *err, size_t n) {
  return guarded(err, n, [&] {
    ccl::init();
    ccl::library_version v = ccl::get_library_version();
    if (version_size) std::snprintf(version, version_size, "%s", v.full ? v.full : "?");
    return ACCEL_OK;
  });
}

accel_status_t bridge_comm_create(const accel_comm_bootstrap_t *boot,
                                  const accel_native_t *device, void **out, char *err,
                                  size_t n) {
  return guarded(err, n, [&] {
    if (std::strcmp(device->backend, "level_zero") != 0) {
      std::snprintf(err, n, "device of backend '%s': oneCCL needs a Level Zero device",
                    device->backend);
      return ACCEL_ERROR_UNSUPPORTED;
    }
    sycl::device dev = sycl::make_device<l0>(static_cast<ze_device_handle_t>(device->device));
    sycl::context ctx = sycl::make_context<l0>(
        {static_cast<ze_context_handle_t>(device->context), std::vector<sycl::device>{dev},
         zel0::ownership::keep});
    /* rank 0 runs the KVS; its address reaches every rank over the core's MPI bootstrap */
    std::shared_ptr<ccl::kvs> kvs;
    ccl::kvs::address_type address{};
    if (boot->rank == 0) {
      kvs = ccl::create_main_kvs();
      address = kvs->get_address();
    }
    std::vector<ccl::kvs::address_type> all(static_cast<size_t>(boot->size));
    accel_status_t st = boot->all_gather(boot->ctx, address.data(), all.data(), address.size());
    if (st != ACCEL_OK) return st; /* err left empty: the bootstrap set the error */
    if (boot->rank != 0) kvs = ccl::create_kvs(all[0]);
    auto cdev = ccl::create_device(dev);
    auto cctx = ccl::create_context(ctx);
    ccl::communicator comm = ccl::create_communicator(boot->size, boot->rank, cdev, cctx, kvs);
    *out = new bridge_comm{dev, ctx, std::move(comm)};
    return ACCEL_OK;
  });
}

accel_status_t bridge_comm_split(void *cv, int color, int key, void **out, int *rank, int *size,
                                 char *err, size_t n) {
  auto *c = static_cast<bridge_comm *>(cv);
  return guarded(err, n, [&] {
    /* oneCCL has no "undefined" color: a rank without a group gets a communicator of its own
     * (a color no grouped rank uses, since those are >= 0) and drops it */
    const int ccl_color = color < 0 ? -1 - c->comm.rank() : color;
    ccl::communicator sub = ccl::split_communicator(c->comm, ccl_color, key);
    *out = nullptr;
    if (color < 0) return ACCEL_OK;
    *rank = sub.rank();
    *size = sub.size();
    *out = new bridge_comm{c->device, c->context, std::move(sub)};
    return ACCEL_OK;
  });
}

void bridge_comm_destroy(void *cv) {
  try {
    delete static_cast<bridge_comm *>(cv);
  } catch (...) { /* a destructor that throws: nothing left to report it to */
  }
}

accel_status_t bridge_enqueue(void *cv, const accel_comm_op_t *op, const accel_native_t *stream,
                              char *err, size_t n) {
  auto *c = static_cast<bridge_comm *>(cv);
  return guarded(err, n, [&] {
    /* A queue over the stream's own immediate command list (kept by accel), so the collective
     * runs in the stream's order. accel's lists are not created in-order (every accel command
     * after the first is preceded by a barrier), hence the barrier before the collective. */
    sycl::backend_input_t<l0, sycl::queue> in{
        static_cast<ze_command_list_handle_t>(stream->queue), c->device, zel0::ownership::keep,
        sycl::property_list{sycl::property::queue::in_order()}};
    sycl::queue q = sycl::make_queue<l0>(in, c->context);
    q.ext_oneapi_submit_barrier();
    ccl::stream s = ccl::create_stream(q);
    const ccl::datatype t = dtype_of(op->dtype);
    const ccl::reduction red = reduction_of(op->reduce);
    const size_t es = op->dtype == ACCEL_F32 ? 4 : 2;
    switch (op->kind) {
      case ACCEL_COMM_ALL_REDUCE:
        ccl::allreduce(op->send, op->recv, op->count, t, red, c->comm, s);
        break;
      case ACCEL_COMM_REDUCE_SCATTER:
        ccl::reduce_scatter(op->send, op->recv, op->count, t, red, c->comm, s);
        break;
      case ACCEL_COMM_ALL_GATHER: { /* in place: this rank's block of recv is the send data */
        const void *send = op->send ? op->send
                                    : static_cast<const char *>(op->recv) +
                                          static_cast<size_t>(c->comm.rank()) * op->count * es;
        ccl::allgather(send, op->recv, op->count, t, c->comm, s);
        break;
      }
      case ACCEL_COMM_BROADCAST:
        ccl::broadcast(op->recv, op->count, t, op->peer, c->comm, s);
        break;
      case ACCEL_COMM_SEND:
        ccl::send(const_cast<void *>(op->send), op->count, t, op->peer, c->comm, s);
        break;
      case ACCEL_COMM_RECV:
        ccl::recv(op->recv, op->count, t, op->peer, c->comm, s);
        break;
      case ACCEL_COMM_SENDRECV: /* oneCCL has no group of point-to-point calls */
        std::snprintf(err, n, "accel_sendrecv is not supported by oneCCL (no grouped send and "
                              "receive): order accel_send / accel_recv by rank instead");
        return ACCEL_ERROR_UNSUPPORTED;
      default:
        std::snprintf(err, n, "unknown collective kind %u", op->kind);
        return ACCEL_ERROR_INVALID_ARGUMENT;
    }
    return ACCEL_OK;
  });
}

const accel_oneccl_bridge_t bridge = {
    ACCEL_ONECCL_BRIDGE_VERSION, bridge_init, bridge_comm_create, bridge_comm_split,
    bridge_comm_destroy, bridge_enqueue,
};

}  // namespace

extern "C" ACCEL_PLUGIN_EXPORT const accel_oneccl_bridge_t *accel_oneccl_bridge(void) {
  return &bridge;
}
