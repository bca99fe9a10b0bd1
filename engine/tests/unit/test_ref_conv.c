/* Reference conv-family kernels: hand-computed cases per op, odd shapes, padding modes,
 * depthwise/dilation/stride, TFLite-style quantized arithmetic and bad-shape rejection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "cpu_kernel.h"
#include "ref/quant_util.h"

/* ---- harness ---- */

typedef struct tq {
    ks__rt_tensor t;
    ks__quant q;
    float scales[16];
    int32_t zps[16];
} tq;

static void mk(tq *v, ks_dtype dt, void *data, int32_t rank, const int64_t *dims) {
    memset(v, 0, sizeof(*v));
    v->t.dtype = dt;
    v->t.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        v->t.dims[i] = dims[i];
    v->t.data = data;
    v->t.quant = &v->q;
    v->q.scales = v->scales;
    v->q.zero_points = v->zps;
}

static void setq(tq *v, uint32_t count, const float *scales, const int32_t *zps) {
    v->q.count = count;
    for (uint32_t i = 0; i < count; i++)
        v->scales[i] = scales[i], v->zps[i] = zps[i];
}

static void setq1(tq *v, float scale, int32_t zp) {
    setq(v, 1, &scale, &zp);
}

static char g_err[512];
static _Alignas(64) uint8_t g_scratch[1 << 16];

/* Runs infer + run for one node. `out` must hold the output data buffer (capacity in bytes). */
static ks_status run_node(const ks__node *node, tq **ins, uint32_t nin, tq *out, size_t cap) {
    ks__rt_tensor *in_ptrs[4] = {0};
    for (uint32_t i = 0; i < nin; i++)
        in_ptrs[i] = ins[i] ? &ins[i]->t : NULL;
    ks__rt_tensor *out_ptr = &out->t;
    ks__kernel_ctx ctx = {.node = node,
                          .node_index = 7,
                          .in = in_ptrs,
                          .num_inputs = nin,
                          .out = &out_ptr,
                          .num_outputs = 1,
                          .err = g_err,
                          .err_cap = sizeof(g_err)};
    g_err[0] = 0;
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    assert_non_null(k->run);
    ks_status st = ks__ref_prepare(&ctx);
    if (st) return st;
    out->t.size_bytes = (size_t)ks__rt_numel(&out->t) * ks_dtype_size(out->t.dtype);
    assert_true(out->t.size_bytes <= cap);
    assert_true(ctx.scratch_bytes <= sizeof(g_scratch));
    ctx.scratch = ctx.scratch_bytes ? g_scratch : NULL;
    return k->run(&ctx);
}

static ks__node node_of(ks__op op) {
    ks__node n;
    memset(&n, 0, sizeof(n));
    n.op = (uint32_t)op;
    n.name = (char *)"n";
    return n;
}

static void expect_f(const float *got, const float *want, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        if (fabsf(got[i] - want[i]) > 1e-5f * (1.0f + fabsf(want[i]))) {
            print_error("element %lld: got %g want %g\n", (long long)i, (double)got[i],
                        (double)want[i]);
            fail();
        }
    }
}

static uint32_t g_rng = 12345u;
static uint32_t rnd(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

/* ---- quant_util ---- */

static void test_quant_util(void **state) {
    (void)state;
    int32_t m, s;
    ks__quant_multiplier(0.5, &m, &s);
    assert_int_equal(m, 1 << 30);
    assert_int_equal(s, 0);
    ks__quant_multiplier(0.25, &m, &s);
    assert_int_equal(m, 1 << 30);
    assert_int_equal(s, -1);
    ks__quant_multiplier(3.0, &m, &s);
    assert_int_equal(m, 3 << 29);
    assert_int_equal(s, 2);
    ks__quant_multiplier(0.0, &m, &s);
    assert_int_equal(m, 0);
    /* gemmlowp rounding: high mul nudges toward +inf on .5 ties, the shift away from zero. */
    assert_int_equal(ks__quant_high_mul(3, 1 << 30), 2);
    assert_int_equal(ks__quant_high_mul(-3, 1 << 30), -1);
    assert_int_equal(ks__quant_high_mul(INT32_MIN, INT32_MIN), INT32_MAX);
    assert_int_equal(ks__quant_rounding_shift(3, 1), 2);
    assert_int_equal(ks__quant_rounding_shift(-3, 1), -2);
    assert_int_equal(ks__quant_rounding_shift(-5, 2), -1);
    assert_int_equal(ks__quant_rounding_shift(5, 2), 1);
    assert_int_equal(ks__quant_mul(100, 1 << 30, 0), 50);
    assert_int_equal(ks__quant_mul(100, 1 << 30, -1), 25);
    assert_int_equal(ks__quant_mul(10, 3 << 29, 2), 30);
    /* Exhaustive-ish: quant_mul(x, M, S) ~= x * real within 1. */
    for (int i = 0; i < 2000; i++) {
        double real = (double)(rnd() % 100000 + 1) / 70000.0;
        int32_t x = (int32_t)(rnd() % 200001) - 100000;
        ks__quant_multiplier(real, &m, &s);
        double want = x * real;
        assert_true(fabs(ks__quant_mul(x, m, s) - want) <= 1.0);
    }
    assert_int_equal(ks__quant_clamp(300, KS_DTYPE_U8), 255);
    assert_int_equal(ks__quant_clamp(-300, KS_DTYPE_I8), -128);
    assert_int_equal(ks__quant_clamp(40000, KS_DTYPE_I16), 32767);
    int32_t lo, hi;
    ks__quant_act_range(KS_ACT_RELU6, 0.1f, 10, KS_DTYPE_U8, &lo, &hi);
    assert_int_equal(lo, 10);
    assert_int_equal(hi, 70);
    ks__quant_act_range(KS_ACT_NONE, 0.1f, 10, KS_DTYPE_I8, &lo, &hi);
    assert_int_equal(lo, -128);
    assert_int_equal(hi, 127);
    ks__quant_act_range(KS_ACT_RELU_N1_TO_1, 0.01f, 0, KS_DTYPE_I8, &lo, &hi);
    assert_int_equal(lo, -100);
    assert_int_equal(hi, 100);
    ks__quant_act_range(KS_ACT_RELU, 0.5f, -128, KS_DTYPE_I8, &lo, &hi);
    assert_int_equal(lo, -128);
    assert_int_equal(hi, 127);
}

/* ---- CONV2D float ---- */

static void test_conv_valid_bias_relu(void **state) {
    (void)state;
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, b[1] = {-13}, y[4];
    int64_t dx[4] = {1, 3, 3, 1}, dw[4] = {1, 2, 2, 1}, db[1] = {1};
    tq X, W, B, Y;
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    mk(&W, KS_DTYPE_F32, w, 4, dw);
    mk(&B, KS_DTYPE_F32, b, 1, db);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_CONV2D);
    n.ip[8] = KS_PAD_VALID;
    n.ip[10] = KS_ACT_RELU;
    tq *ins[3] = {&X, &W, &B};
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.rank, 4);
    assert_int_equal(Y.t.dims[1], 2);
    assert_int_equal(Y.t.dims[2], 2);
    const float want[4] = {0, 3, 11, 15}; /* 12,16,24,28 minus 13, relu */
    expect_f(y, want, 4);
}

