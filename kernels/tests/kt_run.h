/* The harness of the standalone kernel tests (test_kernels*.c): the tensor sizes, the CPU and
 * OpenCL launches, buffers the OpenCL forms can read (fine-grained SVM), dtype loads and
 * stores, seeded tensor lists. */
#ifndef ACCEL_KT_RUN_H
#define ACCEL_KT_RUN_H

#include "accel_cpu_kernels.h"
#include "accel_kernel_ids.h"
#include "kt_common.h"

#ifdef KT_OPENCL
#define NFORMS 2 /* the OpenCL forms: SIMT and lane loops (accel_cl_launch.h) */
#else
#define NFORMS 0
#endif

/* Sizes: empty, tiny, around the lane count and around the chunk. */
#define NT 10
extern const size_t kSizes[NT];

/* 1 when the OpenCL forms run (KT_OPENCL and a usable device). */
extern int g_cl_ok;
/* Builds the OpenCL program in each form on the first platform: 1 when it runs. */
int kt_cl_setup(void);

/* split 0: one call over all blocks; 1: one block per call, last block first. */
void run_cpu(uint32_t id, const void *params, uint32_t nblocks, int split);
#ifdef KT_OPENCL
/* Launches kernel id in OpenCL form `form` with `blocks` logical blocks running at once (the
 * kernels loop grid-stride over the rest). */
void run_cl(int form, uint32_t id, const void *params, size_t psize, uint32_t blocks);
#endif
void *xalloc(size_t n);
void xfree(void *p);

size_t esize(uint32_t dt);
float ld(const void *p, size_t i, uint32_t dt);
void st(void *p, size_t i, uint32_t dt, float v);
/* Tensors of kSizes in dtype dt with values in [-scale, scale). */
void make_tensors(void **t, uint32_t dt, float scale, uint64_t seed);
uint32_t total_chunks(void);
/* Has-gradient flags: tensors 2 and NT - 1 (which holds the Inf of `bad`) have none. */
uint32_t *make_has_grad(void);

/* Run forms of a one-block launch: 0 the CPU form; 1 + 2 f + g OpenCL form f (f < NFORMS) with
 * g + 1 groups (g < 2). */
#define RUN_FORMS (1 + 2 * NFORMS)
/* Whether run form `form` exists here. */
int form_runs(int form);
/* Runs a one-block launch in run form `form` (form_runs). */
void run_form(uint32_t id, const void *params, size_t psize, int form);

/* The test groups (test_kernels_norm.c, test_kernels_elementwise.c, test_kernels_amp.c). */
void kt_test_norms(void);
void kt_test_elementwise(void);
void kt_test_amp(void);
void kt_test_step_counts(void);
void kt_test_random(void);

#endif
