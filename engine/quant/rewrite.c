/* Precision decisions and the int8 graph rewrite for ks-quant (quant.h).
 *
 * Which ops go int8: the ones the engine has fast int8 kernels for (impls_quant.inc: CONV2D with
 * groups 1, depthwise CONV2D, FULLY_CONNECTED, same-shape ADD/SUB), plus data-movement ops
 * (reshape-likes, concat, pad, pooling, nearest resize, slices) whose input is already int8, so a
 * chain of int8 layers is not cut by DEQUANTIZE/QUANTIZE pairs around a reshape. Everything else
 * (PRELU, MUL, SIGMOID, transposed convs, ...) stays fp32: the reference kernels do run those on
 * int8, but scalar, slower than the vectorized fp32 kernels plus the conversions.
 *
 * The rewrite builds a fresh graph in the source's topological order. Each source tensor may get
 * two versions: "plain" (its original dtype, F32 for activations) and "i8". A version is created
 * on first use; a missing one is derived with a QUANTIZE or DEQUANTIZE node inserted right before
 * the consumer. Unused constants (fp32 weights replaced by int8 ones) are never copied. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

ks_status ks__quant_plan_init(ks__quant_plan *p, const ks__graph *g) {
    memset(p, 0, sizeof(*p));
    uint32_t nn = g->num_nodes ? g->num_nodes : 1, nt = g->num_tensors ? g->num_tensors : 1;
    p->num_nodes = g->num_nodes;
    p->num_tensors = g->num_tensors;
    p->mode = calloc(nn, 1);
    p->reason = calloc(nn, 1);
    p->force_f32 = calloc(nn, 1);
    p->force_why = calloc(nn, 1);
    p->has_q = calloc(nt, sizeof(bool));
    p->scale = calloc(nt, sizeof(float));
    p->zp = calloc(nt, sizeof(int32_t));
    p->rank = calloc(nt, sizeof(int32_t));
    p->dims = calloc((size_t)nt * KS_MAX_RANK, sizeof(int64_t));
    if (!p->mode || !p->reason || !p->force_f32 || !p->force_why || !p->has_q || !p->scale ||
        !p->zp || !p->rank || !p->dims) {
        ks__quant_plan_free(p);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    for (uint32_t t = 0; t < g->num_tensors; t++)
        p->rank[t] = -1;
    return KS_STATUS_OK;
}

void ks__quant_plan_free(ks__quant_plan *p) {
    free(p->mode);
    free(p->reason);
    free(p->force_f32);
    free(p->force_why);
    free(p->has_q);
    free(p->scale);
    free(p->zp);
    free(p->rank);
    free(p->dims);
    memset(p, 0, sizeof(*p));
}

void ks__quant_map_free(ks__quant_map *m) {
    free(m->f32_id);
    free(m->i8_id);
    free(m->node_src);
    memset(m, 0, sizeof(*m));
}

bool ks__quant_is_compute_op(uint32_t op) {
    return op == KS_OP_CONV2D || op == KS_OP_FULLY_CONNECTED || op == KS_OP_ADD ||
           op == KS_OP_SUB || op == KS_OP_MUL || op == KS_OP_PRELU || op == KS_OP_SIGMOID ||
           op == KS_OP_HARD_SWISH;
}

static bool is_data_op(uint32_t op) {
    switch (op) {
    case KS_OP_RESHAPE:
    case KS_OP_SQUEEZE:
    case KS_OP_UNSQUEEZE:
    case KS_OP_TRANSPOSE:
    case KS_OP_CONCAT:
    case KS_OP_PAD:
    case KS_OP_POOL2D:
    case KS_OP_RESIZE:
    case KS_OP_DEPTH_TO_SPACE:
    case KS_OP_SPACE_TO_DEPTH:
    case KS_OP_SLICE:
    case KS_OP_SPLIT:
        return true;
    default:
        return false;
    }
}

/* Activations the int8 kernels fuse (clamps in the quantized domain). */
static bool act_ok(int32_t act) {
    return act == KS_ACT_NONE || act == KS_ACT_RELU || act == KS_ACT_RELU6 ||
           act == KS_ACT_RELU_N1_TO_1;
}

static const ks__tensor *tin(const ks__graph *g, const ks__node *n, uint32_t i) {
    if (i >= n->num_inputs || n->inputs[i] < 0) return NULL;
    return &g->tensors[n->inputs[i]];
}

static bool is_const(const ks__tensor *t) {
    return t && (t->flags & KS__TENSOR_CONST);
}

static bool is_act(const ks__quant_plan *p, const ks__graph *g, int32_t id) {
    if (id < 0) return false;
    const ks__tensor *t = &g->tensors[id];
    return !is_const(t) && t->dtype == KS_DTYPE_F32 && p->has_q[id];
}

static bool same_runtime_shape(const ks__quant_plan *p, int32_t a, int32_t b) {
    if (p->rank[a] < 0 || p->rank[a] != p->rank[b]) return false;
    return memcmp(&p->dims[(size_t)a * KS_MAX_RANK], &p->dims[(size_t)b * KS_MAX_RANK],
                  (size_t)p->rank[a] * sizeof(int64_t)) == 0;
}

/* Bias: absent, or a constant F32 vector of `channels`. */
static bool bias_ok(const ks__tensor *b, int64_t channels) {
    return !b || (is_const(b) && b->dtype == KS_DTYPE_F32 && b->rank == 1 &&
                  b->dims[0] == channels && b->size_bytes == (size_t)channels * sizeof(float));
}

