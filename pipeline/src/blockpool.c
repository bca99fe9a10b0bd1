/* Per-graph block pool (pipeline_internal.h). Every block a pipeline, its nodes and their packets
 * take comes through this allocator; a freed block goes onto a free list of its size class
 * instead of back to the app's allocator, so from the second frame on the same packets, node
 * scratch and lists are served from the lists and a steady frame calls the app's allocator not
 * at all.
 *
 * Size classes: 64 bytes, then four per power of two (2^k, 1.25, 1.5, 1.75 x 2^k), so a block is
 * at most 25 % larger than asked. Blocks above KS__BLOCKPOOL_MAX_BLOCK_BYTES, or wanting more than
 * 64 byte alignment, bypass the lists. A class keeps at most KS__BLOCKPOOL_MAX_FREE_PER_CLASS free
 * blocks; more go back to the app at once.
 *
 * Packets may outlive their pipeline (an app releases an output after destroying it) and may be
 * released on any thread: the lists are under a mutex, and the pool itself lives until both its
 * owner has released it and the last block handed out has come back. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "pipeline_internal.h"

#define POOL_ALIGN 64u
#define POOL_MIN_SHIFT 6 /* 64-byte smallest class */
#define POOL_MAX_SHIFT 28
#define KS__BLOCKPOOL_MAX_BLOCK_BYTES ((size_t)1 << POOL_MAX_SHIFT)
#define KS__BLOCKPOOL_MAX_FREE_PER_CLASS 64u
#define POOL_NUM_CLASSES (1 + 4 * (POOL_MAX_SHIFT - POOL_MIN_SHIFT))
#define POOL_UNPOOLED UINT32_MAX

/* Just before every block's user pointer. */
typedef struct block_header {
    ks__blockpool *pool;
    uint32_t size_class; /* POOL_UNPOOLED: straight from and to the app */
    uint32_t offset;     /* bytes from the backing allocation to the user pointer */
} block_header;

typedef struct free_block {
    struct free_block *next;
} free_block;

struct ks__blockpool {
    ks_allocator backing;
    pthread_mutex_t lock;
    free_block *free_lists[POOL_NUM_CLASSES];
    uint32_t num_free[POOL_NUM_CLASSES];
    size_t num_out; /* blocks handed out and not yet returned */
    bool owner_released;
    ks__blockpool_stats stats;
};

/* Smallest class that holds size_bytes (<= KS__BLOCKPOOL_MAX_BLOCK_BYTES) and its size. */
static uint32_t size_class(size_t size_bytes, size_t *class_bytes) {
    if (size_bytes <= POOL_ALIGN) {
        *class_bytes = POOL_ALIGN;
        return 0;
    }
    uint32_t shift = POOL_MIN_SHIFT; /* 2^shift < size <= 2^(shift+1) */
    while (((size_t)1 << (shift + 1)) < size_bytes)
        shift++;
    size_t base = (size_t)1 << shift, step = base >> 2;
    size_t k = (size_bytes - base + step - 1) / step; /* 1..4 */
    *class_bytes = base + k * step;
    return 1 + 4 * (shift - POOL_MIN_SHIFT) + (uint32_t)(k - 1);
}

static void backing_free(const ks__blockpool *pool, void *user_ptr) {
    block_header *h = (block_header *)user_ptr - 1;
    void *raw = (uint8_t *)user_ptr - h->offset;
    pool->backing.free(pool->backing.user, raw);
}

static void *backing_alloc(ks__blockpool *pool, size_t size_bytes, size_t alignment, uint32_t cls) {
    size_t offset = alignment > POOL_ALIGN ? alignment : POOL_ALIGN;
    if (size_bytes > SIZE_MAX - offset) return NULL;
    void *raw = pool->backing.alloc(pool->backing.user, size_bytes + offset, offset);
    if (!raw) return NULL;
    uint8_t *user_ptr = (uint8_t *)raw + offset;
    block_header *h = (block_header *)user_ptr - 1;
    h->pool = pool;
    h->size_class = cls;
    h->offset = (uint32_t)offset;
    pool->stats.num_backing_allocs++;
    return user_ptr;
}