static void test_conv_same_modes(void **state) {
    (void)state;
    /* ones kernel over ones input counts the valid taps. */
    float x[25], w[9], y[25];
    for (int i = 0; i < 25; i++)
        x[i] = 1.0f;
    for (int i = 0; i < 9; i++)
        w[i] = 1.0f;
    int64_t dw[4] = {1, 3, 3, 1};
    tq X, W, Y;
    ks__node n = node_of(KS_OP_CONV2D);
    n.ip[0] = n.ip[1] = 2;
    tq *ins[2] = {&X, &W};

    int64_t d5[4] = {1, 5, 5, 1};
    mk(&X, KS_DTYPE_F32, x, 4, d5);
    mk(&W, KS_DTYPE_F32, w, 4, dw);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    n.ip[8] = KS_PAD_SAME_UPPER;
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 3);
    const float want5[9] = {4, 6, 4, 6, 9, 6, 4, 6, 4};
    expect_f(y, want5, 9);

    /* 4x4, stride 2: total pad 1 goes to the bottom (UPPER) or the top (LOWER). */
    int64_t d4[4] = {1, 4, 4, 1};
    mk(&X, KS_DTYPE_F32, x, 4, d4);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    const float want_upper[4] = {9, 6, 6, 4};
    expect_f(y, want_upper, 4);
    n.ip[8] = KS_PAD_SAME_LOWER;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    const float want_lower[4] = {4, 6, 6, 9};
    expect_f(y, want_lower, 4);

    /* explicit asymmetric pads: top 1, left 0, bottom 0, right 2; 4x4 stride 2 k3 */
    n.ip[8] = KS_PAD_EXPLICIT;
    n.ip[4] = 1, n.ip[5] = 0, n.ip[6] = 0, n.ip[7] = 2;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    /* OH = (4+1-3)/2+1 = 2, OW = (4+2-3)/2+1 = 2 */
    assert_int_equal(Y.t.dims[1], 2);
    assert_int_equal(Y.t.dims[2], 2);
    const float want_exp[4] = {6, 4, 9, 6};
    expect_f(y, want_exp, 4);
}

static void test_conv_depthwise_mult2(void **state) {
    (void)state;
    float x[8] = {1, 10, 2, 20, 3, 30, 4, 40}; /* 1x2x2x2 */
    float w[4] = {1, 2, 3, 4};                 /* [4,1,1,1] */
    float y[16];
    int64_t dx[4] = {1, 2, 2, 2}, dw[4] = {4, 1, 1, 1};
    tq X, W, Y;
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    mk(&W, KS_DTYPE_F32, w, 4, dw);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_CONV2D);
    n.ip[9] = 2;
    tq *ins[2] = {&X, &W};
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[3], 4);
    const float want[16] = {1, 2, 30, 40, 2, 4, 60, 80, 3, 6, 90, 120, 4, 8, 120, 160};
    expect_f(y, want, 16);
}

