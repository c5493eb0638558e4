/*
 * The command queue of a CPU stream: single producer, single consumer, unbounded.
 *
 * Entries live in a linked list of fixed-size chunks. The producer (the thread calling into
 * the stream; the core serialises those calls) fills an entry in place and publishes it by
 * advancing `submitted`; the stream worker executes entries in order and advances
 * `completed`. No lock is taken on either side: an enqueue is a copy into the chunk plus one
 * atomic store. A drained chunk is kept as a spare for the producer, so a steady flow of
 * commands does not allocate.
 */
#ifndef ACCEL_CPU_QUEUE_H
#define ACCEL_CPU_QUEUE_H

#include <stdatomic.h>
#include <stdint.h>

#include "cpu_exec.h"

/* Kernel parameter blocks up to this size are stored inside the entry. */
#define CPU_PARAMS_INLINE 128u
#define CPU_CHUNK_ENTRIES 64u

typedef struct cpu_entry {
  cpu_op_t op;
  void *heap; /* freed after execution: large kernel params or a batch's storage */
  _Alignas(16) unsigned char params[CPU_PARAMS_INLINE];
} cpu_entry_t;

typedef struct cpu_chunk cpu_chunk_t;

/* The producer's fields, the worker's and the chunk spare each on a cache line of their own
 * (the queue is CPU_CACHE_LINE-aligned inside its stream), so that the worker taking entries
 * does not invalidate the line a submitting thread writes, and how well a submit runs does not
 * depend on where the allocator happened to place the stream (it did: benchmarks of tiny
 * enqueues moved by 25% with unrelated changes to the heap's layout). */
#define CPU_CACHE_LINE 64
typedef struct cpu_queue {
  /* Producer side. */
  _Alignas(CPU_CACHE_LINE) cpu_chunk_t *tail;
  unsigned tail_used;
  atomic_uint_fast64_t submitted;
  /* Consumer side. */
  _Alignas(CPU_CACHE_LINE) cpu_chunk_t *head;
  unsigned head_next;
  uint64_t taken;
  atomic_uint_fast64_t completed;
  /* Either side, once per chunk. */
  _Alignas(CPU_CACHE_LINE) _Atomic(cpu_chunk_t *) spare;
} cpu_queue_t;

/* 0 or ENOMEM. */
int cpu_queue_init(cpu_queue_t *q);
/* Frees the chunks; the queue must be drained. */
void cpu_queue_destroy(cpu_queue_t *q);

/* Producer: the next free entry (not visible to the consumer until cpu_queue_publish), or NULL
 * when out of memory. Reserving twice without publishing returns the same entry. */
cpu_entry_t *cpu_queue_reserve(cpu_queue_t *q);
/* Producer: makes the reserved entry visible. */
void cpu_queue_publish(cpu_queue_t *q);

/* Consumer: the oldest published entry not yet popped, or NULL. */
cpu_entry_t *cpu_queue_peek(cpu_queue_t *q);
/* Consumer: marks the entry returned by cpu_queue_peek as completed. */
void cpu_queue_pop(cpu_queue_t *q);

static inline uint64_t cpu_queue_submitted(cpu_queue_t *q) { return atomic_load(&q->submitted); }
static inline uint64_t cpu_queue_completed(cpu_queue_t *q) { return atomic_load(&q->completed); }

#endif
