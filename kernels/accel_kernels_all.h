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
#include "step.h"
#include "random.h"

#endif
