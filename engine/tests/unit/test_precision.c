/* Session precision (engine/src/precision.h): int8 layers of a quantized model run in fp32.
 *
 * A small quantized network (QUANTIZE -> conv 3x3 -> PRELU -> 1x1 conv with a fused residual ->
 * depthwise 3x3 + RELU6 -> ADD -> 1x1 conv with a fused sigmoid table -> global average pool ->
 * reshape -> FC -> DEQUANTIZE) is built
 * next to its float twin with the dequantized weights. With KS_PRECISION_F32 the quantized
 * model must compute the float twin's outputs (to float rounding), with every single layer
 * demoted alone its outputs must stay within the int8 model's error, and KS_PRECISION_FASTEST
 * must give a working session. The minimum cut is checked against brute force. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "convert.h"
#include "kestrel/engine.h"
#include "ksm.h"
#include "precision.h"
#include "runtime/runtime.h"

/* ---- minimum cut against brute force ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void test_mincut_brute_force(void **state) {
    (void)state;
    for (int trial = 0; trial < 400; trial++) {
        uint32_t n = 1 + rnd() % 10, m = rnd() % 24;
        double c0[10], c1[10], ab[24], ba[24];
        uint32_t a[24], b[24];
        for (uint32_t i = 0; i < n; i++) {
            c0[i] = (double)(rnd() % 100);
            c1[i] = (double)(rnd() % 100);
            if (rnd() % 8 == 0)
                c0[i] = KS__PREC_INF; /* forced fp32 */
            else if (rnd() % 8 == 0)
                c1[i] = KS__PREC_INF;
        }
        for (uint32_t k = 0; k < m; k++) {
            a[k] = rnd() % n;
            b[k] = rnd() % n;
            ab[k] = (double)(rnd() % 40);
            ba[k] = (double)(rnd() % 40);
        }
        uint8_t labels[10];
        double got = ks__prec_mincut(n, c0, c1, m, a, b, ab, ba, labels, NULL);
        double best = INFINITY;
        for (uint32_t mask = 0; mask < (1u << n); mask++) {
            double c = 0;
            for (uint32_t i = 0; i < n; i++)
                c += (mask >> i & 1) ? c1[i] : c0[i];
            for (uint32_t k = 0; k < m; k++) {
                uint32_t la = mask >> a[k] & 1, lb = mask >> b[k] & 1;
                if (!la && lb) c += ab[k];
                if (la && !lb) c += ba[k];
            }
            if (c < best) best = c;
        }
        double mine = 0;
        for (uint32_t i = 0; i < n; i++)
            mine += labels[i] ? c1[i] : c0[i];
        for (uint32_t k = 0; k < m; k++) {
            if (!labels[a[k]] && labels[b[k]]) mine += ab[k];
            if (labels[a[k]] && !labels[b[k]]) mine += ba[k];
        }
        if (best < KS__PREC_INF) {
            assert_true(fabs(got - best) <= 1e-6 * (1 + best));
            assert_true(fabs(mine - best) <= 1e-6 * (1 + best));
        }
    }
}

/* ---- the quantized network and its float twin ---- */

#define H 6
#define W 6
#define CI 4
#define CO 8
#define NO 5

typedef struct net {
    ks__graph g;
    bool quant;
} net;

static int32_t act_tensor(net *n, const char *name, int32_t rank, const int64_t *dims, float lo,
                          float hi) {
    int32_t id;
    ks_dtype dt = n->quant ? KS_DTYPE_I8 : KS_DTYPE_F32;
    assert_int_equal(ks__graph_add_tensor(&n->g, name, dt, rank, dims, &id), 0);
    if (n->quant) {
        float s = (hi - lo) / 255.0f;
        int32_t zp = (int32_t)lrintf(-128.0f - lo / s);
        assert_int_equal(ks__graph_set_quant(&n->g, id, 1, 0, &s, &zp), 0);
    }
    return id;
}

/* the activation scale of range [0, hi] (both nets round the biases with it) */
static float act_scale(float hi) {
    return hi / 255.0f;
}

