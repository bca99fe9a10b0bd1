/* Reference elementwise/normalization kernels: hand-checked values per op, numpy broadcasting on
 * odd shapes, integer floor semantics, softmax numerics, quantized forms against
 * dequantize-compute-requantize, and error statuses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_kernel.h"

/* ---- a tiny harness: tensors and one-node execution without a session ---- */

typedef struct tt {
    ks__rt_tensor rt;
    ks__tensor def;
    ks__quant q;
    float scale;
    int32_t zp;
} tt;

static void tt_init(tt *t, const char *name, ks_dtype dtype, int32_t rank, const int64_t *dims,
                    void *data) {
    memset(t, 0, sizeof(*t));
    t->def.name = (char *)name;
    t->rt.dtype = dtype;
    t->rt.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->rt.dims[i] = dims[i];
    t->rt.data = data;
    t->rt.quant = &t->q;
    t->rt.def = &t->def;
}

static void tt_quant(tt *t, float scale, int32_t zp) {
    t->scale = scale;
    t->zp = zp;
    t->q.count = 1;
    t->q.scales = &t->scale;
    t->q.zero_points = &t->zp;
}

static char g_err[512];

/* Runs infer + run of `op`; the output's dtype/quant are pre-filled as a session would. */
static ks_status run_node(uint32_t op, const int32_t *ip, const float *fp, tt **ins,
                          uint32_t num_inputs, tt *out, size_t out_cap_bytes) {
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = op;
    node.name = (char *)"n";
    if (ip) memcpy(node.ip, ip, sizeof(node.ip));
    if (fp) memcpy(node.fp, fp, sizeof(node.fp));
    ks__rt_tensor *in[4] = {NULL, NULL, NULL, NULL};
    for (uint32_t i = 0; i < num_inputs; i++)
        in[i] = &ins[i]->rt;
    ks__rt_tensor *o = &out->rt;
    ks__kernel_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.node = &node;
    ctx.in = in;
    ctx.num_inputs = num_inputs;
    ctx.out = &o;
    ctx.num_outputs = 1;
    ctx.err = g_err;
    ctx.err_cap = sizeof(g_err);
    g_err[0] = '\0';
    const ks__kernel *k = &ks__ref_kernels()->k[op];
    assert_non_null(k->run);
    ks_status st = ks__ref_prepare(&ctx);
    if (st) return st;
    int64_t n = ks__rt_numel(o);
    assert_true(n >= 0);
    o->size_bytes = (size_t)n * ks_dtype_size(o->dtype);
    assert_true(o->size_bytes <= out_cap_bytes);
    assert_int_equal(ctx.scratch_bytes, 0);
    return k->run(&ctx);
}

static void full_params(int32_t *ip, float *fp) {
    memset(ip, 0, sizeof(int32_t) * KS_NODE_MAX_IPARAMS);
    memset(fp, 0, sizeof(float) * KS_NODE_MAX_FPARAMS);
}

static uint32_t g_rng = 12345u;
static uint32_t rnd(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

/* ---- registration ---- */

static void test_registered(void **state) {
    (void)state;
    static const uint32_t ops[] = {
        KS_OP_ADD,        KS_OP_SUB,          KS_OP_MUL,        KS_OP_DIV,      KS_OP_FLOOR_DIV,
        KS_OP_FLOOR_MOD,  KS_OP_POW,          KS_OP_MAXIMUM,    KS_OP_MINIMUM,  KS_OP_RELU,
        KS_OP_RELU6,      KS_OP_RELU_N1_TO_1, KS_OP_LEAKY_RELU, KS_OP_SIGMOID,  KS_OP_TANH,
        KS_OP_HARD_SWISH, KS_OP_EXP,          KS_OP_SQRT,       KS_OP_RSQRT,    KS_OP_ABS,
        KS_OP_NEG,        KS_OP_FLOOR,        KS_OP_CEIL,       KS_OP_LOG,      KS_OP_CLIP,
        KS_OP_ELU,        KS_OP_HARD_SIGMOID, KS_OP_PRELU,      KS_OP_SOFTMAX,  KS_OP_LOG_SOFTMAX,
        KS_OP_REDUCE,     KS_OP_ARG_MAX,      KS_OP_ARG_MIN,    KS_OP_QUANTIZE, KS_OP_DEQUANTIZE,
        KS_OP_CAST,       KS_OP_EQUAL,        KS_OP_NOT_EQUAL,  KS_OP_GREATER,  KS_OP_GREATER_EQUAL,
        KS_OP_LESS,       KS_OP_LESS_EQUAL,   KS_OP_WHERE};
    const ks__kernel_table *t = ks__ref_kernels();
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        assert_non_null(t->k[ops[i]].run);
    }
}

/* ---- binary float ---- */

static void test_add_broadcast_odd(void **state) {
    (void)state;
    int64_t da[3] = {3, 1, 5}, db[3] = {1, 4, 1};
    float a[15], b[4], y[60];
    for (int i = 0; i < 15; i++)
        a[i] = (float)i;
    for (int i = 0; i < 4; i++)
        b[i] = 100.0f * (float)(i + 1);
    tt ta, tb, ty;
    tt_init(&ta, "a", KS_DTYPE_F32, 3, da, a);
    tt_init(&tb, "b", KS_DTYPE_F32, 3, db, b);
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    tt *ins[2] = {&ta, &tb};
    assert_int_equal(run_node(KS_OP_ADD, NULL, NULL, ins, 2, &ty, sizeof(y)), KS_STATUS_OK);
    assert_int_equal(ty.rt.rank, 3);
    assert_int_equal(ty.rt.dims[0], 3);
    assert_int_equal(ty.rt.dims[1], 4);
    assert_int_equal(ty.rt.dims[2], 5);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++)
                assert_true(y[(i * 4 + j) * 5 + k] == a[i * 5 + k] + b[j]);

    /* rank-1 vs rank-3 (right-aligned), and a scalar */
    int64_t dc[1] = {5};
    float c[5] = {1, 2, 3, 4, 5}, s = 2.0f, y2[15];
    tt tc, ts, ty2;
    tt_init(&tc, "c", KS_DTYPE_F32, 1, dc, c);
    tt_init(&ts, "s", KS_DTYPE_F32, 0, NULL, &s);
    tt_init(&ty2, "y2", KS_DTYPE_F32, 0, NULL, y2);
    tt *ins2[2] = {&ta, &tc};
    assert_int_equal(run_node(KS_OP_SUB, NULL, NULL, ins2, 2, &ty2, sizeof(y2)), KS_STATUS_OK);
    for (int i = 0; i < 15; i++)
        assert_true(y2[i] == a[i] - c[i % 5]);
    tt *ins3[2] = {&ts, &ta};
    assert_int_equal(run_node(KS_OP_MUL, NULL, NULL, ins3, 2, &ty2, sizeof(y2)), KS_STATUS_OK);
    for (int i = 0; i < 15; i++)
        assert_true(y2[i] == 2.0f * a[i]);
}

