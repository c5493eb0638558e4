/*
 * Mutable command lists (ZE_experimental_mutable_command_list, Level Zero spec 1.9): a native
 * graph's kernels take new arguments in place (accel_graph_update). Debian's headers are spec
 * 1.4, so the extension's structures and values are declared here as the spec gives them
 * (level-zero include/ze_api.h), and its two functions are looked up through
 * zeDriverGetExtensionFunctionAddress when the driver lists the extension and the device can
 * mutate kernel arguments and group counts. Unverified: no Level Zero device has run this
 * (docs/backends/level_zero.md).
 */
#ifndef ACCEL_ZE_MUTABLE_H
#define ACCEL_ZE_MUTABLE_H

#include <stdint.h>

#include <level_zero/ze_api.h>

#include "accel/accel_plugin.h"

#define ACCEL_ZE_MCL_EXT_NAME "ZE_experimental_mutable_command_list"
#define ACCEL_ZE_STYPE_MCL_PROPERTIES ((ze_structure_type_t)0x00020015)
#define ACCEL_ZE_STYPE_MCL_DESC ((ze_structure_type_t)0x00020016)
#define ACCEL_ZE_STYPE_MCL_COMMAND_ID_DESC ((ze_structure_type_t)0x00020017)
#define ACCEL_ZE_STYPE_MCL_COMMANDS_DESC ((ze_structure_type_t)0x00020018)
#define ACCEL_ZE_STYPE_MCL_KERNEL_ARGUMENT_DESC ((ze_structure_type_t)0x00020019)
#define ACCEL_ZE_STYPE_MCL_GROUP_COUNT_DESC ((ze_structure_type_t)0x0002001A)
#define ACCEL_ZE_MCL_FLAG_KERNEL_ARGUMENTS 1u /* ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_ARGUMENTS */
#define ACCEL_ZE_MCL_FLAG_GROUP_COUNT 2u      /* ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_COUNT */

typedef struct accel_ze_mcl_properties { /* ze_mutable_command_list_exp_properties_t */
  ze_structure_type_t stype;
  void *pNext;
  uint32_t mutableCommandListFlags;
  uint32_t mutableCommandFlags;
} accel_ze_mcl_properties_t;

typedef struct accel_ze_mcl_desc { /* ze_mutable_command_list_exp_desc_t and
                                      ze_mutable_command_id_exp_desc_t */
  ze_structure_type_t stype;
  const void *pNext;
  uint32_t flags;
} accel_ze_mcl_desc_t;

typedef struct accel_ze_mcl_kernel_argument { /* ze_mutable_kernel_argument_exp_desc_t */
  ze_structure_type_t stype;
  const void *pNext;
  uint64_t commandId;
  uint32_t argIndex;
  size_t argSize;
  const void *pArgValue;
} accel_ze_mcl_kernel_argument_t;

typedef struct accel_ze_mcl_group_count { /* ze_mutable_group_count_exp_desc_t */
  ze_structure_type_t stype;
  const void *pNext;
  uint64_t commandId;
  const ze_group_count_t *pGroupCount;
} accel_ze_mcl_group_count_t;

/* The extension's functions, both NULL when the device cannot update graphs in place. */
typedef struct accel_ze_mcl {
  ze_result_t (*next_id)(ze_command_list_handle_t list, const accel_ze_mcl_desc_t *desc,
                         uint64_t *id); /* zeCommandListGetNextCommandIdExp */
  ze_result_t (*update)(ze_command_list_handle_t list,
                        const accel_ze_mcl_desc_t *desc); /* ...UpdateMutableCommandsExp */
} accel_ze_mcl_t;

struct accel_ze_device;

/* Fills dev->mcl when the driver and device support what an update needs; else leaves it
 * zero (graphs are then instantiated anew on update, by the core). */
void accel_ze_mcl_probe(struct accel_ze_device *dev);

/* The pNext of a command list descriptor that makes the list mutable, or NULL. */
const void *accel_ze_mcl_list_next(const struct accel_ze_device *dev);

/* The command id the next command appended to list gets (kernel arguments and group count
 * mutable). */
accel_status_t accel_ze_mcl_next_id(const struct accel_ze_device *dev,
                                    ze_command_list_handle_t list, uint64_t *id);

/* Gives the kernel command `id` of list (closed, not executing) the parameter block and group
 * count of launch; the caller closes the list after its last update. */
accel_status_t accel_ze_mcl_update_kernel(const struct accel_ze_device *dev,
                                          ze_command_list_handle_t list, uint64_t id,
                                          const accel_kernel_launch_t *launch);

#endif
