/* The arena memory planner (planner.h). */
#include "planner.h"

#include <stdbool.h>
#include <string.h>

#include "base/alloc.h"

ks_status ks__planner_alloc(ks__planner *p, const ks_allocator *a, uint32_t num) {
    memset(p, 0, sizeof(*p));
    size_t n = num ? num : 1;
    p->num = num;
    p->group = ks__calloc(a, n, sizeof(int32_t));
    p->first = ks__calloc(a, n, sizeof(int32_t));
    p->last = ks__calloc(a, n, sizeof(int32_t));
    p->bytes = ks__calloc(a, n, sizeof(size_t));
    p->offset = ks__calloc(a, n, sizeof(size_t));
    p->sub_base = ks__calloc(a, n, sizeof(int32_t));
    p->sub_off = ks__calloc(a, n, sizeof(size_t));
    if (!p->group || !p->first || !p->last || !p->bytes || !p->offset || !p->sub_base ||
        !p->sub_off) {
        ks__planner_free(p, a);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    return KS_STATUS_OK;
}

void ks__planner_free(ks__planner *p, const ks_allocator *a) {
    ks__free(a, p->group);
    ks__free(a, p->first);
    ks__free(a, p->last);
    ks__free(a, p->bytes);
    ks__free(a, p->offset);
    ks__free(a, p->sub_base);
    ks__free(a, p->sub_off);
    memset(p, 0, sizeof(*p));
}

void ks__planner_reset(ks__planner *p) {
    for (uint32_t t = 0; t < p->num; t++) {
        p->group[t] = (int32_t)t;
        p->sub_base[t] = -1;
        p->sub_off[t] = 0;
        p->first[t] = INT32_MAX;
        p->last[t] = -1;
        p->bytes[t] = 0;
        p->offset[t] = 0;
    }
}

int32_t ks__planner_find(ks__planner *p, int32_t x) {
    int32_t *g = p->group;
    while (g[x] != x)
        x = g[x] = g[g[x]];
    return x;
}

size_t ks__planner_offset(ks__planner *p, int32_t x) {
    int32_t r = ks__planner_find(p, x);
    size_t off = 0;
    while (p->sub_base[r] >= 0) {
        off += p->sub_off[r];
        r = ks__planner_find(p, p->sub_base[r]);
    }
    return off + p->offset[r];
}

static bool overlap_in_time(const ks__planner *p, int32_t a, int32_t b) {
    return !(p->last[a] < p->first[b] || p->last[b] < p->first[a]);
}

ks_status ks__planner_place(ks__planner *p, const ks_allocator *a, size_t *arena_bytes_out) {
    *arena_bytes_out = 0;
    /* A root placed inside another's block keeps that block alive as long as it is: merge
     * lifetimes upwards (one pass per nesting level of in-place concats). */
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t t = 0; t < p->num; t++) {
            if (p->sub_base[t] < 0) continue;
            int32_t b = ks__planner_find(p, p->sub_base[t]);
            if (p->first[t] < p->first[b]) p->first[b] = p->first[t], changed = true;
            if (p->last[t] > p->last[b]) p->last[b] = p->last[t], changed = true;
        }
    }
    int32_t *order = ks__alloc(a, ((size_t)p->num + 1) * sizeof(int32_t));
    if (!order) return KS_STATUS_OUT_OF_MEMORY;
    uint32_t count = 0;
    for (uint32_t t = 0; t < p->num; t++)
        if (p->sub_base[t] < 0 && p->bytes[t] && ks__planner_find(p, (int32_t)t) == (int32_t)t)
            order[count++] = (int32_t)t;
    /* largest first (insertion sort is fine: graphs hold a few thousand buffers) */
    for (uint32_t i = 1; i < count; i++) {
        int32_t v = order[i];
        uint32_t j = i;
        while (j > 0 && p->bytes[order[j - 1]] < p->bytes[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    size_t total = 0;
    for (uint32_t oi = 0; oi < count; oi++) {
        int32_t b = order[oi];
        /* Candidate offsets: 0 and the end of every placed block alive at the same time; take
         * the lowest where the buffer overlaps none of them. */
        size_t best = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (uint32_t pj = 0; pj < oi; pj++) {
                int32_t c = order[pj];
                if (!overlap_in_time(p, b, c)) continue;
                if (best < p->offset[c] + p->bytes[c] && p->offset[c] < best + p->bytes[b]) {
                    best = p->offset[c] + p->bytes[c];
                    moved = true;
                }
            }
        }
        p->offset[b] = best;
        if (best + p->bytes[b] > total) total = best + p->bytes[b];
    }
    ks__free(a, order);
    *arena_bytes_out = total;
    return KS_STATUS_OK;
}