/* Gives every cached block back to the app (lock held, or the pool is private). */
static void drain_free_lists(ks__blockpool *pool) {
    for (uint32_t c = 0; c < POOL_NUM_CLASSES; c++) {
        free_block *b = pool->free_lists[c];
        while (b) {
            free_block *next = b->next;
            backing_free(pool, b);
            b = next;
        }
        pool->free_lists[c] = NULL;
        pool->num_free[c] = 0;
    }
}

static void pool_destroy(ks__blockpool *pool) {
    drain_free_lists(pool);
    pthread_mutex_destroy(&pool->lock);
    ks_allocator a = pool->backing;
    ks__free(&a, pool);
}

static void *pool_alloc(void *user, size_t size_bytes, size_t alignment) {
    ks__blockpool *pool = user;
    size_t class_bytes = 0;
    uint32_t cls = POOL_UNPOOLED;
    if (alignment <= POOL_ALIGN && size_bytes <= KS__BLOCKPOOL_MAX_BLOCK_BYTES)
        cls = size_class(size_bytes, &class_bytes);
    pthread_mutex_lock(&pool->lock);
    void *p = NULL;
    if (cls != POOL_UNPOOLED && pool->free_lists[cls]) {
        free_block *b = pool->free_lists[cls];
        pool->free_lists[cls] = b->next;
        pool->num_free[cls]--;
        p = b;
        pool->stats.num_reused++;
    } else {
        p = backing_alloc(pool, cls != POOL_UNPOOLED ? class_bytes : size_bytes, alignment, cls);
    }
    if (p) pool->num_out++;
    pthread_mutex_unlock(&pool->lock);
    return p;
}

static void pool_free(void *user, void *ptr) {
    if (!ptr) return;
    block_header *h = (block_header *)ptr - 1;
    ks__blockpool *pool = h->pool;
    (void)user;
    pthread_mutex_lock(&pool->lock);
    uint32_t cls = h->size_class;
    if (cls != POOL_UNPOOLED && !pool->owner_released &&
        pool->num_free[cls] < KS__BLOCKPOOL_MAX_FREE_PER_CLASS) {
        free_block *b = ptr;
        b->next = pool->free_lists[cls];
        pool->free_lists[cls] = b;
        pool->num_free[cls]++;
    } else {
        backing_free(pool, ptr);
    }
    pool->num_out--;
    bool last = pool->owner_released && pool->num_out == 0;
    pthread_mutex_unlock(&pool->lock);
    if (last) pool_destroy(pool);
}

ks_status ks__blockpool_create(const ks_allocator *backing, ks__blockpool **out) {
    ks_allocator a = ks__allocator_or_default(backing);
    ks__blockpool *pool = ks__calloc(&a, 1, sizeof(*pool));
    if (!pool) return KS_STATUS_OUT_OF_MEMORY;
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
        ks__free(&a, pool);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    pool->backing = a;
    *out = pool;
    return KS_STATUS_OK;
}

ks_allocator ks__blockpool_allocator(ks__blockpool *pool) {
    return (ks_allocator){pool_alloc, pool_free, pool};
}

ks__blockpool_stats ks__blockpool_stats_get(ks__blockpool *pool) {
    pthread_mutex_lock(&pool->lock);
    ks__blockpool_stats s = pool->stats;
    pthread_mutex_unlock(&pool->lock);
    return s;
}

void ks__blockpool_release(ks__blockpool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->owner_released = true;
    /* Cached blocks go now; blocks still out (packets the app holds) return to the app as
     * they are released, and the last one takes the pool with it. */
    drain_free_lists(pool);
    bool last = pool->num_out == 0;
    pthread_mutex_unlock(&pool->lock);
    if (last) pool_destroy(pool);
}
