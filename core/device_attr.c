/*
 * accel_device_get_attribute: what a device really does (docs/API.md, "Device attributes").
 * The core answers what it decides itself (how graphs replay and update, whether streams are
 * lazy, the plugin's declared forms and DLPack type) and the info fields; the plugin's
 * device_attribute slot answers what only it knows (unified memory; whether its conditional
 * regions are native or predicated; an update in place its driver cannot make), with a core
 * fallback.
 */
#include "core_util.h"
#include "device.h"
#include "backend.h"

/* Attributes the plugin may answer, given the core's answer v: the others follow from what the
 * core does. Conditional regions are the plugin's to describe only when it takes them (the
 * core refuses the calls otherwise). */
static bool plugin_answers(accel_device_attr_t attr, int64_t v) {
  return attr == ACCEL_ATTR_UNIFIED_MEMORY ||
         (attr == ACCEL_ATTR_CONDITIONALS && v != ACCEL_CONDITIONALS_NONE) ||
         (attr == ACCEL_ATTR_GRAPH_UPDATE && v == ACCEL_GRAPH_UPDATE_NATIVE);
}

/* Whether the plugin's answer is one the attribute can take: regions native or predicated;
 * an update in place may only be downgraded (the driver lacks the call). */
static bool plugin_answer_valid(accel_device_attr_t attr, int64_t v) {
  switch (attr) {
    case ACCEL_ATTR_CONDITIONALS:
      return v == ACCEL_CONDITIONALS_NATIVE || v == ACCEL_CONDITIONALS_PREDICATED;
    case ACCEL_ATTR_GRAPH_UPDATE: return v == ACCEL_GRAPH_UPDATE_EMULATED;
    default: return true;
  }
}

static int64_t graph_kind(const accel_device_t *dev) {
  return dev->backend->vt->graph_instantiate && dev->info.native_graphs
             ? ACCEL_GRAPH_KIND_NATIVE
             : ACCEL_GRAPH_KIND_RECORDED;
}

/* The core's answer; false for an attribute it does not know. */
static bool core_answer(accel_device_t *dev, const accel_device_info_t *info,
                        accel_device_attr_t attr, int64_t *v) {
  const accel_backend_vtable_t *vt = dev->backend->vt;
  switch (attr) {
    case ACCEL_ATTR_GRAPH_KIND: *v = graph_kind(dev); return true;
    case ACCEL_ATTR_GRAPH_UPDATE:
      *v = graph_kind(dev) == ACCEL_GRAPH_KIND_NATIVE && vt->graph_update
               ? ACCEL_GRAPH_UPDATE_NATIVE
               : ACCEL_GRAPH_UPDATE_EMULATED;
      return true;
    case ACCEL_ATTR_CONDITIONALS:
      *v = vt->conditionals ? ACCEL_CONDITIONALS_NATIVE : ACCEL_CONDITIONALS_NONE;
      return true;
    case ACCEL_ATTR_LAZY_DEFAULT: *v = dev->lazy_default; return true;
    case ACCEL_ATTR_HOST_ACCESSIBLE: *v = info->host_accessible; return true;
    case ACCEL_ATTR_UNIFIED_MEMORY:
      *v = info->host_accessible && info->type == ACCEL_DEVICE_TYPE_CPU;
      return true;
    case ACCEL_ATTR_DLPACK_DEVICE_TYPE: *v = vt->dlpack_device_type; return true;
    case ACCEL_ATTR_KERNEL_FORMS: *v = (int64_t)vt->kernel_forms; return true;
    case ACCEL_ATTR_DEVICE_TYPE: *v = info->type; return true;
    case ACCEL_ATTR_INDEX: *v = info->index; return true;
    case ACCEL_ATTR_MEMORY_TOTAL: *v = (int64_t)info->memory_total; return true;
    case ACCEL_ATTR_MEMORY_FREE: *v = (int64_t)info->memory_free; return true;
    case ACCEL_ATTR_COMPUTE_UNITS: *v = info->compute_units; return true;
    case ACCEL_ATTR_SUPPORTS_FP16: *v = info->supports_fp16; return true;
    case ACCEL_ATTR_SUPPORTS_BF16: *v = info->supports_bf16; return true;
  }
  return false;
}

accel_status_t accel_device_get_attribute(accel_device_t *dev, accel_device_attr_t attr,
                                          int64_t *value) {
  accel_status_t st = accel_device_check(dev, __func__);
  if (st != ACCEL_OK) return st;
  ACCEL_REQUIRE_ARG(value, __func__, "value is NULL");
  accel_device_info_t info;
  if ((st = accel_device_get_info(dev, &info)) != ACCEL_OK) return st; /* live memory numbers */
  int64_t v = 0;
  if (!core_answer(dev, &info, attr, &v))
    return accel_set_error(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: unknown attribute %d (this libaccel knows 1..%d)", __func__,
                           (int)attr, (int)ACCEL_ATTR_SUPPORTS_BF16);
  int64_t from_plugin = 0;
  const accel_backend_vtable_t *vt = dev->backend->vt;
  if (plugin_answers(attr, v) && vt->device_attribute &&
      vt->device_attribute(dev->impl, (uint32_t)attr, &from_plugin) &&
      plugin_answer_valid(attr, from_plugin))
    v = from_plugin;
  *value = v;
  return ACCEL_OK;
}