/* Weights [co, ...inner] from a fixed pattern; in the quantized net I8 per output channel
 * (symmetric), bias I32 at in_scale * w_scale; in the float net the dequantized values. */
static void weights(net *n, const char *name, int32_t rank, const int64_t *dims, float in_scale,
                    int32_t *w_id, int32_t *b_id, int seed) {
    int64_t co = dims[0], inner = 1;
    for (int32_t k = 1; k < rank; k++)
        inner *= dims[k];
    float *wf = malloc((size_t)(co * inner) * sizeof(float));
    int8_t *wq = malloc((size_t)(co * inner));
    float *ws = malloc((size_t)co * sizeof(float)), *bf = malloc((size_t)co * sizeof(float));
    int32_t *bq = malloc((size_t)co * sizeof(int32_t)), *zp = calloc((size_t)co, sizeof(int32_t));
    float *bs = malloc((size_t)co * sizeof(float));
    for (int64_t c = 0; c < co; c++) {
        float mx = 0;
        for (int64_t i = 0; i < inner; i++) {
            float v = (float)((int)((c * 131 + i * 71 + seed * 29) % 97) - 48) / 64.0f;
            wf[c * inner + i] = v;
            mx = fmaxf(mx, fabsf(v));
        }
        ws[c] = mx / 127.0f;
        bs[c] = in_scale * ws[c];
        float b = (float)((int)((c * 17 + seed) % 11) - 5) * 0.05f;
        bq[c] = (int32_t)lrintf(b / bs[c]);
        bf[c] = (float)bq[c] * bs[c];
        for (int64_t i = 0; i < inner; i++) {
            wq[c * inner + i] = (int8_t)lrintf(wf[c * inner + i] / ws[c]);
            wf[c * inner + i] = (float)wq[c * inner + i] * ws[c];
        }
    }
    char bname[64];
    snprintf(bname, sizeof(bname), "%s_bias", name);
    int64_t bd[1] = {co};
    if (n->quant) {
        assert_int_equal(ks__graph_add_tensor(&n->g, name, KS_DTYPE_I8, rank, dims, w_id), 0);
        assert_int_equal(ks__graph_set_const(&n->g, *w_id, wq, (size_t)(co * inner), true), 0);
        assert_int_equal(ks__graph_set_quant(&n->g, *w_id, (uint32_t)co, 0, ws, zp), 0);
        assert_int_equal(ks__graph_add_tensor(&n->g, bname, KS_DTYPE_I32, 1, bd, b_id), 0);
        assert_int_equal(ks__graph_set_const(&n->g, *b_id, bq, (size_t)co * 4, true), 0);
        /* ks-quant stores biases without params (implied: in_scale * w_scale); test both */
        if (seed % 2 == 0)
            assert_int_equal(ks__graph_set_quant(&n->g, *b_id, (uint32_t)co, 0, bs, zp), 0);
    } else {
        assert_int_equal(ks__graph_add_tensor(&n->g, name, KS_DTYPE_F32, rank, dims, w_id), 0);
        assert_int_equal(
            ks__graph_set_const(&n->g, *w_id, wf, (size_t)(co * inner) * sizeof(float), true), 0);
        assert_int_equal(ks__graph_add_tensor(&n->g, bname, KS_DTYPE_F32, 1, bd, b_id), 0);
        assert_int_equal(ks__graph_set_const(&n->g, *b_id, bf, (size_t)co * sizeof(float), true),
                         0);
    }
    free(wf), free(wq), free(ws), free(bf), free(bq), free(zp), free(bs);
}

static uint32_t node(net *n, uint32_t op, const char *name, uint32_t ni, const int32_t *in,
                     int32_t out) {
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(&n->g, op, name, ni, in, 1, &out, &idx), 0);
    return idx;
}

