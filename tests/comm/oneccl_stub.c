/*
 * A stand-in libccl.so.1 that defines none of oneCCL's symbols, for comm_oneccl_bridge: with it
 * on the loader path the oneCCL engine gets past "no oneCCL runtime" and loads its SYCL bridge,
 * which must then fail cleanly on the missing ccl:: symbols.
 */
int accel_test_oneccl_stub(void);
int accel_test_oneccl_stub(void) { return 0; }