static void test_conv_dilation_grouped(void **state) {
    (void)state;
    float x[50], w[8], y[50];
    for (int i = 0; i < 50; i++)
        x[i] = (float)i; /* 1x5x5x2 */
    for (int i = 0; i < 8; i++)
        w[i] = 1.0f; /* [2,2,2,1]: groups 2 */
    int64_t dx[4] = {1, 5, 5, 2}, dw[4] = {2, 2, 2, 1};
    tq X, W, Y;
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    mk(&W, KS_DTYPE_F32, w, 4, dw);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_CONV2D);
    n.ip[2] = n.ip[3] = 2;
    n.ip[9] = 2;
    tq *ins[2] = {&X, &W};
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 3);
    assert_int_equal(Y.t.dims[2], 3);
    for (int oy = 0; oy < 3; oy++)
        for (int ox = 0; ox < 3; ox++)
            for (int c = 0; c < 2; c++) {
#define X5(yy, xx) x[((yy)*5 + (xx)) * 2 + c]
                float want = X5(oy, ox) + X5(oy, ox + 2) + X5(oy + 2, ox) + X5(oy + 2, ox + 2);
#undef X5
                assert_true(fabsf(y[(oy * 3 + ox) * 2 + c] - want) < 1e-4f);
            }
}

/* ---- quantized CONV2D vs dequantize-compute-requantize ---- */

static void check_quant_conv(ks_dtype dt, int per_channel, int groups, int act) {
    enum { N = 1, H = 7, W = 6, CI = 4, CO = 4, K = 3 };
    uint8_t xb[N * H * W * CI], wb[CO * K * K * (CI / 1)], yb[N * H * W * CO];
    int32_t bias[CO];
    int icg = CI / groups;
    int64_t dx[4] = {N, H, W, CI}, dw[4] = {CO, K, K, icg}, db[1] = {CO};
    tq X, Wt, B, Y;
    mk(&X, dt, xb, 4, dx);
    mk(&Wt, dt, wb, 4, dw);
    mk(&B, KS_DTYPE_I32, bias, 1, db);
    mk(&Y, dt, yb, 0, NULL);
    Y.t.dtype = dt;
    int u8 = dt == KS_DTYPE_U8;
    setq1(&X, 0.05f, u8 ? 120 : -3);
    float ws[CO];
    int32_t wz[CO];
    for (int c = 0; c < CO; c++)
        ws[c] = 0.01f + 0.004f * (float)c, wz[c] = u8 ? 128 + c : 0;
    setq(&Wt, per_channel ? CO : 1, ws, wz);
    setq1(&Y, 0.09f, u8 ? 100 : 5);
    for (size_t i = 0; i < sizeof(xb); i++)
        xb[i] = (uint8_t)rnd();
    for (size_t i = 0; i < sizeof(wb); i++)
        wb[i] = (uint8_t)rnd();
    for (int c = 0; c < CO; c++)
        bias[c] = (int32_t)(rnd() % 2001) - 1000;
    ks__node n = node_of(KS_OP_CONV2D);
    n.ip[0] = 2, n.ip[1] = 1;
    n.ip[8] = KS_PAD_SAME_UPPER;
    n.ip[9] = groups;
    n.ip[10] = act;
    tq *ins[3] = {&X, &Wt, &B};
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(yb)), KS_STATUS_OK);
    int64_t oh = Y.t.dims[1], ow = Y.t.dims[2];
    assert_int_equal(oh, 4);
    assert_int_equal(ow, 6);
    int32_t lo, hi;
    ks__quant_act_range(act, Y.scales[0], Y.zps[0], dt, &lo, &hi);
    int pt = 1, pl = 1; /* SAME: H total 1+... see geometry: (4-1)*2+3-7 = 2 -> 1; W: 5+3-6 = 2 */
    int mismatches = 0;
    for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++)
            for (int co = 0; co < CO; co++) {
                int pc = per_channel ? co : 0;
                double acc = bias[co] * (double)X.scales[0] * ws[pc];
                int g = co / (CO / groups);
                for (int ky = 0; ky < K; ky++)
                    for (int kx = 0; kx < K; kx++) {
                        int64_t iy = oy * 2 - pt + ky, ix = ox - pl + kx;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                        for (int ci = 0; ci < icg; ci++) {
                            int64_t xi = (iy * W + ix) * CI + g * icg + ci;
                            int64_t wi = ((co * K + ky) * K + kx) * icg + ci;
                            int32_t xv = u8 ? xb[xi] : (int8_t)xb[xi];
                            int32_t wv = u8 ? wb[wi] : (int8_t)wb[wi];
                            acc += (xv - X.zps[0]) * (double)X.scales[0] * (wv - wz[pc]) * ws[pc];
                        }
                    }
                double real = acc;
                if (act == KS_ACT_RELU6) real = real < 0 ? 0 : (real > 6 ? 6 : real);
                int32_t want = (int32_t)lround(real / Y.scales[0]) + Y.zps[0];
                want = want < lo ? lo : (want > hi ? hi : want);
                int64_t yi = (oy * ow + ox) * CO + co;
                int32_t got = u8 ? yb[yi] : (int8_t)yb[yi];
                if (abs(got - want) > 1) {
                    print_error("quant conv at %lld: got %d want %d\n", (long long)yi, got, want);
                    fail();
                }
                mismatches += got != want;
            }
    assert_true(mismatches * 10 <= oh * ow * CO); /* almost all exact */
}

static void test_conv_quant(void **state) {
    (void)state;
    check_quant_conv(KS_DTYPE_U8, 0, 1, KS_ACT_NONE);
    check_quant_conv(KS_DTYPE_U8, 0, 4, KS_ACT_RELU6);
    check_quant_conv(KS_DTYPE_I8, 1, 1, KS_ACT_NONE);
    check_quant_conv(KS_DTYPE_I8, 1, 4, KS_ACT_RELU6);
    check_quant_conv(KS_DTYPE_I8, 1, 2, KS_ACT_NONE);
}

