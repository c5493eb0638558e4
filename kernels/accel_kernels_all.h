/* Every kernel body, in accel_kernel_list.h order. Include after a prelude. */
#ifndef ACCEL_KERNELS_ALL_H
#define ACCEL_KERNELS_ALL_H

#include "accel_kernel_abi.h"
#include "convert.h"
#include "reduce.h"
#include "norm.h"
#include "elementwise.h"
#include "adam.h"
#include "amp.h"
#include "quant.h"
#include "random.h"
#include "step.h"
/* A build's extra kernel bodies (the rows of ACCEL_EXTRA_KERNEL_ROWS), named by
 * -DACCEL_EXTRA_KERNEL_BODIES='"bodies.h"'. */
#ifdef ACCEL_EXTRA_KERNEL_BODIES
#include ACCEL_EXTRA_KERNEL_BODIES
#endif

#endif
