/* Shared harness of the quantized conv / FC / depthwise variant tests (test_impl_quant.c,
 * test_impl_q8_smallc.c, test_impl_q8_dw.c, test_impl_arm_q8.c): quantized test tensors, the
 * unfused reference chains the fused CONV2D forms are compared with, and (Q8V_CONV_CASES) the
 * conv / FC node builders and the case lists the GEMM tests share. The byte-exact variant check
 * itself is q8_test_util.h's.
 * Include after <cmocka.h>, "impl.h" and "kernel.h"; everything here is static (inline, so a
 * test may leave parts unused). */
#ifndef KESTREL_TESTS_Q8_VARIANTS_H
#define KESTREL_TESTS_Q8_VARIANTS_H

#include "q8_test_util.h"

typedef struct qtensor {
    ks__rt_tensor t;
    ks__quant q;
    float scales[1024];
    int32_t zps[1024];
    void *data;
} qtensor;

/* Byte fill patterns: random, or mostly the dtype's lowest / highest code (I8 -128 / 127, U8
 * 0 / 255) for extreme products. */
enum { FILL_RANDOM = 0, FILL_LOW = 1, FILL_HIGH = 2 };

/* A tensor of dims with qcount scale / zero-point slots (set by the caller) and U8/I8 data
 * filled by `fill`; free qt->data. */
static inline void mkq_fill(qtensor *qt, ks_dtype dt, int32_t rank, const int64_t *dims,
                            uint32_t qcount, int fill) {
    memset(qt, 0, sizeof(*qt));
    qt->t.dtype = dt;
    qt->t.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        qt->t.dims[i] = dims[i];
    qt->q.count = qcount;
    qt->q.scales = qt->scales;
    qt->q.zero_points = qt->zps;
    qt->t.quant = &qt->q;
    int64_t n = ks__rt_numel(&qt->t);
    qt->t.size_bytes = (size_t)n * ks_dtype_size(dt);
    qt->data = malloc(qt->t.size_bytes ? qt->t.size_bytes : 1);
    assert_non_null(qt->data);
    qt->t.data = qt->data;
    if (dt != KS_DTYPE_U8 && dt != KS_DTYPE_I8) return;
    uint8_t lo = dt == KS_DTYPE_I8 ? 0x80 : 0x00, hi = dt == KS_DTYPE_I8 ? 0x7F : 0xFF;
    for (int64_t i = 0; i < n; i++) {
        uint8_t v = (uint8_t)urand();
        if (fill == FILL_LOW) v = (urand() % 8) ? lo : v;
        if (fill == FILL_HIGH) v = (urand() % 8) ? hi : v;
        ((uint8_t *)qt->data)[i] = v;
    }
}

static inline void mkq(qtensor *qt, ks_dtype dt, int32_t rank, const int64_t *dims,
                       uint32_t qcount) {
    mkq_fill(qt, dt, rank, dims, qcount, FILL_RANDOM);
}

/* The fused activations of the quantized kernels, indexed round robin by the case lists. */
static const int32_t k_acts[4] = {KS_ACT_NONE, KS_ACT_RELU, KS_ACT_RELU6, KS_ACT_RELU_N1_TO_1};

/* ---- fused CONV2D forms (ops.inc: ip[12] == 1): the unfused reference chain ---- */

