/*
 * The caching allocator's structures, shared by its rooms: segments, bins, graph-pool arenas
 * and allocations (allocator.c), pins (allocator_pins.c), range queries (allocator_query.c) and
 * registrations of external memory (registration.c). Nothing else in core includes this header;
 * the rest of core sees allocator.h.
 */
#ifndef ACCEL_CORE_ALLOCATOR_INTERNAL_H
#define ACCEL_CORE_ALLOCATOR_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "allocator.h"
#include "hashtab.h"

#define NBINS 128

typedef struct segment segment_t;
typedef struct block block_t;

struct block {
  uintptr_t addr;
  size_t size;            /* rounded to ACCEL_ALLOCATOR_ALIGN, or larger when not split */
  size_t requested;       /* allocated: the bytes asked for, the extent ranges are checked on */
  segment_t *seg;
  block_t *prev, *next;   /* address order within the segment */
  block_t *fprev, *fnext; /* free list of its bin */
  const void *key;        /* stream key: free blocks are binned under it */
  uint64_t freed_at;      /* free block: the free generation of its latest free (0: never) */
  uint32_t pins;          /* live graphs whose recorded work uses the block */
  bool deferred;          /* freed by the user while pinned: freed for real at the last unpin */
  const void *deferred_key;
  bool allocated;
  uint8_t bin;
  const char *tag;        /* allocated: the thread's memory tag at allocation (NULL: none) */
};

/* What a registration (external memory) adds to its segment. */
typedef struct external {
  void *device_ptr;        /* the address the backend gave at registration */
  bool read_only;
  const char *holder_kind; /* the latest pinner still holding it (for messages), or NULL */
  const void *holder;
  uint32_t retiring;       /* pins of retiring lists (accel_allocator_pins_retiring) */
  /* shared (made by a DLPack import): the imports that joined it and have not left; it ends
   * at its last unpin once they all left, calling ended(ctx, device_ptr). NULL: the user's */
  accel_allocator_ended_fn ended;
  void *ctx;
  uint32_t users;
} external_t;

struct segment {
  uintptr_t base;
  size_t size;
  accel_allocator_arena_t *arena;
  block_t *first;
  external_t *ext; /* a registration: one block, memory that is not the backend's */
};

typedef struct bins {
  const void *key;
  uint64_t nonempty[NBINS / 64];
  block_t *head[NBINS];
} bins_t;

struct accel_allocator_arena {
  accel_allocator_t *m;
  bool graph_pool;
  bool zombie;    /* unreferenced and empty: its collection is retired (accel_pool_arena_retire) */
  int refs;
  uint64_t last_free; /* free generation of its latest free */
  size_t live_blocks;
  size_t segments;
  /* bytes (allocator_view.c reads them): the peaks restart at each capture into the pool */
  uint64_t reserved, allocated, peak_reserved, peak_allocated;
  bins_t *bins;
  size_t nbins, capbins;
  accel_allocator_arena_t *next;
};

struct accel_allocator {
  pthread_mutex_t lock;
  const accel_backend_vtable_t *vt;
  accel_be_device_t *impl;
  accel_allocator_arena_t default_arena;
  accel_allocator_arena_t *pools; /* graph pool arenas */
  accel_allocator_arena_t external_arena; /* registrations */
  size_t nexternal;             /* registrations among segs */
  size_t nread_only;            /* read-only ones (atomic reads: the common case has none) */
  segment_t **segs;             /* sorted by base */
  size_t nsegs, capsegs;
  accel_hashtab_t live;         /* allocated blocks: address -> block_t * */
  block_t *spare_blocks;        /* recycled block structs */
  accel_memory_stats_t stats;
  uint64_t free_generation; /* atomic: accel_allocator_free_generation */
  accel_allocator_guard_fn guard; /* asked before a free returns an unpinned block */
  /* accel_memory_stats_ex's out-of-memory and cache figures */
  uint64_t cache_empties, cache_empty_released_bytes, retries_recovered, last_retry_bytes;
  char last_retry_reason[160];
};

/* The live block in slot j of the live-block table. */
static inline block_t *live_block(const accel_allocator_t *m, size_t j) {
  return m->live.slots[j].value;
}

/* allocator.c, for registration.c, allocator_pins.c and allocator_query.c (lock held) */
size_t accel_alloc_seg_index(const accel_allocator_t *m, uintptr_t addr);
segment_t *accel_alloc_seg_containing(const accel_allocator_t *m, uintptr_t addr);
/* Room for one more segment in m->segs (the array doubles when full); false when out of host
 * memory, the array unchanged. */
bool accel_alloc_seg_reserve(accel_allocator_t *m);
/* Makes s the segment [base, base + size) of arena, covered by its one block b, and enters it
 * into m->segs in base order (room reserved; it overlaps no segment). */
void accel_alloc_seg_enter(accel_allocator_t *m, segment_t *s, block_t *b, uintptr_t base,
                           size_t size, accel_allocator_arena_t *arena);
block_t *accel_alloc_block_new(accel_allocator_t *m);
/* The allocated block that holds [p, p + size), or NULL. */
const block_t *accel_alloc_block_holding(const accel_allocator_t *m, uintptr_t p, size_t size);
void accel_alloc_block_recycle(accel_allocator_t *m, block_t *b);
/* Returns allocated block blk to its bins under stream_key (NULL: its own), as a free does. */
void accel_alloc_free_block(accel_allocator_t *m, block_t *blk, const void *stream_key);

/* allocator_view.c: counts a cache empty that released bytes (lock held) */
void accel_alloc_count_empty(accel_allocator_t *m, uint64_t released);

/* allocator_pins.c */
/* accel_allocator_pin with the lock held. */
accel_status_t accel_alloc_pin_locked(accel_allocator_t *m, const void *ptr, size_t size,
                                      accel_allocator_pins_t *pins);
/* Room for extra more blocks in pins (no lock needed: the list is the caller's). */
accel_status_t accel_alloc_pins_reserve(accel_allocator_pins_t *pins, size_t extra);

/* registration.c, for allocator.c */
/* Pins registration s for pins when [lo, hi) touches it (lock held). */
accel_status_t accel_reg_pin(segment_t *s, uintptr_t lo, uintptr_t hi,
                             accel_allocator_pins_t *pins);
/* The shared registration of block b ends now (its last unpin; lock held): unlinked, and
 * linked into *ended for accel_reg_finish_ended once the lock is dropped. */
void accel_reg_end(accel_allocator_t *m, block_t *b, segment_t **ended);
/* Frees the registrations accel_reg_end collected and calls their ended callbacks (no lock). */
void accel_reg_finish_ended(accel_allocator_t *m, segment_t *ended);

#endif
