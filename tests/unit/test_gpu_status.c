/*
 * The CUDA/HIP plugins' vendor-error mapping (backends/gpu_common/gpu_error.c), built once per
 * vendor shim: not-ready is ACCEL_ERROR_NOT_READY (cuEventElapsedTime on an unfinished record),
 * the stream-capture errors 900-908 (e.g. a call that a runtime's capture of a wrapped stream
 * forbids) are ILLEGAL_IN_CAPTURE, 901 (the capture was invalidated) CAPTURE_INVALIDATED,
 * out of memory OUT_OF_MEMORY, anything else BACKEND; gpu_check's message names the call and
 * the code. No vendor library is needed: the error name comes from the (absent) runtime, so
 * it reads "unknown error".
 */
#include <string.h>

#include "check.h"
#include "fake_host.h"
#include "gpu_backend.h"

static void expect(gpuError_t err, accel_status_t want) {
  accel_status_t got = gpu_status_of(err);
  CHECK(got == want, "%s: vendor error %u -> status %d, expected %d", GPU_BACKEND_NAME,
        (unsigned)err, (int)got, (int)want);
}

int main(void) {
  gpu_host = &fake_host;
  expect(GPU_SUCCESS, ACCEL_OK);
  expect(GPU_ERROR_OUT_OF_MEMORY, ACCEL_ERROR_OUT_OF_MEMORY);
  expect(GPU_ERROR_NOT_READY, ACCEL_ERROR_NOT_READY);
  expect(900, ACCEL_ERROR_ILLEGAL_IN_CAPTURE); /* STREAM_CAPTURE_UNSUPPORTED */
  expect(901, ACCEL_ERROR_CAPTURE_INVALIDATED);
  for (gpuError_t e = 902; e <= 908; ++e) expect(e, ACCEL_ERROR_ILLEGAL_IN_CAPTURE);
  expect(899, ACCEL_ERROR_BACKEND);
  expect(909, ACCEL_ERROR_BACKEND);
  expect(1, ACCEL_ERROR_BACKEND); /* INVALID_VALUE */
  expect(999, ACCEL_ERROR_BACKEND); /* UNKNOWN */

  gpu_backend_t be;
  memset(&be, 0, sizeof be);
  accel_status_t st = gpu_check(&be, 901, "cuStreamEndCapture");
  CHECK(st == ACCEL_ERROR_CAPTURE_INVALIDATED, "gpu_check(901) -> %d", (int)st);
  CHECK(strstr(fake_host_error, "cuStreamEndCapture failed") && strstr(fake_host_error, "(901)"),
        "message: %s", fake_host_error);
  CHECK(gpu_check(&be, GPU_SUCCESS, "x") == ACCEL_OK, "gpu_check(success)");
  printf("%s: %s\n", GPU_BACKEND_NAME, failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
