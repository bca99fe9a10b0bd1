/* Graph IR: building, ownership and structural validation. */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ks__op_info k_op_infos[KS_OP_MAX_ID] = {
#define KS_OP(e, id, nm, mi, ma, mo, mao, fl) [id] = {nm, mi, ma, mo, mao, fl},
#include "ops.inc"
#undef KS_OP
};

const ks__op_info *ks__op_get_info(uint32_t op) {
    if (op >= KS_OP_MAX_ID || k_op_infos[op].name == NULL) return NULL;
    return &k_op_infos[op];
}

/* ---- graph building ---- */

void ks__graph_init(ks__graph *g, const ks_allocator *alloc) {
    memset(g, 0, sizeof(*g));
    g->alloc = ks__allocator_or_default(alloc);
}

static void free_tensor(ks__graph *g, ks__tensor *t) {
    ks__free(&g->alloc, t->name);
    if (!(t->flags & KS__TENSOR_BORROWED)) ks__free(&g->alloc, (void *)t->data);
    ks__free(&g->alloc, t->quant.scales);
    ks__free(&g->alloc, t->quant.zero_points);
}

void ks__graph_free(ks__graph *g) {
    if (!g) return;
    for (uint32_t i = 0; i < g->num_tensors; i++)
        free_tensor(g, &g->tensors[i]);
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        ks__free(&g->alloc, g->nodes[i].name);
        ks__free(&g->alloc, g->nodes[i].inputs);
        ks__free(&g->alloc, g->nodes[i].outputs);
    }
    for (uint32_t i = 0; i < g->num_meta; i++) {
        ks__free(&g->alloc, g->meta[i].key);
        ks__free(&g->alloc, g->meta[i].value);
    }
    ks__free(&g->alloc, g->tensors);
    ks__free(&g->alloc, g->nodes);
    ks__free(&g->alloc, g->meta);
    ks__free(&g->alloc, g->inputs);
    ks__free(&g->alloc, g->outputs);
    ks_allocator a = g->alloc;
    memset(g, 0, sizeof(*g));
    g->alloc = a;
}

/* Grows *arr (elements of elem_size) so that it holds at least need elements. */
static ks_status grow(ks__graph *g, void **arr, uint32_t *cap, uint32_t need, size_t elem_size) {
    if (need <= *cap) return KS_STATUS_OK;
    if (need > (1u << 26)) return KS_STATUS_LIMIT_EXCEEDED;
    uint32_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc *= 2;
    void *n = ks__calloc(&g->alloc, nc, elem_size);
    if (!n) return KS_STATUS_OUT_OF_MEMORY;
    if (*arr) memcpy(n, *arr, (size_t)*cap * elem_size);
    ks__free(&g->alloc, *arr);
    *arr = n;
    *cap = nc;
    return KS_STATUS_OK;
}

ks_status ks__graph_add_tensor(ks__graph *g, const char *name, ks_dtype dtype, int32_t rank,
                               const int64_t *dims, int32_t *id_out) {
    if (rank < 0 || rank > KS_MAX_RANK || (rank > 0 && !dims)) return KS_STATUS_INVALID_ARGUMENT;
    ks_status st =
        grow(g, (void **)&g->tensors, &g->cap_tensors, g->num_tensors + 1, sizeof(ks__tensor));
    if (st) return st;
    ks__tensor *t = &g->tensors[g->num_tensors];
    memset(t, 0, sizeof(*t));
    t->name = ks__strdup(&g->alloc, name);
    if (!t->name) return KS_STATUS_OUT_OF_MEMORY;
    t->dtype = dtype;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    *id_out = (int32_t)g->num_tensors++;
    return KS_STATUS_OK;
}

