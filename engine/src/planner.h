/* The arena memory planner (planner.c). A session's tensors and per-node scratch are buffers
 * with a lifetime [first, last] in node steps. Buffers that share memory (a view and its input,
 * a unary op run in place) are joined into one group, whose root owns the bytes; a root may also
 * be placed inside another root's block (a CONCAT written in place: sub_base, sub_off). Placing
 * puts every root into one arena so that no two blocks alive at the same step overlap.
 *
 * The session decides what may alias (it knows the ops); the planner only places. Not a
 * published API. */
#ifndef KESTREL_PLANNER_H
#define KESTREL_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

typedef struct ks__planner {
    uint32_t num;      /* buffers */
    int32_t *group;    /* union-find parent; a root is its own parent */
    int32_t *first;    /* lifetime in node steps (first INT32_MAX, last -1: never used) */
    int32_t *last;     /* */
    size_t *bytes;     /* per root: bytes to place (0: none) */
    size_t *offset;    /* per root: arena offset, set by ks__planner_place */
    int32_t *sub_base; /* per root: the group root whose block holds it, -1 */
    size_t *sub_off;   /* byte offset inside that block */
} ks__planner;

/* Allocates the arrays for num buffers (zeroed: call ks__planner_reset before use). */
ks_status ks__planner_alloc(ks__planner *p, const ks_allocator *a, uint32_t num);
void ks__planner_free(ks__planner *p, const ks_allocator *a);
/* Every buffer its own group, unused, no bytes, placed nowhere. */
void ks__planner_reset(ks__planner *p);

/* The group root of buffer x (with path halving). */
int32_t ks__planner_find(ks__planner *p, int32_t x);

/* Places every root with bytes > 0, largest first, each at the lowest offset where it overlaps
 * no placed block alive at the same time; a root placed inside another's block first passes its
 * lifetime up to that block. Returns the arena size in bytes, or KS_STATUS_OUT_OF_MEMORY (the
 * work list comes from a). */
ks_status ks__planner_place(ks__planner *p, const ks_allocator *a, size_t *arena_bytes_out);

/* Arena offset of buffer x: its root's offset, through in-place placements. */
size_t ks__planner_offset(ks__planner *p, int32_t x);

#endif /* KESTREL_PLANNER_H */
