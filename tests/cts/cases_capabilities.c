/*
 * Device attributes (accel_device_get_attribute): every declared capability is checked against
 * what the device observably does, and unknown attributes are refused with a message.
 */
#include <stdlib.h>
#include <string.h>

#include "accel/accel_interop.h"
#include "cts.h"

static int64_t get(cts_ctx_t *ctx, accel_device_attr_t a, accel_status_t *st) {
  int64_t v = -1;
  if (*st == ACCEL_OK) *st = accel_device_get_attribute(ctx->dev, a, &v);
  return v;
}

CTS_CASE(attr_unknown_refused, CTS_TAG_NONE) {
  int64_t v = 42;
  static const int bad[] = {0, -1, 16, 1000000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    accel_clear_error();
    CTS_STATUS(accel_device_get_attribute(ctx->dev, (accel_device_attr_t)bad[i], &v),
               ACCEL_ERROR_INVALID_ARGUMENT);
    CTS_CHECK(strstr(accel_last_error(), "unknown attribute"), "attribute %d: message '%s'",
              bad[i], accel_last_error());
    CTS_CHECK(v == 42, "attribute %d: the output was written on failure", bad[i]);
  }
  CTS_STATUS(accel_device_get_attribute(ctx->dev, ACCEL_ATTR_GRAPH_KIND, NULL),
             ACCEL_ERROR_INVALID_ARGUMENT);
  CTS_STATUS(accel_device_get_attribute(NULL, ACCEL_ATTR_GRAPH_KIND, &v),
             ACCEL_ERROR_INVALID_HANDLE);
  CTS_CHECK(strstr(accel_last_error(), "accel_device_get_attribute"),
            "a NULL device: the message does not name the call: '%s'", accel_last_error());
  return CTS_PASS;
}

/* The attributes that repeat accel_device_info_t say the same. */
CTS_CASE(attr_match_info, CTS_TAG_NONE) {
  accel_device_info_t info;
  accel_status_t st = accel_device_get_info(ctx->dev, &info);
  CTS_OK(st);
  int64_t type = get(ctx, ACCEL_ATTR_DEVICE_TYPE, &st), index = get(ctx, ACCEL_ATTR_INDEX, &st);
  int64_t cu = get(ctx, ACCEL_ATTR_COMPUTE_UNITS, &st);
  int64_t fp16 = get(ctx, ACCEL_ATTR_SUPPORTS_FP16, &st);
  int64_t bf16 = get(ctx, ACCEL_ATTR_SUPPORTS_BF16, &st);
  int64_t total = get(ctx, ACCEL_ATTR_MEMORY_TOTAL, &st);
  int64_t free_b = get(ctx, ACCEL_ATTR_MEMORY_FREE, &st);
  int64_t host = get(ctx, ACCEL_ATTR_HOST_ACCESSIBLE, &st);
  int64_t kind = get(ctx, ACCEL_ATTR_GRAPH_KIND, &st);
  CTS_OK(st);
  CTS_CHECK(type == info.type && index == info.index && cu == info.compute_units,
            "type/index/compute units %lld/%lld/%lld, info says %d/%d/%u", (long long)type,
            (long long)index, (long long)cu, (int)info.type, info.index, info.compute_units);
  CTS_CHECK(fp16 == info.supports_fp16 && bf16 == info.supports_bf16, "fp16/bf16 differ");
  CTS_CHECK(total == (int64_t)info.memory_total && free_b >= 0 && free_b <= total,
            "memory %lld free of %lld, info total %llu", (long long)free_b, (long long)total,
            (unsigned long long)info.memory_total);
  CTS_CHECK(host == info.host_accessible, "host accessible %lld, info %u", (long long)host,
            info.host_accessible);
  CTS_CHECK(kind == (info.native_graphs ? ACCEL_GRAPH_KIND_NATIVE : ACCEL_GRAPH_KIND_RECORDED),
            "graph kind %lld, info native_graphs %u", (long long)kind, info.native_graphs);
  const char *off = getenv("ACCEL_DISABLE_GRAPHS");
  CTS_CHECK(!(off && strcmp(off, "1") == 0) || kind == ACCEL_GRAPH_KIND_RECORDED,
            "ACCEL_DISABLE_GRAPHS=1 but the graph kind is native");
  return CTS_PASS;
}

/* The graph, lazy and conditional capabilities hold one of their declared values, and a stream
 * made without flags is lazy exactly when LAZY_DEFAULT says so. */
