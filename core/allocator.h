/*
 * The caching allocator: device memory is taken from the backend in segments and handed out as
 * blocks that are split, coalesced and cached for reuse. Free blocks are binned per stream key,
 * so a block is reused only by work ordered after its free (stream-ordered reuse, as PyTorch's
 * caching allocator). Graph pools are separate arenas inside the same allocator; a pool's
 * segments live until the pool is released and its last block is freed.
 */
#ifndef ACCEL_CORE_ALLOCATOR_H
#define ACCEL_CORE_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/accel.h"
#include "accel/accel_plugin.h"

typedef struct accel_allocator accel_allocator_t;
typedef struct accel_allocator_arena accel_allocator_arena_t;

/* Block sizes are multiples of this; it is also the minimum alignment handed out. */
#define ACCEL_ALLOCATOR_ALIGN 512u

/* A shared registration's end (accel_allocator_register). */
typedef void (*accel_allocator_ended_fn)(void *ctx, void *device_ptr);
/* Asked before a free returns a block nothing pins (accel_allocator_set_guard): ACCEL_OK, or
 * an error with its message, which refuses the free. Called under the allocator's lock, so it
 * takes no allocator lock. */
typedef accel_status_t (*accel_allocator_guard_fn)(const void *ptr, size_t size);

accel_status_t accel_allocator_create(const accel_backend_vtable_t *vt, accel_be_device_t *impl,
                                      accel_allocator_t **out);
/* Returns every segment to the backend (the device is being torn down). */
void accel_allocator_destroy(accel_allocator_t *m);

accel_allocator_arena_t *accel_allocator_default_arena(accel_allocator_t *m);
/* A graph pool arena with one reference. */
accel_status_t accel_allocator_arena_create(accel_allocator_t *m, accel_allocator_arena_t **out);
void accel_allocator_arena_retain(accel_allocator_arena_t *a);
/* Drops a reference. Returns the arena when it is now unreferenced and holds no live block (a
 * zombie: it becomes one exactly once), else NULL. The caller then frees it with
 * accel_allocator_arena_collect once no queued work can use its memory. */
accel_allocator_arena_t *accel_allocator_arena_release(accel_allocator_arena_t *a);
/* The free generation of the arena's latest free (0: none). */
uint64_t accel_allocator_arena_last_free(accel_allocator_arena_t *a);
/* Returns a zombie arena's segments to the backend and frees it. */
void accel_allocator_arena_collect(accel_allocator_arena_t *a);

/* The allocator never returns memory to the backend on its own: a segment may only go back once
 * no queued work can still use it, which only the device can ensure. Frees are stamped with the
 * free generation; the device reads it (accel_allocator_free_generation), drains its streams
 * holding no lock, and then returns only segments whose blocks were all freed by then
 * (accel_allocator_empty_cache), so a block freed by another thread during the drain stays. On
 * OUT_OF_MEMORY the caller does the same, retries once and reports the attempt with
 * accel_allocator_count_retry. */

/* Allocates size bytes (> 0) from arena for work ordered on stream_key: a free block binned
 * under stream_key, else an idle one (key NULL: freed by an earlier capture sharing a graph
 * pool, or left by a destroyed stream), else a new segment. */
accel_status_t accel_allocator_alloc(accel_allocator_t *m, accel_allocator_arena_t *arena,
                                     const void *stream_key, size_t size, void **ptr);
/* Sets the check every later free of an unpinned block asks first (NULL: none). */
void accel_allocator_set_guard(accel_allocator_t *m, accel_allocator_guard_fn guard);
/* Frees a live block. stream_key: the stream the free is ordered on (NULL: the block's own).
 * zombie (optional) receives the block's graph-pool arena when this free left it unreferenced
 * and empty (see accel_allocator_arena_release). INVALID_ARGUMENT for a pointer that is not the
 * start of a live block; the guard's error when it refuses (the block stays the user's). Free
 * blocks with the NULL key are idle: any stream may take them. */
accel_status_t accel_allocator_free(accel_allocator_t *m, void *ptr, const void *stream_key,
                                    accel_allocator_arena_t **zombie);