static void test_binary_float_values(void **state) {
    (void)state;
    int64_t d[1] = {6};
    float a[6] = {-7.0f, 7.0f, -7.0f, 7.0f, 2.0f, -0.5f};
    float b[6] = {2.0f, -2.0f, -2.0f, 2.0f, 3.0f, 4.0f};
    float y[6];
    tt ta, tb, ty;
    tt_init(&ta, "a", KS_DTYPE_F32, 1, d, a);
    tt_init(&tb, "b", KS_DTYPE_F32, 1, d, b);
    tt *ins[2] = {&ta, &tb};
    struct {
        uint32_t op;
        float want[6];
    } cases[] = {
        {KS_OP_DIV, {-3.5f, -3.5f, 3.5f, 3.5f, 2.0f / 3.0f, -0.125f}},
        {KS_OP_FLOOR_DIV, {-4.0f, -4.0f, 3.0f, 3.0f, 0.0f, -1.0f}},
        {KS_OP_FLOOR_MOD, {1.0f, -1.0f, -1.0f, 1.0f, 2.0f, 3.5f}},
        {KS_OP_POW, {49.0f, 1.0f / 49.0f, 1.0f / 49.0f, 49.0f, 8.0f, 0.0625f}},
        {KS_OP_MAXIMUM, {2.0f, 7.0f, -2.0f, 7.0f, 3.0f, 4.0f}},
        {KS_OP_MINIMUM, {-7.0f, -2.0f, -7.0f, 2.0f, 2.0f, -0.5f}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
        assert_int_equal(run_node(cases[c].op, NULL, NULL, ins, 2, &ty, sizeof(y)), 0);
        for (int i = 0; i < 6; i++)
            assert_float_equal(y[i], cases[c].want[i], 1e-6f);
    }
    /* fused RELU6 */
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    full_params(ip, fp);
    ip[0] = KS_ACT_RELU6;
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    assert_int_equal(run_node(KS_OP_ADD, ip, fp, ins, 2, &ty, sizeof(y)), 0);
    const float relu6[6] = {0.0f, 5.0f, 0.0f, 6.0f, 5.0f, 3.5f};
    for (int i = 0; i < 6; i++)
        assert_float_equal(y[i], relu6[i], 0.0f);
}

/* ---- binary integer ---- */

static void test_integer_floor_ops(void **state) {
    (void)state;
    int64_t d[1] = {6};
    int32_t a[6] = {-7, 7, -7, 7, 0, -1}, b[6] = {2, -2, -2, 2, 3, 5}, y[6];
    tt ta, tb, ty;
    tt_init(&ta, "a", KS_DTYPE_I32, 1, d, a);
    tt_init(&tb, "b", KS_DTYPE_I32, 1, d, b);
    tt *ins[2] = {&ta, &tb};
    const int32_t want_floordiv[6] = {-4, -4, 3, 3, 0, -1};
    const int32_t want_floormod[6] = {1, -1, -1, 1, 0, 4};
    const int32_t want_div[6] = {-3, -3, 3, 3, 0, 0};
    tt_init(&ty, "y", KS_DTYPE_I32, 0, NULL, y);
    assert_int_equal(run_node(KS_OP_FLOOR_DIV, NULL, NULL, ins, 2, &ty, sizeof(y)), 0);
    assert_int_equal(ty.rt.dtype, KS_DTYPE_I32);
    for (int i = 0; i < 6; i++)
        assert_int_equal(y[i], want_floordiv[i]);
    assert_int_equal(run_node(KS_OP_FLOOR_MOD, NULL, NULL, ins, 2, &ty, sizeof(y)), 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(y[i], want_floormod[i]);
    assert_int_equal(run_node(KS_OP_DIV, NULL, NULL, ins, 2, &ty, sizeof(y)), 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(y[i], want_div[i]);

    /* I64, broadcast scalar divisor (movenet's FLOOR_DIV by a constant) */
    int64_t a64[4] = {-9, -8, 8, 9}, s64 = 4, y64[4];
    int64_t d4[1] = {4};
    tt t64, ts, ty64;
    tt_init(&t64, "a64", KS_DTYPE_I64, 1, d4, a64);
    tt_init(&ts, "s", KS_DTYPE_I64, 0, NULL, &s64);
    tt_init(&ty64, "y64", KS_DTYPE_I64, 0, NULL, y64);
    tt *ins64[2] = {&t64, &ts};
    assert_int_equal(run_node(KS_OP_FLOOR_DIV, NULL, NULL, ins64, 2, &ty64, sizeof(y64)), 0);
    const int64_t want64[4] = {-3, -2, 2, 2};
    for (int i = 0; i < 4; i++)
        assert_int_equal(y64[i], want64[i]);
    assert_int_equal(run_node(KS_OP_FLOOR_MOD, NULL, NULL, ins64, 2, &ty64, sizeof(y64)), 0);
    const int64_t wantm64[4] = {3, 0, 0, 1};
    for (int i = 0; i < 4; i++)
        assert_int_equal(y64[i], wantm64[i]);

    /* ADD/MUL/SUB/POW on ints, fused RELU */
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    full_params(ip, fp);
    ip[0] = KS_ACT_RELU;
    assert_int_equal(run_node(KS_OP_SUB, ip, fp, ins, 2, &ty, sizeof(y)), 0);
    const int32_t want_sub[6] = {0, 9, 0, 5, 0, 0};
    for (int i = 0; i < 6; i++)
        assert_int_equal(y[i], want_sub[i]);
    int32_t e[6] = {0, 1, 2, 3, 2, 5};
    tt te;
    tt_init(&te, "e", KS_DTYPE_I32, 1, d, e);
    tt *insp[2] = {&ta, &te};
    assert_int_equal(run_node(KS_OP_POW, NULL, NULL, insp, 2, &ty, sizeof(y)), 0);
    const int32_t want_pow[6] = {1, 7, 49, 343, 0, -1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(y[i], want_pow[i]);

    /* division by zero is an error, not a crash */
    b[4] = 0;
    assert_int_equal(run_node(KS_OP_FLOOR_DIV, NULL, NULL, ins, 2, &ty, sizeof(y)),
                     KS_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(g_err, "division by zero"));
    /* INT_MIN / -1 wraps instead of trapping */
    a[0] = INT32_MIN;
    b[0] = -1;
    b[4] = 1;
    assert_int_equal(run_node(KS_OP_DIV, NULL, NULL, ins, 2, &ty, sizeof(y)), 0);
    assert_int_equal(y[0], INT32_MIN);
}

/* ---- comparisons, WHERE ---- */

static void test_compare_where(void **state) {
    (void)state;
    int64_t da[2] = {2, 3}, db[1] = {3};
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {2, 2, 7};
    uint8_t y[6];
    tt ta, tb, ty;
    tt_init(&ta, "a", KS_DTYPE_F32, 2, da, a);
    tt_init(&tb, "b", KS_DTYPE_F32, 1, db, b);
    tt *ins[2] = {&ta, &tb};
    struct {
        uint32_t op;
        uint8_t want[6];
    } cases[] = {
        {KS_OP_EQUAL, {0, 1, 0, 0, 0, 0}},   {KS_OP_NOT_EQUAL, {1, 0, 1, 1, 1, 1}},
        {KS_OP_GREATER, {0, 0, 0, 1, 1, 0}}, {KS_OP_GREATER_EQUAL, {0, 1, 0, 1, 1, 0}},
        {KS_OP_LESS, {1, 0, 1, 0, 0, 1}},    {KS_OP_LESS_EQUAL, {1, 1, 1, 0, 0, 1}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        tt_init(&ty, "y", KS_DTYPE_BOOL, 0, NULL, y);
        assert_int_equal(run_node(cases[c].op, NULL, NULL, ins, 2, &ty, sizeof(y)), 0);
        assert_int_equal(ty.rt.dtype, KS_DTYPE_BOOL);
        for (int i = 0; i < 6; i++)
            assert_int_equal(y[i], cases[c].want[i]);
    }
    /* WHERE(cond[2,1], a[2,3], b[3]) */
    int64_t dc[2] = {2, 1};
    uint8_t cond[2] = {1, 0};
    float w[6];
    tt tc, tw;
    tt_init(&tc, "cond", KS_DTYPE_BOOL, 2, dc, cond);
    tt_init(&tw, "w", KS_DTYPE_F32, 0, NULL, w);
    tt *insw[3] = {&tc, &ta, &tb};
    assert_int_equal(run_node(KS_OP_WHERE, NULL, NULL, insw, 3, &tw, sizeof(w)), 0);
    const float want_w[6] = {1, 2, 3, 2, 2, 7};
    for (int i = 0; i < 6; i++)
        assert_true(w[i] == want_w[i]);
}

/* ---- unary ---- */

static void test_unary_float(void **state) {
    (void)state;
    int64_t d[1] = {5};
    float x[5] = {-4.0f, -1.0f, 0.0f, 0.5f, 7.0f}, y[5];
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_F32, 1, d, x);
    tt *ins[1] = {&tx};
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    struct {
        uint32_t op;
        float p0, p1;
        float want[5];
    } cases[] = {
        {KS_OP_RELU, 0, 0, {0, 0, 0, 0.5f, 7}},
        {KS_OP_RELU6, 0, 0, {0, 0, 0, 0.5f, 6}},
        {KS_OP_RELU_N1_TO_1, 0, 0, {-1, -1, 0, 0.5f, 1}},
        {KS_OP_LEAKY_RELU, 0.1f, 0, {-0.4f, -0.1f, 0, 0.5f, 7}},
        {KS_OP_SIGMOID, 0, 0, {0.01798621f, 0.26894142f, 0.5f, 0.62245933f, 0.99908895f}},
        {KS_OP_TANH, 0, 0, {-0.99932930f, -0.76159416f, 0, 0.46211716f, 0.99999834f}},
        {KS_OP_HARD_SWISH, 0, 0, {0, -1.0f / 3.0f, 0, 0.5f * 3.5f / 6.0f, 7}},
        {KS_OP_ABS, 0, 0, {4, 1, 0, 0.5f, 7}},
        {KS_OP_NEG, 0, 0, {4, 1, 0, -0.5f, -7}},
        {KS_OP_FLOOR, 0, 0, {-4, -1, 0, 0, 7}},
        {KS_OP_CEIL, 0, 0, {-4, -1, 0, 1, 7}},
        {KS_OP_CLIP, -2.0f, 0.25f, {-2, -1, 0, 0.25f, 0.25f}},
        {KS_OP_ELU, 1.0f, 0, {-0.98168436f, -0.63212056f, 0, 0.5f, 7}},
        {KS_OP_HARD_SIGMOID, 0.2f, 0.5f, {0, 0.3f, 0.5f, 0.6f, 1}},
        {KS_OP_EXP, 0, 0, {0.01831564f, 0.36787944f, 1, 1.64872127f, 1096.63316f}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        full_params(ip, fp);
        fp[0] = cases[c].p0;
        fp[1] = cases[c].p1;
        tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
        assert_int_equal(run_node(cases[c].op, ip, fp, ins, 1, &ty, sizeof(y)), 0);
        for (int i = 0; i < 5; i++)
            assert_float_equal(y[i], cases[c].want[i], 1e-5f * fmaxf(1.0f, fabsf(y[i])));
    }
    /* SQRT / RSQRT / LOG on positives */
    float p[3] = {0.25f, 4.0f, 1.0f};
    int64_t d3[1] = {3};
    tt tp;
    tt_init(&tp, "p", KS_DTYPE_F32, 1, d3, p);
    tt *insp[1] = {&tp};
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    assert_int_equal(run_node(KS_OP_SQRT, NULL, NULL, insp, 1, &ty, sizeof(y)), 0);
    assert_float_equal(y[0], 0.5f, 0.0f);
    assert_float_equal(y[1], 2.0f, 0.0f);
    assert_int_equal(run_node(KS_OP_RSQRT, NULL, NULL, insp, 1, &ty, sizeof(y)), 0);
    assert_float_equal(y[0], 2.0f, 0.0f);
    assert_float_equal(y[1], 0.5f, 0.0f);
    assert_int_equal(run_node(KS_OP_LOG, NULL, NULL, insp, 1, &ty, sizeof(y)), 0);
    assert_float_equal(y[1], 1.38629436f, 1e-6f);
    assert_float_equal(y[2], 0.0f, 0.0f);
}

static void test_prelu(void **state) {
    (void)state;
    int64_t dx[2] = {2, 3}, da[1] = {3};
    float x[6] = {-1, 2, -3, 4, -5, 6}, al[3] = {0.1f, 0.2f, 0.3f}, y[6];
    tt tx, ta, ty;
    tt_init(&tx, "x", KS_DTYPE_F32, 2, dx, x);
    tt_init(&ta, "alpha", KS_DTYPE_F32, 1, da, al);
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    tt *ins[2] = {&tx, &ta};
    assert_int_equal(run_node(KS_OP_PRELU, NULL, NULL, ins, 2, &ty, sizeof(y)), 0);
    const float want[6] = {-0.1f, 2, -0.9f, 4, -1.0f, 6};
    for (int i = 0; i < 6; i++)
        assert_float_equal(y[i], want[i], 1e-6f);
}

/* ---- softmax ---- */

static void test_softmax_large_inputs(void **state) {
    (void)state;
    int64_t d[2] = {2, 3};
    float x[6] = {1000.0f, 1001.0f, 1002.0f, -1000.0f, -1000.0f, -1000.0f}, y[6];
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_F32, 2, d, x);
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    tt *ins[1] = {&tx};
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    full_params(ip, fp);
    ip[0] = -1;
    assert_int_equal(run_node(KS_OP_SOFTMAX, ip, fp, ins, 1, &ty, sizeof(y)), 0);
    const float want[6] = {0.09003057f, 0.24472847f, 0.66524096f, 1.0f / 3, 1.0f / 3, 1.0f / 3};
    for (int i = 0; i < 6; i++) {
        assert_false(isnan(y[i]));
        assert_float_equal(y[i], want[i], 1e-6f);
    }
    assert_int_equal(run_node(KS_OP_LOG_SOFTMAX, ip, fp, ins, 1, &ty, sizeof(y)), 0);
    for (int i = 0; i < 6; i++)
        assert_float_equal(y[i], logf(want[i]), 1e-5f);
    /* axis 0 with beta 2: columns (1000,-1000) saturate to (1,0) */
    ip[0] = 0;
    fp[0] = 2.0f;
    assert_int_equal(run_node(KS_OP_SOFTMAX, ip, fp, ins, 1, &ty, sizeof(y)), 0);
    for (int i = 0; i < 3; i++) {
        assert_float_equal(y[i], 1.0f, 0.0f);
        assert_float_equal(y[3 + i], 0.0f, 0.0f);
    }
    ip[0] = 2;
    assert_int_equal(run_node(KS_OP_SOFTMAX, ip, fp, ins, 1, &ty, sizeof(y)),
                     KS_STATUS_INVALID_MODEL);
}

/* ---- reduce, arg ---- */

static void test_reduce(void **state) {
    (void)state;
    int64_t d[3] = {2, 3, 4};
    float x[24], y[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)(i % 7) - 2.0f;
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_F32, 3, d, x);
    tt *ins[1] = {&tx};
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    for (int kind = 0; kind <= 4; kind++) {
        for (int keep = 0; keep <= 1; keep++) {
            full_params(ip, fp);
            ip[0] = kind;
            ip[1] = keep;
            ip[2] = 2;
            ip[3] = -1; /* axes {-1, 0} = {2, 0}: output [3] or [1,3,1] */
            ip[4] = 0;
            tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
            assert_int_equal(run_node(KS_OP_REDUCE, ip, fp, ins, 1, &ty, sizeof(y)), 0);
            if (keep) {
                assert_int_equal(ty.rt.rank, 3);
                assert_int_equal(ty.rt.dims[0], 1);
                assert_int_equal(ty.rt.dims[1], 3);
                assert_int_equal(ty.rt.dims[2], 1);
            } else {
                assert_int_equal(ty.rt.rank, 1);
                assert_int_equal(ty.rt.dims[0], 3);
            }
            for (int j = 0; j < 3; j++) {
                double acc = kind == 4 ? 1.0 : (kind == 2 ? -1e30 : (kind == 3 ? 1e30 : 0.0));
                for (int i = 0; i < 2; i++)
                    for (int k = 0; k < 4; k++) {
                        double v = x[(i * 3 + j) * 4 + k];
                        if (kind == 0 || kind == 1) acc += v;
                        if (kind == 2) acc = v > acc ? v : acc;
                        if (kind == 3) acc = v < acc ? v : acc;
                        if (kind == 4) acc *= v;
                    }
                if (kind == 0) acc /= 8.0;
                assert_float_equal(y[j], (float)acc, 1e-5f);
            }
        }
    }
    /* all axes */
    full_params(ip, fp);
    ip[0] = 1;
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    assert_int_equal(run_node(KS_OP_REDUCE, ip, fp, ins, 1, &ty, sizeof(y)), 0);
    assert_int_equal(ty.rt.rank, 0);
    double total = 0;
    for (int i = 0; i < 24; i++)
        total += x[i];
    assert_float_equal(y[0], (float)total, 1e-5f);
    /* bad axis */
    ip[2] = 1;
    ip[3] = 3;
    assert_int_equal(run_node(KS_OP_REDUCE, ip, fp, ins, 1, &ty, sizeof(y)),
                     KS_STATUS_INVALID_MODEL);
    /* integer mean truncates, as TFLite's integer Mean */
    int32_t xi[4] = {1, 2, 2, -7}, yi[1];
    int64_t d4[1] = {4};
    tt txi, tyi;
    tt_init(&txi, "xi", KS_DTYPE_I32, 1, d4, xi);
    tt_init(&tyi, "yi", KS_DTYPE_I32, 0, NULL, yi);
    tt *insi[1] = {&txi};
    full_params(ip, fp);
    assert_int_equal(run_node(KS_OP_REDUCE, ip, fp, insi, 1, &tyi, sizeof(yi)), 0);
    assert_int_equal(yi[0], -0); /* (1+2+2-7)/4 = -2/4 -> 0 */
}

static void test_arg_max_min(void **state) {
    (void)state;
    int64_t d[2] = {2, 4};
    float x[8] = {1, 5, 5, 2, -1, -3, 0, -3};
    int64_t y64[4];
    int32_t y32[4];
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_F32, 2, d, x);
    tt *ins[1] = {&tx};
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    full_params(ip, fp);
    ip[0] = -1;
    tt_init(&ty, "y", KS_DTYPE_I64, 0, NULL, y64);
    assert_int_equal(run_node(KS_OP_ARG_MAX, ip, fp, ins, 1, &ty, sizeof(y64)), 0);
    assert_int_equal(ty.rt.rank, 1);
    assert_int_equal(y64[0], 1); /* tie 5,5 -> first */
    assert_int_equal(y64[1], 2);
    tt_init(&ty, "y", KS_DTYPE_I32, 0, NULL, y32);
    assert_int_equal(run_node(KS_OP_ARG_MIN, ip, fp, ins, 1, &ty, sizeof(y32)), 0);
    assert_int_equal(y32[0], 0);
    assert_int_equal(y32[1], 1); /* tie -3,-3 -> first */
    /* axis 0 keepdims */
    ip[0] = 0;
    ip[1] = 1;
    assert_int_equal(run_node(KS_OP_ARG_MAX, ip, fp, ins, 1, &ty, sizeof(y32)), 0);
    assert_int_equal(ty.rt.rank, 2);
    assert_int_equal(ty.rt.dims[0], 1);
    assert_int_equal(ty.rt.dims[1], 4);
    const int32_t want[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(y32[i], want[i]);
    /* quantized input: raw codes compared */
    uint8_t q[4] = {10, 200, 200, 3};
    int64_t dq[1] = {4};
    tt tq;
    tt_init(&tq, "q", KS_DTYPE_U8, 1, dq, q);
    tt_quant(&tq, 0.5f, 128);
    tt *insq[1] = {&tq};
    full_params(ip, fp);
    tt_init(&ty, "y", KS_DTYPE_I32, 0, NULL, y32);
    assert_int_equal(run_node(KS_OP_ARG_MAX, ip, fp, insq, 1, &ty, sizeof(y32)), 0);
    assert_int_equal(y32[0], 1);
    /* float output dtype is refused */
    float yf[4];
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, yf);
    assert_int_equal(run_node(KS_OP_ARG_MAX, ip, fp, insq, 1, &ty, sizeof(yf)),
                     KS_STATUS_UNSUPPORTED);
}

/* ---- quantize / dequantize / cast ---- */

static void test_quantize_dequantize(void **state) {
    (void)state;
    int64_t d[1] = {6};
    float x[6] = {-1.0f, 0.25f, 0.75f, -0.75f, 100.0f, 0.0f};
    uint8_t qu[6];
    int8_t qi[6];
    tt tx, tq, ti;
    tt_init(&tx, "x", KS_DTYPE_F32, 1, d, x);
    tt_init(&tq, "q", KS_DTYPE_U8, 0, NULL, qu);
    tt_quant(&tq, 0.5f, 10);
    tt *ins[1] = {&tx};
    assert_int_equal(run_node(KS_OP_QUANTIZE, NULL, NULL, ins, 1, &tq, sizeof(qu)), 0);
    /* x / 0.5 = -2, 0.5, 1.5, -1.5, 200, 0 -> round half away -> -2, 1, 2, -2, 200, 0; +10 */
    const uint8_t want_u[6] = {8, 11, 12, 8, 210, 10};
    for (int i = 0; i < 6; i++)
        assert_int_equal(qu[i], want_u[i]);
    /* requantize u8 -> i8 (scale x2, zp 0) */
    tt_init(&ti, "qi", KS_DTYPE_I8, 0, NULL, qi);
    tt_quant(&ti, 1.0f, 0);
    tt *insq[1] = {&tq};
    assert_int_equal(run_node(KS_OP_QUANTIZE, NULL, NULL, insq, 1, &ti, sizeof(qi)), 0);
    /* (q - 10) * 0.5, round half away: -1, 0.5->1, 1, -1, 100, 0 */
    const int8_t want_i[6] = {-1, 1, 1, -1, 100, 0};
    for (int i = 0; i < 6; i++)
        assert_int_equal(qi[i], want_i[i]);
    /* dequantize */
    float y[6];
    tt ty;
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    assert_int_equal(run_node(KS_OP_DEQUANTIZE, NULL, NULL, insq, 1, &ty, sizeof(y)), 0);
    const float want_f[6] = {-1.0f, 0.5f, 1.0f, -1.0f, 100.0f, 0.0f};
    for (int i = 0; i < 6; i++)
        assert_float_equal(y[i], want_f[i], 0.0f);
    /* quantize to a float dtype is refused and names it */
    float bad[6];
    tt tb;
    tt_init(&tb, "bad", KS_DTYPE_F32, 0, NULL, bad);
    assert_int_equal(run_node(KS_OP_QUANTIZE, NULL, NULL, ins, 1, &tb, sizeof(bad)),
                     KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(g_err, "f32"));
    /* u8 without quantization params cannot be dequantized */
    uint8_t raw[6] = {0};
    tt tr;
    tt_init(&tr, "raw", KS_DTYPE_U8, 1, d, raw);
    tt *insr[1] = {&tr};
    assert_int_equal(run_node(KS_OP_DEQUANTIZE, NULL, NULL, insr, 1, &ty, sizeof(y)),
                     KS_STATUS_INVALID_MODEL);
}

static void test_cast(void **state) {
    (void)state;
    int64_t d[1] = {6};
    float x[6] = {-1.7f, 1.7f, 0.0f, 300.5f, -0.2f, 2.5f};
    int32_t yi[6];
    uint8_t yb[6], yu[6];
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_F32, 1, d, x);
    tt *ins[1] = {&tx};
    tt_init(&ty, "y", KS_DTYPE_I32, 0, NULL, yi);
    assert_int_equal(run_node(KS_OP_CAST, NULL, NULL, ins, 1, &ty, sizeof(yi)), 0);
    const int32_t want_i[6] = {-1, 1, 0, 300, 0, 2};
    for (int i = 0; i < 6; i++)
        assert_int_equal(yi[i], want_i[i]);
    tt_init(&ty, "y", KS_DTYPE_BOOL, 0, NULL, yb);
    assert_int_equal(run_node(KS_OP_CAST, NULL, NULL, ins, 1, &ty, sizeof(yb)), 0);
    const uint8_t want_b[6] = {1, 1, 0, 1, 1, 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(yb[i], want_b[i]);
    tt_init(&ty, "y", KS_DTYPE_U8, 0, NULL, yu);
    assert_int_equal(run_node(KS_OP_CAST, NULL, NULL, ins, 1, &ty, sizeof(yu)), 0);
    assert_int_equal(yu[3], 255); /* saturates rather than UB */
    assert_int_equal(yu[0], 0);
    /* int -> float and int64 -> int32 */
    int64_t xl[3] = {-5, 1LL << 40, 7};
    float yf[3];
    int64_t d3[1] = {3};
    tt tl;
    tt_init(&tl, "l", KS_DTYPE_I64, 1, d3, xl);
    tt *insl[1] = {&tl};
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, yf);
    assert_int_equal(run_node(KS_OP_CAST, NULL, NULL, insl, 1, &ty, sizeof(yf)), 0);
    assert_float_equal(yf[0], -5.0f, 0.0f);
    assert_float_equal(yf[1], 1099511627776.0f, 0.0f);
    tt_init(&ty, "y", KS_DTYPE_I32, 0, NULL, yi);
    assert_int_equal(run_node(KS_OP_CAST, NULL, NULL, insl, 1, &ty, sizeof(yi)), 0);
    assert_int_equal(yi[0], -5);
    assert_int_equal(yi[2], 7);
}

/* ---- quantized forms against dequantize-compute-requantize ---- */

static int32_t requant_ref(double real, float scale, int32_t zp, int32_t lo, int32_t hi) {
    double q = round(real / scale) + zp;
    return (int32_t)(q < lo ? lo : (q > hi ? hi : q));
}

static void check_q_binary(uint32_t op, ks_dtype dt, float sa, int32_t za, float sb, int32_t zb,
                           float so, int32_t zo, int32_t act) {
    int64_t da[3] = {3, 1, 5}, db[3] = {1, 4, 1};
    uint8_t a[15], b[4], y[60];
    const int32_t lo = dt == KS_DTYPE_U8 ? 0 : -128, hi = dt == KS_DTYPE_U8 ? 255 : 127;
    for (int i = 0; i < 15; i++)
        a[i] = (uint8_t)rnd();
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)rnd();
    tt ta, tb, ty;
    tt_init(&ta, "a", dt, 3, da, a);
    tt_init(&tb, "b", dt, 3, db, b);
    tt_init(&ty, "y", dt, 0, NULL, y);
    tt_quant(&ta, sa, za);
    tt_quant(&tb, sb, zb);
    tt_quant(&ty, so, zo);
    tt *ins[2] = {&ta, &tb};
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    full_params(ip, fp);
    ip[0] = act;
    assert_int_equal(run_node(op, ip, fp, ins, 2, &ty, sizeof(y)), 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++) {
                int32_t qa = dt == KS_DTYPE_U8 ? a[i * 5 + k] : (int8_t)a[i * 5 + k];
                int32_t qb = dt == KS_DTYPE_U8 ? b[j] : (int8_t)b[j];
                double ra = (double)sa * (qa - za), rb = (double)sb * (qb - zb);
                double r;
                switch (op) {
                case KS_OP_ADD:
                    r = ra + rb;
                    break;
                case KS_OP_SUB:
                    r = ra - rb;
                    break;
                case KS_OP_MUL:
                    r = ra * rb;
                    break;
                case KS_OP_MAXIMUM:
                    r = ra > rb ? ra : rb;
                    break;
                default:
                    if (rb == 0.0) continue;
                    r = ra / rb;
                    break;
                }
                if (act == KS_ACT_RELU) r = r < 0 ? 0 : r;
                int32_t want = requant_ref(r, so, zo, lo, hi);
                uint8_t raw = y[(i * 4 + j) * 5 + k];
                int32_t got = dt == KS_DTYPE_U8 ? raw : (int8_t)raw;
                if (abs(got - want) > 1)
                    fail_msg("op %u elem (%d,%d,%d): got %d want %d", op, i, j, k, got, want);
            }
}

