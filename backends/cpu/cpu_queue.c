#include "cpu_queue.h"

#include <errno.h>
#include <stdlib.h>

struct cpu_chunk {
  _Atomic(cpu_chunk_t *) next;
  cpu_entry_t entries[CPU_CHUNK_ENTRIES];
};

static cpu_chunk_t *chunk_new(void) {
  cpu_chunk_t *c = malloc(sizeof(*c));
  if (c != NULL) atomic_init(&c->next, NULL);
  return c;
}

int cpu_queue_init(cpu_queue_t *q) {
  cpu_chunk_t *c = chunk_new();
  if (c == NULL) return ENOMEM;
  q->tail = c;
  q->tail_used = 0;
  q->head = c;
  q->head_next = 0;
  q->taken = 0;
  atomic_init(&q->submitted, 0);
  atomic_init(&q->completed, 0);
  atomic_init(&q->spare, NULL);
  return 0;
}

void cpu_queue_destroy(cpu_queue_t *q) {
  cpu_chunk_t *c = q->head;
  while (c != NULL) {
    cpu_chunk_t *next = atomic_load_explicit(&c->next, memory_order_relaxed);
    free(c);
    c = next;
  }
  free(atomic_load_explicit(&q->spare, memory_order_relaxed));
}

cpu_entry_t *cpu_queue_reserve(cpu_queue_t *q) {
  if (q->tail_used == CPU_CHUNK_ENTRIES) {
    cpu_chunk_t *c = atomic_exchange_explicit(&q->spare, NULL, memory_order_acquire);
    if (c != NULL)
      atomic_store_explicit(&c->next, NULL, memory_order_relaxed);
    else if ((c = chunk_new()) == NULL)
      return NULL;
    /* Linked before any entry of c is published, so the consumer always finds it. */
    atomic_store_explicit(&q->tail->next, c, memory_order_release);
    q->tail = c;
    q->tail_used = 0;
  }
  return &q->tail->entries[q->tail_used];
}

void cpu_queue_publish(cpu_queue_t *q) {
  q->tail_used++;
  /* seq_cst: pairs with the worker's sleep protocol (cpu_sync.h). */
  atomic_fetch_add(&q->submitted, 1);
}

cpu_entry_t *cpu_queue_peek(cpu_queue_t *q) {
  if (q->taken == atomic_load(&q->submitted)) return NULL;
  if (q->head_next == CPU_CHUNK_ENTRIES) {
    cpu_chunk_t *done = q->head;
    q->head = atomic_load_explicit(&done->next, memory_order_acquire);
    q->head_next = 0;
    free(atomic_exchange_explicit(&q->spare, done, memory_order_release));
  }
  return &q->head->entries[q->head_next];
}

void cpu_queue_pop(cpu_queue_t *q) {
  q->head_next++;
  q->taken++;
  atomic_store(&q->completed, q->taken);
}
