/*
 * The fake driver's memory (see fake_driver.c): device and pinned allocations are host memory,
 * remembered as ranges so that copies of pageable memory and pointer attributes can be told
 * apart. cuPointerGetAttribute answers as cuda.h says: CONTEXT is CUDA_ERROR_INVALID_VALUE for
 * memory no context owns. For tests, fake_alloc_unowned makes such memory, the way
 * cudaMallocAsync pools and cuMemMap mappings are: a reserved range of which only the first
 * `mapped` bytes are backed (cuMemGetAddressRange answers for those only).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"

typedef struct range {
  char *p;
  size_t size;     /* reserved */
  size_t mapped;   /* backed, from p on */
  gpuContext_t ctx; /* NULL: no context owns it */
  struct range *next;
} range_t;
static range_t *ranges;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;

static range_t *find_locked(const void *p) {
  for (range_t *r = ranges; r; r = r->next)
    if ((const char *)p >= r->p && (const char *)p < r->p + r->size) return r;
  return NULL;
}

int fake_known_memory(const void *p) {
  pthread_mutex_lock(&ranges_lock);
  int known = find_locked(p) != NULL;
  pthread_mutex_unlock(&ranges_lock);
  return known;
}

static gpuError_t alloc_range(void **p, size_t size, size_t mapped, gpuContext_t ctx) {
  range_t *r = malloc(sizeof *r);
  void *mem = NULL;
  if (!r || posix_memalign(&mem, 256, size ? size : 1) != 0) {
    free(r);
    return E_OUT_OF_MEMORY;
  }
  *r = (range_t){.p = mem, .size = size, .mapped = mapped, .ctx = ctx};
  pthread_mutex_lock(&ranges_lock);
  r->next = ranges;
  ranges = r;
  pthread_mutex_unlock(&ranges_lock);
  *p = mem;
  return GPU_SUCCESS;
}

static gpuError_t free_range(void *p) {
  pthread_mutex_lock(&ranges_lock);
  for (range_t **l = &ranges; *l; l = &(*l)->next)
    if ((*l)->p == p) {
      range_t *r = *l;
      *l = r->next;
      pthread_mutex_unlock(&ranges_lock);
      free(r->p);
      free(r);
      return GPU_SUCCESS;
    }
  pthread_mutex_unlock(&ranges_lock);
  return E_INVALID_VALUE;
}

/* Tests: memory that no context owns (stream-ordered / cuMemMap), mapped in its first part. */
EXPORT void *fake_alloc_unowned(size_t size, size_t mapped) {
  void *p = NULL;
  return alloc_range(&p, size, mapped < size ? mapped : size, NULL) == GPU_SUCCESS ? p : NULL;
}
EXPORT void fake_free_unowned(void *p) { free_range(p); }

gpuError_t fake_MemGetInfo(size_t *free_bytes, size_t *total) {
  NEED_CONTEXT();
  *total = (size_t)1 << 30;
  *free_bytes = *total / 2;
  return GPU_SUCCESS;
}

gpuError_t fake_MemAlloc(gpuDevicePtr_t *ptr, size_t size) {
  NEED_CONTEXT();
  void *p = NULL;
  gpuError_t r = alloc_range(&p, size, size, fake_current);
  if (r == GPU_SUCCESS) *ptr = GPU_DPTR(p);
  return r;
}

gpuError_t fake_MemFree(gpuDevicePtr_t ptr) {
  NEED_CONTEXT();
  return free_range(GPU_VPTR(ptr));
}

gpuError_t fake_HostAlloc(void **ptr, size_t size, unsigned flags) {
  NEED_CONTEXT();
  (void)flags;
  return alloc_range(ptr, size, size, fake_current);
}

gpuError_t fake_HostFree(void *ptr) {
  NEED_CONTEXT();
  return free_range(ptr);
}

gpuError_t fake_PointerGetAttribute(void *data, unsigned attribute, gpuDevicePtr_t ptr) {
  NEED_CONTEXT();
  pthread_mutex_lock(&ranges_lock);
  range_t *r = find_locked(GPU_VPTR(ptr));
  range_t copy = r ? *r : (range_t){0};
  pthread_mutex_unlock(&ranges_lock);
  if (!r) return E_INVALID_VALUE;
  switch (attribute) {
#ifdef GPU_POINTER_ATTR_CONTEXT /* CUDA only */
    case GPU_POINTER_ATTR_CONTEXT:
      if (!copy.ctx) return E_INVALID_VALUE; /* cuda.h: not allocated by a context */
      *(gpuContext_t *)data = copy.ctx;
      return GPU_SUCCESS;
#endif
    case GPU_POINTER_ATTR_DEVICE_POINTER: *(gpuDevicePtr_t *)data = ptr; return GPU_SUCCESS;
    case GPU_POINTER_ATTR_DEVICE_ORDINAL: *(int *)data = 0; return GPU_SUCCESS;
    case GPU_POINTER_ATTR_RANGE_START: *(gpuDevicePtr_t *)data = GPU_DPTR(copy.p); return GPU_SUCCESS;
    case GPU_POINTER_ATTR_RANGE_SIZE: *(size_t *)data = copy.size; return GPU_SUCCESS;
    default: return E_INVALID_VALUE;
  }
}

gpuError_t fake_MemGetAddressRange(gpuDevicePtr_t *base, size_t *size, gpuDevicePtr_t ptr) {
  NEED_CONTEXT();
  pthread_mutex_lock(&ranges_lock);
  range_t *r = find_locked(GPU_VPTR(ptr));
  int mapped = r && (char *)GPU_VPTR(ptr) < r->p + r->mapped;
  if (mapped) {
    *base = GPU_DPTR(r->p);
    *size = r->mapped;
  }
  pthread_mutex_unlock(&ranges_lock);
  return mapped ? GPU_SUCCESS : E_NOT_FOUND;
}