static void test_quantized_binary(void **state) {
    (void)state;
    for (int rep = 0; rep < 20; rep++) {
        /* scales and zero points as in mobilenet/deeplab/movenet */
        check_q_binary(KS_OP_ADD, KS_DTYPE_U8, 0.169606f, 133, 0.15071f, 134, 0.210051f, 131, 0);
        check_q_binary(KS_OP_ADD, KS_DTYPE_I8, 0.0393688f, 12, 0.0374003f, -5, 0.0410074f, 7, 0);
        check_q_binary(KS_OP_ADD, KS_DTYPE_I8, 0.2636f, -128, 0.280164f, 17, 0.426862f, -46,
                       KS_ACT_RELU);
        check_q_binary(KS_OP_SUB, KS_DTYPE_I8, 0.184314f, -128, 0.210099f, -128, 0.38819f, 10, 0);
        check_q_binary(KS_OP_SUB, KS_DTYPE_U8, 0.1f, 128, 0.05f, 100, 0.12f, 128, 0);
        check_q_binary(KS_OP_MUL, KS_DTYPE_I8, 0.38819f, 10, 0.38819f, 10, 11.2561f, -128, 0);
        check_q_binary(KS_OP_MUL, KS_DTYPE_U8, 0.02f, 128, 0.03f, 120, 0.001f, 128, 0);
        check_q_binary(KS_OP_MAXIMUM, KS_DTYPE_I8, 0.1f, 0, 0.2f, 3, 0.15f, -2, 0);
        check_q_binary(KS_OP_DIV, KS_DTYPE_U8, 0.1f, 0, 0.1f, 0, 0.05f, 0, 0);
    }
}

