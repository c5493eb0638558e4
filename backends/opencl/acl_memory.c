/*
 * Memory: SVM allocations (device memory and, where fine-grained SVM exists, host memory) and
 * the table of live allocations that kernels need (CL_KERNEL_EXEC_INFO_SVM_PTRS) and that
 * command buffers use to wrap SVM in cl_mem objects.
 */
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

#define ACL_ALIGN 256u

/* Index of the first allocation whose address is > ptr (caller holds dev->lock). */
static size_t upper_bound(const acl_device_t *dev, const void *ptr) {
  size_t lo = 0, hi = dev->alloc_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)dev->allocs[mid].ptr <= (uintptr_t)ptr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static accel_status_t table_insert(acl_device_t *dev, const acl_alloc_t *entry) {
  void *ptr = entry->ptr;
  pthread_mutex_lock(&dev->lock);
  if (dev->alloc_count == dev->alloc_cap) {
    size_t cap = dev->alloc_cap ? dev->alloc_cap * 2 : 64;
    acl_alloc_t *a = realloc(dev->allocs, cap * sizeof *a);
    if (a) dev->allocs = a;
    void **p = a ? realloc(dev->svm_ptrs, cap * sizeof *p) : NULL;
    if (p) dev->svm_ptrs = p;
    if (!a || !p) {
      pthread_mutex_unlock(&dev->lock);
      return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                                 "opencl: out of host memory for the SVM allocation table");
    }
    dev->alloc_cap = cap;
  }
  size_t i = upper_bound(dev, ptr);
  memmove(&dev->allocs[i + 1], &dev->allocs[i], (dev->alloc_count - i) * sizeof *dev->allocs);
  memmove(&dev->svm_ptrs[i + 1], &dev->svm_ptrs[i],
          (dev->alloc_count - i) * sizeof *dev->svm_ptrs);
  dev->allocs[i] = *entry;
  dev->svm_ptrs[i] = entry->base;
  dev->alloc_count++;
  __atomic_add_fetch(&dev->alloc_generation, 1, __ATOMIC_RELEASE); /* read unlocked at launch */
  pthread_mutex_unlock(&dev->lock);
  return ACCEL_OK;
}

/* Removes the entry of ptr (a registration when foreign, else an allocation: a registered
 * range may start where an SVM host allocation does); returns 1 if it was there. */
static int table_remove(acl_device_t *dev, void *ptr, int foreign, acl_alloc_t *removed) {
  pthread_mutex_lock(&dev->lock);
  size_t i = upper_bound(dev, ptr);
  while (i > 0 && dev->allocs[i - 1].ptr == ptr && dev->allocs[i - 1].foreign != foreign) i--;
  int found = i > 0 && dev->allocs[i - 1].ptr == ptr;
  if (found) {
    i--;
    *removed = dev->allocs[i];
    memmove(&dev->allocs[i], &dev->allocs[i + 1],
            (dev->alloc_count - i - 1) * sizeof *dev->allocs);
    memmove(&dev->svm_ptrs[i], &dev->svm_ptrs[i + 1],
            (dev->alloc_count - i - 1) * sizeof *dev->svm_ptrs);
    dev->alloc_count--;
    __atomic_add_fetch(&dev->alloc_generation, 1, __ATOMIC_RELEASE); /* read unlocked at launch */
  }
  pthread_mutex_unlock(&dev->lock);
  return found;
}

int acl_alloc_lookup(acl_device_t *dev, const void *ptr, size_t size, acl_alloc_t *out) {
  pthread_mutex_lock(&dev->lock);
  size_t i = upper_bound(dev, ptr);
  int found = 0;
  if (i > 0) {
    const acl_alloc_t *a = &dev->allocs[i - 1];
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)a->ptr;
    found = off <= a->size && size <= a->size - off;
    if (found) *out = *a;
  }
  pthread_mutex_unlock(&dev->lock);
  return found;
}

/* Allocates SVM with at least ACL_ALIGN alignment and registers it. */
static accel_status_t svm_alloc(acl_device_t *dev, cl_mem_flags flags, size_t size, int host,
                                void **ptr) {
  size_t span = (size ? size : 1) + ACL_ALIGN;
  void *base = clSVMAlloc(dev->ctx, flags, span, 0);
  if (!base)
    return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY,
                               "clSVMAlloc(%zu bytes, flags 0x%llx) returned NULL on %s", span,
                               (unsigned long long)flags, dev->phys->name);
  uintptr_t aligned = ((uintptr_t)base + ACL_ALIGN - 1) & ~(uintptr_t)(ACL_ALIGN - 1);
  acl_alloc_t entry = {(void *)aligned, size, base, span, host, 0};
  accel_status_t st = table_insert(dev, &entry);
  if (st != ACCEL_OK) {
    clSVMFree(dev->ctx, base);
    return st;
  }
  *ptr = entry.ptr;
  return ACCEL_OK;
}

