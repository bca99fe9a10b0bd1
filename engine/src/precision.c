/* Session precision: the graph pass that runs int8 layers of a quantized model in fp32, and the
 * cut that chooses them (precision.h). The timing that feeds the cut is the runtime's
 * (engine/runtime/precision_plan.c). */
#include "precision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

bool ks__precision_parse(const char *s, ks_precision *out) {
    static const char *const names[KS_PRECISION_COUNT] = {"stored", "f32", "fastest",
                                                          "fp16-storage", "fp16"};
    for (int p = 0; s && p < KS_PRECISION_COUNT; p++)
        if (strcmp(s, names[p]) == 0) {
            *out = (ks_precision)p;
            return true;
        }
    return false;
}

static bool is_const(const ks__tensor *t) {
    return (t->flags & KS__TENSOR_CONST) != 0;
}

/* A per-tensor quantized U8/I8 activation. */
static bool is_qact(const ks__tensor *t) {
    return !is_const(t) && (t->dtype == KS_DTYPE_I8 || t->dtype == KS_DTYPE_U8) &&
           t->quant.count == 1 && t->quant.scales;
}

bool ks__prec_is_qact(const ks__tensor *t) {
    return is_qact(t);
}

/* A quantized constant we can dequantize (weights, biases, slopes, operands). */
static bool is_qconst(const ks__tensor *t) {
    return is_const(t) && t->quant.count >= 1 && t->quant.scales &&
           (t->dtype == KS_DTYPE_I8 || t->dtype == KS_DTYPE_U8 || t->dtype == KS_DTYPE_I32);
}

static bool is_int_dtype(ks_dtype d) {
    return d == KS_DTYPE_I32 || d == KS_DTYPE_I64 || d == KS_DTYPE_BOOL;
}

static bool op_has_float_twin(uint32_t op) {
    switch (op) {
    case KS_OP_CONV2D:
    case KS_OP_FULLY_CONNECTED:
    case KS_OP_POOL2D:
    case KS_OP_ADD:
    case KS_OP_SUB:
    case KS_OP_MUL:
    case KS_OP_MAXIMUM:
    case KS_OP_MINIMUM:
    case KS_OP_RELU:
    case KS_OP_RELU6:
    case KS_OP_RELU_N1_TO_1:
    case KS_OP_LEAKY_RELU:
    case KS_OP_SIGMOID:
    case KS_OP_TANH:
    case KS_OP_HARD_SWISH:
    case KS_OP_PRELU:
    case KS_OP_RESHAPE:
    case KS_OP_SQUEEZE:
    case KS_OP_UNSQUEEZE:
    case KS_OP_TRANSPOSE:
    case KS_OP_CONCAT:
    case KS_OP_SPLIT:
    case KS_OP_SLICE:
    case KS_OP_PAD:
    case KS_OP_RESIZE:
    case KS_OP_DEPTH_TO_SPACE:
    case KS_OP_SPACE_TO_DEPTH:
        return true;
    default:
        return false;
    }
}