/* A hand-checked requantization: 1x1 conv, x=zp+10, w=zp+3 -> acc 30, *0.5 -> 15 + zp. */
static void test_conv_quant_exact(void **state) {
    (void)state;
    uint8_t x[1] = {138}, w[1] = {131}, y[1];
    int32_t b[1] = {4};
    int64_t d[4] = {1, 1, 1, 1}, db[1] = {1};
    tq X, W, B, Y;
    mk(&X, KS_DTYPE_U8, x, 4, d);
    mk(&W, KS_DTYPE_U8, w, 4, d);
    mk(&B, KS_DTYPE_I32, b, 1, db);
    mk(&Y, KS_DTYPE_U8, y, 0, NULL);
    setq1(&X, 0.5f, 128);
    setq1(&W, 0.25f, 128);
    setq1(&Y, 0.25f, 7);
    ks__node n = node_of(KS_OP_CONV2D);
    tq *ins[3] = {&X, &W, &B};
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(y)), KS_STATUS_OK);
    /* (30 + 4) * 0.5*0.25/0.25 = 17, + 7 */
    assert_int_equal(y[0], 24);
}

/* ---- CONV2D_TRANSPOSE ---- */

static void test_tconv(void **state) {
    (void)state;
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, y[16];
    int64_t dx[4] = {1, 2, 2, 1}, dw[4] = {1, 2, 2, 1};
    tq X, W, Y;
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    mk(&W, KS_DTYPE_F32, w, 4, dw);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_CONV2D_TRANSPOSE);
    n.ip[6] = KS_PAD_VALID;
    tq *ins[2] = {&X, &W};
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 3);
    const float want1[9] = {1, 3, 2, 4, 10, 6, 3, 7, 4};
    expect_f(y, want1, 9);
    n.ip[0] = n.ip[1] = 2;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 4);
    const float want2[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    expect_f(y, want2, 16);
    /* SAME, stride 2, kernel 3: OH = 4, total pad = 1*2+3-4 = 1 -> top 0 */
    float w3[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int64_t dw3[4] = {1, 3, 3, 1};
    mk(&W, KS_DTYPE_F32, w3, 4, dw3);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    n.ip[6] = KS_PAD_SAME_UPPER;
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 4);
    /* input pixel (iy,ix) covers rows 2iy..2iy+2, cols 2ix..2ix+2 */
    const float want3[16] = {1, 1, 3, 2, 1, 1, 3, 2, 4, 4, 10, 6, 3, 3, 7, 4};
    expect_f(y, want3, 16);
    /* explicit pads 1 + output padding 1: OH = (2-1)*2+3-1-1+1 = 4, i.e. rows/cols 1..4 of
     * the full 5x5 result {1 1 3 2 2; 1 1 3 2 2; 4 4 10 6 6; 3 3 7 4 4; 3 3 7 4 4} */
    n.ip[6] = KS_PAD_EXPLICIT;
    n.ip[2] = n.ip[3] = n.ip[4] = n.ip[5] = 1;
    n.ip[8] = n.ip[9] = 1;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 4);
    const float want4[16] = {1, 3, 2, 2, 4, 10, 6, 6, 3, 7, 4, 4, 3, 7, 4, 4};
    expect_f(y, want4, 16);
}

static void test_tconv_quant(void **state) {
    (void)state;
    int8_t x[4] = {1, 2, 3, 4}, w[8] = {1, 1, 1, 1, 2, 2, 2, 2}, y[32];
    int32_t b[2] = {0, 10};
    int64_t dx[4] = {1, 2, 2, 1}, dw[4] = {2, 2, 2, 1}, db[1] = {2};
    tq X, W, B, Y;
    mk(&X, KS_DTYPE_I8, x, 4, dx);
    mk(&W, KS_DTYPE_I8, w, 4, dw);
    mk(&B, KS_DTYPE_I32, b, 1, db);
    mk(&Y, KS_DTYPE_I8, y, 0, NULL);
    setq1(&X, 1.0f, 0);
    const float ws[2] = {1.0f, 0.5f};
    const int32_t wz[2] = {0, 0};
    setq(&W, 2, ws, wz);
    setq1(&Y, 1.0f, -1);
    ks__node n = node_of(KS_OP_CONV2D_TRANSPOSE);
    n.ip[6] = KS_PAD_VALID;
    tq *ins[3] = {&X, &W, &B};
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(y)), KS_STATUS_OK);
    const int want0[9] = {1, 3, 2, 4, 10, 6, 3, 7, 4};
    for (int i = 0; i < 9; i++) {
        assert_int_equal(y[i * 2], want0[i] - 1);
        /* channel 1: (2*v + 10) * 0.5 = v + 5 */
        assert_int_equal(y[i * 2 + 1], want0[i] + 5 - 1);
    }
}

/* ---- POOL2D ---- */