/* Blocks a graph's recorded work uses (opaque). While a block is pinned, freeing it defers the
 * real free to the last unpin: the user's pointer is invalid at once, the memory stays. */
typedef struct accel_allocator_pins {
  void **blocks;
  size_t n, cap;
  /* who holds them, named when a registration they pin cannot be unregistered */
  const char *owner_kind; /* "graph", "DLPack import", ... */
  const void *owner;
  bool retiring; /* their holder is gone; a retired release drops them (pins_retiring) */
} accel_allocator_pins_t;
/* Pins every live block of the default arena or registration that [ptr, ptr+size) touches
 * (other memory is ignored: graph-pool blocks live as long as their pool, which the graph
 * holds). */
accel_status_t accel_allocator_pin(accel_allocator_t *m, const void *ptr, size_t size,
                                   accel_allocator_pins_t *pins);
/* Pins the blocks of from once more, into to (a graph replayed inside another's capture). */
accel_status_t accel_allocator_pin_again(accel_allocator_t *m, const accel_allocator_pins_t *from,
                                         accel_allocator_pins_t *to);
/* Marks pins whose holder is gone and whose unpin only waits for a retired release (a destroyed
 * graph's replays, a released DLPack import's queued work): an unregister then waits for them
 * instead of refusing. */
void accel_allocator_pins_retiring(accel_allocator_t *m, accel_allocator_pins_t *pins);
/* Drops the pins (completing deferred frees and deferred registration releases, whose done
 * callbacks run after the allocator's lock is dropped) and empties the list. */
void accel_allocator_unpin(accel_allocator_t *m, accel_allocator_pins_t *pins);

/* Registrations (external memory): ranges accel did not allocate, kept as segments of their
 * own with one block, so that every range check, overlap test, copy kind and pin treats them as
 * allocations. They never count in the memory statistics and never go back to the backend's
 * mem_free. Two kinds:
 *  - the user's (accel_memory_register, ended NULL): ended by accel_allocator_unregister_begin
 *    and _end;
 *  - shared (made by a DLPack import): one registration for every import of a range inside
 *    it. The import that makes it is its first user, and its pin goes into pins; later imports
 *    join it (accel_allocator_pin_joining). Once every user left (accel_allocator_leave) ranges
 *    in it are invalid for new work, and at its last unpin (imports' and graphs' pins alike) it
 *    ends: ended(ctx, device_ptr) is called with no lock held.
 * INVALID_ARGUMENT when the range shares a byte with a segment or another registration. */
accel_status_t accel_allocator_register(accel_allocator_t *m, void *ptr, size_t size,
                                        void *device_ptr, bool read_only,
                                        accel_allocator_ended_fn ended, void *ctx,
                                        accel_allocator_pins_t *pins);
/* accel_allocator_pin for a DLPack import: when the range lies in a shared registration, the
 * import joins it as one more user and *shared gets the registration's ctx; else NULL. */
accel_status_t accel_allocator_pin_joining(accel_allocator_t *m, const void *ptr, size_t size,
                                           accel_allocator_pins_t *pins, void **shared);
/* The import holding pins leaves the shared registration it joined (no-op otherwise). */
void accel_allocator_leave(accel_allocator_t *m, const accel_allocator_pins_t *pins);
/* First half of ending a user registration starting at ptr: refused with STATE, naming a
 * holder and how to let go of it, while a live holder pins it; NOT_READY (no message) while
 * only retiring pins hold it (the caller lets the retired releases run and tries again);
 * otherwise ranges in it are invalid from now on (the free generation moves). The caller then
 * drains the device, holding no lock, and calls accel_allocator_unregister_end. */
accel_status_t accel_allocator_unregister_begin(accel_allocator_t *m, void *ptr);
/* Removes the registration begun above; *device_ptr gets its device address. */
void accel_allocator_unregister_end(accel_allocator_t *m, void *ptr, void **device_ptr);
/* Whether [ptr, ptr+size) lies in a read-only registration. */
bool accel_allocator_range_read_only(accel_allocator_t *m, const void *ptr, size_t size);
/* Ends every registration left at device teardown: returns them one by one (NULL: none left). */
void *accel_allocator_take_registration(accel_allocator_t *m, void **device_ptr);