static bool weights_ok(const ks__tensor *w, int32_t rank) {
    if (!is_const(w) || w->dtype != KS_DTYPE_F32 || w->rank != rank || w->quant.count) return false;
    int64_t n = ks__numel(w->rank, w->dims);
    return n > 0 && w->size_bytes == (size_t)n * sizeof(float);
}

static ks__quant_reason compute_eligible(const ks__quant_plan *p, const ks__graph *g,
                                         const ks__node *n) {
    int32_t y = n->outputs[0];
    if (g->tensors[y].dtype != KS_DTYPE_F32) return KS__QUANT_WHY_NO_INT8_KERNEL;
    if (!p->has_q[y]) return KS__QUANT_WHY_NOT_CALIBRATED;
    switch (n->op) {
    case KS_OP_CONV2D: {
        const ks__tensor *w = tin(g, n, 1);
        if (!is_act(p, g, n->inputs[0])) return KS__QUANT_WHY_NOT_CALIBRATED;
        if (!weights_ok(w, 4) || !bias_ok(tin(g, n, 2), w->dims[0]))
            return KS__QUANT_WHY_NO_INT8_KERNEL;
        if (tin(g, n, 3) || !act_ok(n->ip[10])) return KS__QUANT_WHY_NO_INT8_KERNEL;
        int32_t groups = n->ip[9] ? n->ip[9] : 1;
        if (groups != 1 && w->dims[3] != 1)
            return KS__QUANT_WHY_NO_INT8_KERNEL; /* grouped, not dw */
        return KS__QUANT_WHY_INT8;
    }
    case KS_OP_FULLY_CONNECTED: {
        const ks__tensor *w = tin(g, n, 1);
        if (!is_act(p, g, n->inputs[0])) return KS__QUANT_WHY_NOT_CALIBRATED;
        if (!weights_ok(w, 2) || !bias_ok(tin(g, n, 2), w->dims[0]) || !act_ok(n->ip[0]))
            return KS__QUANT_WHY_NO_INT8_KERNEL;
        return KS__QUANT_WHY_INT8;
    }
    case KS_OP_SIGMOID:
    case KS_OP_HARD_SWISH:
        /* int8 lookup table (q8_lut.c) */
        if (!is_act(p, g, n->inputs[0])) return KS__QUANT_WHY_NOT_CALIBRATED;
        return KS__QUANT_WHY_INT8;
    case KS_OP_ADD:
    case KS_OP_SUB:
    case KS_OP_MUL:
        if (!is_act(p, g, n->inputs[0]) || !is_act(p, g, n->inputs[1]))
            return is_const(tin(g, n, 0)) || is_const(tin(g, n, 1)) ? KS__QUANT_WHY_NO_INT8_KERNEL
                                                                    : KS__QUANT_WHY_NOT_CALIBRATED;
        /* The fast int8 kernels are same-shape only; broadcasting runs the scalar reference. */
        if (!same_runtime_shape(p, n->inputs[0], n->inputs[1]) ||
            !same_runtime_shape(p, n->inputs[0], y) || !act_ok(n->ip[0]))
            return KS__QUANT_WHY_NO_INT8_KERNEL;
        return KS__QUANT_WHY_INT8;
    case KS_OP_PRELU: {
        /* No vector int8 kernel: the scalar reference runs it; the speed check decides. */
        const ks__tensor *al = tin(g, n, 1);
        if (!is_act(p, g, n->inputs[0])) return KS__QUANT_WHY_NOT_CALIBRATED;
        if (!weights_ok(al, al ? al->rank : 0)) return KS__QUANT_WHY_NO_INT8_KERNEL;
        return KS__QUANT_WHY_INT8;
    }
    default:
        return KS__QUANT_WHY_NO_INT8_KERNEL;
    }
}

static ks__quant_reason data_eligible(const ks__quant_plan *p, const ks__graph *g,
                                      const ks__node *n, const int32_t *producer) {
    uint32_t num_act = n->op == KS_OP_CONCAT ? n->num_inputs : 1;
    if (n->op == KS_OP_POOL2D && n->ip[11] != KS_ACT_NONE) return KS__QUANT_WHY_NO_INT8_KERNEL;
    if (n->op == KS_OP_CONCAT && n->ip[1] != KS_ACT_NONE) return KS__QUANT_WHY_NO_INT8_KERNEL;
    if (n->op == KS_OP_RESIZE && n->ip[0] != 0) return KS__QUANT_WHY_NO_INT8_KERNEL; /* bilinear */
    if (n->op == KS_OP_PAD && (n->ip[0] != 0 || tin(g, n, 2))) return KS__QUANT_WHY_NO_INT8_KERNEL;
    for (uint32_t i = 0; i < num_act; i++) {
        int32_t t = n->inputs[i];
        if (!is_act(p, g, t)) return KS__QUANT_WHY_NO_INT8_KERNEL;
        if (producer[t] < 0 || p->mode[producer[t]] != KS__QUANT_INT8)
            return KS__QUANT_WHY_INPUT_NOT_INT8;
    }
    /* Shape/index inputs must already be non-float (they are used as they are). */
    for (uint32_t i = num_act; i < n->num_inputs; i++) {
        const ks__tensor *t = tin(g, n, i);
        if (t && t->dtype == KS_DTYPE_F32) return KS__QUANT_WHY_NO_INT8_KERNEL;
    }
    for (uint32_t o = 0; o < n->num_outputs; o++)
        if (g->tensors[n->outputs[o]].dtype != KS_DTYPE_F32) return KS__QUANT_WHY_NO_INT8_KERNEL;
    if (n->op == KS_OP_CONCAT && !p->has_q[n->outputs[0]]) return KS__QUANT_WHY_NOT_CALIBRATED;
    return KS__QUANT_WHY_INT8;
}

