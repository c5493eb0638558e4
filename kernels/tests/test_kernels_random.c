/* The random kernels of the standalone kernel tests (test_kernels.c): Random123's known answers
 * through accel_k_rand_raw, and every random kernel (raw, uniform, normal, dropout in each
 * dtype) in the CPU form under both block splits and in the OpenCL forms with 2 and all blocks
 * at once, bitwise equal; accel_k_rand_advance's 128-bit carry. */
#include "kt_run.h"

/* Random123 (github.com/DEShawResearch/random123, tests/kat_vectors): the philox4x32 10 lines
 * with counter 0 / key 0 and counter pi / key pi. */
static const acc_philox_state_t kKatState[2] = {
    {0, 0, 0, 0, 0, 0},
    {0xa4093822u, 0x299f31d0u, 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
static const acc_u32 kKatOut[2][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                      {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};

/* Runs kernel id with params on form r (0, 1: CPU all blocks / one by one; 2 + 2f + g: OpenCL
 * form f with 2 blocks (g = 0) or all (g = 1)). */
static void run_any(uint32_t id, const void *params, size_t psize, uint32_t nc, int r) {
  if (r < 2) {
    run_cpu(id, params, nc, r);
    return;
  }
#ifdef KT_OPENCL
  run_cl((r - 2) / 2, id, params, psize, r % 2 == 0 ? 2 : nc);
#else
  (void)psize;
#endif
}

static void test_known_answers(void) {
  for (int r = 0; r < 2 + 2 * NFORMS && (r < 2 || g_cl_ok); ++r)
    for (int k = 0; k < 2; ++k) {
      acc_philox_state_t *s = xalloc(sizeof *s);
      acc_u32 *out = xalloc(16);
      acc_chunk_t *ch = xalloc(sizeof *ch);
      *s = kKatState[k];
      memset(ch, 0, sizeof *ch);
      ch->ptr[0] = (acc_u64)(uintptr_t)out;
      ch->count = 4;
      const acc_rand_params_t p = {(acc_u64)(uintptr_t)ch, (acc_u64)(uintptr_t)s, 1, 0, 0, 0};
      run_any(ACCEL_KERNEL_RAND_RAW, &p, sizeof p, 1, r);
      KT_CHECK(memcmp(out, kKatOut[k], 16) == 0, "run form %d: known answer %d: %08x %08x", r,
               k, out[0], out[1]);
      xfree(s);
      xfree(out);
      xfree(ch);
    }
}

/* One random kernel over kSizes tensors of dtype dt (dropout: src and dst): every run form
 * gives the first one's bits. */
static void test_kernel(uint32_t id, uint32_t dt, float a, float b) {
  const int dropout = id == ACCEL_KERNEL_DROPOUT;
  const size_t es[2] = {id == ACCEL_KERNEL_RAND_RAW ? 4 : esize(dt), esize(dt)};
  void *src[NT], *dst[NT];
  make_tensors(src, dt, 4.0f, 7);
  for (size_t t = 0; t < NT; ++t) dst[t] = xalloc(kSizes[t] * es[0]);
  void *const *lists[2] = {dropout ? src : dst, dst};
  acc_chunk_t *ch = xalloc(total_chunks() * sizeof *ch);
  const uint32_t nc = kt_chunks(ch, dropout ? 2 : 1, lists, es, kSizes, NT);
  acc_philox_state_t *s = xalloc(sizeof *s);
  const acc_philox_state_t init = {0x1234u, 0x5678u, 0xfffffff0u, 0xffffffffu, 3, 0};
  *s = init;
  const acc_rand_params_t p = {(acc_u64)(uintptr_t)ch, (acc_u64)(uintptr_t)s, nc, dt, a, b};
  void *first[NT];
  for (size_t t = 0; t < NT; ++t) first[t] = malloc(kSizes[t] * es[0] + 1);
  for (int r = 0; r < 2 + 2 * NFORMS && (r < 2 || g_cl_ok); ++r) {
    if (dropout) {
      for (size_t t = 0; t < NT; ++t) xfree(src[t]);
      make_tensors(src, dt, 4.0f, 7); /* in place below: fresh input each run */
      kt_chunks(ch, 2, (void *const *const[]){src, src}, es, kSizes, NT);
    }
    run_any(id, &p, sizeof p, nc, r);
    for (size_t t = 0; t < NT; ++t) {
      const void *got = dropout ? src[t] : dst[t];
      if (r == 0) memcpy(first[t], got, kSizes[t] * es[0]);
      else KT_CHECK(memcmp(first[t], got, kSizes[t] * es[0]) == 0,
                    "%s dtype %u: run form %d differs from the CPU form in tensor %zu",
                    accel_kernel_names[id], dt, r, t);
    }
    KT_CHECK(memcmp(s, &init, sizeof init) == 0, "%s wrote the state", accel_kernel_names[id]);
  }
  for (size_t t = 0; t < NT; ++t) {
    free(first[t]);
    xfree(src[t]);
    xfree(dst[t]);
  }
  xfree(ch);
  xfree(s);
}

/* accel_k_rand_advance: counter += blocks with the carry through all four words. */
static void test_advance(void) {
  for (int form = 0; form < RUN_FORMS && form_runs(form); ++form) {
    acc_philox_state_t *s = xalloc(sizeof *s);
    const acc_philox_state_t init = {9, 8, 0xffffffffu, 0xfffffffeu, 0xffffffffu, 5};
    *s = init;
    const acc_rand_advance_params_t p = {0, (acc_u64)(uintptr_t)s, 0x100000001ull, 0, 0};
    run_form(ACCEL_KERNEL_RAND_ADVANCE, &p, sizeof p, form);
    /* 0xfffffffe_ffffffff + 0x1_00000001 = 0x1_00000000_00000000: carry into word 2 -> 3 */
    KT_CHECK(s->key0 == 9 && s->key1 == 8 && s->ctr0 == 0 && s->ctr1 == 0 && s->ctr2 == 0 &&
                 s->ctr3 == 6,
             "run form %d: advance gave %08x %08x %08x %08x", form, s->ctr0, s->ctr1, s->ctr2,
             s->ctr3);
    xfree(s);
  }
}

void kt_test_random(void) {
  test_known_answers();
  test_advance();
  for (uint32_t dt = 0; dt < 3; ++dt) {
    test_kernel(ACCEL_KERNEL_RAND_UNIFORM, dt, -1.0f, 3.0f);
    test_kernel(ACCEL_KERNEL_RAND_NORMAL, dt, 0.5f, 2.0f);
    test_kernel(ACCEL_KERNEL_DROPOUT, dt, 0.3f, 1.0f / 0.7f);
  }
  test_kernel(ACCEL_KERNEL_RAND_RAW, 0, 0.0f, 0.0f);
}
