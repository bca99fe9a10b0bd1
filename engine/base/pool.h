/* The thread pool (pool.c). Not a published API. */
#ifndef KESTREL_BASE_POOL_H
#define KESTREL_BASE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- thread pool ----
 * Workers spin briefly for new work, then sleep on a condition variable. parallel_for splits
 * [0, num_items) into contiguous chunks of at least `grain` items; the calling thread takes part.
 * fn(arg, begin, end, thread) runs with thread in [0, num_threads). */
typedef struct ks__pool ks__pool;
typedef void (*ks__range_fn)(void *arg, size_t begin, size_t end, uint32_t thread);
ks_status ks__pool_create(const ks_allocator *alloc, uint32_t num_threads, ks__pool **pool_out);
/* flags: KS_POOL_BIND_CPUS binds each worker to its own CPU (pool.c says when and why). */
#define KS_POOL_BIND_CPUS 0x1u
ks_status ks__pool_create_ex(const ks_allocator *alloc, uint32_t num_threads, uint32_t flags,
                             ks__pool **pool_out);
void ks__pool_destroy(ks__pool *pool);
uint32_t ks__pool_threads(const ks__pool *pool); /* 1 for NULL */
void ks__parallel_for(ks__pool *pool, size_t num_items, size_t grain, ks__range_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_BASE_POOL_H */
