/* Session precision KS_PRECISION_FP16 on the CPU: the graph pass that stores the activations
 * between fp16-capable nodes in fp16 (precision.h). */
#include "precision.h"

#include <string.h>

#include "model.h"

static bool is_const(const ks__tensor *t) {
    return (t->flags & KS__TENSOR_CONST) != 0;
}

/* A float activation the pass may store in fp16: F32, not quantized, not a constant. */
static bool is_f32_act(const ks__graph *g, int32_t t) {
    if (t < 0 || (uint32_t)t >= g->num_tensors) return false;
    const ks__tensor *s = &g->tensors[t];
    return !is_const(s) && s->dtype == KS_DTYPE_F32 && s->quant.count == 0;
}

static bool known_dims(const ks__tensor *t) {
    for (int32_t d = 0; d < t->rank; d++)
        if (t->dims[d] <= 0) return false;
    return true;
}

/* A rank-4 NHWC tensor of one pixel per image: a global pooling's output, and what the
 * squeeze-and-excitation convolutions after it compute (gates that scale a whole feature map). */
static bool one_pixel(const ks__graph *g, int32_t t) {
    const ks__tensor *s = &g->tensors[t];
    return s->rank == 4 && s->dims[1] == 1 && s->dims[2] == 1;
}

/* Nodes that compute in fp16 (the NEON fp16 kernels of impls_arm_f16.inc take them: groups-1
 * and depthwise convolutions, pooling, same-shape ADD / MUL). Nodes that write one pixel stay
 * fp32: next to nothing to gain, and their values gate whole feature maps (selfie
 * segmentation's squeeze-and-excitation blocks: one such 16 -> 8 conv stored in fp16 moved the
 * golden test's mask by 1.5e-2 rel L2 on the Messi photo). */
static bool f16_compute(const ks__graph *g, const ks__node *n) {
    if (n->num_outputs == 1 && n->outputs[0] >= 0 && one_pixel(g, n->outputs[0])) return false;
    switch (n->op) {
    case KS_OP_CONV2D: {
        if (n->num_inputs < 2 || !is_f32_act(g, n->inputs[0]) || n->inputs[1] < 0) return false;
        const ks__tensor *w = &g->tensors[n->inputs[1]];
        if (!is_const(w) || w->quant.count || w->rank != 4 ||
            (w->dtype != KS_DTYPE_F32 && w->dtype != KS_DTYPE_F16))
            return false;
        if (n->ip[10] == KS_ACT_TABLE || n->ip[12] == 1) return false;
        if (n->num_inputs > 3 && n->inputs[3] >= 0 && !is_f32_act(g, n->inputs[3])) return false;
        int32_t groups = n->ip[9] <= 0 ? 1 : n->ip[9];
        /* groups 1, or depthwise with one output channel per input channel */
        return groups == 1 || (w->dims[3] == 1 && w->dims[0] == groups);
    }
    case KS_OP_POOL2D:
        return n->num_inputs == 1 && is_f32_act(g, n->inputs[0]);
    case KS_OP_ADD:
    case KS_OP_MUL: {
        if (n->num_inputs != 2 || !is_f32_act(g, n->inputs[0]) || !is_f32_act(g, n->inputs[1]))
            return false;
        const ks__tensor *a = &g->tensors[n->inputs[0]], *b = &g->tensors[n->inputs[1]];
        if (a->rank != b->rank || !known_dims(a)) return false;
        return memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(a->dims[0])) == 0;
    }
    default:
        return false;
    }
}

/* Nodes that only move values (any element size): fp16 when their data comes from fp16. */
static bool f16_data(const ks__graph *g, const ks__node *n) {
    switch (n->op) {
    case KS_OP_RESHAPE:
    case KS_OP_SQUEEZE:
    case KS_OP_UNSQUEEZE:
    case KS_OP_TRANSPOSE:
    case KS_OP_SPLIT:
    case KS_OP_SLICE:
    case KS_OP_DEPTH_TO_SPACE:
    case KS_OP_SPACE_TO_DEPTH:
        return n->num_inputs >= 1 && is_f32_act(g, n->inputs[0]);
    case KS_OP_PAD: /* the constant value in fp[0], not as a tensor */
        return n->num_inputs == 2 && is_f32_act(g, n->inputs[0]);
    case KS_OP_RESIZE: /* nearest only: bilinear blends in fp32 */
        return n->ip[0] == 0 && is_f32_act(g, n->inputs[0]);
    case KS_OP_CONCAT:
        for (uint32_t k = 0; k < n->num_inputs; k++)
            if (!is_f32_act(g, n->inputs[k])) return false;
        return n->num_inputs > 0;
    default:
        return false;
    }
}