static void test_pool(void **state) {
    (void)state;
    float x[25], y[25];
    for (int i = 0; i < 25; i++)
        x[i] = (float)i;
    int64_t d4[4] = {1, 4, 4, 1}, d5[4] = {1, 5, 5, 1};
    tq X, Y;
    tq *ins[1] = {&X};
    ks__node n = node_of(KS_OP_POOL2D);
    n.ip[0] = n.ip[1] = 2;
    n.ip[2] = n.ip[3] = 2;
    /* max 2x2/2 on 4x4 (x = 0..15) */
    mk(&X, KS_DTYPE_F32, x, 4, d4);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    const float wmax[4] = {5, 7, 13, 15};
    expect_f(y, wmax, 4);
    /* avg, same window */
    n.ip[9] = 1;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    const float wavg[4] = {2.5f, 4.5f, 10.5f, 12.5f};
    expect_f(y, wavg, 4);
    /* avg 3x3/2 SAME on 5x5 (x = 0..24): corner window has 4 valid taps */
    n.ip[0] = n.ip[1] = 3;
    n.ip[8] = KS_PAD_SAME_UPPER;
    mk(&X, KS_DTYPE_F32, x, 4, d5);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 3);
    assert_true(fabsf(y[0] - (0 + 1 + 5 + 6) / 4.0f) < 1e-5f);
    assert_true(fabsf(y[4] - 12.0f) < 1e-5f);
    n.ip[10] = 1; /* count_include_pad */
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    assert_true(fabsf(y[0] - (0 + 1 + 5 + 6) / 9.0f) < 1e-5f);
    /* ceil_mode: 5x5, k2 s2, no pads -> 3x3; the last window holds 1 row/col */
    n.ip[0] = n.ip[1] = 2;
    n.ip[8] = KS_PAD_EXPLICIT;
    n.ip[10] = 0;
    n.ip[12] = 1;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 3);
    assert_true(fabsf(y[8] - 24.0f) < 1e-5f);
    assert_true(fabsf(y[2] - (4 + 9) / 2.0f) < 1e-5f);
    /* global average */
    n.ip[0] = n.ip[1] = 0;
    n.ip[12] = 0;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 1);
    assert_int_equal(Y.t.dims[2], 1);
    assert_true(fabsf(y[0] - 12.0f) < 1e-5f);
}

static void test_pool_quant(void **state) {
    (void)state;
    /* u8 avg rounds half up: (1+2)/2 -> 2; i8 rounds half away from zero: (-1-2)/2 -> -2 */
    uint8_t xu[2] = {1, 2}, yu[1];
    int8_t xi[2] = {-1, -2}, yi[1];
    int64_t d[4] = {1, 1, 2, 1};
    tq X, Y;
    tq *ins[1] = {&X};
    ks__node n = node_of(KS_OP_POOL2D);
    n.ip[0] = 1, n.ip[1] = 2;
    n.ip[9] = 1;
    mk(&X, KS_DTYPE_U8, xu, 4, d);
    mk(&Y, KS_DTYPE_U8, yu, 0, NULL);
    setq1(&X, 0.1f, 0);
    setq1(&Y, 0.1f, 0);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(yu)), KS_STATUS_OK);
    assert_int_equal(yu[0], 2);
    mk(&X, KS_DTYPE_I8, xi, 4, d);
    mk(&Y, KS_DTYPE_I8, yi, 0, NULL);
    setq1(&X, 0.1f, 0);
    setq1(&Y, 0.1f, 0);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(yi)), KS_STATUS_OK);
    assert_int_equal(yi[0], -2);
    /* max with relu6 clamp: scale 0.1, zp -100 -> range [-100, -40] */
    int8_t xm[2] = {-120, 0};
    mk(&X, KS_DTYPE_I8, xm, 4, d);
    mk(&Y, KS_DTYPE_I8, yi, 0, NULL);
    setq1(&X, 0.1f, -100);
    setq1(&Y, 0.1f, -100);
    n.ip[9] = 0;
    n.ip[11] = KS_ACT_RELU6;
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(yi)), KS_STATUS_OK);
    assert_int_equal(yi[0], -40);
}

/* ---- FULLY_CONNECTED / MATMUL ---- */

static void test_fc(void **state) {
    (void)state;
    float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, -1, 2, 2, 2}, b[2] = {0.5f, -1}, y[4];
    int64_t dx[3] = {1, 2, 3}, dw[2] = {2, 3}, db[1] = {2};
    tq X, W, B, Y;
    mk(&X, KS_DTYPE_F32, x, 3, dx);
    mk(&W, KS_DTYPE_F32, w, 2, dw);
    mk(&B, KS_DTYPE_F32, b, 1, db);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_FULLY_CONNECTED);
    tq *ins[3] = {&X, &W, &B};
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.rank, 2);
    assert_int_equal(Y.t.dims[0], 2);
    const float want[4] = {-1.5f, 11, -1.5f, 29};
    expect_f(y, want, 4);
    n.ip[1] = 1;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.rank, 3);
    assert_int_equal(Y.t.dims[2], 2);
    /* quantized: x=zp+[1..3], w=[1,0,-1] & [2,2,2] (zp 0), scales 1 -> acc -2, 12 */
    int8_t xq[3] = {11, 12, 13}, wq[6] = {1, 0, -1, 2, 2, 2}, yq[2];
    int32_t bq[2] = {3, -2};
    int64_t dxq[2] = {1, 3};
    mk(&X, KS_DTYPE_I8, xq, 2, dxq);
    mk(&W, KS_DTYPE_I8, wq, 2, dw);
    mk(&B, KS_DTYPE_I32, bq, 1, db);
    mk(&Y, KS_DTYPE_I8, yq, 0, NULL);
    setq1(&X, 0.5f, 10);
    setq1(&W, 0.5f, 0);
    setq1(&Y, 0.25f, 1);
    n.ip[1] = 0;
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(yq)), KS_STATUS_OK);
    /* (acc + bias) * 0.25/0.25 + 1 */
    assert_int_equal(yq[0], -2 + 3 + 1);
    assert_int_equal(yq[1], 12 - 2 + 1);
}

