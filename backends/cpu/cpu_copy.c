#include "cpu_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>

/* SSE2 is part of x86-64, so no dispatch is needed; four 16-byte stores fill one line of a
 * write-combining buffer. */
static void copy_streaming(char *dst, const char *src, size_t n) {
  size_t head = (16u - ((uintptr_t)dst & 15u)) & 15u;
  if (head > n) head = n;
  memcpy(dst, src, head);
  dst += head;
  src += head;
  n -= head;
  for (; n >= 64u; n -= 64u, dst += 64, src += 64) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)src);
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 16));
    const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + 32));
    const __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(src + 48));
    _mm_stream_si128((__m128i *)(void *)dst, a);
    _mm_stream_si128((__m128i *)(void *)(dst + 16), b);
    _mm_stream_si128((__m128i *)(void *)(dst + 32), c);
    _mm_stream_si128((__m128i *)(void *)(dst + 48), d);
  }
  memcpy(dst, src, n);
  /* Streaming stores are weakly ordered: make them visible before whatever signals that the
   * copy is done (a mutex or an atomic store, which do not order them on x86). */
  _mm_sfence();
}
#define HAVE_STREAMING 1
#endif

void cpu_copy(void *dst, const void *src, size_t n, size_t total) {
#ifdef HAVE_STREAMING
  if (total >= CPU_COPY_STREAM_BYTES) {
    copy_streaming(dst, src, n);
    return;
  }
#endif
  (void)total;
  memcpy(dst, src, n);
}