static void test_quantized_unary(void **state) {
    (void)state;
    int64_t d[1] = {256};
    int8_t x[256], y[256];
    for (int i = 0; i < 256; i++)
        x[i] = (int8_t)(i - 128);
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_I8, 1, d, x);
    tt_quant(&tx, 0.280927f, 115);
    tt *ins[1] = {&tx};
    struct {
        uint32_t op;
        float so;
        int32_t zo;
    } cases[] = {
        {KS_OP_SIGMOID, 1.0f / 256, -128}, {KS_OP_TANH, 1.0f / 128, 0},
        {KS_OP_RELU, 0.2f, -128},          {KS_OP_RELU6, 6.0f / 255, -128},
        {KS_OP_HARD_SWISH, 0.1f, -30},     {KS_OP_LEAKY_RELU, 0.25f, 20},
        {KS_OP_ABS, 0.3f, -128},           {KS_OP_ELU, 0.2f, 0},
    };
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        full_params(ip, fp);
        fp[0] = cases[c].op == KS_OP_ELU ? 1.0f : 0.2f;
        tt_init(&ty, "y", KS_DTYPE_I8, 0, NULL, y);
        tt_quant(&ty, cases[c].so, cases[c].zo);
        assert_int_equal(run_node(cases[c].op, ip, fp, ins, 1, &ty, sizeof(y)), 0);
        for (int i = 0; i < 256; i++) {
            double r = 0.280927 * (x[i] - 115), f;
            switch (cases[c].op) {
            case KS_OP_SIGMOID:
                f = 1.0 / (1.0 + exp(-r));
                break;
            case KS_OP_TANH:
                f = tanh(r);
                break;
            case KS_OP_RELU:
                f = r > 0 ? r : 0;
                break;
            case KS_OP_RELU6:
                f = r < 0 ? 0 : (r > 6 ? 6 : r);
                break;
            case KS_OP_HARD_SWISH:
                f = r * fmin(fmax(r + 3, 0), 6) / 6;
                break;
            case KS_OP_LEAKY_RELU:
                f = r >= 0 ? r : 0.2 * r;
                break;
            case KS_OP_ABS:
                f = fabs(r);
                break;
            default:
                f = r >= 0 ? r : expm1(r);
                break;
            }
            int32_t want = requant_ref(f, cases[c].so, cases[c].zo, -128, 127);
            if (abs(y[i] - want) > 1)
                fail_msg("op %u x=%d: got %d want %d", cases[c].op, x[i], y[i], want);
        }
    }
}