static void build(net *n, bool quant) {
    ks__graph_init(&n->g, NULL);
    n->quant = quant;
    int64_t dx[4] = {1, H, W, CI}, dc[4] = {1, H, W, CO}, dp[4] = {1, 1, 1, CO};
    int64_t dr[2] = {1, CO}, dy[2] = {1, NO};
    int32_t x, y, xq;
    assert_int_equal(ks__graph_add_tensor(&n->g, "x", KS_DTYPE_F32, 4, dx, &x), 0);
    if (quant) {
        xq = act_tensor(n, "xq", 4, dx, 0.0f, 1.0f);
        node(n, KS_OP_QUANTIZE, "quantize", 1, &x, xq);
    } else {
        xq = x;
    }
    int32_t w, b, idx;
    /* conv1 3x3 SAME + RELU */
    int64_t w1[4] = {CO, 3, 3, CI};
    weights(n, "w1", 4, w1, act_scale(1.0f), &w, &b, 1);
    int32_t c0 = act_tensor(n, "c0", 4, dc, -3.0f, 3.0f);
    int32_t in1[3] = {xq, w, b};
    idx = (int32_t)node(n, KS_OP_CONV2D, "conv1", 3, in1, c0);
    n->g.nodes[idx].ip[0] = n->g.nodes[idx].ip[1] = 1;
    n->g.nodes[idx].ip[8] = KS_PAD_SAME_UPPER;
    /* PRELU with one slope per channel (fp32: folds into the conv) */
    int64_t da[3] = {1, 1, CO};
    int32_t alpha, c1 = act_tensor(n, "c1", 4, dc, -1.0f, 3.0f);
    int8_t aq[CO];
    float af[CO], as = 0.5f / 127.0f;
    int32_t azp = 0;
    for (int c = 0; c < CO; c++) {
        aq[c] = (int8_t)(c * 13 - 40);
        af[c] = (float)aq[c] * as;
    }
    assert_int_equal(
        ks__graph_add_tensor(&n->g, "alpha", quant ? KS_DTYPE_I8 : KS_DTYPE_F32, 3, da, &alpha), 0);
    if (quant) {
        assert_int_equal(ks__graph_set_const(&n->g, alpha, aq, sizeof(aq), true), 0);
        assert_int_equal(ks__graph_set_quant(&n->g, alpha, 1, 0, &as, &azp), 0);
    } else {
        assert_int_equal(ks__graph_set_const(&n->g, alpha, af, sizeof(af), true), 0);
    }
    int32_t inp[2] = {c0, alpha};
    node(n, KS_OP_PRELU, "prelu", 2, inp, c1);
    /* conv2 1x1 with the residual c1 fused, + RELU */
    int64_t w2[4] = {CO, 1, 1, CO};
    weights(n, "w2", 4, w2, act_scale(3.0f), &w, &b, 2);
    int32_t c2 = act_tensor(n, "c2", 4, dc, 0.0f, 6.0f);
    int32_t in2[4] = {c1, w, b, c1};
    idx = (int32_t)node(n, KS_OP_CONV2D, "conv2", 4, in2, c2);
    n->g.nodes[idx].ip[0] = n->g.nodes[idx].ip[1] = 1;
    n->g.nodes[idx].ip[8] = KS_PAD_VALID;
    n->g.nodes[idx].ip[10] = KS_ACT_RELU;
    if (quant) { /* the conv's own result, before the residual ADD */
        n->g.nodes[idx].ip[12] = 1;
        n->g.nodes[idx].ip[11] = -10;
        n->g.nodes[idx].fp[1] = 5.0f / 255.0f;
    }
    /* depthwise 3x3 + RELU6 */
    int64_t w3[4] = {CO, 3, 3, 1};
    weights(n, "w3", 4, w3, act_scale(6.0f), &w, &b, 3);
    int32_t c3 = act_tensor(n, "c3", 4, dc, 0.0f, 6.0f);
    int32_t in3[3] = {c2, w, b};
    idx = (int32_t)node(n, KS_OP_CONV2D, "dw", 3, in3, c3);
    n->g.nodes[idx].ip[0] = n->g.nodes[idx].ip[1] = 1;
    n->g.nodes[idx].ip[8] = KS_PAD_SAME_UPPER;
    n->g.nodes[idx].ip[9] = CO;
    n->g.nodes[idx].ip[10] = KS_ACT_RELU6;
    /* ADD, global average pool, reshape, FC */
    int32_t s = act_tensor(n, "sum", 4, dc, 0.0f, 10.0f);
    int32_t ina[2] = {c3, c2};
    node(n, KS_OP_ADD, "add", 2, ina, s);
    /* 1x1 conv + SIGMOID: in int8 one conv with a fused output table (act TABLE) that records
     * its float activation (ops.inc CONV2D ip 13), as ks-quant writes it */
    int64_t w5[4] = {CO, 1, 1, CO};
    weights(n, "w5", 4, w5, act_scale(10.0f), &w, &b, 6);
    int32_t sg = act_tensor(n, "sig", 4, dc, 0.0f, 1.0f);
    if (quant) {
        const float ts = 16.0f / 255.0f, ys = act_scale(1.0f);
        const int32_t tz = 0, yz = -128;
        int8_t tab[256];
        for (int q = -128; q < 128; q++) {
            double r = ts * (q - tz), sgm = 1.0 / (1.0 + exp(-r));
            long v = lrint(sgm / ys) + yz;
            tab[q + 128] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
        }
        int64_t d256 = 256;
        int32_t tab_id;
        assert_int_equal(ks__graph_add_tensor(&n->g, "w5/table", KS_DTYPE_I8, 1, &d256, &tab_id),
                         0);
        assert_int_equal(ks__graph_set_const(&n->g, tab_id, tab, sizeof(tab), true), 0);
        int32_t in5[5] = {s, w, b, -1, tab_id};
        idx = (int32_t)node(n, KS_OP_CONV2D, "head", 5, in5, sg);
        n->g.nodes[idx].ip[10] = KS_ACT_TABLE;
        n->g.nodes[idx].ip[11] = tz;
        n->g.nodes[idx].ip[12] = 1;
        n->g.nodes[idx].ip[13] = KS_ACT_SIGMOID;
        n->g.nodes[idx].fp[1] = ts;
    } else {
        int32_t in5[3] = {s, w, b};
        idx = (int32_t)node(n, KS_OP_CONV2D, "head", 3, in5, sg);
        n->g.nodes[idx].ip[10] = KS_ACT_SIGMOID;
    }
    n->g.nodes[idx].ip[0] = n->g.nodes[idx].ip[1] = 1;
    n->g.nodes[idx].ip[8] = KS_PAD_VALID;
    int32_t p = act_tensor(n, "pool", 4, dp, 0.0f, 1.0f);
    idx = (int32_t)node(n, KS_OP_POOL2D, "pool", 1, &sg, p);
    n->g.nodes[idx].ip[9] = 1; /* average; kh == kw == 0: global */
    int32_t r = act_tensor(n, "flat", 2, dr, 0.0f, 1.0f);
    idx = (int32_t)node(n, KS_OP_RESHAPE, "flat", 1, &p, r);
    n->g.nodes[idx].ip[0] = 2;
    n->g.nodes[idx].ip[1] = 1;
    n->g.nodes[idx].ip[2] = CO;
    int64_t w4[2] = {NO, CO};
    weights(n, "w4", 2, w4, act_scale(1.0f), &w, &b, 4);
    int32_t f = act_tensor(n, "fc", 2, dy, -12.0f, 12.0f);
    int32_t in4[3] = {r, w, b};
    node(n, KS_OP_FULLY_CONNECTED, "fc", 3, in4, f);
    if (quant) {
        assert_int_equal(ks__graph_add_tensor(&n->g, "y", KS_DTYPE_F32, 2, dy, &y), 0);
        node(n, KS_OP_DEQUANTIZE, "dequantize", 1, &f, y);
    } else {
        y = f;
    }
    assert_int_equal(ks__graph_set_io(&n->g, 1, &x, 1, &y), 0);
}