void ks__quant_plan_decide(ks__quant_plan *p, const ks__graph *g) {
    int32_t *producer = malloc((g->num_tensors ? g->num_tensors : 1) * sizeof(int32_t));
    if (!producer) {
        memset(p->mode, KS__QUANT_FP32, p->num_nodes);
        return;
    }
    for (uint32_t t = 0; t < g->num_tensors; t++)
        producer[t] = -1;
    for (uint32_t i = 0; i < g->num_nodes; i++) {
        const ks__node *n = &g->nodes[i];
        ks__quant_reason why = KS__QUANT_WHY_NO_INT8_KERNEL;
        if (p->force_f32[i])
            why = (ks__quant_reason)p->force_why[i];
        else if (ks__quant_is_compute_op(n->op))
            why = compute_eligible(p, g, n);
        else if (is_data_op(n->op))
            why = data_eligible(p, g, n, producer);
        /* The ADD split off a residual conv stays with its conv when that conv is fp32: fused,
         * the add is nearly free. */
        int32_t partner = p->pair ? p->pair[i] : -1;
        if (why == KS__QUANT_WHY_INT8 && partner >= 0 && partner < (int32_t)i &&
            p->mode[partner] == KS__QUANT_FP32)
            why = (ks__quant_reason)p->reason[partner];
        p->mode[i] = why == KS__QUANT_WHY_INT8 ? KS__QUANT_INT8 : KS__QUANT_FP32;
        p->reason[i] = (uint8_t)why;
        for (uint32_t o = 0; o < n->num_outputs; o++)
            producer[n->outputs[o]] = (int32_t)i;
    }
    free(producer);
}

/* ------------------------------------------------------------------------------------------ */
/* Rewrite                                                                                    */

typedef struct builder {
    const ks__graph *src;
    const ks__quant_plan *plan;
    ks__graph *dst;
    ks__quant_map *map;
    float *i8_scale; /* per source tensor: params of its i8 version */
    int32_t *i8_zp;
    bool *need_plain;   /* per source tensor: a graph output or read by an fp32 node */
    int32_t cur_node;   /* source node being emitted (-1: graph outputs) */
    int32_t *producer;  /* per source tensor: its source node, -1 for inputs/constants */
    int force;          /* -1: as planned; 0: emit fp32; 1: emit an int8 shadow copy */
    int32_t *shadow_id; /* per source node: output of its shadow copy (shadow builds) */
    char *err;
    size_t err_cap;
} builder;

static ks_status add_like(builder *b, int32_t src_id, const char *suffix, ks_dtype dtype,
                          int32_t *id_out) {
    const ks__tensor *t = &b->src->tensors[src_id];
    ks_status st = ks__graph_add_tensor_like(b->dst, t, suffix, dtype, -1, NULL, id_out);
    if (st) ks__fmt(b->err, b->err_cap, "cannot add tensor '%s%s'", t->name ? t->name : "", suffix);
    return st;
}

static ks_status set_q1(builder *b, int32_t id, float scale, int32_t zp) {
    return ks__graph_set_quant(b->dst, id, 1, 0, &scale, &zp);
}

static ks_status add_node(builder *b, uint32_t op, const char *name, uint32_t ni, const int32_t *in,
                          uint32_t no, const int32_t *out, uint32_t *idx) {
    ks_status st = ks__graph_add_node(b->dst, op, name, ni, in, no, out, idx);
    if (st) {
        ks__fmt(b->err, b->err_cap, "cannot add node '%s'", name ? name : "?");
        return st;
    }
    if (*idx < b->map->num_dst_nodes) b->map->node_src[*idx] = b->cur_node;
    return st;
}

/* The plain (original dtype) version of source tensor t. */
static ks_status get_plain(builder *b, int32_t t, int32_t *id_out) {
    ks_status st;
    if (b->map->f32_id[t] >= 0) {
        *id_out = b->map->f32_id[t];
        return KS_STATUS_OK;
    }
    const ks__tensor *s = &b->src->tensors[t];
    int32_t id;
    if (is_const(s)) {
        /* only single-use conv/FC weights have a replacement (its reader is fp32 here) */
        const void *data = b->plan->f32_weights && b->plan->f32_weights[t]
                               ? (const void *)b->plan->f32_weights[t]
                               : s->data;
        if ((st = add_like(b, t, "", s->dtype, &id))) return st;
        if ((st = ks__graph_set_const(b->dst, id, data, s->size_bytes, true))) return st;
        if (s->quant.count && (st = ks__graph_set_quant(b->dst, id, s->quant.count, s->quant.axis,
                                                        s->quant.scales, s->quant.zero_points)))
            return st;
    } else if (b->map->i8_id[t] >= 0) {
        if ((st = add_like(b, t, "", KS_DTYPE_F32, &id))) return st;
        char name[512];
        snprintf(name, sizeof(name), "dequantize:%s", s->name ? s->name : "");
        int32_t in = b->map->i8_id[t];
        uint32_t idx;
        /* The conversion is the cost of the producer's int8 choice. */
        int32_t saved = b->cur_node;
        b->cur_node = b->producer[t];
        st = add_node(b, KS_OP_DEQUANTIZE, name, 1, &in, 1, &id, &idx);
        b->cur_node = saved;
        if (st) return st;
    } else {
        ks__fmt(b->err, b->err_cap, "tensor '%s' is used before it is produced", s->name);
        return KS_STATUS_INVALID_MODEL;
    }
    b->map->f32_id[t] = id;
    *id_out = id;
    return KS_STATUS_OK;
}