/* Counts the frees of live blocks: a range found inside live blocks stays inside them for as
 * long as this value is unchanged (allocations never invalidate a range). Lock-free. */
uint64_t accel_allocator_free_generation(accel_allocator_t *m);
/* 1 when [ptr, ptr+size) lies inside one live block. */
bool accel_allocator_range_valid(accel_allocator_t *m, const void *ptr, size_t size);
/* Range i of a list checked by accel_allocator_ranges_valid; returns 0 when range i is to be
 * skipped (an empty tensor accesses nothing), 2 when it is written (it must not lie in a
 * read-only registration), 1 otherwise. */
typedef int (*accel_allocator_range_fn)(void *ctx, size_t i, const void **ptr, size_t *size);
/* accel_allocator_range_valid for ranges 0..n-1 under one lock: the index of the first range that
 * is not inside one live allocation, or SIZE_MAX when every one is. */
size_t accel_allocator_ranges_valid(accel_allocator_t *m, size_t n, accel_allocator_range_fn range,
                                    void *ctx);
/* 1 when ptr lies inside any segment (device memory of this device). */
bool accel_allocator_contains(accel_allocator_t *m, const void *ptr);
/* 1 when [ptr, ptr+size) shares a byte with any segment (size 0: never; the range is clamped at
 * the end of the address space). */
bool accel_allocator_intersects(accel_allocator_t *m, const void *ptr, size_t size);
/* Arena of the live block starting at ptr, or NULL. */
accel_allocator_arena_t *accel_allocator_block_arena(accel_allocator_t *m, const void *ptr);

/* Re-bins free blocks of arena (NULL: every arena) from one stream key to another (capture
 * end: make blocks freed during a capture available to later captures; stream destroy: make a
 * dead stream's blocks idle, to_key NULL). Live blocks owned by from_key are re-owned too. */
void accel_allocator_retag(accel_allocator_t *m, accel_allocator_arena_t *arena,
                           const void *from_key, const void *to_key);

void accel_allocator_stats(accel_allocator_t *m, accel_memory_stats_t *out);
void accel_allocator_reset_peaks(accel_allocator_t *m);
/* Returns the default arena's free segments whose blocks were all freed at or before free
 * generation epoch to the backend; the caller drained the device after reading epoch. Returns
 * the bytes released. */
uint64_t accel_allocator_empty_cache(accel_allocator_t *m, uint64_t epoch);
/* Counts an out-of-memory retry of an allocation of size bytes (stats alloc_retries), why its
 * first attempt failed (reason: its message) and whether it failed again (ooms). */
void accel_allocator_count_retry(accel_allocator_t *m, bool failed, size_t size,
                                 const char *reason);

/* Memory you can see (allocator_view.c) */
/* The calling thread's innermost memory tag (memory_tags.c; NULL: none): new blocks carry it. */
extern _Thread_local const char *accel_memory_tag_top;
/* accel_memory_stats_ex's figures (struct_size untouched). */
void accel_allocator_stats_ex(accel_allocator_t *m, accel_memory_stats_ex_t *out);
/* One graph pool's figures. */
typedef struct accel_allocator_arena_info {
  uint64_t reserved, allocated, peak_reserved, peak_allocated;
  size_t segments;
} accel_allocator_arena_info_t;
void accel_allocator_arena_info(accel_allocator_arena_t *a, accel_allocator_arena_info_t *out);
/* Restarts the arena's peaks from its current bytes (a capture into it begins). */
void accel_allocator_arena_reset_peaks(accel_allocator_arena_t *a);
/* The distinct blocks of pins and their bytes. */
void accel_allocator_pins_bytes(accel_allocator_t *m, const accel_allocator_pins_t *pins,
                                uint64_t *bytes, uint64_t *blocks);
/* Every segment and block as the JSON of accel_memory_snapshot (device: its "device" member);
 * *json is malloc'ed. */
accel_status_t accel_allocator_snapshot(accel_allocator_t *m, const char *device, char **json,
                                        size_t *length);

#endif