ks_status ks__graph_add_tensor_like(ks__graph *g, const ks__tensor *like, const char *suffix,
                                    ks_dtype dtype, int32_t rank, const int64_t *dims,
                                    int32_t *id_out) {
    /* `like` may live in g->tensors, which the add below can move: copy what is needed first. */
    int64_t d[KS_MAX_RANK];
    if (rank < 0) {
        rank = like->rank;
        dims = like->dims;
    }
    if (rank > KS_MAX_RANK || (rank > 0 && !dims)) return KS_STATUS_INVALID_ARGUMENT;
    for (int32_t i = 0; i < rank; i++)
        d[i] = dims[i];
    const char *base = like->name ? like->name : "";
    size_t nb = strlen(base), ns = suffix ? strlen(suffix) : 0;
    char *name = ks__alloc(&g->alloc, nb + ns + 1);
    if (!name) return KS_STATUS_OUT_OF_MEMORY;
    memcpy(name, base, nb);
    if (ns) memcpy(name + nb, suffix, ns);
    name[nb + ns] = 0;
    ks_status st = ks__graph_add_tensor(g, name, dtype, rank, d, id_out);
    ks__free(&g->alloc, name);
    return st;
}

ks_status ks__graph_set_const(ks__graph *g, int32_t id, const void *data, size_t size_bytes,
                              bool copy) {
    if (id < 0 || (uint32_t)id >= g->num_tensors) return KS_STATUS_INVALID_ARGUMENT;
    ks__tensor *t = &g->tensors[id];
    void *d = (void *)data;
    if (copy) {
        d = ks__alloc_aligned(&g->alloc, size_bytes ? size_bytes : 1, 64);
        if (!d) return KS_STATUS_OUT_OF_MEMORY;
        if (size_bytes) memcpy(d, data, size_bytes);
    }
    if (!(t->flags & KS__TENSOR_BORROWED)) ks__free(&g->alloc, (void *)t->data);
    t->data = d;
    t->size_bytes = size_bytes;
    t->flags = (t->flags | KS__TENSOR_CONST) & ~KS__TENSOR_BORROWED;
    return KS_STATUS_OK;
}

