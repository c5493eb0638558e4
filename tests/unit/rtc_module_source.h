/*
 * The user-kernel module the text-compiler tests compile (test_gpu_rtc.c: NVRTC and hiprtc;
 * test_ze_spirv.c: clang + llvm-spirv for Level Zero): two kernels in the dialect, the same
 * source for every prelude, and its text as common/module_text.c builds it.
 */
#ifndef ACCEL_TESTS_RTC_MODULE_SOURCE_H
#define ACCEL_TESTS_RTC_MODULE_SOURCE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "module_text.h"

/* Two kernels: y += w * (x - y) (x any float dtype, y F32) and y *= w. The row structs below are
 * what core/module_row.c generates for such rows (chunks, the scalars as acc_u64, num_chunks,
 * the dtype fields, a pad to an even count of acc_u32). */
static const char kParams[] =
    "typedef struct {\n  acc_u64 chunks;\n  acc_u64 w;\n  acc_u32 num_chunks;\n"
    "  acc_u32 x_dtype;\n} my_lerp_params_t;\n"
    "typedef struct {\n  acc_u64 chunks;\n  acc_u64 w;\n  acc_u32 num_chunks;\n"
    "  acc_u32 reserved;\n} my_scale_params_t;\n";
#define LERP_LINE_7 "  const acc_f32 d = acc_load(x, i, dt) - y[i];\n"
static const char kSource[] =
    "/* user kernels, compiled at run time */\n"
    "ACC_INLINE void my_lerp_elem(acc_idx i, acc_u64 x, ACC_GPTR(acc_f32) y, acc_u32 dt,\n"
    "                             acc_f32 w) {\n"
    "  /* line 4 */\n"
    "  /* line 5 */\n"
    "  /* line 6 */\n" LERP_LINE_7
    "  y[i] += w * d;\n"
    "}\n"
    "ACC_KERNEL(my_k_lerp, my_lerp_params_t, P) {\n"
    "  const acc_f32 w = ACC_PTR(const acc_f32, P.w)[0];\n"
    "  ACC_GPTR(const acc_chunk_t) c = ACC_PTR(const acc_chunk_t, P.chunks);\n"
    "  ACC_FOR_BLOCKS(b, P.num_chunks) {\n"
    "    ACC_GPTR(acc_f32) y = ACC_PTR(acc_f32, c[b].ptr[1]);\n"
    "    ACC_LANE_LOOP(i, c[b].count, my_lerp_elem(i, c[b].ptr[0], y, P.x_dtype, w);)\n"
    "  }\n"
    "}\n"
    "ACCEL_KERNEL(MY_LERP, my_k_lerp, my_lerp_params_t, ACC_OP(\"my_lerp\"))\n"
    "ACC_KERNEL(my_k_scale, my_scale_params_t, P) {\n"
    "  const acc_f32 w = ACC_PTR(const acc_f32, P.w)[0];\n"
    "  ACC_GPTR(const acc_chunk_t) c = ACC_PTR(const acc_chunk_t, P.chunks);\n"
    "  ACC_FOR_BLOCKS(b, P.num_chunks) {\n"
    "    ACC_GPTR(acc_f32) y = ACC_PTR(acc_f32, c[b].ptr[0]);\n"
    "    ACC_LANE_LOOP(i, c[b].count, y[i] = w * y[i];)\n"
    "  }\n"
    "}\n"
    "ACCEL_KERNEL(MY_SCALE, my_k_scale, my_scale_params_t, ACC_OP(\"my_scale\"))\n";

static const char *const kSymbols[] = {"my_k_lerp", "my_k_scale"};

/* What the core hands a backend's module_build for source (no options; the key a hash of the
 * source, as the core's covers it). */
static accel_module_build_t rtc_module_build(const char *source) {
  static const uint32_t sizes[] = {24, 24};
  uint64_t key = 0xcbf29ce484222325ull;
  for (const char *c = source; *c; ++c) key = (key ^ (unsigned char)*c) * 0x100000001b3ull;
  return (accel_module_build_t){.struct_size = sizeof(accel_module_build_t),
                                .nkernels = 2,
                                .params = kParams,
                                .source = source,
                                .options = "",
                                .symbols = kSymbols,
                                .params_size = sizes,
                                .first_id = ACCEL_KERNEL_ID_USER_BASE,
                                .key = key};
}

/* The text of source on prelude, as the backends build it (malloc'ed). */
__attribute__((unused)) static char *rtc_module_text(const char *prelude, const char *source) {
  const accel_module_build_t b = rtc_module_build(source);
  return accel_module_text(prelude, &b, NULL);
}

/* kSource with a one-character typo at line 7 (acc_lod: undeclared) into source. */
static void rtc_typo_source(char source[sizeof kSource]) {
  memcpy(source, kSource, sizeof kSource);
  memcpy(strstr(source, "acc_load(x, i, dt)"), "acc_lod (", 9);
}

#endif