static void test_matmul(void **state) {
    (void)state;
    float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; /* [2,2,3] */
    float b[6] = {1, 0, 0, 1, 1, 1};                       /* [3,2] */
    float y[8];
    int64_t da[3] = {2, 2, 3}, db[2] = {3, 2};
    tq A, B, Y;
    mk(&A, KS_DTYPE_F32, a, 3, da);
    mk(&B, KS_DTYPE_F32, b, 2, db);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_MATMUL);
    tq *ins[2] = {&A, &B};
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.rank, 3);
    const float want[8] = {4, 5, 10, 11, 16, 17, 22, 23};
    expect_f(y, want, 8);
    /* transpose_b with b given as [2,3] */
    float bt[6] = {1, 0, 1, 0, 1, 1};
    int64_t dbt[2] = {2, 3};
    mk(&B, KS_DTYPE_F32, bt, 2, dbt);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    n.ip[1] = 1;
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    expect_f(y, want, 8);
    /* vector rhs: [2,2,3] x [3] -> [2,2] */
    float v[3] = {1, 1, 1};
    int64_t dv[1] = {3};
    mk(&B, KS_DTYPE_F32, v, 1, dv);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    n.ip[1] = 0;
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.rank, 2);
    const float wantv[4] = {6, 15, 24, 33};
    expect_f(y, wantv, 4);
}

/* ---- RESIZE ---- */

static void test_resize(void **state) {
    (void)state;
    float x[4] = {0, 1, 2, 3}, y[16];
    int64_t dx[4] = {1, 2, 2, 1};
    tq X, Y;
    tq *ins[1] = {&X};
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    ks__node n = node_of(KS_OP_RESIZE);
    /* nearest asymmetric floor, 2x */
    n.ip[2] = 2;
    n.ip[3] = n.ip[4] = 4;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    const float wn[16] = {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3};
    expect_f(y, wn, 16);
    /* bilinear align_corners 2x2 -> 3x3 */
    n.ip[0] = 1, n.ip[1] = KS_RESIZE_ALIGN_CORNERS;
    n.ip[3] = n.ip[4] = 3;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    const float wac[9] = {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3};
    expect_f(y, wac, 9);
    /* bilinear half_pixel 1x2 -> 1x4 (via scales): 0, 1, 3, 4 for input 0, 4 */
    float x2[2] = {0, 4};
    int64_t dx2[4] = {1, 1, 2, 1};
    mk(&X, KS_DTYPE_F32, x2, 4, dx2);
    n.ip[1] = KS_RESIZE_HALF_PIXEL;
    n.ip[3] = n.ip[4] = 0;
    n.fp[0] = 1.0f, n.fp[1] = 2.0f;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[2], 4);
    const float whp[4] = {0, 1, 3, 4};
    expect_f(y, whp, 4);
    /* asymmetric bilinear 1x2 -> 1x4: 0, 2, 4, 4 */
    n.ip[1] = KS_RESIZE_ASYMMETRIC;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    const float was[4] = {0, 2, 4, 4};
    expect_f(y, was, 4);
    /* nearest TFLite half_pixel_centers (tf_half_pixel_for_nn + floor), 2 -> 3 */
    n.ip[0] = 0, n.ip[1] = KS_RESIZE_TF_HALF_PIXEL_FOR_NN, n.ip[2] = 2;
    n.ip[3] = 1, n.ip[4] = 3;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    const float wnh[3] = {0, 4, 4}; /* src 0.33, 1.0, 1.67 */
    expect_f(y, wnh, 3);
    /* size input (constant) */
    int32_t sz[2] = {1, 2};
    int64_t dsz[1] = {2};
    tq S;
    mk(&S, KS_DTYPE_I32, sz, 1, dsz);
    tq *ins2[2] = {&X, &S};
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins2, 2, &Y, sizeof(y)), KS_STATUS_OK);
    expect_f(y, x2, 2);
    /* size input without a value at reshape is refused */
    S.t.data = NULL;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins2, 2, &Y, sizeof(y)), KS_STATUS_UNSUPPORTED);
}

