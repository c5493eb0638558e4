/*
 * A graph that the CUDA (or HIP, argv[1]) driver cannot capture (a copy from pageable host
 * memory: the fake answers STREAM_CAPTURE_UNSUPPORTED, as CUDA's driver does) still replays,
 * as a batch, and the first such decline of the process is a warning at the default log level
 * (it was an info message, so no run noticed that its graphs were not native); the second is
 * not repeated at that level. Replays copy the host buffer's current contents each time.
 * 77 when the device is not the fake one (LD_LIBRARY_PATH must name it).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "check.h"
#include "fake_open.h"

/* Runs one capture + replay of a pageable upload; returns the device bytes read back. */
static void capture_upload(accel_device_t *dev, accel_stream_t *s, unsigned char *host,
                           unsigned char *dev_buf) {
  accel_graph_t *g = NULL;
  OK(accel_graph_create(dev, &g));
  OK(accel_graph_capture_begin(g, s, NULL, ACCEL_CAPTURE_MODE_THREAD_LOCAL));
  OK(accel_memcpy_async(s, dev_buf, host, 64));
  OK(accel_graph_capture_end(g));
  for (unsigned char v = 1; v <= 3; v++) {
    memset(host, v, 64);
    OK(accel_graph_replay(g, s));
    OK(accel_stream_synchronize(s));
    unsigned char back[64];
    OK(accel_memcpy(dev, back, dev_buf, sizeof back));
    CHECK(back[0] == v && back[63] == v, "replay %u copied %u", v, back[0]);
  }
  OK(accel_graph_destroy(g));
}

int main(int argc, char **argv) {
  const char *backend = fake_backend_arg(argc, argv);
  accel_device_t *dev = NULL;
  const int skip = fake_open(backend, &dev);
  if (skip) return skip;
  accel_stream_t *s = NULL;
  unsigned char *dev_buf = NULL;
  static unsigned char host[64]; /* pageable */
  OK(accel_stream_create(dev, &s));
  OK(accel_malloc(dev, 64, (void **)&dev_buf));

  /* stderr into a file while the graphs are captured */
  fflush(stderr);
  FILE *log = tmpfile();
  int saved = dup(2);
  CHECK(log && saved >= 0 && dup2(fileno(log), 2) >= 0, "redirecting stderr");
  capture_upload(dev, s, host, dev_buf);
  capture_upload(dev, s, host, dev_buf);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char text[8192] = {0};
  rewind(log);
  size_t n = fread(text, 1, sizeof text - 1, log);
  text[n] = '\0';
  fclose(log);
  fputs(text, stderr);
  const char *first = strstr(text, "native graph declined");
  CHECK(first != NULL, "no warning for a declined native graph (ACCEL_LOG=warn)");
  CHECK(!first || !strstr(first + 1, "native graph declined"),
        "the second decline was logged at warning level too");
  CHECK(!first || strstr(text, "STREAM_CAPTURE_UNSUPPORTED") ||
            strstr(text, "hipErrorStreamCaptureUnsupported"),
        "the warning does not name the driver's reason");

  OK(accel_free(dev, dev_buf));
  OK(accel_stream_destroy(s));
  accel_device_close(dev);
  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures ? 1 : 0;
}