typedef struct loaded {
    uint8_t *img;
    ks_model *m;
} loaded;

static void load_graph(ks__graph *g, loaded *l) {
    size_t bytes = 0;
    char err[256];
    assert_int_equal(ks__ksm_write(g, &l->img, &bytes, err, sizeof(err)), 0);
    assert_int_equal(ks_model_load_buffer(l->img, bytes, NULL, &l->m), KS_STATUS_OK);
}

static void unload(loaded *l) {
    ks_model_destroy(l->m);
    free(l->img);
}

/* Runs m on a fixed input; with probe >= 0 also returns tensor probe's dtype in the session. */
static void run_probe(const ks_model *m, ks_precision p, float *out, int32_t probe,
                      ks_dtype *probe_dtype) {
    ks_session *s = NULL;
    ks_session_desc d = {
        .num_threads = 1, .precision = p, .flags = probe >= 0 ? KS_SESSION_KEEP_ALL_TENSORS : 0u};
    assert_int_equal(ks_session_create(m, &d, &s), KS_STATUS_OK);
    assert_int_equal(ks_session_reshape(s, NULL), KS_STATUS_OK);
    ks_tensor in, o;
    assert_int_equal(ks_session_input(s, 0, &in), 0);
    float *xv = in.data;
    for (size_t i = 0; i < in.size_bytes / sizeof(float); i++)
        xv[i] = (float)((i * 53) % 61) / 60.0f;
    assert_int_equal(ks_session_run(s), KS_STATUS_OK);
    assert_int_equal(ks_session_output(s, 0, &o), 0);
    assert_int_equal(o.info.dtype, KS_DTYPE_F32);
    assert_int_equal(o.size_bytes, NO * sizeof(float));
    memcpy(out, o.data, o.size_bytes);
    if (probe >= 0) {
        ks_tensor t;
        assert_int_equal(ks_session_tensor(s, (uint32_t)probe, &t), 0);
        *probe_dtype = t.info.dtype;
    }
    ks_session_destroy(s);
}

