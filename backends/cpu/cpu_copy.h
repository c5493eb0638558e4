/*
 * Large copies with non-temporal (streaming) stores.
 *
 * A copy much larger than the caches gains nothing from writing its destination through them:
 * every destination line is first read from memory (read for ownership), then written back.
 * Streaming stores skip the read, so a large copy moves two thirds of the bytes. glibc makes
 * the same choice above a threshold derived from the last-level cache size, but in VMs that
 * report the host's cache (480 MiB here) that threshold is never reached.
 */
#ifndef ACCEL_CPU_COPY_H
#define ACCEL_CPU_COPY_H

#include <stddef.h>

/* Copies of this many bytes and more stream (when the CPU has streaming stores). */
#define CPU_COPY_STREAM_BYTES (8u * 1024u * 1024u)

/* memcpy of n bytes between non-overlapping ranges, one piece of a copy of `total` bytes (the
 * pool splits large copies): streams when total >= CPU_COPY_STREAM_BYTES. Streamed stores are
 * complete and ordered before the function returns (store fence). */
void cpu_copy(void *dst, const void *src, size_t n, size_t total);

#endif