/* Runs the reference kernel of `node` into y (dtype and quantization set; data allocated here). */
static inline void ref_run(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, qtensor *y) {
    ks__rt_tensor *outs[1] = {&y->t};
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    ks_status st = ks__ref_prepare(&ctx);
    if (st) print_error("ref infer: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    free(y->data);
    y->t.size_bytes = (size_t)ks__rt_numel(&y->t) * ks_dtype_size(y->t.dtype);
    y->data = y->t.data = malloc(y->t.size_bytes + 1);
    assert_non_null(y->data);
    ctx.scratch = aligned(ctx.scratch_bytes);
    st = k->run(&ctx);
    if (st) print_error("ref run: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    free(ctx.scratch);
}

/* An output tensor with per-tensor params and no data yet. */
static inline qtensor *new_out(ks_dtype dt, float scale, int32_t zp) {
    qtensor *q = malloc(sizeof(qtensor));
    assert_non_null(q);
    int64_t one[1] = {1};
    mkq(q, dt, 1, one, 1);
    free(q->data);
    q->t.data = q->data = NULL;
    q->scales[0] = scale;
    q->zps[0] = zp;
    return q;
}

static inline void free_q(qtensor *q) {
    if (!q) return;
    free(q->data);
    free(q);
}

enum {
    FUSE_RESIDUAL = 1,
    FUSE_SIGMOID,
    FUSE_TANH,
    FUSE_HARD_SWISH,
    FUSE_LEAKY,
    FUSE_SILU,
    FUSE_COUNT
};

/* The unfused chain after the conv: x (the intermediate) -> y with y's params. */
static inline void run_table_chain(int fuse, qtensor *x, qtensor *y) {
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.name = (char *)"chain";
    ks_dtype dt = x->t.dtype;
    int32_t base = dt == KS_DTYPE_U8 ? 128 : 0;
    if (fuse == FUSE_SILU) {
        qtensor *s = new_out(dt, 1.0f / 256.0f, base - 128);
        node.op = KS_OP_SIGMOID;
        ks__rt_tensor *ins[1] = {&x->t};
        ref_run(&node, ins, 1, s);
        node.op = KS_OP_MUL;
        ks__rt_tensor *ins2[2] = {&x->t, &s->t};
        ref_run(&node, ins2, 2, y);
        free_q(s);
        return;
    }
    node.op = fuse == FUSE_SIGMOID ? KS_OP_SIGMOID
              : fuse == FUSE_TANH  ? KS_OP_TANH
              : fuse == FUSE_LEAKY ? KS_OP_LEAKY_RELU
                                   : KS_OP_HARD_SWISH;
    node.fp[0] = 0.1f;
    ks__rt_tensor *ins[1] = {&x->t};
    ref_run(&node, ins, 1, y);
}

/* ---- conv / FC cases: with Q8V_CONV_CASES defined before the include (test_impl_quant.c,
 * test_impl_q8_smallc.c, test_impl_arm_q8.c) ---- */
#ifdef Q8V_CONV_CASES

/* Weight flavours (W_U8_128: U8 weights with zero point 128, i.e. s8 after the kernels' shift). */
enum { W_U8_TENSOR = 0, W_I8_CHANNEL_SYM = 1, W_I8_CHANNEL_ZP = 2, W_U8_128 = 3 };

typedef struct conv_case {
    int64_t n, ih, iw, ic, oc, kh, kw;
    int32_t sh, sw, dh, dw, pt, pl, pb, pr, mode, groups, act;
    int bias, wkind, fill; /* fill: FILL_* of the input and weight bytes */
    ks_dtype xdt;
    float real_mult; /* nonzero: the output scale making x_scale * w_scale / y_scale this */
    float out_gain;  /* nonzero: output scale factor; < 1 gives multipliers above 1 (left shifts) */
} conv_case;

/* Output scale that spreads the accumulators of a depth-`depth` reduction over the dtype. */
static inline float out_scale(float xs, float ws, int64_t depth) {
    return xs * ws * 74.0f * 74.0f * 5.0f * sqrtf((float)depth) / 255.0f;
}

static inline void fill_weights(qtensor *w, int wkind, int64_t channels) {
    if (wkind == W_U8_TENSOR || wkind == W_U8_128) {
        w->scales[0] = 0.0123f;
        w->zps[0] = wkind == W_U8_128 ? 128 : 117;
        return;
    }
    assert_true(channels <= 1024);
    for (int64_t c = 0; c < channels && c < 1024; c++) {
        w->scales[c] = 0.004f + 0.0005f * (float)(c % 13);
        w->zps[c] = wkind == W_I8_CHANNEL_SYM ? 0 : (int32_t)(c % 7) - 3;
    }
}

/* Weights of flavour wkind with `channels` output channels (dims[0]), bytes filled by `fill`. */
static inline void mkq_weights(qtensor *w, int wkind, int32_t rank, const int64_t *dims,
                               int64_t channels, int fill) {
    int u8 = wkind == W_U8_TENSOR || wkind == W_U8_128;
    mkq_fill(w, u8 ? KS_DTYPE_U8 : KS_DTYPE_I8, rank, dims, u8 ? 1 : (uint32_t)channels, fill);
    fill_weights(w, wkind, channels);
}

/* A quantized CONV2D or FULLY_CONNECTED node and its tensors: inputs x, w and (when the case has
 * one) b in ins; y the output with dtype and params set and no data (q8v_check allocates it). */
typedef struct q8v_node {
    ks__node node;
    qtensor *x, *w, *b, *y;
    ks__rt_tensor *ins[3];
} q8v_node;

static inline void q8v_node_alloc(q8v_node *v) {
    memset(v, 0, sizeof(*v));
    v->x = malloc(sizeof(qtensor));
    v->w = malloc(sizeof(qtensor));
    v->b = malloc(sizeof(qtensor));
    v->y = malloc(sizeof(qtensor));
    assert_true(v->x && v->w && v->b && v->y);
}

static inline void q8v_node_free(q8v_node *v) {
    free_q(v->x), free_q(v->w), free_q(v->b), free_q(v->y);
}

/* Bias of `count` values in [-range, range] and a one-element output of dtype dt. */
static inline void q8v_bias_and_out(q8v_node *v, const int64_t *bias_dims, int64_t count,
                                    int32_t range, ks_dtype dt) {
    int64_t one[1] = {1};
    mkq(v->b, KS_DTYPE_I32, 1, bias_dims, 0);
    for (int64_t i = 0; i < count; i++)
        ((int32_t *)v->b->data)[i] = (int32_t)(urand() % (uint32_t)(2 * range + 1)) - range;
    mkq(v->y, dt, 1, one, 1);
    free(v->y->data);
    v->y->t.data = v->y->data = NULL;
}

/* The CONV2D node of case c with random inputs, weights and bias. */
static inline void q8v_conv_make(q8v_node *v, const conv_case *c) {
    int64_t groups = c->groups ? c->groups : 1;
    int64_t xd[4] = {c->n, c->ih, c->iw, c->ic}, wd[4] = {c->oc, c->kh, c->kw, c->ic / groups};
    int64_t bd[1] = {c->oc};
    q8v_node_alloc(v);
    qtensor *x = v->x, *w = v->w, *y = v->y;
    mkq_fill(x, c->xdt, 4, xd, 1, c->fill);
    x->scales[0] = 0.02f;
    x->zps[0] = c->xdt == KS_DTYPE_U8 ? 131 : -7;
    if (c->fill != FILL_RANDOM) x->zps[0] = c->xdt == KS_DTYPE_U8 ? 255 - x->zps[0] : 127;
    mkq_weights(w, c->wkind, 4, wd, c->oc, c->fill);
    q8v_bias_and_out(v, bd, c->oc, 10000, c->xdt);
    int64_t depth = c->kh * c->kw * (c->ic / groups);
    y->scales[0] = c->real_mult > 0.0f ? x->scales[0] * w->scales[0] / c->real_mult
                                       : out_scale(x->scales[0], w->scales[0], depth) *
                                             (c->out_gain > 0.0f ? c->out_gain : 1.0f);
    y->zps[0] = c->xdt == KS_DTYPE_U8 ? 121 : 3;
    v->node.op = KS_OP_CONV2D;
    v->node.name = (char *)"qconv";
    int32_t ip[11] = {c->sh, c->sw, c->dh,   c->dw,     c->pt, c->pl,
                      c->pb, c->pr, c->mode, c->groups, c->act};
    memcpy(v->node.ip, ip, sizeof(ip));
    v->ins[0] = &x->t, v->ins[1] = &w->t, v->ins[2] = c->bias ? &v->b->t : NULL;
}

/* A FULLY_CONNECTED node: rows x in_size input, `out` outputs, weights of flavour wkind. */
static inline void q8v_fc_make(q8v_node *v, int64_t rows, int64_t in_size, int64_t out, int wkind,
                               ks_dtype xdt, int32_t act, int bias) {
    int64_t xd[2] = {rows, in_size}, wd[2] = {out, in_size}, bd[1] = {out};
    q8v_node_alloc(v);
    qtensor *x = v->x, *w = v->w, *y = v->y;
    mkq(x, xdt, 2, xd, 1);
    x->scales[0] = 0.05f;
    x->zps[0] = xdt == KS_DTYPE_U8 ? 100 : 10;
    mkq_weights(w, wkind, 2, wd, out, FILL_RANDOM);
    q8v_bias_and_out(v, bd, out, 20000, xdt);
    y->scales[0] = out_scale(x->scales[0], w->scales[0], in_size);
    y->zps[0] = xdt == KS_DTYPE_U8 ? 128 : -1;
    v->node.op = KS_OP_FULLY_CONNECTED;
    v->node.name = (char *)"qfc";
    v->node.ip[0] = act;
    v->ins[0] = &x->t, v->ins[1] = &w->t, v->ins[2] = bias ? &v->b->t : NULL;
}

/* ---- case lists the GEMM tests share (each test sets the weight flavour and input dtype) ---- */

/* General convs: the MobileNet stem, padding, dilation, strides, the 1x1 indirect path. */
static inline const conv_case *q8v_general_cases(size_t *count) {
    static const conv_case cases[] = {
        /* first layer of MobileNet: 3x3 s2 SAME, 3 input channels */
        {.n = 1,
         .ih = 15,
         .iw = 17,
         .ic = 3,
         .oc = 32,
         .kh = 3,
         .kw = 3,
         .sh = 2,
         .sw = 2,
         .mode = KS_PAD_SAME_UPPER,
         .bias = 1,
         .act = KS_ACT_RELU6},
        /* 3x3 pad 1, odd channels */
        {.n = 1,
         .ih = 9,
         .iw = 11,
         .ic = 13,
         .oc = 35,
         .kh = 3,
         .kw = 3,
         .pt = 1,
         .pl = 1,
         .pb = 1,
         .pr = 1,
         .bias = 1,
         .act = KS_ACT_RELU},
        /* 5x3, stride 2x1, dilation, asymmetric pads, two images */
        {.n = 2,
         .ih = 10,
         .iw = 7,
         .ic = 6,
         .oc = 17,
         .kh = 5,
         .kw = 3,
         .sh = 2,
         .sw = 1,
         .dh = 2,
         .dw = 1,
         .pt = 2,
         .pl = 0,
         .pb = 1,
         .pr = 2},
        /* VALID, stride 3, K per tap 33 (two 16-byte groups + a 4-byte tail) */
        {.n = 1,
         .ih = 13,
         .iw = 13,
         .ic = 33,
         .oc = 64,
         .kh = 3,
         .kw = 3,
         .sh = 3,
         .sw = 3,
         .mode = KS_PAD_VALID,
         .bias = 1,
         .act = KS_ACT_RELU_N1_TO_1},
        /* 1x1 stride 2 (indirect path) */
        {.n = 1,
         .ih = 7,
         .iw = 9,
         .ic = 20,
         .oc = 40,
         .kh = 1,
         .kw = 1,
         .sh = 2,
         .sw = 2,
         .bias = 1},
    };
    *count = sizeof(cases) / sizeof(cases[0]);
    return cases;
}

/* Depthwise geometries (the caller sets ic = oc = groups): SAME, stride 2, 5x5 with explicit
 * pads, dilation. */
static inline const conv_case *q8v_dw_cases(size_t *count) {
    static const conv_case cases[] = {
        {.n = 1,
         .ih = 9,
         .iw = 10,
         .kh = 3,
         .kw = 3,
         .mode = KS_PAD_SAME_UPPER,
         .bias = 1,
         .act = KS_ACT_RELU6},
        {.n = 2,
         .ih = 11,
         .iw = 8,
         .kh = 3,
         .kw = 3,
         .sh = 2,
         .sw = 2,
         .mode = KS_PAD_SAME_UPPER,
         .bias = 1,
         .act = KS_ACT_RELU},
        {.n = 1,
         .ih = 12,
         .iw = 13,
         .kh = 5,
         .kw = 5,
         .sh = 2,
         .sw = 2,
         .pt = 1,
         .pl = 2,
         .pb = 2,
         .pr = 1},
        {.n = 1,
         .ih = 6,
         .iw = 7,
         .kh = 5,
         .kw = 5,
         .mode = KS_PAD_SAME_UPPER,
         .act = KS_ACT_RELU_N1_TO_1},
        {.n = 1,
         .ih = 9,
         .iw = 9,
         .kh = 3,
         .kw = 3,
         .dh = 2,
         .dw = 2,
         .mode = KS_PAD_VALID,
         .bias = 1},
    };
    *count = sizeof(cases) / sizeof(cases[0]);
    return cases;
}

/* A wide 1x1 conv: 64 -> 96 channels over two images. */
static inline conv_case q8v_wide_1x1_case(void) {
    conv_case c = {.n = 2,
                   .ih = 5,
                   .iw = 7,
                   .ic = 64,
                   .oc = 96,
                   .kh = 1,
                   .kw = 1,
                   .bias = 1,
                   .xdt = KS_DTYPE_U8};
    return c;
}

/* Convs the GEMM and depthwise variants leave to the reference: grouped (not depthwise), and
 * depthwise with a channel multiplier. */
static inline conv_case q8v_grouped_case(void) {
    conv_case c = {.n = 1,
                   .ih = 5,
                   .iw = 5,
                   .ic = 8,
                   .oc = 8,
                   .kh = 3,
                   .kw = 3,
                   .groups = 2,
                   .mode = KS_PAD_SAME_UPPER,
                   .xdt = KS_DTYPE_U8};
    return c;
}

static inline conv_case q8v_multiplier_case(void) {
    conv_case c = {.n = 1,
                   .ih = 5,
                   .iw = 5,
                   .ic = 4,
                   .oc = 8,
                   .kh = 3,
                   .kw = 3,
                   .groups = 4,
                   .mode = KS_PAD_SAME_UPPER,
                   .xdt = KS_DTYPE_I8,
                   .wkind = W_I8_CHANNEL_SYM};
    return c;
}

/* One fused conv case: the fused reference against the unfused reference chain (CONV2D with act
 * NONE to the intermediate, then the residual ADD or the table op), then every variant `check`
 * selects against the fused reference. c->bias == 2 adds +-2^30 to the bias (accumulators past
 * 2^30). Returns the number of variants that took the node. */
static inline int q8v_fused_case(const conv_case *c, int fuse, int32_t act,
                                 int (*check)(const ks__node *, ks__rt_tensor **, uint32_t,
                                              ks__rt_tensor *)) {
    int64_t groups = c->groups ? c->groups : 1;
    int64_t xd[4] = {c->n, c->ih, c->iw, c->ic}, wd[4] = {c->oc, c->kh, c->kw, c->ic / groups};
    int64_t bd[1] = {c->oc};
    qtensor *x = malloc(sizeof(qtensor)), *w = malloc(sizeof(qtensor)),
            *b = malloc(sizeof(qtensor));
    assert_true(x && w && b);
    ks_dtype dt = c->xdt;
    int32_t base = dt == KS_DTYPE_U8 ? 128 : 0;
    mkq(x, dt, 4, xd, 1);
    x->scales[0] = 0.02f;
    x->zps[0] = base + (int32_t)(urand() % 41) - 20;
    mkq_weights(w, c->wkind, 4, wd, c->oc, FILL_RANDOM);
    mkq(b, KS_DTYPE_I32, 1, bd, 0);
    for (int64_t i = 0; i < c->oc; i++) {
        int32_t v = (int32_t)(urand() % 20001) - 10000;
        /* bias 2: accumulators past 2^30 (the smallc kernels' general requantization form) */
        if (c->bias == 2) v += (int32_t)(i % 2 ? 1 : -1) * (1 << 30);
        ((int32_t *)b->data)[i] = v;
    }
    int64_t depth = c->kh * c->kw * (c->ic / groups);
    float ts = out_scale(x->scales[0], w->scales[0], depth);
    int32_t tz = base + (int32_t)(urand() % 61) - 30;
    /* unfused: CONV2D (act NONE) to the intermediate t, then ADD or the table chain */
    ks__node conv;
    memset(&conv, 0, sizeof(conv));
    conv.op = KS_OP_CONV2D;
    conv.name = (char *)"qconv";
    int32_t ip[11] = {c->sh, c->sw, c->dh,   c->dw,     c->pt,      c->pl,
                      c->pb, c->pr, c->mode, c->groups, KS_ACT_NONE};
    memcpy(conv.ip, ip, sizeof(ip));
    ks__rt_tensor *cins[3] = {&x->t, &w->t, c->bias ? &b->t : NULL};
    qtensor *t = new_out(dt, ts, tz);
    ref_run(&conv, cins, 3, t);
    qtensor *want = NULL, *r = NULL, *tab = NULL, *idx = NULL;
    ks__node fused = conv;
    fused.ip[11] = tz;
    fused.ip[12] = 1;
    fused.fp[1] = ts;
    ks__rt_tensor *fins[5] = {&x->t, &w->t, c->bias ? &b->t : NULL, NULL, NULL};
    if (fuse == FUSE_RESIDUAL) {
        r = malloc(sizeof(qtensor));
        assert_non_null(r);
        mkq(r, dt, 4, t->t.dims, 1);
        r->scales[0] = ts * (0.3f + (float)(urand() % 100) / 40.0f);
        r->zps[0] = base + (int32_t)(urand() % 81) - 40;
        float rs = r->scales[0];
        want = new_out(dt, 1.3f * (ts > rs ? ts : rs), base + (int32_t)(urand() % 21) - 10);
        ks__node add;
        memset(&add, 0, sizeof(add));
        add.op = KS_OP_ADD;
        add.name = (char *)"qadd";
        add.ip[0] = act;
        ks__rt_tensor *ains[2] = {&t->t, &r->t};
        ref_run(&add, ains, 2, want);
        fused.ip[10] = act;
        fins[3] = &r->t;
    } else {
        float ys = fuse == FUSE_SIGMOID ? 1.0f / 256.0f : fuse == FUSE_TANH ? 1.0f / 128.0f : ts;
        int32_t yz = fuse == FUSE_SIGMOID ? base - 128 : fuse == FUSE_TANH ? base : tz;
        want = new_out(dt, ys, yz);
        run_table_chain(fuse, t, want);
        /* the table: the same chain on the 256 values, index i holding value i (- 128 for I8) */
        int64_t n256[1] = {256};
        idx = malloc(sizeof(qtensor));
        assert_non_null(idx);
        mkq(idx, dt, 1, n256, 1);
        idx->scales[0] = ts;
        idx->zps[0] = tz;
        for (int i = 0; i < 256; i++)
            ((uint8_t *)idx->data)[i] = (uint8_t)(dt == KS_DTYPE_I8 ? i ^ 0x80 : i);
        tab = new_out(dt, ys, yz);
        run_table_chain(fuse, idx, tab);
        fused.ip[10] = KS_ACT_TABLE;
        fins[4] = &tab->t;
    }
    /* the fused reference must equal the unfused pair bit for bit */
    qtensor *got = new_out(dt, want->scales[0], want->zps[0]);
    ref_run(&fused, fins, 5, got);
    assert_int_equal(got->t.size_bytes, want->t.size_bytes);
    for (size_t i = 0; i < want->t.size_bytes; i++) {
        if (((uint8_t *)got->data)[i] != ((uint8_t *)want->data)[i]) {
            print_error("fuse %d act %d element %zu: fused %d unfused %d\n", fuse, act, i,
                        ((uint8_t *)got->data)[i], ((uint8_t *)want->data)[i]);
            fail();
        }
    }
    /* and every fast variant must equal the fused reference */
    qtensor *fy = new_out(dt, want->scales[0], want->zps[0]);
    int ran = check(&fused, fins, 5, &fy->t);
    free_q(fy);
    free_q(got);
    free_q(want);
    free_q(t);
    free_q(r);
    free_q(tab);
    free_q(idx);
    free_q(x), free_q(w), free_q(b);
    return ran;
}
#endif /* Q8V_CONV_CASES */

#endif /* KESTREL_TESTS_Q8_VARIANTS_H */
