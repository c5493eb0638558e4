/* The API fuzz target (fuzz_api.c), shared by the libFuzzer build and the corpus replayer. */
#ifndef ACCEL_TESTS_FUZZ_API_H
#define ACCEL_TESTS_FUZZ_API_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Frees the persistent device state (the replayer calls it; libFuzzer never returns). */
void fuzz_api_teardown(void);

#endif
