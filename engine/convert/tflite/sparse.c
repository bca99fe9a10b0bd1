/* Densification of TFLite sparse constants (DENSIFY inputs) at conversion time.
 *
 * The format (TFLite SparsityParameters) stores an n-d tensor, optionally split into blocks, as
 * a tree: block_map lists the original dims that are blocked, giving n + k "expanded" dims
 * (blocked dims become dim / block and k block dims are appended); traversal_order lists the
 * expanded dims from the outermost level to the innermost; every level is DENSE (dense_size
 * children per parent) or SPARSE_CSR (parent p owns indices[segments[p] .. segments[p+1])).
 * The position reached at the last level indexes the stored values.
 *
 * Every position is distinct per path and checked against the arrays it indexes, and segments
 * are checked to be non-decreasing up front, so the walk visits at most num_values leaves: a
 * hostile file cannot make it run long or write out of bounds. The recursion depth is the level
 * count, at most 2 * KS_MAX_RANK.
 */
#include "tflite_internal.h"

#include <string.h>

#define MAX_LEVELS (2 * KS_MAX_RANK)

typedef struct level {
    int32_t dim; /* expanded dim traversed at this level */
    bool sparse;
    uint32_t dense_size;
    const uint8_t *seg, *idx; /* CSR arrays */
    uint32_t seg_count, idx_count;
    uint32_t seg_width, idx_width; /* element bytes: 4, 2, 1 */
} level;

typedef struct walker {
    uint32_t rank, num_levels, num_blocks;
    int64_t dims[KS_MAX_RANK];
    int64_t expanded[MAX_LEVELS];
    int32_t block_of_dim[KS_MAX_RANK]; /* -1: not blocked */
    int64_t coord[MAX_LEVELS];
    level lv[MAX_LEVELS];
    size_t elem_size;
    const uint8_t *values;
    uint64_t num_values;
    uint8_t *dst;
    char *why;
    size_t why_cap;
} walker;

static uint32_t read_index(const uint8_t *p, uint32_t width, uint32_t i) {
    const uint8_t *e = p + (size_t)i * width;
    switch (width) {
    case 1:
        return e[0];
    case 2:
        return ks__ld_u16(e);
    default:
        return ks__ld_u32(e);
    }
}

static bool walk(walker *w, uint32_t l, uint64_t pos) {
    if (l == w->num_levels) {
        if (pos >= w->num_values) {
            ks__fmt(w->why, w->why_cap, "value position %llu beyond the %llu stored values",
                    (unsigned long long)pos, (unsigned long long)w->num_values);
            return false;
        }
        uint64_t off = 0;
        for (uint32_t d = 0; d < w->rank; d++) {
            int64_t c = w->coord[d];
            int32_t b = w->block_of_dim[d];
            if (b >= 0)
                c = c * w->expanded[w->rank + (uint32_t)b] + w->coord[w->rank + (uint32_t)b];
            off = off * (uint64_t)w->dims[d] + (uint64_t)c;
        }
        memcpy(w->dst + off * w->elem_size, w->values + pos * w->elem_size, w->elem_size);
        return true;
    }
    const level *L = &w->lv[l];
    if (!L->sparse) {
        for (uint32_t i = 0; i < L->dense_size; i++) {
            w->coord[L->dim] = i;
            if (!walk(w, l + 1, pos * L->dense_size + i)) return false;
        }
        return true;
    }
    if (pos + 1 >= L->seg_count) {
        ks__fmt(w->why, w->why_cap, "level %u: parent %llu has no segment (%u entries)", l,
                (unsigned long long)pos, L->seg_count);
        return false;
    }
    uint32_t begin = read_index(L->seg, L->seg_width, (uint32_t)pos);
    uint32_t end = read_index(L->seg, L->seg_width, (uint32_t)pos + 1);
    for (uint32_t j = begin; j < end; j++) {
        uint32_t v = read_index(L->idx, L->idx_width, j);
        if ((int64_t)v >= w->expanded[L->dim]) {
            ks__fmt(w->why, w->why_cap, "level %u: index %u out of range (dim size %lld)", l, v,
                    (long long)w->expanded[L->dim]);
            return false;
        }
        w->coord[L->dim] = v;
        if (!walk(w, l + 1, j)) return false;
    }
    return true;
}

