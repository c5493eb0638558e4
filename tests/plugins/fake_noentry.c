/*
 * A loader-test plugin without the accel_plugin_query entry point: a valid shared object that
 * exports a similarly named symbol, which the loader must not accept.
 */
#include "accel/accel_plugin.h"

ACCEL_PLUGIN_EXPORT int accel_plugin_query_v0(void);

ACCEL_PLUGIN_EXPORT int accel_plugin_query_v0(void) { return 0; }
