/* Raw memory of the CPU backend. Device and host memory are both ordinary host memory; the
 * core's caching allocator sits on top of mem_alloc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_device.h"

/* The alignment every allocation gets (the API promises at least 256 bytes). */
#define CPU_MIN_ALIGN 256u
/* From this size on, allocations are page aligned. */
#define CPU_PAGE_ALIGN_FROM (64u * 1024u)
/* From this size on, allocations are aligned to and advised for transparent huge pages (x86-64
 * and arm64 PMD size): kernels stream through device buffers, and with 4 KiB pages every 4 KiB
 * of a stream costs a TLB miss. The advice is ignored where THP is off. */
#define CPU_HUGE_PAGE (2u * 1024u * 1024u)

const char *cpu_strerror(int err, char *buf, size_t size) {
  /* The GNU strerror_r (we build with _GNU_SOURCE) may return a static string. */
  const char *s = strerror_r(err, buf, size);
  if (s != buf) snprintf(buf, size, "%s", s);
  return buf;
}

static accel_status_t alloc_aligned(cpu_device_t *dev, const char *what, size_t size,
                                    void **ptr) {
  const accel_host_api_t *host = dev->host;
  size_t align = CPU_MIN_ALIGN;
  if (size >= CPU_HUGE_PAGE) {
    align = CPU_HUGE_PAGE;
  } else if (size >= CPU_PAGE_ALIGN_FROM) {
    long page = sysconf(_SC_PAGESIZE);
    if (page > (long)align) align = (size_t)page;
  }
  void *p = NULL;
  /* size 0 still yields a unique, freeable pointer. */
  int rc = posix_memalign(&p, align, size > 0 ? size : 1);
  if (rc != 0) {
    char err[128];
    return host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                           "cpu: %s: posix_memalign(alignment %zu, %zu bytes) failed: %s", what,
                           align, size, cpu_strerror(rc, err, sizeof(err)));
  }
#ifdef MADV_HUGEPAGE
  if (align == CPU_HUGE_PAGE) (void)madvise(p, size & ~(size_t)(CPU_HUGE_PAGE - 1u), MADV_HUGEPAGE);
#endif
  *ptr = p;
  return ACCEL_OK;
}

accel_status_t cpu_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  return alloc_aligned(device, "mem_alloc", size, ptr);
}

void cpu_mem_free(accel_be_device_t *device, void *ptr) {
  (void)device;
  free(ptr);
}

/* Host memory is not page-locked: there is no DMA engine that would need it. */
accel_status_t cpu_host_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  return alloc_aligned(device, "host_alloc", size, ptr);
}

void cpu_host_free(accel_be_device_t *device, void *ptr) {
  (void)device;
  free(ptr);
}
