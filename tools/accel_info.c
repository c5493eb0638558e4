/*
 * accel-info: every backend and plugin the loader considered (loaded / not found / failed and
 * why) and every device with its properties, like clinfo.
 */
#include <stdio.h>
#include <string.h>

#include "accel/accel.h"

static const char *outcome_name(accel_plugin_outcome_t o) {
  switch (o) {
    case ACCEL_PLUGIN_LOADED: return "loaded";
    case ACCEL_PLUGIN_NOT_FOUND: return "not found";
    case ACCEL_PLUGIN_FAILED: return "FAILED";
    case ACCEL_PLUGIN_DUPLICATE: return "duplicate (ignored)";
  }
  return "?";
}

static const char *type_name(accel_device_type_t t) {
  switch (t) {
    case ACCEL_DEVICE_TYPE_CPU: return "CPU";
    case ACCEL_DEVICE_TYPE_GPU: return "GPU";
    case ACCEL_DEVICE_TYPE_ACCELERATOR: return "accelerator";
    case ACCEL_DEVICE_TYPE_OTHER: return "other";
  }
  return "?";
}

/* attribute value, or -1 with the reason printed when the query fails */
static int64_t attr(accel_device_t *dev, accel_device_attr_t a) {
  int64_t v = -1;
  if (accel_device_get_attribute(dev, a, &v) != ACCEL_OK)
    printf("      attribute %d: %s\n", (int)a, accel_last_error());
  return v;
}

static const char *yes_no(int64_t v) { return v == 1 ? "yes" : v == 0 ? "no" : "?"; }

/* What the device really does (accel_device_get_attribute), docs/API.md. */
static void print_capabilities(accel_device_t *dev) {
  int64_t kind = attr(dev, ACCEL_ATTR_GRAPH_KIND), upd = attr(dev, ACCEL_ATTR_GRAPH_UPDATE);
  int64_t cond = attr(dev, ACCEL_ATTR_CONDITIONALS);
  printf("      graphs           %s\n", kind == ACCEL_GRAPH_KIND_NATIVE ? "native"
                                         : kind == ACCEL_GRAPH_KIND_RECORDED
                                             ? "recorded (core replays the commands as a batch)"
                                             : "?");
  printf("      graph update     %s\n", upd == ACCEL_GRAPH_UPDATE_NATIVE ? "native (in place)"
                                         : upd == ACCEL_GRAPH_UPDATE_EMULATED
                                             ? "emulated (in core)"
                                             : "?");
  printf("      conditionals     %s\n", cond == ACCEL_CONDITIONALS_NATIVE       ? "native"
                                         : cond == ACCEL_CONDITIONALS_PREDICATED ? "predicated"
                                                                                 : "none");
  printf("      lazy by default  %s\n", yes_no(attr(dev, ACCEL_ATTR_LAZY_DEFAULT)));
  printf("      host accessible  %s\n", yes_no(attr(dev, ACCEL_ATTR_HOST_ACCESSIBLE)));
  printf("      unified memory   %s\n", yes_no(attr(dev, ACCEL_ATTR_UNIFIED_MEMORY)));
  printf("      DLPack device    %lld\n", (long long)attr(dev, ACCEL_ATTR_DLPACK_DEVICE_TYPE));
  printf("      kernel forms     0x%llx\n", (unsigned long long)attr(dev, ACCEL_ATTR_KERNEL_FORMS));
}

static void print_device(const char *backend, int index) {
  char sel[64];
  snprintf(sel, sizeof sel, "%s:%d", backend, index);
  accel_device_t *dev = NULL;
  accel_device_info_t info;
  if (accel_device_open(sel, &dev) != ACCEL_OK || accel_device_get_info(dev, &info) != ACCEL_OK) {
    printf("    device %s: cannot open: %s\n", sel, accel_last_error());
    if (dev) accel_device_close(dev);
    return;
  }
  printf("    device %s\n", sel);
  printf("      name             %s\n", info.name);
  printf("      vendor           %s\n", info.vendor);
  printf("      type             %s\n", type_name(info.type));
  printf("      driver           %s\n", info.driver_version);
  printf("      memory           %.1f GiB total, %.1f GiB free\n",
         (double)info.memory_total / (1u << 30), (double)info.memory_free / (1u << 30));
  printf("      compute units    %u\n", info.compute_units);
  printf("      fp16 / bf16      %s / %s\n", info.supports_fp16 ? "yes" : "no",
         info.supports_bf16 ? "yes" : "no");
  print_capabilities(dev);
  accel_device_close(dev);
}

/* The order accel_device_open(NULL) tries devices in, and why. */
static void print_ranking(void) {
  enum { MAX_SHOWN = 64 };
  accel_device_rank_t ranks[MAX_SHOWN];
  int n = 0;
  if (accel_device_ranking(ranks, MAX_SHOWN, &n) != ACCEL_OK) {
    printf("\nDevice ranking: unavailable: %s\n", accel_last_error());
    return;
  }
  printf("\nDevice ranking (accel_device_open(NULL) takes the first that opens):\n");
  for (int i = 0; i < n && i < MAX_SHOWN; ++i) {
    char selector[48];
    snprintf(selector, sizeof selector, "%.31s:%d", ranks[i].backend, ranks[i].index);
    if (ranks[i].index < 0)
      printf("  -  %-18s %s\n", ranks[i].backend, ranks[i].reason);
    else
      printf("  %d. %-18s %s: %s\n", i + 1, selector, ranks[i].name, ranks[i].reason);
  }
  if (n > MAX_SHOWN) printf("  ... %d more\n", n - MAX_SHOWN);
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: accel-info\nLists plugins considered, backends and devices.\n"
           "Environment: ACCEL_PLUGIN_PATH, ACCEL_BACKEND, ACCEL_LOG=info for details.\n");
    return 0;
  }
  printf("accel %s\n\nPlugins considered:\n", accel_version_string());
  int nrep = accel_plugin_report_count();
  for (int i = 0; i < nrep; ++i) {
    accel_plugin_report_t r;
    if (accel_plugin_report_get(i, &r) != ACCEL_OK) continue;
    printf("  %-12s %-20s %s%s%s\n", r.backend[0] ? r.backend : "?", outcome_name(r.outcome),
           r.path, r.path[0] ? ": " : "", r.message);
  }
  printf("\nBackends:\n");
  int nb = accel_backend_count();
  for (int i = 0; i < nb; ++i) {
    accel_backend_t *b = NULL;
    if (accel_backend_get(i, &b) != ACCEL_OK) continue;
    const char *reason = "";
    accel_status_t st = accel_backend_status(b, &reason);
    int count = 0;
    accel_device_count(b, &count);
    if (st == ACCEL_OK)
      printf("  %s: available, %d device(s)\n", accel_backend_name(b), count);
    else
      printf("  %s: %s: %s\n", accel_backend_name(b),
             st == ACCEL_ERROR_UNAVAILABLE ? "UNAVAILABLE" : accel_status_name(st), reason);
    for (int d = 0; d < count; ++d) print_device(accel_backend_name(b), d);
  }
  print_ranking();
  accel_device_t *dev = NULL;
  if (accel_device_open(NULL, &dev) == ACCEL_OK) {
    accel_device_info_t info;
    accel_device_get_info(dev, &info);
    printf("\nDefault device (accel_device_open(NULL)): %s:%d (%s)\n", info.backend, info.index,
           info.name);
    accel_device_close(dev);
  } else {
    printf("\nDefault device: none: %s\n", accel_last_error());
    return 1;
  }
  return 0;
}