typedef struct f16_builder {
    const ks__graph *src;
    ks__graph *dst;
    uint8_t *f16;      /* per src node */
    uint8_t *retyped;  /* per src tensor: F16 in dst */
    int32_t *conv_id;  /* per src tensor: the added copy in the other dtype, -1 */
    int32_t *producer; /* per src tensor: src node, -1 */
} f16_builder;

/* A CAST of src tensor t (as it is in dst) into the other float dtype, shared by its readers. */
static ks_status converted(f16_builder *b, int32_t t, int32_t *id_out) {
    if (b->conv_id[t] >= 0) {
        *id_out = b->conv_id[t];
        return KS_STATUS_OK;
    }
    bool to16 = !b->retyped[t];
    int32_t id;
    uint32_t idx;
    ks_status st = ks__graph_add_tensor_like(b->dst, &b->src->tensors[t], to16 ? ":f16" : ":f32",
                                             to16 ? KS_DTYPE_F16 : KS_DTYPE_F32, -1, NULL, &id);
    if (st || (st = ks__graph_add_node(b->dst, KS_OP_CAST, to16 ? "precision:f16" : "precision:f32",
                                       1, &t, 1, &id, &idx)))
        return st;
    b->conv_id[t] = id;
    *id_out = id;
    return KS_STATUS_OK;
}

static bool is_graph_output(const ks__graph *g, int32_t t) {
    for (uint32_t o = 0; o < g->num_outputs; o++)
        if (g->outputs[o] == t) return true;
    return false;
}

/* Node i of src into dst; io: scratch for num_inputs + num_outputs ids. */
static ks_status emit_with(f16_builder *b, uint32_t i, int32_t *io) {
    const ks__graph *g = b->src;
    const ks__node *n = &g->nodes[i];
    int32_t *in = io, *out = io + n->num_inputs;
    ks_status st;
    bool f16 = b->f16[i] != 0;
    for (uint32_t k = 0; k < n->num_inputs; k++) {
        int32_t t = n->inputs[k];
        in[k] = t;
        if (t < 0 || is_const(&g->tensors[t])) continue;
        /* fp16 nodes read every float activation in fp16, the others in fp32 */
        bool want16 = f16 && is_f32_act(g, t);
        if (want16 != (b->retyped[t] != 0) && (st = converted(b, t, &in[k]))) return st;
    }
    /* an fp16 node writing a graph output writes an F16 copy, cast back below */
    for (uint32_t k = 0; k < n->num_outputs; k++) {
        int32_t t = n->outputs[k];
        out[k] = t;
        if (f16 && t >= 0 && is_graph_output(g, t) &&
            (st = ks__graph_add_tensor_like(b->dst, &g->tensors[t], ":f16", KS_DTYPE_F16, -1, NULL,
                                            &out[k])))
            return st;
    }
    uint32_t idx;
    if ((st = ks__graph_add_node(b->dst, n->op, n->name, n->num_inputs, in, n->num_outputs, out,
                                 &idx)))
        return st;
    ks__node *d = &b->dst->nodes[idx];
    memcpy(d->ip, n->ip, sizeof(d->ip));
    memcpy(d->fp, n->fp, sizeof(d->fp));
    for (uint32_t k = 0; k < n->num_outputs; k++)
        if (out[k] != n->outputs[k] &&
            (st = ks__graph_add_node(b->dst, KS_OP_CAST, "precision:f32", 1, &out[k], 1,
                                     &n->outputs[k], &idx)))
            return st;
    return KS_STATUS_OK;
}