static void run_model(const ks_model *m, ks_precision p, float *out) {
    run_probe(m, p, out, -1, NULL);
}

static float max_diff(const float *a, const float *b) {
    float d = 0;
    for (int i = 0; i < NO; i++)
        d = fmaxf(d, fabsf(a[i] - b[i]));
    return d;
}

static void test_f32_matches_float_twin(void **state) {
    (void)state;
    net q, f;
    build(&q, true);
    build(&f, false);
    /* 4 convs (one with a table), prelu, add, pool, reshape, fc */
    assert_int_equal(ks__prec_count_demotable(&q.g), 9);
    loaded lq, lf;
    load_graph(&q.g, &lq);
    load_graph(&f.g, &lf);
    float want[NO], i8[NO], f32[NO], dflt[NO];
    run_model(lf.m, KS_PRECISION_DEFAULT, want);
    run_model(lq.m, KS_PRECISION_DEFAULT, i8);
    run_model(lq.m, KS_PRECISION_F32, f32);
    run_model(lf.m, KS_PRECISION_F32, dflt); /* a float model ignores the precision */
    float err8 = max_diff(i8, want), err32 = max_diff(f32, want);
    print_message("int8 %.5f, fp32 %.2e off the float twin\n", err8, err32);
    assert_true(err32 <= 1e-5f * (1.0f + fabsf(want[0])));
    assert_true(err8 > 1e-4f); /* the int8 model really is int8 */
    assert_true(err8 < 0.25f);
    assert_memory_equal(dflt, want, sizeof(want));

    /* the demoted graph has no int8 left: the QUANTIZE and DEQUANTIZE became views and the
     * PRELU folded into its conv */
    ks__graph out;
    uint8_t all[16];
    memset(all, 1, sizeof(all));
    char err[256] = "";
    int32_t *src = NULL;
    assert_int_equal(ks__prec_build(&q.g, all, &out, &src, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(out.num_nodes, q.g.num_nodes - 1);
    uint32_t prelu_convs = 0;
    for (uint32_t i = 0; i < out.num_nodes; i++) {
        assert_true(src[i] >= 0 && q.g.nodes[src[i]].op != KS_OP_PRELU);
        for (uint32_t k = 0; k < out.nodes[i].num_outputs; k++)
            assert_int_equal(out.tensors[out.nodes[i].outputs[k]].dtype, KS_DTYPE_F32);
        if (out.nodes[i].op == KS_OP_CONV2D && out.nodes[i].ip[10] == KS_ACT_PRELU) {
            prelu_convs++;
            assert_int_equal(out.nodes[i].num_inputs, 5);
            assert_string_equal(out.tensors[out.nodes[i].outputs[0]].name, "c1");
        }
    }
    assert_int_equal(prelu_convs, 1);
    uint32_t sigmoid_convs = 0; /* the table conv runs the function its table held */
    for (uint32_t i = 0; i < out.num_nodes; i++)
        if (out.nodes[i].op == KS_OP_CONV2D && out.nodes[i].ip[10] == KS_ACT_SIGMOID) {
            sigmoid_convs++;
            assert_int_equal(out.nodes[i].num_inputs, 3);
            assert_int_equal(out.nodes[i].ip[12], 0);
        }
    assert_int_equal(sigmoid_convs, 1);
    assert_int_equal(out.nodes[0].op, KS_OP_RESHAPE);
    assert_int_equal(out.nodes[out.num_nodes - 1].op, KS_OP_RESHAPE);
    free(src);
    ks__graph_free(&out);
    unload(&lq);
    unload(&lf);
    ks__graph_free(&q.g);
    ks__graph_free(&f.g);
}

/* Every single layer in fp32 (the rest int8): conversions at both sides, outputs within the
 * int8 model's error. */
static void test_each_layer_alone(void **state) {
    (void)state;
    net q, f;
    build(&q, true);
    build(&f, false);
    loaded lf;
    load_graph(&f.g, &lf);
    float want[NO], i8[NO];
    run_model(lf.m, KS_PRECISION_DEFAULT, want);
    {
        loaded lq;
        load_graph(&q.g, &lq);
        run_model(lq.m, KS_PRECISION_DEFAULT, i8);
        unload(&lq);
    }
    float err8 = max_diff(i8, want);
    uint32_t tried = 0;
    for (uint32_t i = 0; i < q.g.num_nodes; i++) {
        if (!ks__prec_demotable(&q.g, i)) continue;
        uint8_t one[16] = {0};
        one[i] = 1;
        ks__graph mixed;
        char err[256] = "";
        int32_t *src = NULL;
        assert_int_equal(ks__prec_build(&q.g, one, &mixed, &src, err, sizeof(err)), 0);
        uint32_t added = 0;
        for (uint32_t j = 0; j < mixed.num_nodes; j++)
            added += src[j] < 0;
        /* an inner layer needs one DEQUANTIZE in front and one QUANTIZE behind (shared by
         * every reader); the first conv reads the input QUANTIZE, which becomes a view, and the
         * FC feeds the output DEQUANTIZE, which becomes a view */
        const char *nm = q.g.nodes[i].name;
        bool edge = strcmp(nm, "conv1") == 0 || strcmp(nm, "fc") == 0;
        assert_int_equal(added, edge ? 1 : strcmp(nm, "add") == 0 ? 3 : 2); /* ADD reads two */
        free(src);
        loaded lm;
        load_graph(&mixed, &lm);
        float got[NO];
        ks_dtype dt = KS_DTYPE_INVALID, dt8 = KS_DTYPE_INVALID;
        int32_t probe = q.g.nodes[i].outputs[0]; /* ids are kept */
        run_probe(lm.m, KS_PRECISION_DEFAULT, got, probe, &dt);
        assert_int_equal(dt, KS_DTYPE_F32);
        {
            loaded l8;
            load_graph(&q.g, &l8);
            float tmp[NO];
            run_probe(l8.m, KS_PRECISION_DEFAULT, tmp, probe, &dt8);
            assert_int_equal(dt8, KS_DTYPE_I8);
            unload(&l8);
        }
        float e = max_diff(got, want);
        print_message("node %u (%s) in fp32: %.5f off (int8 %.5f)\n", i, q.g.nodes[i].name, e,
                      err8);
        assert_true(e <= 1.5f * err8 + 1e-3f);
        unload(&lm);
        ks__graph_free(&mixed);
        tried++;
    }
    assert_int_equal(tried, 9);
    unload(&lf);
    ks__graph_free(&q.g);
    ks__graph_free(&f.g);
}

/* Every subset of the 9 demotable layers in fp32: the graph builds, validates, loads and runs,
 * and its outputs stay within the int8 model's error of the float twin. */
static void test_every_mix(void **state) {
    (void)state;
    net q, f;
    build(&q, true);
    build(&f, false);
    loaded lf, lq;
    load_graph(&f.g, &lf);
    load_graph(&q.g, &lq);
    float want[NO], i8[NO];
    run_model(lf.m, KS_PRECISION_DEFAULT, want);
    run_model(lq.m, KS_PRECISION_DEFAULT, i8);
    unload(&lq);
    float err8 = max_diff(i8, want), worst = 0;
    uint32_t dem[16], nd = 0;
    for (uint32_t i = 0; i < q.g.num_nodes; i++)
        if (ks__prec_demotable(&q.g, i)) dem[nd++] = i;
    assert_int_equal(nd, 9);
    for (uint32_t mask = 0; mask < (1u << nd); mask++) {
        uint8_t sel[16] = {0};
        for (uint32_t k = 0; k < nd; k++)
            sel[dem[k]] = (uint8_t)(mask >> k & 1);
        ks__graph mixed;
        char err[256] = "";
        assert_int_equal(ks__prec_build(&q.g, sel, &mixed, NULL, err, sizeof(err)), 0);
        loaded lm;
        load_graph(&mixed, &lm);
        float got[NO];
        run_model(lm.m, KS_PRECISION_DEFAULT, got);
        float e = max_diff(got, want);
        if (e > worst) worst = e;
        if (mask == (1u << nd) - 1) assert_true(e <= 1e-5f);
        unload(&lm);
        ks__graph_free(&mixed);
    }
    print_message("worst of 512 mixes %.5f off the float twin (int8 %.5f)\n", worst, err8);
    assert_true(worst <= 1.5f * err8 + 1e-3f);
    unload(&lf);
    ks__graph_free(&q.g);
    ks__graph_free(&f.g);
}

static void test_fastest(void **state) {
    (void)state;
    net q, f;
    build(&q, true);
    build(&f, false);
    loaded lq, lf;
    load_graph(&q.g, &lq);
    load_graph(&f.g, &lf);
    float want[NO], i8[NO], got[NO];
    run_model(lf.m, KS_PRECISION_DEFAULT, want);
    run_model(lq.m, KS_PRECISION_DEFAULT, i8);
    run_model(lq.m, KS_PRECISION_FASTEST, got);
    assert_true(max_diff(got, want) <= 1.5f * max_diff(i8, want) + 1e-3f);
    uint8_t plan[16];
    assert_int_equal(ks__prec_plan(lq.m, &(ks_session_desc){.num_threads = 1}, plan), 0);
    for (uint32_t i = 0; i < q.g.num_nodes; i++)
        if (plan[i]) assert_true(ks__prec_demotable(&q.g, i));
    /* the tools' and the infer node's spelling */
    ks_precision pp = KS_PRECISION_COUNT;
    assert_true(ks__precision_parse("fastest", &pp) && pp == KS_PRECISION_FASTEST);
    assert_true(ks__precision_parse("f32", &pp) && pp == KS_PRECISION_F32);
    assert_true(ks__precision_parse("stored", &pp) && pp == KS_PRECISION_DEFAULT);
    assert_false(ks__precision_parse("int8", &pp) || ks__precision_parse(NULL, &pp) ||
                 ks__precision_parse("", &pp));
    assert_int_equal(pp, KS_PRECISION_DEFAULT);
    /* invalid precision values are refused */
    ks_session *s = NULL;
    ks_session_desc d = {.precision = KS_PRECISION_COUNT};
    assert_int_equal(ks_session_create(lq.m, &d, &s), KS_STATUS_INVALID_ARGUMENT);
    assert_null(s);
    unload(&lq);
    unload(&lf);
    ks__graph_free(&q.g);
    ks__graph_free(&f.g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mincut_brute_force),
        cmocka_unit_test(test_f32_matches_float_twin),
        cmocka_unit_test(test_each_layer_alone),
        cmocka_unit_test(test_every_mix),
        cmocka_unit_test(test_fastest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
