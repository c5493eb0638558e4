/* Mutable command lists for in-place graph updates (ze_mutable.h). */
#include <string.h>

#include "ze_internal.h"

#define MCL_FLAGS (ACCEL_ZE_MCL_FLAG_KERNEL_ARGUMENTS | ACCEL_ZE_MCL_FLAG_GROUP_COUNT)

/* Whether the device can mutate kernel arguments and group counts. */
static int device_mutates_kernels(const accel_ze_device_t *dev) {
  accel_ze_mcl_properties_t mcl = {.stype = ACCEL_ZE_STYPE_MCL_PROPERTIES};
  ze_device_properties_t props = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, .pNext = &mcl};
  return dev->api->zeDeviceGetProperties(dev->dev, &props) == ZE_RESULT_SUCCESS &&
         (mcl.mutableCommandFlags & MCL_FLAGS) == MCL_FLAGS;
}

void accel_ze_mcl_probe(accel_ze_device_t *dev) {
  memset(&dev->mcl, 0, sizeof dev->mcl);
  static const char *const names[] = {"zeCommandListGetNextCommandIdExp",
                                      "zeCommandListUpdateMutableCommandsExp"};
  void *fns[2];
  if (!accel_ze_driver_lists(dev, ACCEL_ZE_MCL_EXT_NAME) || !device_mutates_kernels(dev) ||
      !accel_ze_resolve(dev, names, fns, 2))
    return;
  /* POSIX: a function pointer round-trips through void * (dlsym's contract) */
  memcpy(&dev->mcl.next_id, &fns[0], sizeof fns[0]);
  memcpy(&dev->mcl.update, &fns[1], sizeof fns[1]);
}

const void *accel_ze_mcl_list_next(const accel_ze_device_t *dev) {
  static const accel_ze_mcl_desc_t mutable_list = {.stype = ACCEL_ZE_STYPE_MCL_DESC};
  return dev->mcl.update ? &mutable_list : NULL;
}

accel_status_t accel_ze_mcl_next_id(const accel_ze_device_t *dev, ze_command_list_handle_t list,
                                    uint64_t *id) {
  const accel_ze_mcl_desc_t desc = {.stype = ACCEL_ZE_STYPE_MCL_COMMAND_ID_DESC,
                                    .flags = MCL_FLAGS};
  ze_result_t r = dev->mcl.next_id(list, &desc, id);
  return r == ZE_RESULT_SUCCESS ? ACCEL_OK : accel_ze_fail("zeCommandListGetNextCommandIdExp", r);
}

accel_status_t accel_ze_mcl_update_kernel(const accel_ze_device_t *dev,
                                          ze_command_list_handle_t list, uint64_t id,
                                          const accel_kernel_launch_t *launch) {
  const ze_group_count_t count = accel_ze_group_count(dev, launch->num_blocks);
  const accel_ze_mcl_group_count_t groups = {.stype = ACCEL_ZE_STYPE_MCL_GROUP_COUNT_DESC,
                                             .commandId = id, .pGroupCount = &count};
  /* argument 0: the parameter block; argument 1 (the predicate) stays NULL */
  const accel_ze_mcl_kernel_argument_t params = {
      .stype = ACCEL_ZE_STYPE_MCL_KERNEL_ARGUMENT_DESC, .pNext = &groups, .commandId = id,
      .argIndex = 0, .argSize = launch->params_size, .pArgValue = launch->params};
  const accel_ze_mcl_desc_t desc = {.stype = ACCEL_ZE_STYPE_MCL_COMMANDS_DESC, .pNext = &params};
  ze_result_t r = dev->mcl.update(list, &desc);
  return r == ZE_RESULT_SUCCESS ? ACCEL_OK
                                : accel_ze_fail("zeCommandListUpdateMutableCommandsExp", r);
}