/* The i8 version of activation t (quantizing its fp32 version with the calibrated params). */
static ks_status get_i8(builder *b, int32_t t, int32_t *id_out) {
    ks_status st;
    if (b->map->i8_id[t] >= 0) {
        *id_out = b->map->i8_id[t];
        return KS_STATUS_OK;
    }
    const ks__tensor *s = &b->src->tensors[t];
    if (!b->plan->has_q[t]) {
        ks__fmt(b->err, b->err_cap, "tensor '%s' has no calibrated range", s->name);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    int32_t in, id;
    if ((st = get_plain(b, t, &in))) return st;
    if ((st = add_like(b, t, "/q", KS_DTYPE_I8, &id))) return st;
    if ((st = set_q1(b, id, b->plan->scale[t], b->plan->zp[t]))) return st;
    char name[512];
    snprintf(name, sizeof(name), "quantize:%s", s->name ? s->name : "");
    uint32_t idx;
    if ((st = add_node(b, KS_OP_QUANTIZE, name, 1, &in, 1, &id, &idx))) return st;
    b->map->i8_id[t] = id;
    b->i8_scale[t] = b->plan->scale[t];
    b->i8_zp[t] = b->plan->zp[t];
    *id_out = id;
    return KS_STATUS_OK;
}

/* Per-output-channel symmetric int8 weights; returns the scales in w_scale (channels entries). */
static ks_status quant_weights(builder *b, int32_t w_src, float *w_scale, int32_t *id_out) {
    const ks__tensor *w = &b->src->tensors[w_src];
    int64_t oc = w->dims[0], numel = ks__numel(w->rank, w->dims), per = numel / oc;
    const float *wf = w->data;
    int8_t *q = malloc((size_t)numel);
    int32_t *zps = calloc((size_t)oc, sizeof(int32_t));
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    if (!q || !zps) goto done;
    const ks__quant_gptq *gq = b->plan->gptq;
    if (gq && w_src >= 0 && (uint32_t)w_src < gq->num_tensors && gq->q[w_src]) {
        /* error-compensated rounding (gptq.c), made for this tensor's shape */
        memcpy(q, gq->q[w_src], (size_t)numel);
        memcpy(w_scale, gq->scale[w_src], (size_t)oc * sizeof(float));
    } else {
        for (int64_t c = 0; c < oc; c++) {
            float m = 0.0f;
            for (int64_t k = 0; k < per; k++) {
                float a = fabsf(wf[c * per + k]);
                if (isfinite(a) && a > m) m = a;
            }
            float s = m > 0.0f ? m / 127.0f : 1.0f;
            w_scale[c] = s;
            for (int64_t k = 0; k < per; k++) {
                float v = wf[c * per + k];
                long r = isfinite(v) ? lroundf(v / s) : 0;
                q[c * per + k] = (int8_t)(r > 127 ? 127 : (r < -127 ? -127 : r));
            }
        }
    }
    if ((st = add_like(b, w_src, "/i8", KS_DTYPE_I8, id_out))) goto done;
    if ((st = ks__graph_set_const(b->dst, *id_out, q, (size_t)numel, true))) goto done;
    st = ks__graph_set_quant(b->dst, *id_out, (uint32_t)oc, 0, w_scale, zps);
done:
    free(q);
    free(zps);
    return st;
}

static ks_status quant_bias(builder *b, int32_t b_src, float in_scale, const float *w_scale,
                            int64_t oc, int32_t *id_out) {
    const ks__tensor *t = &b->src->tensors[b_src];
    const float *bf = t->data;
    int32_t *q = malloc((size_t)oc * sizeof(int32_t));
    int32_t *zps = calloc((size_t)oc, sizeof(int32_t));
    float *scales = malloc((size_t)oc * sizeof(float));
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    if (!q || !zps || !scales) goto done;
    for (int64_t c = 0; c < oc; c++) {
        scales[c] = in_scale * w_scale[c];
        double v = isfinite(bf[c]) ? round((double)bf[c] / (double)scales[c]) : 0.0;
        q[c] = v > INT32_MAX ? INT32_MAX : (v < -(double)INT32_MAX ? -INT32_MAX : (int32_t)v);
    }
    if ((st = add_like(b, b_src, "/i32", KS_DTYPE_I32, id_out))) goto done;
    /* No quantization params on the bias: kernels derive its scale (in_scale * w_scale[c]), and
     * 8 bytes per channel are a visible share of small models. */
    st = ks__graph_set_const(b->dst, *id_out, q, (size_t)oc * sizeof(int32_t), true);
done:
    free(q);
    free(zps);
    free(scales);
    return st;
}

/* PRELU alpha: per-tensor symmetric I8 (the reference kernel takes per-tensor params). */
static ks_status quant_alpha(builder *b, int32_t a_src, int32_t *id_out) {
    const ks__tensor *t = &b->src->tensors[a_src];
    int64_t n = ks__numel(t->rank, t->dims);
    const float *af = t->data;
    int8_t *q = malloc((size_t)(n > 0 ? n : 1));
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    if (!q) return st;
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(af[i]) && fabsf(af[i]) > m) m = fabsf(af[i]);
    float s = m > 0.0f ? m / 127.0f : 1.0f;
    for (int64_t i = 0; i < n; i++) {
        long r = isfinite(af[i]) ? lroundf(af[i] / s) : 0;
        q[i] = (int8_t)(r > 127 ? 127 : (r < -127 ? -127 : r));
    }
    if (!(st = add_like(b, a_src, "/i8", KS_DTYPE_I8, id_out)) &&
        !(st = ks__graph_set_const(b->dst, *id_out, q, (size_t)n, true)))
        st = set_q1(b, *id_out, s, 0);
    free(q);
    return st;
}

