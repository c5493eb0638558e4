/*
 * The test kernel's one row (tests/krow): y = alpha * x + beta * y + gamma over two tensor
 * lists, x of any float dtype, y F32, alpha and beta device scalars, gamma a host value. Its
 * parameter struct (acc_test_axpby_params_t), its public function accel_test_axpby, its
 * validation, its CPU access table entry and its Python wrapper accel.test_axpby all come
 * from this row (kernels/gen_kernel_rows.py and the table's consumers); its body is axpby.h.
 * accel.Module loads the same two files at run time (tests/python/test_module.py).
 */
ACCEL_KERNEL(TEST_AXPBY, accel_k_test_axpby, acc_test_axpby_params_t,
             ACC_OP("accel_test_axpby", ACC_TABLE_SHARED),
             (ACC_LIST("x", ACC_IO(R), ACC_ANY_DT(x_dtype), ACC_NO_ALIAS),
              ACC_LIST("y", ACC_IO(RW), ACC_F32_DT, ACC_NO_ALIAS)),
             (ACC_SCALAR("alpha_dev", ACC_FIELD(alpha), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS),
              ACC_SCALAR("beta_dev", ACC_FIELD(beta), 4, R, ACC_REQUIRED, ACC_ALL_BLOCKS),
              ACC_VALUE("gamma", ACC_FIELD(gamma))))