/* Reads a SparseIndexVector union (type byte at field type_field, table at type_field + 1). */
static bool read_index_vec(ks__fb *fb, const ks__fb_table *dm, uint32_t type_field,
                           const uint8_t **p, uint32_t *count, uint32_t *width) {
    uint8_t type;
    ks__fb_table t;
    ks__fb_vec v;
    if (!ks__fb_get_u8(fb, dm, type_field, 0, &type)) return false;
    if (!ks__fb_get_table(fb, dm, type_field + 1, &t)) return false;
    switch (type) {
    case 1:
        *width = 4;
        break; /* Int32Vector */
    case 2:
        *width = 2;
        break; /* Uint16Vector */
    case 3:
        *width = 1;
        break; /* Uint8Vector */
    default:
        return false;
    }
    if (!t.pos || !ks__fb_get_vec(fb, &t, 0, *width, &v)) return false;
    *p = fb->data + v.pos;
    *count = v.count;
    return true;
}

ks_status ks__tflite_densify(ks__fb *fb, const ks__fb_table *sp, int32_t rank, const int64_t *dims,
                             size_t elem_size, const uint8_t *values, size_t values_bytes,
                             uint8_t *dst, char *why, size_t why_cap) {
    walker w;
    ks__fb_vec order, bmap, meta;
    memset(&w, 0, sizeof(w));
    w.why = why;
    w.why_cap = why_cap;
    if (!ks__fb_get_vec(fb, sp, 0, 4, &order) || !ks__fb_get_vec(fb, sp, 1, 4, &bmap) ||
        !ks__fb_get_vec(fb, sp, 2, 4, &meta)) {
        ks__fmt(why, why_cap, "malformed sparsity parameters (%s)", fb->why ? fb->why : "?");
        return KS_STATUS_INVALID_MODEL;
    }
    if (rank < 1 || rank > KS_MAX_RANK || elem_size == 0) {
        ks__fmt(why, why_cap, "sparse tensor of rank %d", rank);
        return KS_STATUS_UNSUPPORTED;
    }
    w.rank = (uint32_t)rank;
    w.num_blocks = bmap.count;
    w.num_levels = w.rank + w.num_blocks;
    if (bmap.count > w.rank || order.count != w.num_levels || meta.count != w.num_levels) {
        ks__fmt(why, why_cap,
                "sparsity: %u block dims, %u traversal entries, %u dim metadata for rank %d",
                bmap.count, order.count, meta.count, rank);
        return KS_STATUS_INVALID_MODEL;
    }
    for (uint32_t d = 0; d < w.rank; d++) {
        w.dims[d] = dims[d];
        w.block_of_dim[d] = -1;
        if (dims[d] < 0) {
            ks__fmt(why, why_cap, "sparse tensor with unknown dim %u", d);
            return KS_STATUS_INVALID_MODEL;
        }
    }
    for (uint32_t b = 0; b < bmap.count; b++) {
        int32_t d = ks__fb_vec_i32(fb, &bmap, b);
        if (d < 0 || (uint32_t)d >= w.rank || w.block_of_dim[d] >= 0 ||
            (b > 0 && d <= ks__fb_vec_i32(fb, &bmap, b - 1))) {
            ks__fmt(why, why_cap, "sparsity: bad block_map[%u] = %d", b, d);
            return KS_STATUS_INVALID_MODEL;
        }
        w.block_of_dim[d] = (int32_t)b;
    }
    /* Level l traverses expanded dim order[l]; each expanded dim exactly once. */
    uint32_t seen = 0;
    for (uint32_t l = 0; l < w.num_levels; l++) {
        int32_t d = ks__fb_vec_i32(fb, &order, l);
        if (d < 0 || (uint32_t)d >= w.num_levels || (seen & (1u << d))) {
            ks__fmt(why, why_cap, "sparsity: bad traversal_order[%u] = %d", l, d);
            return KS_STATUS_INVALID_MODEL;
        }
        seen |= 1u << d;
        w.lv[l].dim = d;
    }
    for (uint32_t l = 0; l < w.num_levels; l++) {
        ks__fb_table dm;
        int8_t format;
        int32_t dense_size;
        level *L = &w.lv[l];
        if (!ks__fb_vec_table(fb, &meta, l, &dm) || !ks__fb_get_i8(fb, &dm, 0, 0, &format) ||
            !ks__fb_get_i32(fb, &dm, 1, 0, &dense_size)) {
            ks__fmt(why, why_cap, "sparsity: malformed dim_metadata[%u]", l);
            return KS_STATUS_INVALID_MODEL;
        }
        if (format == 0) {
            L->dense_size = dense_size > 0 ? (uint32_t)dense_size : 0;
            if (dense_size <= 0) {
                ks__fmt(why, why_cap, "sparsity: dim_metadata[%u] dense_size %d", l, dense_size);
                return KS_STATUS_INVALID_MODEL;
            }
        } else if (format == 1) {
            L->sparse = true;
            if (!read_index_vec(fb, &dm, 2, &L->seg, &L->seg_count, &L->seg_width) ||
                !read_index_vec(fb, &dm, 4, &L->idx, &L->idx_count, &L->idx_width)) {
                ks__fmt(why, why_cap, "sparsity: dim_metadata[%u] has malformed CSR arrays", l);
                return KS_STATUS_INVALID_MODEL;
            }
            uint32_t prev = 0;
            for (uint32_t i = 0; i < L->seg_count; i++) {
                uint32_t s = read_index(L->seg, L->seg_width, i);
                if (s < prev || s > L->idx_count) {
                    ks__fmt(why, why_cap, "sparsity: dim_metadata[%u] segment %u = %u invalid", l,
                            i, s);
                    return KS_STATUS_INVALID_MODEL;
                }
                prev = s;
            }
        } else {
            ks__fmt(why, why_cap, "sparsity: dim_metadata[%u] format %d", l, format);
            return KS_STATUS_INVALID_MODEL;
        }
    }
    /* Expanded sizes: block sizes come from the dense levels that traverse block dims. */
    for (uint32_t d = 0; d < w.rank; d++)
        w.expanded[d] = dims[d];
    for (uint32_t l = 0; l < w.num_levels; l++) {
        int32_t d = w.lv[l].dim;
        if ((uint32_t)d < w.rank) continue;
        if (w.lv[l].sparse) {
            ks__fmt(why, why_cap, "sparsity: block dim %d stored sparse", d);
            return KS_STATUS_UNSUPPORTED;
        }
        w.expanded[d] = w.lv[l].dense_size;
    }
    for (uint32_t d = 0; d < w.rank; d++) {
        int32_t b = w.block_of_dim[d];
        if (b < 0) continue;
        int64_t bs = w.expanded[w.rank + (uint32_t)b];
        if (dims[d] % bs != 0) {
            ks__fmt(why, why_cap, "sparsity: dim %u (%lld) not a multiple of block %lld", d,
                    (long long)dims[d], (long long)bs);
            return KS_STATUS_INVALID_MODEL;
        }
        w.expanded[d] = dims[d] / bs;
    }
    for (uint32_t l = 0; l < w.num_levels; l++) {
        if (!w.lv[l].sparse && (int64_t)w.lv[l].dense_size != w.expanded[w.lv[l].dim]) {
            ks__fmt(why, why_cap, "sparsity: level %u dense_size %u, dim size %lld", l,
                    w.lv[l].dense_size, (long long)w.expanded[w.lv[l].dim]);
            return KS_STATUS_INVALID_MODEL;
        }
    }
    w.elem_size = elem_size;
    w.values = values;
    w.num_values = values_bytes / elem_size;
    w.dst = dst;
    return walk(&w, 0, 0) ? KS_STATUS_OK : KS_STATUS_INVALID_MODEL;
}