bool ks__prec_demotable(const ks__graph *g, uint32_t i) {
    if (!g || i >= g->num_nodes) return false;
    const ks__node *n = &g->nodes[i];
    if (!op_has_float_twin(n->op) || n->num_inputs == 0 || n->inputs[0] < 0) return false;
    if (!is_qact(&g->tensors[n->inputs[0]])) return false;
    if (n->op == KS_OP_CONV2D) {
        int32_t act = n->ip[10];
        if (act == KS_ACT_PRELU) return false;
        if (act == KS_ACT_TABLE) {
            /* only when the file says which function the table holds (ops.inc ip 13), and
             * without a residual */
            int32_t fa = n->ip[13];
            if (!(fa == KS_ACT_SIGMOID || fa == KS_ACT_TANH || fa == KS_ACT_HARD_SWISH ||
                  fa == KS_ACT_SILU || fa == KS_ACT_RELU || fa == KS_ACT_RELU6 ||
                  fa == KS_ACT_RELU_N1_TO_1 || fa == KS_ACT_LEAKY_RELU) ||
                n->ip[12] != 1 || (n->num_inputs > 3 && n->inputs[3] >= 0))
                return false;
        } else if (n->ip[12] == 1 && (n->num_inputs < 4 || n->inputs[3] < 0)) {
            return false;
        }
    }
    if (n->op == KS_OP_CONV2D || n->op == KS_OP_FULLY_CONNECTED) {
        /* quantized weights; a bias that has no params of its own is I32 at in_scale * w_scale
         * (ops.inc) */
        if (n->num_inputs < 2 || n->inputs[1] < 0 || !is_qconst(&g->tensors[n->inputs[1]]))
            return false;
        if (n->num_inputs > 2 && n->inputs[2] >= 0) {
            const ks__tensor *bt = &g->tensors[n->inputs[2]];
            const ks__tensor *wt = &g->tensors[n->inputs[1]];
            if (!is_const(bt) || bt->dtype != KS_DTYPE_I32 ||
                (!bt->quant.count && wt->quant.count != 1 &&
                 (bt->rank != 1 || bt->dims[0] != (int64_t)wt->quant.count)))
                return false;
        }
    }
    bool table = n->op == KS_OP_CONV2D && n->ip[10] == KS_ACT_TABLE;
    for (uint32_t k = 0; k < n->num_inputs; k++) {
        if (n->inputs[k] < 0 || (table && k == 4)) continue; /* the table is dropped */
        const ks__tensor *t = &g->tensors[n->inputs[k]];
        bool ok = is_const(t) ? (is_qconst(t) || (t->quant.count == 0 && is_int_dtype(t->dtype)))
                              : (is_qact(t) || (t->quant.count == 0 && is_int_dtype(t->dtype)));
        if (!ok) return false;
    }
    for (uint32_t k = 0; k < n->num_outputs; k++)
        if (!is_qact(&g->tensors[n->outputs[k]])) return false;
    return true;
}

uint32_t ks__prec_count_demotable(const ks__graph *g) {
    uint32_t c = 0;
    for (uint32_t i = 0; g && i < g->num_nodes; i++)
        c += ks__prec_demotable(g, i);
    return c;
}

/* ---- building the mixed graph ---- */

typedef struct builder {
    const ks__graph *src;
    ks__graph *dst;
    const uint8_t *run32; /* per src node: emitted in fp32 (demotable and chosen) */
    int32_t *producer;    /* per src tensor: src node, -1 */
    uint8_t *retyped;     /* per src tensor: quantized in src, F32 in dst */
    int32_t *f32_id;      /* per src tensor: an added F32 copy (DEQUANTIZE), -1 */
    int32_t *q_id;        /* per src tensor: an added quantized copy (QUANTIZE), -1 */
    int32_t *prelu;       /* per src node: a fp32 conv's PRELU reader fused into it, -1 */
    int32_t *src_node;    /* per dst node */
    uint32_t cap_src_node;
    char *err;
    size_t err_cap;
} builder;

static ks_status add_node(builder *b, uint32_t op, const char *name, uint32_t ni, const int32_t *in,
                          uint32_t no, const int32_t *out, int32_t from, uint32_t *idx) {
    ks_status st = ks__graph_add_node(b->dst, op, name, ni, in, no, out, idx);
    if (st) return st;
    if (*idx >= b->cap_src_node) {
        uint32_t nc = b->cap_src_node ? b->cap_src_node * 2 : 64;
        while (nc <= *idx)
            nc *= 2;
        int32_t *n = ks__alloc(&b->src->alloc, (size_t)nc * sizeof(int32_t));
        if (!n) return KS_STATUS_OUT_OF_MEMORY;
        if (b->src_node) memcpy(n, b->src_node, (size_t)b->cap_src_node * sizeof(int32_t));
        ks__free(&b->src->alloc, b->src_node);
        b->src_node = n;
        b->cap_src_node = nc;
    }
    b->src_node[*idx] = from;
    return KS_STATUS_OK;
}

static ks_status add_tensor_like(builder *b, int32_t t, const char *suffix, ks_dtype dtype,
                                 int32_t *id) {
    return ks__graph_add_tensor_like(b->dst, &b->src->tensors[t], suffix, dtype, -1, NULL, id);
}