static void test_quantized_softmax(void **state) {
    (void)state;
    enum { N = 1001 };
    static uint8_t x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (uint8_t)(rnd() % 120);
    x[17] = 255;
    x[400] = 250;
    int64_t d[2] = {1, N};
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_U8, 2, d, x);
    tt_quant(&tx, 0.0988925f, 58);
    tt_init(&ty, "y", KS_DTYPE_U8, 0, NULL, y);
    tt_quant(&ty, 1.0f / 256, 0);
    tt *ins[1] = {&tx};
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    full_params(ip, fp);
    ip[0] = -1;
    assert_int_equal(run_node(KS_OP_SOFTMAX, ip, fp, ins, 1, &ty, sizeof(y)), 0);
    double mx = 0, sum = 0;
    for (int i = 0; i < N; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < N; i++)
        sum += exp(0.0988925 * (x[i] - mx));
    for (int i = 0; i < N; i++) {
        int32_t want = requant_ref(exp(0.0988925 * (x[i] - mx)) / sum, 1.0f / 256, 0, 0, 255);
        assert_true(abs((int)y[i] - want) <= 1);
    }
}

static void test_quantized_mean(void **state) {
    (void)state;
    enum { H = 7, W = 7, C = 20 };
    static int8_t x[H * W * C], y[C];
    for (int i = 0; i < H * W * C; i++)
        x[i] = (int8_t)(rnd() & 0xff);
    int64_t d[4] = {1, H, W, C};
    tt tx, ty;
    tt_init(&tx, "x", KS_DTYPE_I8, 4, d, x);
    tt_quant(&tx, 0.0235294f, -128);
    tt *ins[1] = {&tx};
    int32_t ip[KS_NODE_MAX_IPARAMS];
    float fp[KS_NODE_MAX_FPARAMS];
    /* 4-D H/W keepdims (tf2 mobilenet), no keepdims, equal params: all within a quantum of the
     * real mean (exact values: test_quantized_mean_sum_exact) */
    for (int variant = 0; variant < 3; variant++) {
        full_params(ip, fp);
        ip[0] = 0;
        ip[1] = variant == 1 ? 0 : 1;
        ip[2] = 2;
        ip[3] = 1;
        ip[4] = 2;
        tt_init(&ty, "y", KS_DTYPE_I8, 0, NULL, y);
        if (variant == 2)
            tt_quant(&ty, 0.0235294f, -128);
        else
            tt_quant(&ty, 0.0190778f, -128);
        assert_int_equal(run_node(KS_OP_REDUCE, ip, fp, ins, 1, &ty, sizeof(y)), 0);
        for (int c = 0; c < C; c++) {
            double acc = 0;
            for (int i = 0; i < H * W; i++)
                acc += 0.0235294 * (x[i * C + c] + 128);
            int32_t want = requant_ref(acc / (H * W), ty.scale, ty.zp, -128, 127);
            if (abs(y[c] - want) > 1)
                fail_msg("variant %d channel %d: got %d want %d", variant, c, y[c], want);
        }
    }
}

