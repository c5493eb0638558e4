/*
 * A throw-away row of the kernel table for tests/unit/test_kernel_table.c (included at the end
 * of kernels/accel_kernel_list.h as -DACCEL_EXTRA_KERNEL_ROWS names it): a fake operation
 * with an F32-only written list, a read list it must not overlap, and a read-write list of the
 * read list's dtype that may be the read list itself (in place). Nothing but the row tells
 * core's validation about it.
 */
ACCEL_KERNEL(TEST_EXTRA, accel_k_test_extra, acc_test_extra_params_t,
             ACC_OP("accel_test_extra", ACC_TABLE_SHARED),
             (ACC_LIST("outputs", ACC_IO(W), ACC_F32_DT, ACC_NO_ALIAS),
              ACC_LIST("inputs", ACC_IO(R), ACC_ANY_DT(dtype), ACC_NO_ALIAS),
              ACC_LIST("accum", ACC_IO(RW), ACC_SAME_DT(1), ACC_ALIAS(1))),
             (ACC_SCALAR("scale_dev", ACC_FIELD(scale), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS)))