/* The F32 version of activation t in dst. */
static ks_status get_f32(builder *b, int32_t t, int32_t *id_out) {
    const ks__tensor *s = &b->src->tensors[t];
    if (!is_qact(s) || b->retyped[t]) {
        *id_out = t;
        return KS_STATUS_OK;
    }
    /* A kept file QUANTIZE of an F32 tensor: read that tensor instead of re-dequantizing. */
    int32_t p = b->producer[t];
    if (p >= 0 && b->src->nodes[p].op == KS_OP_QUANTIZE) {
        int32_t in = b->src->nodes[p].inputs[0];
        if (in >= 0 && b->src->tensors[in].dtype == KS_DTYPE_F32) return get_f32(b, in, id_out);
    }
    if (b->f32_id[t] >= 0) {
        *id_out = b->f32_id[t];
        return KS_STATUS_OK;
    }
    int32_t id;
    uint32_t idx;
    ks_status st = add_tensor_like(b, t, ":f32", KS_DTYPE_F32, &id);
    if (st || (st = add_node(b, KS_OP_DEQUANTIZE, "precision:dequantize", 1, &t, 1, &id, -1, &idx)))
        return st;
    b->f32_id[t] = id;
    *id_out = id;
    return KS_STATUS_OK;
}

/* The quantized version (src dtype and params) of activation t in dst. */
static ks_status get_q(builder *b, int32_t t, int32_t *id_out) {
    if (!b->retyped[t]) {
        *id_out = t;
        return KS_STATUS_OK;
    }
    if (b->q_id[t] >= 0) {
        *id_out = b->q_id[t];
        return KS_STATUS_OK;
    }
    const ks__tensor *s = &b->src->tensors[t];
    int32_t id;
    uint32_t idx;
    ks_status st = add_tensor_like(b, t, ":q", s->dtype, &id);
    if (st ||
        (st = ks__graph_set_quant(b->dst, id, s->quant.count, s->quant.axis, s->quant.scales,
                                  s->quant.zero_points)) ||
        (st = add_node(b, KS_OP_QUANTIZE, "precision:quantize", 1, &t, 1, &id, -1, &idx)))
        return st;
    b->q_id[t] = id;
    *id_out = id;
    return KS_STATUS_OK;
}

/* A new F32 constant holding the real values of quantized constant t. implied: the params of
 * a conv/FC bias stored without its own (scales in_scale * w_scale[c], zero point 0), else
 * NULL. */
static ks_status dequantize_const(builder *b, int32_t t, const ks__quant *implied,
                                  int32_t *id_out) {
    const ks__tensor *s = &b->src->tensors[t];
    const ks__quant *qp = implied ? implied : &s->quant;
    int64_t n = ks__numel(s->rank, s->dims);
    size_t es = ks_dtype_size(s->dtype);
    if (n < 0 || !es || (uint64_t)n * es != s->size_bytes) {
        ks__fmt(b->err, b->err_cap, "constant '%s' has %zu bytes for its shape", s->name,
                s->size_bytes);
        return KS_STATUS_INVALID_MODEL;
    }
    int64_t channels = 1, inner = 1;
    if (qp->count > 1) {
        int32_t ax = qp->axis;
        if (ax < 0 || ax >= s->rank || s->dims[ax] != (int64_t)qp->count) {
            ks__fmt(b->err, b->err_cap, "constant '%s': %u scales along axis %d do not fit",
                    s->name, qp->count, ax);
            return KS_STATUS_INVALID_MODEL;
        }
        channels = s->dims[ax];
        for (int32_t k = ax + 1; k < s->rank; k++)
            inner *= s->dims[k];
    }
    float *v = ks__alloc_aligned(&b->dst->alloc, (size_t)(n ? n : 1) * sizeof(float), 64);
    if (!v) return KS_STATUS_OUT_OF_MEMORY;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = channels > 1 ? (i / inner) % channels : 0;
        int32_t zp = qp->zero_points ? qp->zero_points[c] : 0;
        int32_t q = s->dtype == KS_DTYPE_I8   ? ((const int8_t *)s->data)[i]
                    : s->dtype == KS_DTYPE_U8 ? ((const uint8_t *)s->data)[i]
                                              : ((const int32_t *)s->data)[i];
        v[i] = (float)((double)qp->scales[c] * ((double)q - zp));
    }
    int32_t id;
    ks_status st = add_tensor_like(b, t, ":f32", KS_DTYPE_F32, &id);
    if (st || (st = ks__graph_set_const(b->dst, id, v, (size_t)n * sizeof(float), false))) {
        if (st) ks__free(&b->dst->alloc, v);
        return st;
    }
    *id_out = id;
    return KS_STATUS_OK;
}

