/*
 * What oneccl-devel's libccl.a expects from Intel's compiler runtime and ITT notify library,
 * neither of which Debian has, so that the test can link the archive into a real libccl.so.1:
 * ITT's function pointers stay NULL (oneCCL checks them before calling, as ITT's static
 * collector does), and the fast memcpy/memset are the C library's.
 */
#include <string.h>

void *__itt_domain_create_ptr__3_0, *__itt_event_create_ptr__3_0, *__itt_event_end_ptr__3_0,
    *__itt_event_start_ptr__3_0, *__itt_metadata_add_ptr__3_0,
    *__itt_string_handle_create_ptr__3_0, *__itt_task_begin_ptr__3_0, *__itt_task_end_ptr__3_0,
    *__itt_thread_set_name_ptr__3_0;

void *_intel_fast_memcpy(void *dst, const void *src, size_t n);
void *_intel_fast_memset(void *dst, int c, size_t n);
void *_intel_fast_memcpy(void *dst, const void *src, size_t n) { return memcpy(dst, src, n); }
void *_intel_fast_memset(void *dst, int c, size_t n) { return memset(dst, c, n); }