ks_status ks__graph_set_quant(ks__graph *g, int32_t id, uint32_t count, int32_t axis,
                              const float *scales, const int32_t *zero_points) {
    if (id < 0 || (uint32_t)id >= g->num_tensors) return KS_STATUS_INVALID_ARGUMENT;
    ks__tensor *t = &g->tensors[id];
    ks__free(&g->alloc, t->quant.scales);
    ks__free(&g->alloc, t->quant.zero_points);
    memset(&t->quant, 0, sizeof(t->quant));
    if (count == 0) return KS_STATUS_OK;
    t->quant.scales = ks__alloc(&g->alloc, count * sizeof(float));
    t->quant.zero_points = ks__alloc(&g->alloc, count * sizeof(int32_t));
    if (!t->quant.scales || !t->quant.zero_points) {
        ks__free(&g->alloc, t->quant.scales);
        ks__free(&g->alloc, t->quant.zero_points);
        memset(&t->quant, 0, sizeof(t->quant));
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memcpy(t->quant.scales, scales, count * sizeof(float));
    if (zero_points)
        memcpy(t->quant.zero_points, zero_points, count * sizeof(int32_t));
    else
        memset(t->quant.zero_points, 0, count * sizeof(int32_t));
    t->quant.count = count;
    t->quant.axis = axis;
    return KS_STATUS_OK;
}

ks_status ks__graph_add_node(ks__graph *g, uint32_t op, const char *name, uint32_t num_inputs,
                             const int32_t *inputs, uint32_t num_outputs, const int32_t *outputs,
                             uint32_t *index_out) {
    if (num_inputs > 1024 || num_outputs > 1024) return KS_STATUS_LIMIT_EXCEEDED;
    ks_status st = grow(g, (void **)&g->nodes, &g->cap_nodes, g->num_nodes + 1, sizeof(ks__node));
    if (st) return st;
    ks__node *n = &g->nodes[g->num_nodes];
    memset(n, 0, sizeof(*n));
    n->op = op;
    n->name = ks__strdup(&g->alloc, name);
    n->inputs = ks__alloc(&g->alloc, (num_inputs ? num_inputs : 1) * sizeof(int32_t));
    n->outputs = ks__alloc(&g->alloc, (num_outputs ? num_outputs : 1) * sizeof(int32_t));
    if (!n->name || !n->inputs || !n->outputs) {
        ks__free(&g->alloc, n->name);
        ks__free(&g->alloc, n->inputs);
        ks__free(&g->alloc, n->outputs);
        memset(n, 0, sizeof(*n));
        return KS_STATUS_OUT_OF_MEMORY;
    }
    if (num_inputs) memcpy(n->inputs, inputs, num_inputs * sizeof(int32_t));
    if (num_outputs) memcpy(n->outputs, outputs, num_outputs * sizeof(int32_t));
    n->num_inputs = num_inputs;
    n->num_outputs = num_outputs;
    if (index_out) *index_out = g->num_nodes;
    g->num_nodes++;
    return KS_STATUS_OK;
}

ks_status ks__graph_set_io(ks__graph *g, uint32_t num_inputs, const int32_t *inputs,
                           uint32_t num_outputs, const int32_t *outputs) {
    int32_t *in = ks__alloc(&g->alloc, (num_inputs ? num_inputs : 1) * sizeof(int32_t));
    int32_t *out = ks__alloc(&g->alloc, (num_outputs ? num_outputs : 1) * sizeof(int32_t));
    if (!in || !out) {
        ks__free(&g->alloc, in);
        ks__free(&g->alloc, out);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    if (num_inputs) memcpy(in, inputs, num_inputs * sizeof(int32_t));
    if (num_outputs) memcpy(out, outputs, num_outputs * sizeof(int32_t));
    ks__free(&g->alloc, g->inputs);
    ks__free(&g->alloc, g->outputs);
    g->inputs = in;
    g->outputs = out;
    g->num_inputs = num_inputs;
    g->num_outputs = num_outputs;
    return KS_STATUS_OK;
}

ks_status ks__graph_set_meta(ks__graph *g, const char *key, const char *value) {
    for (uint32_t i = 0; i < g->num_meta; i++) {
        if (strcmp(g->meta[i].key, key) == 0) {
            char *v = ks__strdup(&g->alloc, value);
            if (!v) return KS_STATUS_OUT_OF_MEMORY;
            ks__free(&g->alloc, g->meta[i].value);
            g->meta[i].value = v;
            return KS_STATUS_OK;
        }
    }
    ks_status st = grow(g, (void **)&g->meta, &g->cap_meta, g->num_meta + 1, sizeof(ks__meta));
    if (st) return st;
    char *k = ks__strdup(&g->alloc, key);
    char *v = ks__strdup(&g->alloc, value);
    if (!k || !v) {
        ks__free(&g->alloc, k);
        ks__free(&g->alloc, v);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    g->meta[g->num_meta].key = k;
    g->meta[g->num_meta].value = v;
    g->num_meta++;
    return KS_STATUS_OK;
}

const char *ks__graph_get_meta(const ks__graph *g, const char *key) {
    for (uint32_t i = 0; i < g->num_meta; i++)
        if (strcmp(g->meta[i].key, key) == 0) return g->meta[i].value;
    return NULL;
}

int64_t ks__numel(int32_t rank, const int64_t *dims) {
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] != 0 && n > INT64_MAX / 4 / dims[i]) return -1;
        n *= dims[i];
    }
    return n;
}

/* ---- validation ---- */