/* The F32 bias of quantized conv/FC n whose I32 bias has no params of its own. */
static ks_status implied_bias(builder *b, const ks__node *n, int32_t *id_out) {
    const ks__tensor *x = &b->src->tensors[n->inputs[0]], *w = &b->src->tensors[n->inputs[1]];
    const ks__tensor *bt = &b->src->tensors[n->inputs[2]];
    uint32_t count = w->quant.count > 1 ? w->quant.count : 1;
    ks__quant q = {count, 0, NULL, NULL};
    q.scales = ks__alloc(&b->src->alloc, count * sizeof(float));
    if (!q.scales) return KS_STATUS_OUT_OF_MEMORY;
    for (uint32_t c = 0; c < count; c++)
        q.scales[c] = x->quant.scales[0] * w->quant.scales[c];
    if (count > 1 && (bt->rank != 1 || bt->dims[0] != (int64_t)count)) count = 0;
    ks_status st = count ? dequantize_const(b, n->inputs[2], &q, id_out) : KS_STATUS_INVALID_MODEL;
    if (!count) ks__fmt(b->err, b->err_cap, "bias '%s' does not match its weights", bt->name);
    ks__free(&b->src->alloc, q.scales);
    return st;
}

static ks_status copy_tensors(builder *b) {
    const ks__graph *g = b->src;
    for (uint32_t t = 0; t < g->num_tensors; t++) {
        const ks__tensor *s = &g->tensors[t];
        bool f32 = b->retyped[t] != 0;
        int32_t id;
        ks_status st = ks__graph_add_tensor(b->dst, s->name, f32 ? KS_DTYPE_F32 : s->dtype, s->rank,
                                            s->dims, &id);
        if (st) return st;
        ks__tensor *d = &b->dst->tensors[id];
        if (is_const(s)) {
            d->data = s->data;
            d->size_bytes = s->size_bytes;
            d->flags = s->flags | KS__TENSOR_CONST | KS__TENSOR_BORROWED;
        }
        if (!f32 && s->quant.count &&
            (st = ks__graph_set_quant(b->dst, id, s->quant.count, s->quant.axis, s->quant.scales,
                                      s->quant.zero_points)))
            return st;
    }
    return KS_STATUS_OK;
}