/* 8-bit bilinear stays within one quantum of the float result, for every TFLite mode. */
static void test_resize_quant(void **state) {
    (void)state;
    enum { H = 5, W = 3, C = 3, OH = 9, OW = 7 };
    uint8_t xb[H * W * C], yb[OH * OW * C];
    float xf[H * W * C], yf[OH * OW * C];
    for (int i = 0; i < H * W * C; i++)
        xb[i] = (uint8_t)rnd();
    int64_t dx[4] = {1, H, W, C};
    const int32_t coords[3] = {KS_RESIZE_ASYMMETRIC, KS_RESIZE_ALIGN_CORNERS, KS_RESIZE_HALF_PIXEL};
    for (int dt = 0; dt < 2; dt++) {
        ks_dtype d = dt ? KS_DTYPE_I8 : KS_DTYPE_U8;
        for (int i = 0; i < H * W * C; i++)
            xf[i] = dt ? (float)(int8_t)xb[i] : (float)xb[i];
        for (int ci = 0; ci < 3; ci++) {
            ks__node n = node_of(KS_OP_RESIZE);
            n.ip[0] = 1, n.ip[1] = coords[ci], n.ip[3] = OH, n.ip[4] = OW;
            tq X, Y, XF, YF;
            mk(&X, d, xb, 4, dx);
            mk(&Y, d, yb, 0, NULL);
            setq1(&X, 0.1f, 3);
            setq1(&Y, 0.1f, 3);
            tq *ins[1] = {&X};
            assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(yb)), KS_STATUS_OK);
            mk(&XF, KS_DTYPE_F32, xf, 4, dx);
            mk(&YF, KS_DTYPE_F32, yf, 0, NULL);
            tq *insf[1] = {&XF};
            assert_int_equal(run_node(&n, insf, 1, &YF, sizeof(yf)), KS_STATUS_OK);
            for (int i = 0; i < OH * OW * C; i++) {
                float got = dt ? (float)(int8_t)yb[i] : (float)yb[i];
                if (fabsf(got - yf[i]) > 1.0f) {
                    print_error("dtype %d coord %d elem %d: got %g float %g\n", (int)d,
                                (int)coords[ci], i, (double)got, (double)yf[i]);
                    fail();
                }
            }
        }
    }
}

/* ---- space/depth/batch rearrangements ---- */

static void test_depth_space(void **state) {
    (void)state;
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7}; /* 1x1x1x8 */
    float y[8], z[8];
    int64_t dx[4] = {1, 1, 1, 8};
    tq X, Y, Z;
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_DEPTH_TO_SPACE);
    n.ip[0] = 2;
    tq *ins[1] = {&X};
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[1], 2);
    assert_int_equal(Y.t.dims[3], 2);
    const float dcr[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    expect_f(y, dcr, 8);
    n.ip[1] = 1; /* CRD: channel c*4 + i*2 + j */
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    const float crd[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    expect_f(y, crd, 8);
    /* space_to_depth inverts DCR depth_to_space */
    n.ip[1] = 0;
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    assert_int_equal(run_node(&n, ins, 1, &Y, sizeof(y)), KS_STATUS_OK);
    ks__node s = node_of(KS_OP_SPACE_TO_DEPTH);
    s.ip[0] = 2;
    mk(&Z, KS_DTYPE_F32, z, 0, NULL);
    tq *ins2[1] = {&Y};
    assert_int_equal(run_node(&s, ins2, 1, &Z, sizeof(z)), KS_STATUS_OK);
    assert_int_equal(Z.t.dims[3], 8);
    expect_f(z, x, 8);
}

static void test_space_batch(void **state) {
    (void)state;
    /* x [1,2,3,1] = 1..6, block [2,2], pads h (0,0) w (0,1) -> [4,1,2,1] */
    float x[6] = {1, 2, 3, 4, 5, 6}, y[8], z[6];
    int64_t dx[4] = {1, 2, 3, 1}, db[1] = {2}, dp[2] = {2, 2};
    int32_t block[2] = {2, 2}, pads[4] = {0, 0, 0, 1};
    tq X, B, P, Y, Z;
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    mk(&B, KS_DTYPE_I32, block, 1, db);
    mk(&P, KS_DTYPE_I32, pads, 2, dp);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_SPACE_TO_BATCH_ND);
    tq *ins[3] = {&X, &B, &P};
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(Y.t.dims[0], 4);
    assert_int_equal(Y.t.dims[1], 1);
    assert_int_equal(Y.t.dims[2], 2);
    /* batch k = (dy, dx) offsets: (0,0): x[0][0], x[0][2]; (0,1): x[0][1], pad; (1,0): x[1][0],
     * x[1][2]; (1,1): x[1][1], pad */
    const float want[8] = {1, 3, 2, 0, 4, 6, 5, 0};
    expect_f(y, want, 8);
    /* batch_to_space with the same block and crops inverts it */
    ks__node m = node_of(KS_OP_BATCH_TO_SPACE_ND);
    mk(&Z, KS_DTYPE_F32, z, 0, NULL);
    tq *ins2[3] = {&Y, &B, &P};
    assert_int_equal(run_node(&m, ins2, 3, &Z, sizeof(z)), KS_STATUS_OK);
    assert_int_equal(Z.t.dims[0], 1);
    assert_int_equal(Z.t.dims[2], 3);
    expect_f(z, x, 6);
    /* quantized padding uses the output zero point */
    uint8_t xq[6] = {1, 2, 3, 4, 5, 6}, yq[8];
    mk(&X, KS_DTYPE_U8, xq, 4, dx);
    mk(&Y, KS_DTYPE_U8, yq, 0, NULL);
    setq1(&X, 0.5f, 9);
    setq1(&Y, 0.5f, 9);
    assert_int_equal(run_node(&n, ins, 3, &Y, sizeof(yq)), KS_STATUS_OK);
    assert_int_equal(yq[3], 9);
    assert_int_equal(yq[6], 5);
}

/* ---- bad inputs ---- */

