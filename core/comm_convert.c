/* Host-side fp32 -> f16/bf16 rounding for the downcasting all-gather, with the kernels' own
 * conversion functions (kernels/convert.h), so the bits equal the cast kernels'. */
#include "comm_internal.h"
#include "prelude_c.h"
#include "accel_kernel_abi.h"
#include "convert.h"

void accel_comm_downcast(void *dst, const float *src, size_t n, accel_dtype_t dtype) {
  uint16_t *out = dst;
  if (dtype == ACCEL_BF16)
    for (size_t i = 0; i < n; ++i) out[i] = (uint16_t)acc_f32_to_bf16(src[i]);
  else
    for (size_t i = 0; i < n; ++i) out[i] = (uint16_t)acc_f32_to_f16(src[i]);
}