static ks_status emit_node(builder *b, uint32_t i) {
    const ks__graph *g = b->src;
    const ks__node *n = &g->nodes[i];
    int32_t in[64];
    ks_status st;
    if (n->num_inputs > 64) {
        ks__fmt(b->err, b->err_cap, "node '%s' has %u inputs (at most 64)", n->name, n->num_inputs);
        return KS_STATUS_INVALID_MODEL;
    }
    bool f32 = b->run32[i] != 0;
    if (f32 && n->op == KS_OP_PRELU && b->prelu[i] == -2) return KS_STATUS_OK; /* fused */
    bool border = n->op == KS_OP_QUANTIZE || n->op == KS_OP_DEQUANTIZE;
    if (border && n->num_inputs == 1 && n->num_outputs == 1 && n->inputs[0] >= 0) {
        int32_t x = n->inputs[0], y = n->outputs[0];
        /* both sides F32 in dst: a free view */
        bool x_f32 = g->tensors[x].dtype == KS_DTYPE_F32 || b->retyped[x];
        bool y_f32 = g->tensors[y].dtype == KS_DTYPE_F32 || b->retyped[y];
        if (x_f32 && y_f32) {
            uint32_t idx;
            if ((st = add_node(b, KS_OP_RESHAPE, n->name, 1, &x, 1, &y, (int32_t)i, &idx)))
                return st;
            ks__node *d = &b->dst->nodes[idx];
            d->ip[0] = g->tensors[y].rank; /* every dim 0: copy the input's */
            return KS_STATUS_OK;
        }
    }
    bool table = f32 && n->op == KS_OP_CONV2D && n->ip[10] == KS_ACT_TABLE;
    for (uint32_t k = 0; k < n->num_inputs; k++) {
        int32_t t = n->inputs[k];
        if (t < 0 || (table && k >= 3)) {
            in[k] = -1;
            continue;
        }
        const ks__tensor *s = &g->tensors[t];
        if (is_const(s)) {
            bool bias = (n->op == KS_OP_CONV2D || n->op == KS_OP_FULLY_CONNECTED) && k == 2 &&
                        !s->quant.count;
            if (f32 && bias) {
                if ((st = implied_bias(b, n, &in[k]))) return st;
            } else if (f32 && is_qconst(s)) {
                if ((st = dequantize_const(b, t, NULL, &in[k]))) return st;
            } else {
                in[k] = t;
            }
        } else if (f32 || !is_qact(s)) {
            if ((st = get_f32(b, t, &in[k]))) return st;
        } else {
            if ((st = get_q(b, t, &in[k]))) return st;
        }
    }
    uint32_t idx, ni = table ? 3 : n->num_inputs;
    const int32_t *outs = n->outputs;
    if (f32 && b->prelu[i] >= 0) {
        /* float CONV2D with act PRELU: the slopes are input 4 */
        const ks__node *pr = &g->nodes[b->prelu[i]];
        for (; ni < 4; ni++)
            in[ni] = -1;
        if ((st = dequantize_const(b, pr->inputs[1], NULL, &in[4]))) return st;
        ni = 5;
        outs = pr->outputs;
    }
    if ((st = add_node(b, n->op, n->name, ni, in, n->num_outputs, outs, (int32_t)i, &idx)))
        return st;
    ks__node *d = &b->dst->nodes[idx];
    memcpy(d->ip, n->ip, sizeof(d->ip));
    memcpy(d->fp, n->fp, sizeof(d->fp));
    if (f32 && n->op == KS_OP_CONV2D && n->ip[12] == 1) {
        /* float CONV2D: act(conv + bias + residual) is what the quantized pair computes */
        d->ip[11] = 0;
        d->ip[12] = 0;
        d->fp[1] = 0.0f;
    }
    if (f32 && b->prelu[i] >= 0) d->ip[10] = KS_ACT_PRELU;
    if (table) { /* the function the table holds (ops.inc CONV2D ip 13) */
        d->ip[10] = n->ip[13];
        d->ip[13] = 0;
    }
    return KS_STATUS_OK;
}

/* Marks the fp32 PRELUs that fold into the fp32 conv they read (as the float importers fuse
 * them): the conv has no activation, the PRELU is its output's only reader and no graph
 * output, and the slopes are one per output channel. b->prelu[conv] = the PRELU node,
 * b->prelu[PRELU] = -2. */
static ks_status plan_prelu_fusion(builder *b) {
    const ks__graph *g = b->src;
    uint32_t nt = g->num_tensors ? g->num_tensors : 1;
    uint32_t *readers = ks__calloc(&g->alloc, nt, sizeof(uint32_t));
    if (!readers) return KS_STATUS_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].num_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) readers[g->nodes[i].inputs[k]]++;
    for (uint32_t o = 0; o < g->num_outputs; o++)
        if (g->outputs[o] >= 0) readers[g->outputs[o]] += 2;
    for (uint32_t j = 0; j < g->num_nodes; j++) {
        const ks__node *pr = &g->nodes[j];
        if (pr->op != KS_OP_PRELU || !b->run32[j] || pr->inputs[0] < 0 || pr->inputs[1] < 0)
            continue;
        int32_t x = pr->inputs[0], p = b->producer[x];
        if (p < 0 || !b->run32[p] || readers[x] != 1) continue;
        const ks__node *c = &g->nodes[p];
        if (c->op != KS_OP_CONV2D || c->ip[10] != KS_ACT_NONE || c->num_inputs > 4) continue;
        const ks__tensor *w = &g->tensors[c->inputs[1]], *al = &g->tensors[pr->inputs[1]];
        int64_t co = w->dims[0];
        if (!is_qconst(al) || al->rank < 1 || al->dims[al->rank - 1] != co ||
            ks__numel(al->rank, al->dims) != co)
            continue;
        b->prelu[p] = (int32_t)j;
        b->prelu[j] = -2;
    }
    ks__free(&g->alloc, readers);
    return KS_STATUS_OK;
}

