/* Live swap slot. Each published object lives in a node with a reference count: the slot holds
 * one reference while the node is current, each running frame one more. Acquire takes the lock
 * only to read the current node and count the frame (so a publish cannot free the node between
 * the two); release and publish drop references with an atomic decrement, and whoever drops the
 * last one releases the object. The frame path never allocates: publish allocates the node. */
#include <pthread.h>
#include <stdatomic.h>

#include "base/alloc.h"
#include "kestrel/live.h"
#include "src/common.h"

typedef struct live_node {
    void *object;
    atomic_uint_fast32_t refs;
} live_node;

struct ks_live {
    ks__object obj; /* must be first: ks_last_error() */
    ks_allocator alloc;
    ks_live_release_fn release;
    void *user;
    pthread_mutex_t mu;
    live_node *current;
    atomic_uint_fast64_t generation;
};

static void unref(ks_live *l, live_node *n) {
    if (atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1) return;
    if (l->release) l->release(l->user, n->object);
    ks__free(&l->alloc, n);
}

ks_status ks_live_create(const ks_live_desc *desc, ks_live **live_out) {
    if (!live_out) {
        ks__object_error(NULL, "ks_live_create: live_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_allocator a = ks__allocator_or_default(desc ? desc->allocator : NULL);
    ks_live *l = ks__calloc(&a, 1, sizeof(*l));
    if (!l) {
        ks__object_error(NULL, "ks_live_create: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    l->obj.magic = KS__OBJECT_MAGIC;
    l->alloc = a;
    l->release = desc ? desc->release : NULL;
    l->user = desc ? desc->user : NULL;
    pthread_mutex_init(&l->mu, NULL);
    atomic_init(&l->generation, 0);
    *live_out = l;
    return KS_STATUS_OK;
}

void ks_live_destroy(ks_live *l) {
    if (!l) return;
    if (l->current) unref(l, l->current);
    pthread_mutex_destroy(&l->mu);
    ks_allocator a = l->alloc;
    ks__free(&a, l);
}

ks_status ks_live_publish(ks_live *l, void *object) {
    if (!l || !object) {
        ks__object_error(l ? &l->obj : NULL, "ks_live_publish: live and object are required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    live_node *n = ks__alloc(&l->alloc, sizeof(*n));
    if (!n) {
        ks__object_error(&l->obj, "ks_live_publish: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    n->object = object;
    atomic_init(&n->refs, 1); /* the slot's */
    pthread_mutex_lock(&l->mu);
    live_node *old = l->current;
    l->current = n;
    atomic_fetch_add(&l->generation, 1);
    pthread_mutex_unlock(&l->mu);
    if (old) unref(l, old); /* released now, or by the last frame that holds it */
    return KS_STATUS_OK;
}

void *ks_live_acquire(ks_live *l, ks_live_ref *ref_out) {
    if (ref_out) ref_out->node = NULL;
    if (!l || !ref_out) return NULL;
    pthread_mutex_lock(&l->mu);
    live_node *n = l->current;
    if (n) atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&l->mu);
    ref_out->node = n;
    return n ? n->object : NULL;
}

void ks_live_release(ks_live *l, ks_live_ref ref) {
    if (l && ref.node) unref(l, ref.node);
}

uint64_t ks_live_generation(const ks_live *l) {
    return l ? atomic_load(&((ks_live *)l)->generation) : 0;
}