static int32_t op_as_act(uint32_t op);

/* A residual conv split by ks__quant_unfuse_residual whose halves both stay fp32: emitted fused
 * again, conv(x, w, bias, residual) with the ADD's activation, writing the ADD's output. */
static ks_status emit_fused(builder *b, uint32_t ci, uint32_t ai) {
    const ks__node *c = &b->src->nodes[ci], *a = &b->src->nodes[ai];
    int32_t ins[5] = {-1, -1, -1, -1, -1}, out;
    bool is_add = a->op == KS_OP_ADD, is_prelu = a->op == KS_OP_PRELU;
    /* conv, ADD (residual), PRELU: the residual comes from the middle node */
    const ks__node *mid = ai == ci + 2 ? &b->src->nodes[ci + 1] : NULL;
    int32_t residual = is_add                                      ? a->inputs[1]
                       : (mid && mid->op == KS_OP_ADD && is_prelu) ? mid->inputs[1]
                                                                   : -1;
    int32_t src_in[5] = {c->inputs[0], c->inputs[1], c->num_inputs > 2 ? c->inputs[2] : -1,
                         residual, is_prelu ? a->inputs[1] : -1};
    uint32_t num_in = is_prelu ? 5 : (residual >= 0 ? 4 : 3);
    ks_status st;
    for (int i = 0; i < 5; i++)
        if (src_in[i] >= 0 && (st = get_plain(b, src_in[i], &ins[i]))) return st;
    int32_t y = a->outputs[0];
    if ((st = add_like(b, y, "", b->src->tensors[y].dtype, &out))) return st;
    b->map->f32_id[y] = out;
    uint32_t idx;
    if ((st = add_node(b, KS_OP_CONV2D, c->name, num_in, ins, 1, &out, &idx))) return st;
    memcpy(b->dst->nodes[idx].ip, c->ip, sizeof(c->ip));
    memcpy(b->dst->nodes[idx].fp, c->fp, sizeof(c->fp));
    b->dst->nodes[idx].ip[10] = is_add ? a->ip[0] : op_as_act(a->op);
    b->dst->nodes[idx].fp[0] = a->fp[0];
    return KS_STATUS_OK;
}