ks_status ks__prec_build(const ks__graph *g, const uint8_t *fp32, ks__graph *out,
                         int32_t **src_node_out, char *err, size_t err_cap) {
    ks__graph_init(out, &g->alloc);
    if (src_node_out) *src_node_out = NULL;
    builder b;
    memset(&b, 0, sizeof(b));
    b.src = g;
    b.dst = out;
    b.err = err;
    b.err_cap = err_cap;
    uint32_t nt = g->num_tensors ? g->num_tensors : 1, nn = g->num_nodes ? g->num_nodes : 1;
    uint8_t *run32 = ks__calloc(&g->alloc, nn, 1);
    b.producer = ks__alloc(&g->alloc, (size_t)nt * sizeof(int32_t));
    b.retyped = ks__calloc(&g->alloc, nt, 1);
    b.f32_id = ks__alloc(&g->alloc, (size_t)nt * sizeof(int32_t));
    b.q_id = ks__alloc(&g->alloc, (size_t)nt * sizeof(int32_t));
    b.prelu = ks__alloc(&g->alloc, (size_t)nn * sizeof(int32_t));
    b.run32 = run32;
    ks_status st = KS_STATUS_OK;
    if (!run32 || !b.producer || !b.retyped || !b.f32_id || !b.q_id || !b.prelu) {
        st = KS_STATUS_OUT_OF_MEMORY;
        goto done;
    }
    for (uint32_t t = 0; t < nt; t++)
        b.producer[t] = b.f32_id[t] = b.q_id[t] = -1;
    for (uint32_t i = 0; i < nn; i++)
        b.prelu[i] = -1;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].num_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0) b.producer[g->nodes[i].outputs[k]] = (int32_t)i;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        run32[i] = fp32[i] && ks__prec_demotable(g, i);
    /* graph outputs keep the file's dtype: their producers stay int8 */
    for (uint32_t o = 0; o < g->num_outputs; o++)
        if (g->outputs[o] >= 0 && b.producer[g->outputs[o]] >= 0)
            run32[b.producer[g->outputs[o]]] = 0;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        for (uint32_t k = 0; run32[i] && k < g->nodes[i].num_outputs; k++)
            b.retyped[g->nodes[i].outputs[k]] = 1;
    /* A file QUANTIZE whose readers all run in fp32 (and that is no graph output) goes away. */
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        if (n->op != KS_OP_QUANTIZE || n->num_inputs != 1 || n->num_outputs != 1 ||
            n->inputs[0] < 0 || g->tensors[n->inputs[0]].dtype != KS_DTYPE_F32 ||
            !is_qact(&g->tensors[n->outputs[0]]))
            continue;
        int32_t y = n->outputs[0];
        bool all32 = true;
        for (uint32_t o = 0; o < g->num_outputs; o++)
            if (g->outputs[o] == y) all32 = false;
        for (uint32_t j = i + 1; j < g->num_nodes && all32; j++)
            for (uint32_t k = 0; k < g->nodes[j].num_inputs; k++)
                if (g->nodes[j].inputs[k] == y && !run32[j]) all32 = false;
        if (all32) b.retyped[y] = 1;
    }
    if ((st = plan_prelu_fusion(&b)) || (st = copy_tensors(&b))) goto done;
    for (uint32_t i = 0; i < g->num_nodes; i++)
        if ((st = emit_node(&b, i))) goto done;
    if ((st = ks__graph_set_io(out, g->num_inputs, g->inputs, g->num_outputs, g->outputs)))
        goto done;
    for (uint32_t k = 0; k < g->num_meta; k++)
        if ((st = ks__graph_set_meta(out, g->meta[k].key, g->meta[k].value))) goto done;
    st = ks__graph_validate(out, err, err_cap);
done:
    if (st == KS_STATUS_OUT_OF_MEMORY && err && err_cap && !err[0])
        ks__fmt(err, err_cap, "out of memory building the fp32 graph");
    if (st) {
        ks__graph_free(out);
        ks__free(&g->alloc, b.src_node);
    } else if (src_node_out) {
        *src_node_out = b.src_node;
    } else {
        ks__free(&g->alloc, b.src_node);
    }
    ks__free(&g->alloc, run32);
    ks__free(&g->alloc, b.producer);
    ks__free(&g->alloc, b.retyped);
    ks__free(&g->alloc, b.f32_id);
    ks__free(&g->alloc, b.q_id);
    ks__free(&g->alloc, b.prelu);
    return st;
}

