#include "cpu_backend.h"

#include "cpu_device.h"
#include "cpu_event.h"
#include "cpu_graph.h"
#include "cpu_module.h"
#include "cpu_stream.h"

static const accel_backend_vtable_t cpu_vtable = {
    ACCEL_BACKEND_VTABLE_HEAD("cpu",
                              "built-in CPU backend: asynchronous stream workers and a thread pool"),
    ACCEL_BACKEND_SLOTS(cpu),
    .graph_update = cpu_graph_update, /* in place (cpu_graph.h) */
    .conditionals = 1,                /* the queue worker reads the flag (cpu_ops_run) */
    .device_synchronize = NULL,
    .dlpack_device_type = ACCEL_DL_CPU, /* registers host memory as is: no mem_register */
    .kernel_forms = ACCEL_KERNEL_FORM_NATIVE,
    .stream_try_hold = cpu_stream_try_hold,
    .stream_release_hold = cpu_stream_release_hold,
    /* comm_engine NULL: the host engine (MPI) works on its memory */
    .no_native_reason = "it runs on host threads: there is no vendor object; host memory is "
                        "usable as is",
    .module_build = cpu_module_build, /* the system C compiler (cpu_module.h) */
    .module_destroy = cpu_module_destroy,
};

const accel_backend_vtable_t *accel_cpu_backend_vtable(void) { return &cpu_vtable; }