static int svm_free(acl_device_t *dev, void *ptr) {
  acl_alloc_t a;
  if (!table_remove(dev, ptr, 0, &a)) {
    acl_host->log(ACCEL_LOG_ERROR, ACL_DOMAIN, "free of unknown SVM pointer %p ignored", ptr);
    return 0;
  }
  if (!a.host) __atomic_fetch_sub(&dev->phys->allocated, a.size, __ATOMIC_RELAXED);
  clSVMFree(dev->ctx, a.base);
  return 1;
}

accel_status_t acl_mem_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  acl_device_t *dev = device;
  accel_status_t st = svm_alloc(dev, dev->svm_flags, size, 0, ptr);
  if (st == ACCEL_OK) __atomic_fetch_add(&dev->phys->allocated, size, __ATOMIC_RELAXED);
  return st;
}

void acl_mem_free(accel_be_device_t *device, void *ptr) { svm_free(device, ptr); }

accel_status_t acl_host_alloc(accel_be_device_t *device, size_t size, void **ptr) {
  acl_device_t *dev = device;
  if (dev->host_svm)
    return svm_alloc(dev, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, size, 1, ptr);
  /* Coarse-grained SVM cannot be touched by the host without map/unmap: plain memory. */
  void *p = NULL;
  if (posix_memalign(&p, ACL_ALIGN, size ? size : 1) != 0)
    return acl_host->set_error(ACCEL_ERROR_OUT_OF_MEMORY, "posix_memalign(%zu bytes) failed",
                               size);
  *ptr = p;
  return ACCEL_OK;
}

void acl_host_free(accel_be_device_t *device, void *ptr) {
  acl_device_t *dev = device;
  if (dev->host_svm) svm_free(dev, ptr);
  else free(ptr);
}

/* Whether ptr is the start of an SVM allocation of dev's context at least size bytes long.
 * OpenCL has no SVM pointer query; the standard way round is CL_MEM_USES_SVM_POINTER of a
 * buffer made over ptr with CL_MEM_USE_HOST_PTR (clCreateBuffer accepts a clSVMAlloc pointer
 * of the same context when size is no larger than the allocation). PoCL 3.1 answers CL_TRUE
 * for clSVMAlloc's own pointers of this context only: interior pointers, other contexts and
 * malloc memory give CL_FALSE, a size past the allocation CL_INVALID_BUFFER_SIZE. */
static accel_status_t check_svm(acl_device_t *dev, void *ptr, size_t size) {
  cl_int err = CL_SUCCESS;
  cl_mem probe = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size, ptr,
                                &err);
  if (!probe)
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "opencl: [%p, +%zu) is not SVM of the device's context "
                               "(clCreateBuffer(CL_MEM_USE_HOST_PTR) over it: %s)",
                               ptr, size, acl_error_name(err));
  cl_bool uses_svm = CL_FALSE;
  err = clGetMemObjectInfo(probe, CL_MEM_USES_SVM_POINTER, sizeof uses_svm, &uses_svm, NULL);
  clReleaseMemObject(probe);
  if (err != CL_SUCCESS || !uses_svm)
    return acl_host->set_error(ACCEL_ERROR_UNSUPPORTED,
                               "opencl: %p is not the start of an SVM allocation of the "
                               "device's context (CL_MEM_USES_SVM_POINTER: %s), and %s has no "
                               "fine-grained system SVM, so host memory cannot be registered",
                               ptr, err != CL_SUCCESS ? acl_error_name(err) : "CL_FALSE",
                               dev->phys->name);
  return ACCEL_OK;
}

accel_status_t acl_mem_register(accel_be_device_t *device, void *ptr, size_t size,
                                void **device_ptr) {
  acl_device_t *dev = device;
  acl_alloc_t in;
  if (acl_alloc_lookup(dev, ptr, size, &in)) { /* inside accel's own SVM (accel_host_alloc) */
    *device_ptr = ptr;
    return ACCEL_OK;
  }
  if (!dev->fine_grain_system) {
    accel_status_t st = check_svm(dev, ptr, size);
    if (st != ACCEL_OK) return st;
  }
  acl_alloc_t entry = {ptr, size, ptr, size, 1, 1};
  accel_status_t st = table_insert(dev, &entry);
  if (st == ACCEL_OK) *device_ptr = ptr;
  return st;
}

void acl_mem_unregister(accel_be_device_t *device, void *ptr, void *device_ptr) {
  acl_alloc_t a;
  (void)device_ptr;
  table_remove(device, ptr, 1, &a); /* none when it lay in accel's own SVM */
}

/* OpenCL has no free-memory query: free = global memory minus what this process allocated. */
accel_status_t acl_mem_info(accel_be_device_t *device, uint64_t *free_bytes,
                            uint64_t *total_bytes) {
  acl_device_t *dev = device;
  uint64_t total = dev->phys->global_mem;
  uint64_t used = __atomic_load_n(&dev->phys->allocated, __ATOMIC_RELAXED);
  *total_bytes = total;
  *free_bytes = used < total ? total - used : 0;
  return ACCEL_OK;
}
