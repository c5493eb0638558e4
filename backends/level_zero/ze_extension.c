/* Driver extensions newer than Debian's headers: listed by name, their functions looked up. */
#include <stdlib.h>
#include <string.h>

#include "ze_internal.h"

int accel_ze_driver_lists(const accel_ze_device_t *dev, const char *name) {
  const accel_ze_api_t *api = dev->api;
  uint32_t n = 0;
  if (!api->zeDriverGetExtensionProperties ||
      api->zeDriverGetExtensionProperties(dev->driver, &n, NULL) != ZE_RESULT_SUCCESS || n == 0)
    return 0;
  ze_driver_extension_properties_t *ext = calloc(n, sizeof *ext);
  int found = 0;
  if (ext && api->zeDriverGetExtensionProperties(dev->driver, &n, ext) == ZE_RESULT_SUCCESS)
    for (uint32_t i = 0; i < n && !found; ++i)
      found = strncmp(ext[i].name, name, sizeof ext[i].name) == 0;
  free(ext);
  return found;
}

int accel_ze_resolve(const accel_ze_device_t *dev, const char *const *names, void **fns,
                     size_t n) {
  const accel_ze_api_t *api = dev->api;
  for (size_t i = 0; i < n; ++i) {
    fns[i] = NULL;
    if (!api->zeDriverGetExtensionFunctionAddress ||
        api->zeDriverGetExtensionFunctionAddress(dev->driver, names[i], &fns[i]) !=
            ZE_RESULT_SUCCESS ||
        !fns[i])
      return 0;
  }
  return 1;
}