/* ---- minimum cut ---- */

typedef struct arc {
    uint32_t to, next;
    double cap;
} arc;

double ks__prec_mincut(uint32_t n, const double *cost0, const double *cost1, uint32_t m,
                       const uint32_t *a, const uint32_t *b, const double *ab, const double *ba,
                       uint8_t *labels, const ks_allocator *alloc) {
    /* Source side = label 0. s->i costs cost1 (cut when i is 1), i->t costs cost0, a->b costs
     * ab (cut when a is 0 and b is 1), b->a costs ba. Edmonds-Karp on the residual graph. */
    uint32_t nv = n + 2, s = n, t = n + 1;
    size_t na = 2 * ((size_t)2 * n + 2 * (size_t)m);
    arc *arcs = ks__alloc(alloc, (na ? na : 1) * sizeof(arc));
    uint32_t *head = ks__alloc(alloc, (size_t)nv * sizeof(uint32_t));
    uint32_t *prev = ks__alloc(alloc, (size_t)nv * sizeof(uint32_t));
    uint32_t *queue = ks__alloc(alloc, (size_t)nv * sizeof(uint32_t));
    double total = -1.0;
    if (!arcs || !head || !prev || !queue) goto done;
    for (uint32_t v = 0; v < nv; v++)
        head[v] = UINT32_MAX;
    uint32_t cnt = 0;
#define KS_ADD_ARC(u, v, c)                                                                        \
    do {                                                                                           \
        arcs[cnt] = (arc){(v), head[(u)], (c)};                                                    \
        head[(u)] = cnt++;                                                                         \
        arcs[cnt] = (arc){(u), head[(v)], 0.0};                                                    \
        head[(v)] = cnt++;                                                                         \
    } while (0)
    double base = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        /* only the difference between the two labels matters to the cut */
        double lo = cost0[i] < cost1[i] ? cost0[i] : cost1[i];
        base += lo;
        KS_ADD_ARC(s, i, cost1[i] - lo);
        KS_ADD_ARC(i, t, cost0[i] - lo);
    }
    for (uint32_t k = 0; k < m; k++) {
        KS_ADD_ARC(a[k], b[k], ab[k] > 0 ? ab[k] : 0.0);
        KS_ADD_ARC(b[k], a[k], ba[k] > 0 ? ba[k] : 0.0);
    }
#undef KS_ADD_ARC
    double flow = 0.0;
    for (;;) {
        for (uint32_t v = 0; v < nv; v++)
            prev[v] = UINT32_MAX;
        uint32_t qh = 0, qt = 0;
        queue[qt++] = s;
        prev[s] = UINT32_MAX - 1;
        while (qh < qt && prev[t] == UINT32_MAX) {
            uint32_t u = queue[qh++];
            for (uint32_t e = head[u]; e != UINT32_MAX; e = arcs[e].next)
                if (arcs[e].cap > 1e-12 && prev[arcs[e].to] == UINT32_MAX) {
                    prev[arcs[e].to] = e;
                    queue[qt++] = arcs[e].to;
                }
        }
        if (prev[t] == UINT32_MAX) break;
        double f = KS__PREC_INF * 10;
        for (uint32_t v = t; v != s; v = arcs[prev[v] ^ 1u].to)
            if (arcs[prev[v]].cap < f) f = arcs[prev[v]].cap;
        for (uint32_t v = t; v != s; v = arcs[prev[v] ^ 1u].to) {
            arcs[prev[v]].cap -= f;
            arcs[prev[v] ^ 1u].cap += f;
        }
        flow += f;
    }
    /* label 0 = still reachable from the source */
    for (uint32_t v = 0; v < n; v++)
        labels[v] = prev[v] == UINT32_MAX ? 1 : 0;
    total = base + flow;
done:
    ks__free(alloc, arcs);
    ks__free(alloc, head);
    ks__free(alloc, prev);
    ks__free(alloc, queue);
    return total;
}