static void test_bad_shapes(void **state) {
    (void)state;
    float x[64] = {0}, w[64] = {0}, y[64];
    int64_t dx[4] = {1, 4, 4, 3}, dw[4] = {2, 3, 3, 4};
    tq X, W, Y;
    mk(&X, KS_DTYPE_F32, x, 4, dx);
    mk(&W, KS_DTYPE_F32, w, 4, dw);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node n = node_of(KS_OP_CONV2D);
    tq *ins[2] = {&X, &W};
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_INVALID_SHAPE);
    assert_non_null(strstr(g_err, "input 0 has 3 channels, weights expect 4"));
    assert_non_null(strstr(g_err, "conv2d"));
    /* kernel larger than input (VALID) */
    int64_t dw2[4] = {1, 5, 5, 3};
    mk(&W, KS_DTYPE_F32, w, 4, dw2);
    n.ip[8] = KS_PAD_VALID;
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_INVALID_SHAPE);
    /* rank 3 input */
    int64_t d3[3] = {4, 4, 3};
    mk(&X, KS_DTYPE_F32, x, 3, d3);
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_INVALID_SHAPE);
    /* absurd size */
    int64_t dhuge[4] = {1, 1LL << 40, 1LL << 40, 3};
    int64_t dw1[4] = {1, 1, 1, 3};
    mk(&X, KS_DTYPE_F32, x, 4, dhuge);
    mk(&W, KS_DTYPE_F32, w, 4, dw1);
    assert_int_not_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_OK);
    /* quantized input with float weights */
    uint8_t xq[48];
    mk(&X, KS_DTYPE_U8, xq, 4, dx);
    setq1(&X, 0.1f, 0);
    mk(&Y, KS_DTYPE_U8, y, 0, NULL);
    setq1(&Y, 0.1f, 0);
    assert_int_equal(run_node(&n, ins, 2, &Y, sizeof(y)), KS_STATUS_UNSUPPORTED);
    /* FC inner mismatch */
    int64_t dfx[2] = {2, 5}, dfw[2] = {3, 4};
    mk(&X, KS_DTYPE_F32, x, 2, dfx);
    mk(&W, KS_DTYPE_F32, w, 2, dfw);
    mk(&Y, KS_DTYPE_F32, y, 0, NULL);
    ks__node f = node_of(KS_OP_FULLY_CONNECTED);
    assert_int_equal(run_node(&f, ins, 2, &Y, sizeof(y)), KS_STATUS_INVALID_SHAPE);
    /* matmul inner mismatch */
    ks__node mm = node_of(KS_OP_MATMUL);
    assert_int_equal(run_node(&mm, ins, 2, &Y, sizeof(y)), KS_STATUS_INVALID_SHAPE);
    /* depth_to_space with channels not divisible by block^2 */
    ks__node d = node_of(KS_OP_DEPTH_TO_SPACE);
    d.ip[0] = 2;
    int64_t dd[4] = {1, 2, 2, 6};
    mk(&X, KS_DTYPE_F32, x, 4, dd);
    tq *ins1[1] = {&X};
    assert_int_equal(run_node(&d, ins1, 1, &Y, sizeof(y)), KS_STATUS_INVALID_SHAPE);
    /* space_to_batch with a non-constant block shape */
    ks__node sb = node_of(KS_OP_SPACE_TO_BATCH_ND);
    int32_t blk[2] = {2, 2}, pd[4] = {0};
    int64_t db[1] = {2}, dp[2] = {2, 2};
    tq B, P;
    mk(&B, KS_DTYPE_I32, NULL, 1, db);
    mk(&P, KS_DTYPE_I32, pd, 2, dp);
    tq *ins3[3] = {&X, &B, &P};
    assert_int_equal(run_node(&sb, ins3, 3, &Y, sizeof(y)), KS_STATUS_UNSUPPORTED);
    /* space_to_batch with a spatial size not divisible by the block */
    int64_t ds[4] = {1, 3, 2, 1};
    mk(&X, KS_DTYPE_F32, x, 4, ds);
    B.t.data = blk;
    assert_int_equal(run_node(&sb, ins3, 3, &Y, sizeof(y)), KS_STATUS_INVALID_SHAPE);
    /* pool: bad kind */
    ks__node p = node_of(KS_OP_POOL2D);
    p.ip[0] = p.ip[1] = 2;
    p.ip[9] = 5;
    assert_int_equal(run_node(&p, ins1, 1, &Y, sizeof(y)), KS_STATUS_INVALID_MODEL);
    /* resize: zero output size */
    ks__node r = node_of(KS_OP_RESIZE);
    assert_int_equal(run_node(&r, ins1, 1, &Y, sizeof(y)), KS_STATUS_INVALID_MODEL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quant_util),
        cmocka_unit_test(test_conv_valid_bias_relu),
        cmocka_unit_test(test_conv_same_modes),
        cmocka_unit_test(test_conv_depthwise_mult2),
        cmocka_unit_test(test_conv_dilation_grouped),
        cmocka_unit_test(test_conv_quant),
        cmocka_unit_test(test_conv_quant_exact),
        cmocka_unit_test(test_tconv),
        cmocka_unit_test(test_tconv_quant),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_pool_quant),
        cmocka_unit_test(test_fc),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_resize_quant),
        cmocka_unit_test(test_depth_space),
        cmocka_unit_test(test_space_batch),
        cmocka_unit_test(test_bad_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
