/* Translation of one accel command into Level Zero appends (shared by every path). */
#include "ze_internal.h"

accel_status_t accel_ze_append_cmd(accel_ze_device_t *dev, ze_command_list_handle_t list,
                                   const accel_cmd_t *cmd, int barrier_before,
                                   uint64_t *mutable_id) {
  const accel_ze_api_t *api = dev->api;
  /* Kernels read pointer tables, so hazards cannot be derived from the command itself:
   * every command waits for the ones before it. */
  if (barrier_before) ACCEL_ZE_TRY(api, zeCommandListAppendBarrier, list, NULL, 0, NULL);
  switch ((accel_cmd_type_t)cmd->type) {
    case ACCEL_CMD_KERNEL:
      return accel_ze_append_kernel(dev, list, &cmd->u.kernel, mutable_id);
    case ACCEL_CMD_MEMCPY:
      ACCEL_ZE_TRY(api, zeCommandListAppendMemoryCopy, list, cmd->u.memcpy.dst,
                   cmd->u.memcpy.src, cmd->u.memcpy.size, NULL, 0, NULL);
      return ACCEL_OK;
    case ACCEL_CMD_MEMSET: {
      uint8_t pattern = (uint8_t)cmd->u.memset.value;
      ACCEL_ZE_TRY(api, zeCommandListAppendMemoryFill, list, cmd->u.memset.dst, &pattern, 1,
                   cmd->u.memset.size, NULL, 0, NULL);
      return ACCEL_OK;
    }
    case ACCEL_CMD_HOST_FUNC:
    case ACCEL_CMD_NATIVE: /* never handed over: native_commands is 0 */
    case ACCEL_CMD_EVENT_RECORD:
    case ACCEL_CMD_EVENT_WAIT:
    case ACCEL_CMD_COND_BEGIN: /* never handed over: conditionals is 0 */
    case ACCEL_CMD_COND_END:
      break;
  }
  return accel_ze_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                                  "level_zero: command type %u cannot be appended to a command list",
                                  cmd->type);
}