static ks_status emit_node(builder *b, uint32_t ni) {
    const ks__node *n = &b->src->nodes[ni];
    int32_t ins[64], outs[64];
    ks_status st;
    bool int8 = b->force >= 0 ? b->force == 1 : b->plan->mode[ni] == KS__QUANT_INT8;
    if (n->num_inputs > 64 || n->num_outputs > 64) {
        ks__fmt(b->err, b->err_cap, "node '%s' has too many inputs/outputs", n->name);
        return KS_STATUS_UNSUPPORTED;
    }
    float in_scale = 1.0f, out_scale = 0.0f;
    int32_t out_zp = 0;
    if (!int8) {
        for (uint32_t i = 0; i < n->num_inputs; i++) {
            ins[i] = -1;
            if (n->inputs[i] >= 0 && (st = get_plain(b, n->inputs[i], &ins[i]))) return st;
        }
    } else if (n->op == KS_OP_CONV2D || n->op == KS_OP_FULLY_CONNECTED) {
        const ks__tensor *w = &b->src->tensors[n->inputs[1]];
        int64_t oc = w->dims[0];
        float *w_scale = malloc((size_t)oc * sizeof(float));
        if (!w_scale) return KS_STATUS_OUT_OF_MEMORY;
        st = get_i8(b, n->inputs[0], &ins[0]);
        if (!st) st = quant_weights(b, n->inputs[1], w_scale, &ins[1]);
        in_scale = b->i8_scale[n->inputs[0]];
        for (uint32_t i = 2; i < n->num_inputs && !st; i++) {
            ins[i] = -1;
            if (i == 2 && n->inputs[2] >= 0)
                st = quant_bias(b, n->inputs[2], in_scale, w_scale, oc, &ins[2]);
        }
        free(w_scale);
        if (st) return st;
        out_scale = b->plan->scale[n->outputs[0]];
        out_zp = b->plan->zp[n->outputs[0]];
    } else if (n->op == KS_OP_PRELU) {
        if ((st = get_i8(b, n->inputs[0], &ins[0])) || (st = quant_alpha(b, n->inputs[1], &ins[1])))
            return st;
        out_scale = b->plan->scale[n->outputs[0]];
        out_zp = b->plan->zp[n->outputs[0]];
    } else if (n->op == KS_OP_SIGMOID || n->op == KS_OP_HARD_SWISH) {
        if ((st = get_i8(b, n->inputs[0], &ins[0]))) return st;
        out_scale = b->plan->scale[n->outputs[0]];
        out_zp = b->plan->zp[n->outputs[0]];
    } else if (n->op == KS_OP_ADD || n->op == KS_OP_SUB || n->op == KS_OP_MUL) {
        if ((st = get_i8(b, n->inputs[0], &ins[0])) || (st = get_i8(b, n->inputs[1], &ins[1])))
            return st;
        out_scale = b->plan->scale[n->outputs[0]];
        out_zp = b->plan->zp[n->outputs[0]];
    } else { /* data movement: activations int8, the rest as it is */
        uint32_t num_act = n->op == KS_OP_CONCAT ? n->num_inputs : 1;
        for (uint32_t i = 0; i < n->num_inputs; i++) {
            ins[i] = -1;
            if (n->inputs[i] < 0) continue;
            st = i < num_act ? get_i8(b, n->inputs[i], &ins[i])
                             : get_plain(b, n->inputs[i], &ins[i]);
            if (st) return st;
        }
        if (n->op == KS_OP_CONCAT) {
            out_scale = b->plan->scale[n->outputs[0]];
            out_zp = b->plan->zp[n->outputs[0]];
        } else { /* pure movement: the output keeps the input's params (no requantization) */
            out_scale = b->i8_scale[n->inputs[0]];
            out_zp = b->i8_zp[n->inputs[0]];
        }
    }
    for (uint32_t o = 0; o < n->num_outputs; o++) {
        int32_t t = n->outputs[o];
        const ks__tensor *s = &b->src->tensors[t];
        if (!int8) {
            if ((st = add_like(b, t, "", s->dtype, &outs[o]))) return st;
            if (s->quant.count &&
                (st = ks__graph_set_quant(b->dst, outs[o], s->quant.count, s->quant.axis,
                                          s->quant.scales, s->quant.zero_points)))
                return st;
            b->map->f32_id[t] = outs[o];
        } else if (b->force == 1) { /* shadow: a side output nothing else reads */
            if ((st = add_like(b, t, "/shadow", KS_DTYPE_I8, &outs[o])) ||
                (st = set_q1(b, outs[o], out_scale, out_zp)))
                return st;
            if (o == 0) b->shadow_id[ni] = outs[o];
        } else {
            if ((st = add_like(b, t, b->need_plain[t] ? "/i8" : "", KS_DTYPE_I8, &outs[o])) ||
                (st = set_q1(b, outs[o], out_scale, out_zp)))
                return st;
            b->map->i8_id[t] = outs[o];
            b->i8_scale[t] = out_scale;
            b->i8_zp[t] = out_zp;
        }
    }
    uint32_t idx;
    char shadow_name[512];
    snprintf(shadow_name, sizeof(shadow_name), "%s/shadow", n->name ? n->name : "");
    if ((st = add_node(b, n->op, b->force == 1 ? shadow_name : n->name, n->num_inputs, ins,
                       n->num_outputs, outs, &idx)))
        return st;
    memcpy(b->dst->nodes[idx].ip, n->ip, sizeof(n->ip));
    memcpy(b->dst->nodes[idx].fp, n->fp, sizeof(n->fp));
    return KS_STATUS_OK;
}