static ks_status emit(f16_builder *b, uint32_t i) {
    const ks__node *n = &b->src->nodes[i];
    size_t count = (size_t)n->num_inputs + n->num_outputs;
    int32_t local[64],
        *io = count <= 64 ? local : ks__alloc(&b->src->alloc, count * sizeof(int32_t));
    if (!io) return KS_STATUS_OUT_OF_MEMORY;
    ks_status st = emit_with(b, i, io);
    if (io != local) ks__free(&b->src->alloc, io);
    return st;
}

ks_status ks__prec_build_f16(const ks__graph *g, ks__graph *out, uint32_t *num_f16_out, char *err,
                             size_t err_cap) {
    ks__graph_init(out, &g->alloc);
    *num_f16_out = 0;
    uint32_t nt = g->num_tensors ? g->num_tensors : 1, nn = g->num_nodes ? g->num_nodes : 1;
    f16_builder b = {g, out, NULL, NULL, NULL, NULL};
    b.f16 = ks__calloc(&g->alloc, nn, 1);
    b.retyped = ks__calloc(&g->alloc, nt, 1);
    b.conv_id = ks__alloc(&g->alloc, (size_t)nt * sizeof(int32_t));
    b.producer = ks__alloc(&g->alloc, (size_t)nt * sizeof(int32_t));
    ks_status st = KS_STATUS_OK;
    if (!b.f16 || !b.retyped || !b.conv_id || !b.producer) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    for (uint32_t t = 0; t < nt; t++)
        b.conv_id[t] = b.producer[t] = -1;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        for (uint32_t k = 0; k < n->num_outputs; k++)
            if (n->outputs[k] >= 0 && (uint32_t)n->outputs[k] < g->num_tensors)
                b.producer[n->outputs[k]] = (int32_t)i;
        bool f16 = f16_compute(g, n);
        if (!f16 && f16_data(g, n)) /* data nodes follow their first input */
            f16 = b.producer[n->inputs[0]] >= 0 && b.f16[b.producer[n->inputs[0]]];
        if (!f16) continue;
        /* every output a float activation (what the kernels store) */
        for (uint32_t k = 0; k < n->num_outputs; k++)
            f16 = f16 && is_f32_act(g, n->outputs[k]);
        if (!f16) continue;
        b.f16[i] = 1;
        (*num_f16_out)++;
        for (uint32_t k = 0; k < n->num_outputs; k++)
            if (!is_graph_output(g, n->outputs[k])) b.retyped[n->outputs[k]] = 1;
    }
    for (uint32_t t = 0; t < g->num_tensors; t++) {
        const ks__tensor *s = &g->tensors[t];
        int32_t id;
        if ((st = ks__graph_add_tensor(out, s->name, b.retyped[t] ? KS_DTYPE_F16 : s->dtype,
                                       s->rank, s->dims, &id)))
            goto done;
        ks__tensor *d = &out->tensors[id];
        if (is_const(s)) {
            d->data = s->data;
            d->size_bytes = s->size_bytes;
            d->flags = s->flags | KS__TENSOR_CONST | KS__TENSOR_BORROWED;
        }
        if (s->quant.count && (st = ks__graph_set_quant(out, id, s->quant.count, s->quant.axis,
                                                        s->quant.scales, s->quant.zero_points)))
            goto done;
    }
    for (uint32_t i = 0; i < g->num_nodes; i++)
        if ((st = emit(&b, i))) goto done;
    if ((st = ks__graph_set_io(out, g->num_inputs, g->inputs, g->num_outputs, g->outputs)))
        goto done;
    for (uint32_t k = 0; k < g->num_meta; k++)
        if ((st = ks__graph_set_meta(out, g->meta[k].key, g->meta[k].value))) goto done;
    st = ks__graph_validate(out, err, err_cap);
done:
    if (st == KS_STATUS_OUT_OF_MEMORY && err && err_cap && !err[0])
        ks__fmt(err, err_cap, "out of memory building the fp16 graph");
    if (st) ks__graph_free(out);
    ks__free(&g->alloc, b.f16);
    ks__free(&g->alloc, b.retyped);
    ks__free(&g->alloc, b.conv_id);
    ks__free(&g->alloc, b.producer);
    return st;
}
