/*
 * The Level Zero plugin's use of mutable command lists (backends/level_zero/ze_mutable.c),
 * against a fake driver table, no device needed: the extension is used only when the driver
 * lists ZE_experimental_mutable_command_list, the device can mutate kernel arguments and group
 * counts, and both functions resolve; a list made mutable chains the spec's descriptor; a
 * command id is asked for kernel arguments and group count; an update chains the parameter
 * block as argument 0 and the capped group count, both for that command id, with the spec's
 * structure types. What a real driver does with them is unverified (docs/backends/level_zero.md).
 */
#include <string.h>

#include "check.h"
#include "ze_fake_chain.h"

const accel_host_api_t *accel_ze_host;

accel_status_t accel_ze_fail(const char *call, ze_result_t r) {
  return accel_ze_host->set_error(ACCEL_ERROR_BACKEND, "%s failed: 0x%x", call, (unsigned)r);
}

static struct {
  int resolve;
  uint32_t mutable_flags;
  uint64_t next;                    /* the next command id the fake hands out */
  const accel_kernel_launch_t *want; /* what an update must carry */
  uint64_t want_id;
  uint32_t want_groups;
  int updates;
} fake;

static void fill_properties(void *p) {
  ((accel_ze_mcl_properties_t *)p)->mutableCommandFlags = fake.mutable_flags;
}

static ze_result_t fake_next_id(ze_command_list_handle_t l, const accel_ze_mcl_desc_t *desc,
                                uint64_t *id) {
  CHECK(l && desc->stype == ACCEL_ZE_STYPE_MCL_COMMAND_ID_DESC && desc->flags == 3u,
        "command id descriptor: stype %x flags %u", (unsigned)desc->stype, desc->flags);
  *id = ++fake.next;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_update(ze_command_list_handle_t l, const accel_ze_mcl_desc_t *desc) {
  const accel_ze_mcl_kernel_argument_t *arg = desc->pNext;
  CHECK(l && desc->stype == ACCEL_ZE_STYPE_MCL_COMMANDS_DESC && arg, "commands descriptor");
  CHECK(arg->stype == ACCEL_ZE_STYPE_MCL_KERNEL_ARGUMENT_DESC && arg->commandId == fake.want_id &&
            arg->argIndex == 0 && arg->argSize == fake.want->params_size &&
            memcmp(arg->pArgValue, fake.want->params, arg->argSize) == 0,
        "kernel argument: stype %x id %llu index %u size %zu", (unsigned)arg->stype,
        (unsigned long long)arg->commandId, arg->argIndex, arg->argSize);
  const accel_ze_mcl_group_count_t *g = arg->pNext;
  CHECK(g && g->stype == ACCEL_ZE_STYPE_MCL_GROUP_COUNT_DESC && g->commandId == fake.want_id &&
            g->pGroupCount->groupCountX == fake.want_groups && g->pGroupCount->groupCountY == 1 &&
            !g->pNext,
        "group count descriptor");
  fake.updates++;
  return ZE_RESULT_SUCCESS;
}

static ze_result_t ZE_APICALL fake_resolve(ze_driver_handle_t d, const char *name, void **fn) {
  (void)d;
  *fn = NULL;
  if (!fake.resolve) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  if (!strcmp(name, "zeCommandListGetNextCommandIdExp")) *fn = (void *)(uintptr_t)fake_next_id;
  if (!strcmp(name, "zeCommandListUpdateMutableCommandsExp")) *fn = (void *)(uintptr_t)fake_update;
  return *fn ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

static int probed(accel_ze_device_t *dev, int list_extension, uint32_t flags, int resolve) {
  ze_fake.listed = list_extension;
  fake.mutable_flags = flags;
  fake.resolve = resolve;
  accel_ze_mcl_probe(dev);
  CHECK(!dev->mcl.next_id == !dev->mcl.update, "one function without the other");
  return dev->mcl.update != NULL;
}

int main(void) {
  accel_ze_api_t api;
  ze_fake_table(&api);
  ze_fake = (ze_fake_t){.name = ACCEL_ZE_MCL_EXT_NAME, .stype = ACCEL_ZE_STYPE_MCL_PROPERTIES,
                        .fill = fill_properties};
  api.zeDriverGetExtensionFunctionAddress = fake_resolve;
  accel_ze_device_t dev = {.api = &api};
  dev.compute.maxGroupCountX = 1000;
  CHECK(!probed(&dev, 0, 0xffu, 1), "used without the driver listing the extension");
  CHECK(!probed(&dev, 1, 1u, 1), "used without group count mutation");
  CHECK(!probed(&dev, 1, 0xffu, 0), "used without its functions");
  CHECK(accel_ze_mcl_list_next(&dev) == NULL, "a list made mutable without the extension");
  api.zeDriverGetExtensionFunctionAddress = NULL;
  CHECK(!probed(&dev, 1, 0xffu, 1), "used with a loader lacking the lookup");
  api.zeDriverGetExtensionFunctionAddress = fake_resolve;
  CHECK(probed(&dev, 1, 3u, 1), "not used with everything there");
  const accel_ze_mcl_desc_t *list = accel_ze_mcl_list_next(&dev);
  CHECK(list && list->stype == ACCEL_ZE_STYPE_MCL_DESC && list->flags == 0 && !list->pNext,
        "mutable list descriptor");

  ze_command_list_handle_t l = (ze_command_list_handle_t)(uintptr_t)0x10;
  uint64_t id = 0;
  CHECK(accel_ze_mcl_next_id(&dev, l, &id) == ACCEL_OK && id == 1, "command id %llu",
        (unsigned long long)id);
  const unsigned char params[24] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const uint32_t blocks[] = {7, 1000, 5000}; /* the last beyond the device's maximum */
  for (int k = 0; k < 3; ++k) {
    const accel_kernel_launch_t launch = {.kernel_id = 1, .num_blocks = blocks[k],
                                          .params = params, .params_size = sizeof params};
    fake.want = &launch;
    fake.want_id = id;
    fake.want_groups = blocks[k] > 1000 ? 1000 : blocks[k];
    CHECK(accel_ze_mcl_update_kernel(&dev, l, id, &launch) == ACCEL_OK, "update %d", k);
  }
  CHECK(fake.updates == 3, "%d updates reached the driver", fake.updates);
  return CHECK_EXIT("test_ze_mutable: mutable command lists against a fake driver table");
}