/* Quantized MEAN/SUM outputs recorded from LiteRT 2.3.0's reference kernels (BUILTIN_REF) on
 * one-op models, inputs x[i] = f((7 i^2 + 13 i + salt) % 251) with f(v) = v - 125 (I8), v (U8),
 * 97 (v - 125) (I16). The first case (tf2 mobilenet's global pool) hits channels 6 and 13 where
 * the old 4-D kernel (rescale, then divide by the count rounding) was one quantum off. */
typedef struct qred_case {
    int32_t kind, keep;
    ks_dtype dtype;
    int32_t rank;
    int64_t dims[4];
    int32_t num_axes, axes[2];
    float sx, so;
    int32_t zx, zo, salt, num_out;
    int32_t want[16];
} qred_case;

static void test_quantized_mean_sum_exact(void **state) {
    (void)state;
    static const qred_case cases[] = {
        {.kind = 0,
         .keep = 1,
         .dtype = KS_DTYPE_I8,
         .rank = 4,
         .dims = {1, 7, 7, 16},
         .num_axes = 2,
         .axes = {1, 2},
         .sx = 0.0235294122248888f,
         .so = 0.019077831879258156f,
         .zx = -128,
         .zo = -128,
         .salt = 1,
         .num_out = 16,
         .want = {39, 23, 24, 42, 1, 22, 36, 22, 44, 14, 14, 44, 22, 36, 22, 1}},
        {.kind = 0,
         .keep = 0,
         .dtype = KS_DTYPE_U8,
         .rank = 3,
         .dims = {2, 5, 6},
         .num_axes = 1,
         .axes = {-1},
         .sx = 0.05f,
         .so = 0.05f,
         .zx = 128,
         .zo = 128,
         .salt = 2,
         .num_out = 10,
         .want = {98, 137, 135, 135, 137, 99, 64, 114, 82, 94}},
        {.kind = 0,
         .keep = 0,
         .dtype = KS_DTYPE_I16,
         .rank = 3,
         .dims = {3, 4, 10},
         .num_axes = 2,
         .axes = {0, 2},
         .sx = 0.001f,
         .so = 0.0007f,
         .zx = 0,
         .zo = 0,
         .salt = 3,
         .num_out = 4,
         .want = {-374, -1737, 1922, -3312}},
        {.kind = 1,
         .keep = 1,
         .dtype = KS_DTYPE_U8,
         .rank = 3,
         .dims = {2, 3, 4},
         .num_axes = 2,
         .axes = {0, 2},
         .sx = 0.02f,
         .so = 0.3f,
         .zx = 100,
         .zo = 7,
         .salt = 4,
         .num_out = 3,
         .want = {0, 49, 28}},
    };
    static int8_t x8[7 * 7 * 16], y8[16];
    static uint8_t xu8[60], yu8[16];
    static int16_t x16[120], y16[16];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const qred_case *k = &cases[c];
        int64_t n = 1;
        for (int32_t d = 0; d < k->rank; d++)
            n *= k->dims[d];
        void *xd = k->dtype == KS_DTYPE_I8   ? (void *)x8
                   : k->dtype == KS_DTYPE_U8 ? (void *)xu8
                                             : (void *)x16;
        void *yd = k->dtype == KS_DTYPE_I8   ? (void *)y8
                   : k->dtype == KS_DTYPE_U8 ? (void *)yu8
                                             : (void *)y16;
        for (int64_t i = 0; i < n; i++) {
            int32_t v = (int32_t)((i * i * 7 + i * 13 + k->salt) % 251);
            if (k->dtype == KS_DTYPE_I8) x8[i] = (int8_t)(v - 125);
            if (k->dtype == KS_DTYPE_U8) xu8[i] = (uint8_t)v;
            if (k->dtype == KS_DTYPE_I16) x16[i] = (int16_t)((v - 125) * 97);
        }
        tt tx, ty;
        tt_init(&tx, "x", k->dtype, k->rank, k->dims, xd);
        tt_quant(&tx, k->sx, k->zx);
        tt_init(&ty, "y", k->dtype, 0, NULL, yd);
        tt_quant(&ty, k->so, k->zo);
        tt *ins[1] = {&tx};
        int32_t ip[KS_NODE_MAX_IPARAMS];
        float fp[KS_NODE_MAX_FPARAMS];
        full_params(ip, fp);
        ip[0] = k->kind;
        ip[1] = k->keep;
        ip[2] = k->num_axes;
        ip[3] = k->axes[0];
        ip[4] = k->axes[1];
        assert_int_equal(run_node(KS_OP_REDUCE, ip, fp, ins, 1, &ty, sizeof(y16)), 0);
        assert_int_equal(ks__rt_numel(&ty.rt), k->num_out);
        for (int32_t o = 0; o < k->num_out; o++) {
            int32_t got = k->dtype == KS_DTYPE_I8   ? y8[o]
                          : k->dtype == KS_DTYPE_U8 ? yu8[o]
                                                    : y16[o];
            if (got != k->want[o])
                fail_msg("case %zu output %d: got %d want %d", c, o, got, k->want[o]);
        }
    }
}

