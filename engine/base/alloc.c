/* The allocator wrapper (alloc.h). */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *user, size_t size, size_t alignment) {
    (void)user;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    void *p = NULL;
    if (size == 0) size = 1;
    if (posix_memalign(&p, alignment, size) != 0) return NULL;
    return p;
}

static void default_free(void *user, void *ptr) {
    (void)user;
    free(ptr);
}

/* A caller's allocator counts only when it has both callbacks: memory from one must go back to
 * the same one. */
static int usable(const ks_allocator *a) {
    return a && a->alloc && a->free;
}

ks_allocator ks__allocator_or_default(const ks_allocator *a) {
    if (usable(a)) return *a;
    ks_allocator d = {default_alloc, default_free, NULL};
    return d;
}

void *ks__alloc_aligned(const ks_allocator *a, size_t size_bytes, size_t alignment) {
    if (usable(a)) return a->alloc(a->user, size_bytes, alignment);
    return default_alloc(NULL, size_bytes, alignment);
}

void *ks__alloc(const ks_allocator *a, size_t size_bytes) {
    return ks__alloc_aligned(a, size_bytes, 16);
}

void *ks__calloc(const ks_allocator *a, size_t count, size_t size_bytes) {
    if (size_bytes && count > SIZE_MAX / size_bytes) return NULL;
    void *p = ks__alloc(a, count * size_bytes);
    if (p) memset(p, 0, count * size_bytes);
    return p;
}

void ks__free(const ks_allocator *a, void *ptr) {
    if (!ptr) return;
    if (usable(a))
        a->free(a->user, ptr);
    else
        free(ptr);
}

char *ks__strdup(const ks_allocator *a, const char *s) {
    if (!s) s = "";
    size_t n = strlen(s);
    char *d = ks__alloc(a, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}