ks_status ks__graph_validate(const ks__graph *g, char *err, size_t err_cap) {
    uint8_t *defined = ks__calloc(&g->alloc, g->num_tensors ? g->num_tensors : 1, 1);
    if (!defined) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = KS_STATUS_INVALID_MODEL;
    for (uint32_t i = 0; i < g->num_tensors; i++) {
        const ks__tensor *t = &g->tensors[i];
        if (t->dtype <= KS_DTYPE_INVALID || t->dtype >= KS_DTYPE_COUNT) {
            ks__fmt(err, err_cap, "tensor %u '%s': invalid dtype %d", i, t->name, (int)t->dtype);
            goto done;
        }
        if (t->rank < 0 || t->rank > KS_MAX_RANK) {
            ks__fmt(err, err_cap, "tensor %u '%s': invalid rank %d", i, t->name, t->rank);
            goto done;
        }
        for (int32_t d = 0; d < t->rank; d++) {
            if (t->dims[d] < -1 || t->dims[d] > (INT64_C(1) << 40)) {
                ks__fmt(err, err_cap, "tensor %u '%s': invalid dim[%d] = %lld", i, t->name, d,
                        (long long)t->dims[d]);
                goto done;
            }
        }
        if (t->flags & KS__TENSOR_CONST) {
            int64_t n = ks__numel(t->rank, t->dims);
            if (n < 0 || (uint64_t)n * ks_dtype_size(t->dtype) != t->size_bytes) {
                ks__fmt(err, err_cap,
                        "tensor %u '%s': constant holds %zu bytes, shape and dtype need %lld", i,
                        t->name, t->size_bytes,
                        (long long)(n < 0 ? -1 : n * (int64_t)ks_dtype_size(t->dtype)));
                goto done;
            }
            defined[i] = 1;
        }
        if (t->quant.count > 1) {
            if (t->quant.axis < 0 || t->quant.axis >= t->rank ||
                t->dims[t->quant.axis] != (int64_t)t->quant.count) {
                ks__fmt(err, err_cap, "tensor %u '%s': %u quantization channels on axis %d", i,
                        t->name, t->quant.count, t->quant.axis);
                goto done;
            }
        }
        for (uint32_t q = 0; q < t->quant.count; q++) {
            if (!(t->quant.scales[q] > 0.0f) || !isfinite(t->quant.scales[q])) {
                ks__fmt(err, err_cap, "tensor %u '%s': invalid quantization scale %g", i, t->name,
                        (double)t->quant.scales[q]);
                goto done;
            }
        }
    }
    for (uint32_t i = 0; i < g->num_inputs; i++) {
        int32_t id = g->inputs[i];
        if (id < 0 || (uint32_t)id >= g->num_tensors) {
            ks__fmt(err, err_cap, "graph input %u: tensor id %d out of range", i, id);
            goto done;
        }
        defined[id] = 1;
    }
    for (uint32_t ni = 0; ni < g->num_nodes; ni++) {
        const ks__node *n = &g->nodes[ni];
        const ks__op_info *info = ks__op_get_info(n->op);
        if (!info) {
            ks__fmt(err, err_cap, "node %u '%s': unknown op id %u", ni, n->name, n->op);
            goto done;
        }
        if (n->num_inputs < info->min_inputs || n->num_inputs > info->max_inputs ||
            n->num_outputs < info->min_outputs || n->num_outputs > info->max_outputs) {
            ks__fmt(err, err_cap, "node %u '%s' (%s): %u inputs / %u outputs not allowed", ni,
                    n->name, info->name, n->num_inputs, n->num_outputs);
            goto done;
        }
        for (uint32_t k = 0; k < n->num_inputs; k++) {
            int32_t id = n->inputs[k];
            if (id == -1 && k >= info->min_inputs) continue;
            if (id < 0 || (uint32_t)id >= g->num_tensors || !defined[id]) {
                ks__fmt(err, err_cap, "node %u '%s' (%s): input %u (tensor %d) is %s", ni, n->name,
                        info->name, k, id,
                        (id < 0 || (uint32_t)id >= g->num_tensors) ? "out of range"
                                                                   : "used before defined");
                goto done;
            }
        }
        for (uint32_t k = 0; k < n->num_outputs; k++) {
            int32_t id = n->outputs[k];
            if (id < 0 || (uint32_t)id >= g->num_tensors || defined[id]) {
                ks__fmt(err, err_cap, "node %u '%s' (%s): output %u (tensor %d) is %s", ni, n->name,
                        info->name, k, id,
                        (id < 0 || (uint32_t)id >= g->num_tensors) ? "out of range"
                                                                   : "defined twice");
                goto done;
            }
            defined[id] = 1;
        }
    }
    for (uint32_t i = 0; i < g->num_outputs; i++) {
        int32_t id = g->outputs[i];
        if (id < 0 || (uint32_t)id >= g->num_tensors || !defined[id]) {
            ks__fmt(err, err_cap, "graph output %u: tensor %d is never produced", i, id);
            goto done;
        }
    }
    st = KS_STATUS_OK;
done:
    ks__free(&g->alloc, defined);
    return st;
}

/* ---- fp16 ---- */

float ks__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalize */
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

uint16_t ks__f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t man = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return (uint16_t)half;
}
