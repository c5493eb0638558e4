/*
 * Transitional: every per-object header of core (docs/ARCHITECTURE.md, "Rooms and layers"),
 * for the files that have not moved to the headers they need yet. Removed once none includes it.
 */
#ifndef ACCEL_CORE_INTERNAL_H
#define ACCEL_CORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"
#include "accel/accel_plugin.h"
#include "allocator.h"
#include "backend.h"
#include "capture.h"
#include "cmdlist.h"
#include "core_util.h"
#include "device.h"
#include "event.h"
#include "graph.h"
#include "handle.h"
#include "hashtab.h"
#include "kernel_ops_internal.h"
#include "kernel_support.h"
#include "lazy.h"
#include "log.h"
#include "pool.h"
#include "stream.h"

#endif
