/* The SDK's one allocator wrapper. Every library allocates through a caller's ks_allocator,
 * which may be NULL or incomplete: then malloc/posix_memalign/free are used. ks__alloc gives
 * 16-byte aligned memory; with the defaults a zero-byte request returns a distinct 1-byte block. */
#ifndef KESTREL_BASE_ALLOC_H
#define KESTREL_BASE_ALLOC_H

#include <stddef.h>

#include "kestrel/kestrel.h"

/* A copy of a with both callbacks filled (the defaults when a lacks either). */
ks_allocator ks__allocator_or_default(const ks_allocator *a);
void *ks__alloc(const ks_allocator *a, size_t size_bytes);
void *ks__alloc_aligned(const ks_allocator *a, size_t size_bytes, size_t alignment);
/* Zeroed; NULL when count * size_bytes overflows. */
void *ks__calloc(const ks_allocator *a, size_t count, size_t size_bytes);
void ks__free(const ks_allocator *a, void *ptr);        /* NULL ptr: nothing */
char *ks__strdup(const ks_allocator *a, const char *s); /* NULL s: "" */

#endif /* KESTREL_BASE_ALLOC_H */