ks_status ks__quant_build(const ks__graph *src, const ks__quant_plan *plan, ks__graph *dst,
                          ks__quant_map *map, int32_t *shadow_id, char *err, size_t err_cap) {
    builder b = {src, plan, dst, map, NULL, NULL, NULL, -1, NULL, -1, shadow_id, err, err_cap};
    uint32_t nt = src->num_tensors ? src->num_tensors : 1;
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    memset(map, 0, sizeof(*map));
    map->f32_id = malloc(nt * sizeof(int32_t));
    map->i8_id = malloc(nt * sizeof(int32_t));
    map->num_dst_nodes = src->num_nodes + 2 * src->num_tensors + 1;
    map->node_src = malloc(map->num_dst_nodes * sizeof(int32_t));
    b.i8_scale = calloc(nt, sizeof(float));
    b.i8_zp = calloc(nt, sizeof(int32_t));
    b.need_plain = calloc(nt, sizeof(bool));
    b.producer = malloc(nt * sizeof(int32_t));
    bool *done_node = calloc(src->num_nodes + 1, sizeof(bool));
    int32_t *outs = malloc((src->num_outputs ? src->num_outputs : 1) * sizeof(int32_t));
    int32_t *ins = malloc((src->num_inputs ? src->num_inputs : 1) * sizeof(int32_t));
    if (!map->f32_id || !map->i8_id || !b.i8_scale || !b.i8_zp || !b.need_plain || !outs || !ins ||
        !b.producer || !done_node || !map->node_src) {
        ks__fmt(err, err_cap, "out of memory");
        goto done;
    }
    for (uint32_t t = 0; t < src->num_tensors; t++)
        map->f32_id[t] = map->i8_id[t] = b.producer[t] = -1;
    for (uint32_t i = 0; i < src->num_nodes; i++)
        for (uint32_t o = 0; o < src->nodes[i].num_outputs; o++)
            b.producer[src->nodes[i].outputs[o]] = (int32_t)i;
    for (uint32_t i = 0; i < src->num_outputs; i++)
        b.need_plain[src->outputs[i]] = true;
    for (uint32_t i = 0; i < src->num_nodes; i++) {
        const ks__node *n = &src->nodes[i];
        for (uint32_t k = 0; k < n->num_inputs; k++)
            if (n->inputs[k] >= 0 && (plan->mode[i] == KS__QUANT_FP32 || shadow_id))
                b.need_plain[n->inputs[k]] = true;
    }
    for (uint32_t i = 0; i < src->num_inputs; i++) {
        int32_t t = src->inputs[i];
        if ((st = add_like(&b, t, "", src->tensors[t].dtype, &ins[i]))) goto done;
        map->f32_id[t] = ins[i];
    }
    for (uint32_t i = 0; i < src->num_nodes; i++) {
        int32_t partner = plan->pair ? plan->pair[i] : -1;
        if (done_node[i]) continue;
        b.cur_node = (int32_t)i;
        if (shadow_id) {
            shadow_id[i] = -1;
            b.force = 0;
            st = emit_node(&b, i);
            if (!st && plan->mode[i] == KS__QUANT_INT8 &&
                ks__quant_is_compute_op(src->nodes[i].op)) {
                b.force = 1;
                st = emit_node(&b, i);
            }
            b.force = -1;
            if (st) goto done;
            continue;
        }
        if (partner > (int32_t)i && src->nodes[i].op == KS_OP_CONV2D &&
            plan->mode[i] == KS__QUANT_FP32 && plan->mode[partner] == KS__QUANT_FP32) {
            if ((st = emit_fused(&b, i, (uint32_t)partner))) goto done;
            done_node[partner] = true;
            /* three parts (SiLU: conv, SIGMOID, MUL; residual PRELU: conv, ADD, PRELU) */
            if ((uint32_t)partner == i + 2 && plan->pair[i + 1] == (int32_t)i)
                done_node[i + 1] = true;
            continue;
        }
        if ((st = emit_node(&b, i))) goto done;
    }
    b.cur_node = -1;
    for (uint32_t i = 0; i < src->num_outputs; i++)
        if ((st = get_plain(&b, src->outputs[i], &outs[i]))) goto done;
    if ((st = ks__graph_set_io(dst, src->num_inputs, ins, src->num_outputs, outs))) {
        ks__fmt(err, err_cap, "cannot set graph inputs/outputs");
        goto done;
    }
    for (uint32_t i = 0; i < src->num_meta; i++)
        if ((st = ks__graph_set_meta(dst, src->meta[i].key, src->meta[i].value))) goto done;
    uint32_t num_fused = 0; /* the int8 epilogue chains folded into their convs (fuse.c) */
    if (!shadow_id &&
        (st = ks__quant_fuse(dst, plan, map, src->num_tensors, &num_fused, err, err_cap)))
        goto done;
    st = ks__graph_validate(dst, err, err_cap);
done:
    free(b.i8_scale);
    free(b.i8_zp);
    free(b.need_plain);
    free(b.producer);
    free(done_node);
    free(outs);
    free(ins);
    return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Residual split                                                                             */

/* The standalone op of a fused activation the int8 conv kernels do not take (0: none). */
static uint32_t act_as_op(int32_t act) {
    switch (act) {
    case KS_ACT_SIGMOID:
        return KS_OP_SIGMOID;
    case KS_ACT_TANH:
        return KS_OP_TANH;
    case KS_ACT_HARD_SWISH:
        return KS_OP_HARD_SWISH;
    case KS_ACT_LEAKY_RELU:
        return KS_OP_LEAKY_RELU;
    default:
        return 0;
    }
}

static int32_t op_as_act(uint32_t op) {
    switch (op) {
    case KS_OP_SIGMOID:
        return KS_ACT_SIGMOID;
    case KS_OP_TANH:
        return KS_ACT_TANH;
    case KS_OP_HARD_SWISH:
        return KS_ACT_HARD_SWISH;
    case KS_OP_LEAKY_RELU:
        return KS_ACT_LEAKY_RELU;
    case KS_OP_MUL: /* the MUL(x, SIGMOID(x)) of a split SiLU */
        return KS_ACT_SILU;
    case KS_OP_PRELU: /* slopes are the conv's input 4 */
        return KS_ACT_PRELU;
    default:
        return KS_ACT_NONE;
    }
}

ks_status ks__quant_unfuse_residual(const ks__graph *src, ks__graph *dst, int32_t **pair_out,
                                    char *err, size_t err_cap) {
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    uint32_t cap = 3 * src->num_nodes + 1;
    int32_t *pair = malloc(cap * sizeof(int32_t));
    *pair_out = NULL;
    if (!pair) goto fail;
    for (uint32_t t = 0; t < src->num_tensors; t++) {
        const ks__tensor *s = &src->tensors[t];
        int32_t id;
        if ((st = ks__graph_add_tensor(dst, s->name, s->dtype, s->rank, s->dims, &id))) goto fail;
        if (is_const(s)) { /* borrowed: src outlives dst */
            dst->tensors[id].data = s->data;
            dst->tensors[id].size_bytes = s->size_bytes;
            dst->tensors[id].flags = KS__TENSOR_CONST | KS__TENSOR_BORROWED;
        }
        if (s->quant.count && (st = ks__graph_set_quant(dst, id, s->quant.count, s->quant.axis,
                                                        s->quant.scales, s->quant.zero_points)))
            goto fail;
    }
    for (uint32_t i = 0; i < src->num_nodes; i++) {
        const ks__node *n = &src->nodes[i];
        uint32_t idx;
        bool residual = n->op == KS_OP_CONV2D && n->num_inputs > 3 && n->inputs[3] >= 0;
        uint32_t act_op = n->op == KS_OP_CONV2D && !residual ? act_as_op(n->ip[10]) : 0;
        bool silu = n->op == KS_OP_CONV2D && !residual && n->ip[10] == KS_ACT_SILU;
        bool prelu = n->op == KS_OP_CONV2D && n->ip[10] == KS_ACT_PRELU && n->num_inputs > 4 &&
                     n->inputs[4] >= 0;
        bool split = ((residual && act_ok(n->ip[10])) || act_op || silu || prelu) &&
                     src->tensors[n->outputs[0]].dtype == KS_DTYPE_F32;
        if (!split) {
            if ((st = ks__graph_add_node(dst, n->op, n->name, n->num_inputs, n->inputs,
                                         n->num_outputs, n->outputs, &idx)))
                goto fail;
            memcpy(dst->nodes[idx].ip, n->ip, sizeof(n->ip));
            memcpy(dst->nodes[idx].fp, n->fp, sizeof(n->fp));
            pair[idx] = -1;
            continue;
        }
        const ks__tensor *y = &src->tensors[n->outputs[0]];
        char name[512];
        int32_t tmp, add_in[2], y_id = n->outputs[0];
        snprintf(name, sizeof(name), "%s/conv", y->name ? y->name : "");
        if ((st = ks__graph_add_tensor(dst, name, KS_DTYPE_F32, y->rank, y->dims, &tmp))) goto fail;
        uint32_t cidx, aidx;
        if ((st = ks__graph_add_node(dst, KS_OP_CONV2D, n->name, 3, n->inputs, 1, &tmp, &cidx)))
            goto fail;
        memcpy(dst->nodes[cidx].ip, n->ip, sizeof(n->ip));
        memcpy(dst->nodes[cidx].fp, n->fp, sizeof(n->fp));
        dst->nodes[cidx].ip[10] = KS_ACT_NONE;
        dst->nodes[cidx].fp[0] = 0.0f;
        if (prelu) { /* y = PRELU(t [+ residual], slope) */
            int32_t pin[2] = {tmp, n->inputs[4]};
            if (residual) {
                int32_t sum, add2[2] = {tmp, n->inputs[3]};
                uint32_t ridx;
                snprintf(name, sizeof(name), "%s/residual", y->name ? y->name : "");
                if ((st = ks__graph_add_tensor(dst, name, KS_DTYPE_F32, y->rank, y->dims, &sum)))
                    goto fail;
                snprintf(name, sizeof(name), "%s:residual_add", n->name ? n->name : "");
                if ((st = ks__graph_add_node(dst, KS_OP_ADD, name, 2, add2, 1, &sum, &ridx)))
                    goto fail;
                pair[ridx] = (int32_t)cidx; /* follows its conv to fp32 */
                pin[0] = sum;
            }
            snprintf(name, sizeof(name), "%s:prelu", n->name ? n->name : "");
            if ((st = ks__graph_add_node(dst, KS_OP_PRELU, name, 2, pin, 1, &y_id, &aidx)))
                goto fail;
        } else if (silu) { /* SiLU: y = MUL(t, SIGMOID(t)), both with int8 kernels */
            int32_t sig, mul_in[2];
            uint32_t sidx;
            snprintf(name, sizeof(name), "%s/sigmoid", y->name ? y->name : "");
            if ((st = ks__graph_add_tensor(dst, name, KS_DTYPE_F32, y->rank, y->dims, &sig)))
                goto fail;
            snprintf(name, sizeof(name), "%s:sigmoid", n->name ? n->name : "");
            if ((st = ks__graph_add_node(dst, KS_OP_SIGMOID, name, 1, &tmp, 1, &sig, &sidx)))
                goto fail;
            mul_in[0] = tmp;
            mul_in[1] = sig;
            snprintf(name, sizeof(name), "%s:silu", n->name ? n->name : "");
            if ((st = ks__graph_add_node(dst, KS_OP_MUL, name, 2, mul_in, 1, &y_id, &aidx)))
                goto fail;
            pair[sidx] = (int32_t)cidx; /* follows its conv to fp32, never fused on its own */
        } else if (act_op) {            /* conv + an activation the int8 kernels cannot fuse */
            snprintf(name, sizeof(name), "%s:act", n->name ? n->name : "");
            if ((st = ks__graph_add_node(dst, act_op, name, 1, &tmp, 1, &y_id, &aidx))) goto fail;
            dst->nodes[aidx].fp[0] = n->fp[0]; /* LEAKY_RELU alpha */
        } else {
            add_in[0] = tmp;
            add_in[1] = n->inputs[3];
            snprintf(name, sizeof(name), "%s:residual_add", n->name ? n->name : "");
            if ((st = ks__graph_add_node(dst, KS_OP_ADD, name, 2, add_in, 1, &y_id, &aidx)))
                goto fail;
            dst->nodes[aidx].ip[0] = n->ip[10];
            dst->nodes[aidx].fp[0] = n->fp[0];
        }
        pair[cidx] = (int32_t)aidx;
        pair[aidx] = (int32_t)cidx;
    }
    if ((st = ks__graph_set_io(dst, src->num_inputs, src->inputs, src->num_outputs, src->outputs)))
        goto fail;
    for (uint32_t i = 0; i < src->num_meta; i++)
        if ((st = ks__graph_set_meta(dst, src->meta[i].key, src->meta[i].value))) goto fail;
    if ((st = ks__graph_validate(dst, err, err_cap))) goto fail;
    *pair_out = pair;
    return KS_STATUS_OK;
fail:
    if (!err[0]) ks__fmt(err, err_cap, "cannot split residual convs (status %d)", (int)st);
    free(pair);
    return st;
}