/* ---- errors ---- */

static void test_errors(void **state) {
    (void)state;
    int64_t da[2] = {3, 4}, db[2] = {2, 4};
    float a[12] = {0}, b[8] = {0}, y[24];
    tt ta, tb, ty;
    tt_init(&ta, "lhs", KS_DTYPE_F32, 2, da, a);
    tt_init(&tb, "rhs", KS_DTYPE_F32, 2, db, b);
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    tt *ins[2] = {&ta, &tb};
    assert_int_equal(run_node(KS_OP_ADD, NULL, NULL, ins, 2, &ty, sizeof(y)),
                     KS_STATUS_INVALID_SHAPE);
    assert_non_null(strstr(g_err, "broadcast"));
    assert_non_null(strstr(g_err, "lhs"));
    assert_non_null(strstr(g_err, "[2,4]"));
    assert_int_equal(run_node(KS_OP_WHERE, NULL, NULL, ins, 2, &ty, sizeof(y)),
                     KS_STATUS_INVALID_MODEL);

    /* bool arithmetic is unsupported and the message names the dtype */
    uint8_t ba[4] = {0}, bb[4] = {0}, by[4];
    int64_t d4[1] = {4};
    tt tba, tbb, tby;
    tt_init(&tba, "flags", KS_DTYPE_BOOL, 1, d4, ba);
    tt_init(&tbb, "flags2", KS_DTYPE_BOOL, 1, d4, bb);
    tt_init(&tby, "out", KS_DTYPE_BOOL, 0, NULL, by);
    tt *insb[2] = {&tba, &tbb};
    assert_int_equal(run_node(KS_OP_ADD, NULL, NULL, insb, 2, &tby, sizeof(by)),
                     KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(g_err, "bool"));
    assert_non_null(strstr(g_err, "flags"));
    tt *insu[1] = {&tba};
    assert_int_equal(run_node(KS_OP_SIGMOID, NULL, NULL, insu, 1, &tby, sizeof(by)),
                     KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(g_err, "bool"));
    assert_int_equal(run_node(KS_OP_SOFTMAX, NULL, NULL, insu, 1, &tby, sizeof(by)),
                     KS_STATUS_UNSUPPORTED);
    /* integer exp is unsupported */
    int32_t ia[4] = {0}, iy[4];
    tt tia, tiy;
    tt_init(&tia, "ints", KS_DTYPE_I32, 1, d4, ia);
    tt_init(&tiy, "iy", KS_DTYPE_I32, 0, NULL, iy);
    tt *insi[1] = {&tia};
    assert_int_equal(run_node(KS_OP_EXP, NULL, NULL, insi, 1, &tiy, sizeof(iy)),
                     KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(g_err, "i32"));
    /* mixed dtypes */
    tt *insm[2] = {&ta, &tia};
    assert_int_equal(run_node(KS_OP_MUL, NULL, NULL, insm, 2, &ty, sizeof(y)),
                     KS_STATUS_UNSUPPORTED);
    assert_non_null(strstr(g_err, "i32"));
    /* quantized input with a float output declared */
    int8_t q[4] = {0};
    tt tq;
    tt_init(&tq, "q", KS_DTYPE_I8, 1, d4, q);
    tt_quant(&tq, 0.1f, 0);
    tt *insq[2] = {&tq, &tq};
    tt_init(&ty, "y", KS_DTYPE_F32, 0, NULL, y);
    assert_int_equal(run_node(KS_OP_ADD, NULL, NULL, insq, 2, &ty, sizeof(y)),
                     KS_STATUS_UNSUPPORTED);
    /* quantized output without params */
    int8_t qy[4];
    tt tqy;
    tt_init(&tqy, "qy", KS_DTYPE_I8, 0, NULL, qy);
    assert_int_equal(run_node(KS_OP_ADD, NULL, NULL, insq, 2, &tqy, sizeof(qy)),
                     KS_STATUS_INVALID_MODEL);
    assert_non_null(strstr(g_err, "qy"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered),
        cmocka_unit_test(test_add_broadcast_odd),
        cmocka_unit_test(test_binary_float_values),
        cmocka_unit_test(test_integer_floor_ops),
        cmocka_unit_test(test_compare_where),
        cmocka_unit_test(test_unary_float),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_softmax_large_inputs),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_arg_max_min),
        cmocka_unit_test(test_quantize_dequantize),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_quantized_binary),
        cmocka_unit_test(test_quantized_unary),
        cmocka_unit_test(test_quantized_softmax),
        cmocka_unit_test(test_quantized_mean),
        cmocka_unit_test(test_quantized_mean_sum_exact),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
