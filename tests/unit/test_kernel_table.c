/*
 * The kernel table drives validation (issue 17): built with -DACCEL_EXTRA_KERNEL_ROWS, the table
 * gets one more row (accel_test_extra_kernel.h) and core/kernel_validate.c is compiled into this
 * program with it. The fake operation's calls must be refused for a wrong dtype, an aliasing
 * output, a partial in-place overlap and a missing scalar, with INVALID_ARGUMENT and a message
 * naming the list, and accepted when valid or exactly in place: no code but the row knows the
 * operation. The core services validation uses are faked here (every host range is "live"); the
 * validator calls nothing of the chunk-table cache (kernel_ops.c drives both), so none is here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel_ops_internal.h"

#ifndef ACCEL_EXTRA_KERNEL_ROWS
#error "build with -DACCEL_EXTRA_KERNEL_ROWS='\"accel_test_extra_kernel.h\"'"
#endif

static int g_device;
accel_status_t accel_stream_check(accel_stream_t *stream, const char *fn, accel_device_t **dev) {
  (void)fn;
  if (!stream) return accel_set_error(ACCEL_ERROR_INVALID_HANDLE, "%s: stream is NULL", fn);
  *dev = (accel_device_t *)&g_device;
  return ACCEL_OK;
}
int accel_device_range_is_valid(accel_device_t *d, const void *p, size_t n) {
  (void)d, (void)p, (void)n;
  return 1;
}
int accel_device_range_is_read_only(accel_device_t *d, const void *p, size_t n) {
  (void)d, (void)p, (void)n;
  return 0;
}

/* Validates the fake operation; want_sub: NULL for success, else a substring of the message. */
static void expect(const accel_tensor_t *out, const accel_tensor_t *in, const accel_tensor_t *acc,
                   size_t n, const float *scale, const char *want_sub, int line) {
  kop_req_t r = {.desc = &accel_kop_descs[ACCEL_KERNEL_TEST_EXTRA],
                 .op = ACCEL_KERNEL_TEST_EXTRA, .stream = (accel_stream_t *)&g_device,
                 .lists = {out, in, acc}, .n = n, .scalars = {scale}};
  accel_clear_error();
  accel_status_t st = kop_check_call(&r);
  kop_interval_t *iv = NULL;
  size_t count = 0;
  if (st == ACCEL_OK) st = kop_validate_all(&r, &iv, &count);
  free(iv);
  if (!want_sub)
    CHECK(st == ACCEL_OK, "line %d: refused: %s", line, accel_last_error());
  else
    CHECK(st == ACCEL_ERROR_INVALID_ARGUMENT && strstr(accel_last_error(), want_sub),
          "line %d: status %d, message '%s', want INVALID_ARGUMENT with '%s'", line, (int)st,
          accel_last_error(), want_sub);
}
#define EXPECT_OK(o, i, a, n, s) expect(o, i, a, n, s, NULL, __LINE__)
#define EXPECT_REFUSED(o, i, a, n, s, sub) expect(o, i, a, n, s, sub, __LINE__)

int main(void) {
  const kop_desc_t *d = &accel_kop_descs[ACCEL_KERNEL_TEST_EXTRA];
  CHECK(ACCEL_KERNEL_TEST_EXTRA == ACCEL_KERNEL_COUNT - 1, "the extra row is not the last id");
  CHECK(d->fn && strcmp(d->fn, "accel_test_extra") == 0, "fn %s", d->fn ? d->fn : "(null)");
  CHECK(d->nl == 3 && d->ns == 1, "nl %d ns %d", d->nl, d->ns);
  CHECK(d->memo == ACCEL_KERNEL_TABLE_USERS - 1, "memo slot %d of %d", d->memo,
        (int)ACCEL_KERNEL_TABLE_USERS);
  CHECK(ACCEL_KOP_MEMO_SLOTS == ACCEL_KERNEL_TABLE_USERS + ACCEL_KOP_MEMO_USER_SLOTS,
        "memo slots: not one per table user plus the user kernels' shared ones");

  static float buf[4096];
  static uint16_t half[1024];
  float *scale = &buf[4000];
  const accel_tensor_t out[2] = {{&buf[0], 100, ACCEL_F32}, {&buf[100], 7, ACCEL_F32}};
  const accel_tensor_t in[2] = {{&buf[200], 100, ACCEL_F32}, {&buf[300], 7, ACCEL_F32}};
  const accel_tensor_t acc[2] = {{&buf[400], 100, ACCEL_F32}, {&buf[500], 7, ACCEL_F32}};
  EXPECT_OK(out, in, acc, 2, scale);
  EXPECT_OK(NULL, NULL, NULL, 0, scale);

  /* F32_DT: outputs must be F32 */
  const accel_tensor_t out_f16[2] = {{&half[400], 100, ACCEL_F16}, {&half[500], 7, ACCEL_F16}};
  EXPECT_REFUSED(out_f16, in, acc, 2, scale, "accel_test_extra: outputs[0] must be F32, not F16");
  /* ANY_DT: inputs may be F16, and then SAME_DT(1): accum must be F16 too */
  const accel_tensor_t in_f16[2] = {{&half[0], 100, ACCEL_F16}, {&half[100], 7, ACCEL_F16}};
  EXPECT_REFUSED(out, in_f16, acc, 2, scale, "accum[0] is F32 but inputs[0] is F16");
  const accel_tensor_t acc_f16[2] = {{&half[200], 100, ACCEL_F16}, {&half[300], 7, ACCEL_F16}};
  EXPECT_OK(out, in_f16, acc_f16, 2, scale);

  /* NO_ALIAS: the written outputs must not overlap the inputs */
  const accel_tensor_t out_alias[2] = {out[0], {&buf[203], 7, ACCEL_F32}};
  EXPECT_REFUSED(out_alias, in, acc, 2, scale, "outputs[1]");
  EXPECT_REFUSED(out_alias, in, acc, 2, scale, "inputs[0] overlaps outputs[1]");
  /* ALIAS(1): accum may be exactly inputs (in place), not partly */
  EXPECT_OK(out, in, in, 2, scale);
  const accel_tensor_t acc_part[2] = {{&buf[201], 99, ACCEL_F32}, acc[1]};
  EXPECT_REFUSED(out, in, acc_part, 2, scale, "has 99 elements but outputs[0] has 100");
  const accel_tensor_t acc_shift[2] = {{&buf[201], 100, ACCEL_F32}, acc[1]};
  EXPECT_REFUSED(out, in, acc_shift, 2, scale, "overlaps accum[0]");
  /* a read scalar may lie in the read inputs, unless accum writes them in place */
  EXPECT_OK(out, in, acc, 2, &buf[250]);
  EXPECT_REFUSED(out, in, in, 2, &buf[250], "inputs[0] overlaps scale_dev");

  /* the scalar: required, and read, inside a written list is refused */
  EXPECT_REFUSED(out, in, acc, 2, NULL, "accel_test_extra: scale_dev is NULL");
  EXPECT_REFUSED(out, in, acc, 2, &buf[50], "scale_dev");

  return CHECK_EXIT("test_kernel_table: the extra row's rules");
}