CTS_CASE(attr_graph_and_lazy, CTS_TAG_NONE) {
  accel_status_t st = ACCEL_OK;
  int64_t kind = get(ctx, ACCEL_ATTR_GRAPH_KIND, &st);
  int64_t upd = get(ctx, ACCEL_ATTR_GRAPH_UPDATE, &st);
  int64_t cond = get(ctx, ACCEL_ATTR_CONDITIONALS, &st);
  int64_t lazy = get(ctx, ACCEL_ATTR_LAZY_DEFAULT, &st);
  CTS_OK(st);
  CTS_CHECK(upd == ACCEL_GRAPH_UPDATE_EMULATED ||
                (upd == ACCEL_GRAPH_UPDATE_NATIVE && kind == ACCEL_GRAPH_KIND_NATIVE),
            "graph update %lld with graph kind %lld", (long long)upd, (long long)kind);
  /* the behaviour of each answer is checked by cases_graph_cond*.c: regions run (natively or
   * predicated) or are refused */
  CTS_CHECK(cond == ACCEL_CONDITIONALS_NONE || cond == ACCEL_CONDITIONALS_NATIVE ||
                cond == ACCEL_CONDITIONALS_PREDICATED,
            "conditionals %lld declared", (long long)cond);
  accel_stream_t *s = NULL;
  int is_lazy = -1;
  CTS_OK(accel_stream_create(ctx->dev, &s));
  st = accel_stream_is_lazy(s, &is_lazy);
  accel_stream_destroy(s);
  CTS_OK(st);
  CTS_CHECK(is_lazy == lazy, "LAZY_DEFAULT %lld, a default stream is_lazy %d", (long long)lazy,
            is_lazy);
  return CTS_PASS;
}

/* HOST_ACCESSIBLE: the host reads and writes device memory through the pointer. UNIFIED_MEMORY
 * implies it. */
CTS_CASE(attr_host_access_observed, CTS_TAG_NONE) {
  accel_status_t st = ACCEL_OK;
  int64_t host = get(ctx, ACCEL_ATTR_HOST_ACCESSIBLE, &st);
  int64_t unified = get(ctx, ACCEL_ATTR_UNIFIED_MEMORY, &st);
  CTS_OK(st);
  CTS_CHECK(host == 0 || host == 1, "host accessible %lld", (long long)host);
  CTS_CHECK(unified == 0 || (unified == 1 && host == 1), "unified memory %lld, host access %lld",
            (long long)unified, (long long)host);
  if (!host) return CTS_PASS;
  uint32_t *d = NULL, back[64];
  CTS_OK(accel_malloc(ctx->dev, sizeof back, (void **)&d));
  for (uint32_t i = 0; i < 64; ++i) d[i] = 0x5a5a0000u + i; /* host writes device memory */
  st = cts_download(ctx, back, d, sizeof back);
  for (uint32_t i = 0; st == ACCEL_OK && i < 64; ++i)
    if (back[i] != 0x5a5a0000u + i) st = ACCEL_ERROR_STATE;
  uint32_t up = 0xC0FFEEu;
  if (st == ACCEL_OK) st = cts_upload(ctx, d + 7, &up, 4);
  int read_ok = st == ACCEL_OK && d[7] == up; /* host reads what the device copy wrote */
  accel_free(ctx->dev, d);
  CTS_CHECK(st == ACCEL_OK && read_ok, "host access declared but not observed (%s)",
            accel_status_name(st));
  return CTS_PASS;
}

/* DLPACK_DEVICE_TYPE: the DLPack device of the device, or none (export refused). */
CTS_CASE(attr_dlpack_observed, CTS_TAG_NONE) {
  accel_status_t st = ACCEL_OK;
  int64_t type = get(ctx, ACCEL_ATTR_DLPACK_DEVICE_TYPE, &st);
  CTS_OK(st);
  accel_dl_device_t dl;
  memset(&dl, 0, sizeof dl);
  st = accel_device_dlpack_device(ctx->dev, &dl);
  if (type == 0) {
    CTS_STATUS(st, ACCEL_ERROR_UNSUPPORTED);
  } else {
    CTS_OK(st);
    CTS_CHECK(dl.device_type == type, "DLPack device type %lld, accel_device_dlpack_device %d",
              (long long)type, (int)dl.device_type);
  }
  return CTS_PASS;
}

/* KERNEL_FORMS: a nonzero value means the kernels run; zero means they are refused. */
CTS_CASE(attr_kernel_forms_observed, CTS_TAG_NONE) {
  accel_status_t st = ACCEL_OK;
  int64_t forms = get(ctx, ACCEL_ATTR_KERNEL_FORMS, &st);
  CTS_OK(st);
  float *d = NULL, back[16];
  CTS_OK(accel_malloc(ctx->dev, sizeof back, (void **)&d));
  accel_stream_t *s = NULL;
  st = accel_stream_create_ex(ctx->dev, ACCEL_STREAM_EAGER, &s);
  accel_tensor_t t = {d, 16, ACCEL_F32};
  accel_status_t fill = st == ACCEL_OK ? accel_fill(s, &t, 1, 2.5f) : st;
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  if (st == ACCEL_OK && fill == ACCEL_OK) st = cts_download(ctx, back, d, sizeof back);
  if (s) accel_stream_destroy(s);
  accel_free(ctx->dev, d);
  CTS_OK(st);
  if (!forms) {
    CTS_STATUS(fill, ACCEL_ERROR_UNSUPPORTED);
    return CTS_PASS;
  }
  CTS_OK(fill);
  for (int i = 0; i < 16; ++i) CTS_CHECK(back[i] == 2.5f, "fill[%d] = %g", i, (double)back[i]);
  return CTS_PASS;
}
