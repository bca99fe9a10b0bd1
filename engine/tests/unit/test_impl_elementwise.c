/* Fast fp32 elementwise, softmax, reduce-mean, resize, concat and pad variants (every entry of
 * ks__impl_list() for those ops that this CPU runs) against the reference kernels: odd sizes
 * 1..67 that hit every vector tail, the broadcast patterns models use, special values (NaN,
 * infinities, signed zeros, overflow), and 1 vs 3 threads (results must be bitwise equal). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "impl.h"
#include "cpu_kernel.h"

/* Named tolerances (relative, then an absolute floor for results near zero). */
#define TOL_EXACT_REL 0.0
#define TOL_MATH_REL 2e-6 /* polynomial exp/tanh/sigmoid vs libm */
#define TOL_INTERP_REL 1e-5
#define TOL_INTERP_ABS 1e-6 /* bilinear weights fused differently; inputs are O(1) */
#define TOL_TINY_ABS 1e-30  /* denormal results of exp-like functions */

typedef struct tens {
    ks__rt_tensor rt;
    ks__quant q;
} tens;

static void tens_init(tens *t, ks_dtype dtype, int32_t rank, const int64_t *dims, void *data) {
    memset(t, 0, sizeof(*t));
    t->rt.dtype = dtype;
    t->rt.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->rt.dims[i] = dims[i];
    t->rt.data = data;
    t->rt.quant = &t->q;
}

static ks__node node_of(uint32_t op) {
    ks__node n;
    memset(&n, 0, sizeof(n));
    n.op = op;
    n.name = (char *)"n";
    return n;
}

static char g_err[512];
static ks__pool *g_pool3;
static int g_runs[512]; /* per entry of ks__impl_list() */
static uint32_t g_rng = 2463534242u;

static float frand(float lo, float hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return lo + (hi - lo) * (float)(g_rng >> 8) / (float)(1u << 24);
}

static const float k_special[] = {NAN,    INFINITY, -INFINITY, 0.0f,   -0.0f,  1e-30f,  -1e-30f,
                                  1e30f,  -1e30f,   88.0f,     -88.0f, 100.0f, -100.0f, 1e-7f,
                                  -1e-4f, 0.5f,     9.0f,      -9.0f,  -20.0f, 3.0f,    -3.0f};
#define NUM_SPECIAL (sizeof(k_special) / sizeof(k_special[0]))

/* Special values go to every third element, from a rotating start so that two operands do not
 * hold them at the same positions. */
static float *fill_rand(int64_t n, float lo, float hi, bool specials) {
    static int64_t start;
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = frand(lo, hi);
    start = (start + 1) % 3;
    if (specials)
        for (int64_t i = start; i < n; i += 3)
            p[i] = k_special[(size_t)(i / 3 + start) % NUM_SPECIAL];
    return p;
}

static bool close_enough(float got, float want, double rel, double abs_tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs((double)got - (double)want) <= rel * fabs((double)want) + abs_tol;
}

static ks__kernel_ctx make_ctx(const ks__node *node, ks__rt_tensor **in, uint32_t nin,
                               ks__rt_tensor **out) {
    ks__kernel_ctx ctx = {.node = node,
                          .node_index = 3,
                          .in = in,
                          .num_inputs = nin,
                          .out = out,
                          .num_outputs = 1,
                          .err = g_err,
                          .err_cap = sizeof(g_err)};
    return ctx;
}

/* Runs the reference, then every matching variant (1 and 3 threads) and compares. Returns the
 * number of variants that accepted the node. */
static int check_node(const ks__node *node, tens *ins, uint32_t nin, double rel, double abs_tol,
                      const char *what) {
    ks__rt_tensor *in[8];
    for (uint32_t i = 0; i < nin; i++)
        in[i] = &ins[i].rt;
    tens out;
    tens_init(&out, KS_DTYPE_F32, 0, NULL, NULL);
    ks__rt_tensor *outp = &out.rt;
    ks__kernel_ctx ctx = make_ctx(node, in, nin, &outp);
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    ks_status st = ks__ref_prepare(&ctx);
    if (st) fail_msg("%s: reference infer failed: %s", what, g_err);
    int64_t n = ks__rt_numel(&out.rt);
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    out.rt.size_bytes = (size_t)n * sizeof(float);
    float *want = malloc(bytes), *got1 = malloc(bytes), *got3 = malloc(bytes);
    assert_true(want && got1 && got3);
    static _Alignas(64) uint8_t scratch[1 << 16];
    assert_true(ctx.scratch_bytes <= sizeof(scratch));
    ctx.scratch = scratch;
    out.rt.data = want;
    assert_int_equal(k->run(&ctx), KS_STATUS_OK);

    int accepted = 0;
    const ks__impl *const *list = ks__impl_list();
    for (int idx = 0; list[idx]; idx++) {
        const ks__impl *im = list[idx];
        if (im->op != node->op || (im->isa & ~ks__cpu_isa()) != 0) continue;
        ks__kernel_ctx c = make_ctx(node, in, nin, &outp);
        c.num_threads = 3;
        out.rt.data = NULL;
        if (im->cost(&c) < 0) continue;
        accepted++;
        size_t packed_bytes = 0;
        assert_int_equal(im->plan(&c, &packed_bytes), KS_STATUS_OK);
        void *packed = NULL;
        if (packed_bytes) {
            packed = aligned_alloc(64, (packed_bytes + 63) / 64 * 64);
            assert_non_null(packed);
            c.packed = packed;
            c.packed_bytes = packed_bytes;
            assert_non_null(im->pack);
            assert_int_equal(im->pack(&c), KS_STATUS_OK);
        }
        float *gots[2] = {got1, got3};
        for (int t = 0; t < 2; t++) {
            memset(gots[t], 0xA5, bytes);
            out.rt.data = gots[t];
            c.pool = t ? g_pool3 : NULL;
            c.num_threads = t ? 3 : 1;
            st = im->run(&c);
            if (st) fail_msg("%s: %s failed: %s", what, im->name, g_err);
        }
        for (int64_t i = 0; i < n; i++) {
            if (!close_enough(got1[i], want[i], rel, abs_tol))
                fail_msg("%s: %s element %lld of %lld: got %.9g want %.9g", what, im->name,
                         (long long)i, (long long)n, (double)got1[i], (double)want[i]);
        }
        if (n > 0 && memcmp(got1, got3, (size_t)n * sizeof(float)) != 0)
            fail_msg("%s: %s differs between 1 and 3 threads", what, im->name);
        free(packed);
        g_runs[idx]++;
    }
    free(want);
    free(got1);
    free(got3);
    return accepted;
}

/* Variants exist for x86 with AVX2 (and AVX-512) and for AArch64 NEON (the same sources);
 * elsewhere, or with KS_FORCE_SCALAR=1, nothing is accepted and only the reference runs. */
#define FAST_ISA (KS_ISA_AVX2 | KS_ISA_NEON)
static void expect_fast(int accepted) {
    if (ks__cpu_isa() & FAST_ISA) assert_true(accepted > 0);
}

/* ---- binary ops and PRELU ---- */

static const uint32_t k_binary_ops[] = {KS_OP_ADD, KS_OP_SUB,     KS_OP_MUL,
                                        KS_OP_DIV, KS_OP_MAXIMUM, KS_OP_MINIMUM};

static void binary_case(uint32_t op, int32_t act, int32_t ra, const int64_t *da, int32_t rb,
                        const int64_t *db, bool specials, const char *what) {
    tens ins[2];
    float *a = fill_rand(ks__numel(ra, da), -4, 4, specials);
    float *b = fill_rand(ks__numel(rb, db), -4, 4, specials);
    tens_init(&ins[0], KS_DTYPE_F32, ra, da, a);
    tens_init(&ins[1], KS_DTYPE_F32, rb, db, b);
    ks__node node = node_of(op);
    node.ip[0] = act;
    node.fp[0] = 0.15f;
    double rel = (act == KS_ACT_TANH || act == KS_ACT_SIGMOID || act == KS_ACT_SILU)
                     ? TOL_MATH_REL
                     : TOL_EXACT_REL;
    char buf[160];
    snprintf(buf, sizeof(buf), "%s op %u act %d", what, op, act);
    expect_fast(check_node(&node, ins, 2, rel, TOL_TINY_ABS, buf));
    free(a);
    free(b);
}

static void test_binary(void **state) {
    (void)state;
    for (size_t o = 0; o < sizeof(k_binary_ops) / sizeof(k_binary_ops[0]); o++) {
        uint32_t op = k_binary_ops[o];
        for (int64_t n = 1; n <= 67; n++) {
            int64_t same[1] = {n}, s3[3] = {2, 3, n}, one[1] = {1}, chan[1] = {n};
            int64_t g1[3] = {3, 1, n}, g2[2] = {4, 1};
            binary_case(op, 0, 1, same, 1, same, true, "same");
            binary_case(op, 0, 3, s3, 1, one, true, "scalar b");
            binary_case(op, 0, 0, NULL, 3, s3, false, "scalar a");
            binary_case(op, 0, 3, s3, 1, chan, false, "channel b");
            binary_case(op, 0, 1, chan, 3, s3, false, "channel a");
            binary_case(op, 0, 3, g1, 2, g2, false, "general");
        }
        for (int32_t act = 0; act < KS_ACT_COUNT; act++) {
            if (act == KS_ACT_PRELU || act == KS_ACT_TABLE) continue; /* CONV2D only */
            int64_t s4[4] = {1, 5, 3, 19}, c1[1] = {19}, g1[4] = {2, 1, 5, 7}, g2[3] = {3, 1, 7};
            binary_case(op, act, 4, s4, 4, s4, true, "act same");
            binary_case(op, act, 4, s4, 1, c1, false, "act channel");
            binary_case(op, act, 4, g1, 3, g2, false, "act general");
        }
        int64_t big[4] = {1, 64, 64, 37}, bc[1] = {37}, flat[1] = {200003};
        binary_case(op, KS_ACT_RELU6, 4, big, 1, bc, false, "big channel");
        binary_case(op, KS_ACT_NONE, 1, flat, 1, flat, false, "big same");
        binary_case(op, KS_ACT_SIGMOID, 1, flat, 0, NULL, false, "big scalar");
    }
}

static void test_prelu(void **state) {
    (void)state;
    for (int64_t c = 1; c <= 67; c++) {
        int64_t x4[4] = {1, 3, 2, c}, a3[3] = {1, 1, c}, a1[1] = {1};
        tens ins[2];
        float *x = fill_rand(ks__numel(4, x4), -3, 3, true), *al = fill_rand(c, -1, 1, false);
        tens_init(&ins[0], KS_DTYPE_F32, 4, x4, x);
        tens_init(&ins[1], KS_DTYPE_F32, 3, a3, al);
        ks__node node = node_of(KS_OP_PRELU);
        expect_fast(check_node(&node, ins, 2, TOL_EXACT_REL, 0, "prelu channel"));
        tens_init(&ins[1], KS_DTYPE_F32, 1, a1, al);
        expect_fast(check_node(&node, ins, 2, TOL_EXACT_REL, 0, "prelu scalar"));
        tens_init(&ins[1], KS_DTYPE_F32, 4, x4, x);
        expect_fast(check_node(&node, ins, 2, TOL_EXACT_REL, 0, "prelu same"));
        free(x);
        free(al);
    }
}

/* ---- unary ---- */

static void unary_case(uint32_t op, int64_t n, float p0, float p1, float lo, float hi) {
    tens x;
    int64_t dims[1] = {n};
    float *d = fill_rand(n, lo, hi, true);
    tens_init(&x, KS_DTYPE_F32, 1, dims, d);
    ks__node node = node_of(op);
    node.fp[0] = p0;
    node.fp[1] = p1;
    bool math = op == KS_OP_SIGMOID || op == KS_OP_TANH || op == KS_OP_EXP || op == KS_OP_ELU;
    char buf[64];
    snprintf(buf, sizeof(buf), "unary op %u n %lld", op, (long long)n);
    expect_fast(check_node(&node, &x, 1, math ? TOL_MATH_REL : TOL_EXACT_REL, TOL_TINY_ABS, buf));
    free(d);
}

static void test_unary(void **state) {
    (void)state;
    static const uint32_t ops[] = {KS_OP_RELU,    KS_OP_RELU6, KS_OP_RELU_N1_TO_1, KS_OP_LEAKY_RELU,
                                   KS_OP_SIGMOID, KS_OP_TANH,  KS_OP_HARD_SWISH,   KS_OP_EXP,
                                   KS_OP_ELU,     KS_OP_CLIP,  KS_OP_SQRT,         KS_OP_ABS,
                                   KS_OP_NEG};
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
        float p0 = ops[o] == KS_OP_CLIP ? -0.5f : (ops[o] == KS_OP_ELU ? 1.3f : 0.2f);
        float p1 = 2.5f;
        for (int64_t n = 1; n <= 67; n++)
            unary_case(ops[o], n, p0, p1, -10, 10);
        /* dense sweeps of the ranges where approximations switch branches */
        unary_case(ops[o], 100003, p0, p1, -1, 1);
        unary_case(ops[o], 4099, p0, p1, -90, 90);
    }
    unary_case(KS_OP_CLIP, 33, 1.0f, 1.0f, -3, 3);
    unary_case(KS_OP_CLIP, 33, -INFINITY, INFINITY, -3, 3);
}

/* ---- softmax ---- */

static void test_softmax(void **state) {
    (void)state;
    for (int lg = 0; lg < 2; lg++) {
        uint32_t op = lg ? KS_OP_LOG_SOFTMAX : KS_OP_SOFTMAX;
        for (int64_t len = 1; len <= 67; len++) {
            int64_t dims[3] = {2, 3, len};
            float *x = fill_rand(6 * len, -8, 8, false);
            tens t;
            tens_init(&t, KS_DTYPE_F32, 3, dims, x);
            ks__node node = node_of(op);
            node.ip[0] = -1;
            node.fp[0] = len % 2 ? 0.0f : 0.7f;
            expect_fast(check_node(&node, &t, 1, TOL_MATH_REL, TOL_TINY_ABS, "softmax"));
            /* an axis followed only by 1s is the last axis in memory */
            int64_t d2[3] = {3, len, 1};
            tens_init(&t, KS_DTYPE_F32, 3, d2, x);
            node.ip[0] = 1;
            expect_fast(check_node(&node, &t, 1, TOL_MATH_REL, TOL_TINY_ABS, "softmax axis1"));
            free(x);
        }
        /* special values: -inf entries, a NaN row, huge logits */
        int64_t dims[2] = {4, 19};
        float *x = fill_rand(4 * 19, -8, 8, false);
        x[3] = -INFINITY;
        x[19 + 5] = NAN;
        x[38 + 7] = 1e30f;
        x[57 + 1] = 3e38f;
        x[57 + 2] = -3e38f;
        tens t;
        tens_init(&t, KS_DTYPE_F32, 2, dims, x);
        ks__node node = node_of(op);
        node.ip[0] = 1;
        check_node(&node, &t, 1, TOL_MATH_REL, TOL_TINY_ABS, "softmax specials");
        /* not the last axis: the variants must decline */
        node.ip[0] = 0;
        assert_int_equal(check_node(&node, &t, 1, TOL_MATH_REL, TOL_TINY_ABS, "softmax axis0"), 0);
        free(x);
        /* many short rows (detector score heads): the row-per-lane path, with a tail */
        for (int64_t len = 2; len <= 9; len++) {
            int64_t many[2] = {4420 + len, len};
            x = fill_rand(many[0] * len, -12, 12, false);
            x[5 * len] = -INFINITY;
            tens_init(&t, KS_DTYPE_F32, 2, many, x);
            node.ip[0] = -1;
            node.fp[0] = len % 3 ? 0.0f : 0.5f;
            expect_fast(check_node(&node, &t, 1, TOL_MATH_REL, TOL_TINY_ABS, "softmax short rows"));
            free(x);
        }
        node.fp[0] = 0.0f;
        int64_t big[2] = {300, 1001};
        x = fill_rand(300 * 1001, -20, 20, false);
        tens_init(&t, KS_DTYPE_F32, 2, big, x);
        node.ip[0] = -1;
        check_node(&node, &t, 1, TOL_MATH_REL, TOL_TINY_ABS, "softmax big");
        free(x);
    }
}

/* ---- reduce mean over H, W ---- */

static void test_reduce_mean_hw(void **state) {
    (void)state;
    for (int64_t c = 1; c <= 67; c++) {
        int64_t dims[4] = {2, 3 + c % 4, 1 + c % 5, c};
        float *x = fill_rand(ks__numel(4, dims), -5, 5, false);
        tens t;
        tens_init(&t, KS_DTYPE_F32, 4, dims, x);
        ks__node node = node_of(KS_OP_REDUCE);
        node.ip[1] = (int32_t)(c % 2);
        node.ip[2] = 2;
        node.ip[3] = c % 3 ? 1 : -3;
        node.ip[4] = 2;
        expect_fast(check_node(&node, &t, 1, TOL_EXACT_REL, 0, "mean hw"));
        node.ip[2] = 1; /* only H: declined */
        assert_int_equal(check_node(&node, &t, 1, TOL_EXACT_REL, 0, "mean h"), 0);
        free(x);
    }
    int64_t dims[4] = {3, 56, 56, 67};
    float *x = fill_rand(ks__numel(4, dims), -5, 5, false);
    tens t;
    tens_init(&t, KS_DTYPE_F32, 4, dims, x);
    ks__node node = node_of(KS_OP_REDUCE);
    node.ip[2] = 2, node.ip[3] = 1, node.ip[4] = 2;
    expect_fast(check_node(&node, &t, 1, TOL_EXACT_REL, 0, "mean hw big"));
    free(x);
}

/* ---- resize ---- */

static void test_resize(void **state) {
    (void)state;
    static const int64_t in_hw[][2] = {{1, 1}, {3, 5}, {7, 4}};
    static const int64_t out_hw[][2] = {{1, 1}, {6, 10}, {5, 3}, {13, 17}};
    static const int64_t chans[] = {1, 3, 8, 17, 33};
    for (int mode = 0; mode < 2; mode++)
        for (int coord = 0; coord < KS_RESIZE_COORD_COUNT; coord++)
            for (int rnd = 0; rnd < (mode ? 1 : 4); rnd++)
                for (size_t i = 0; i < 3; i++)
                    for (size_t o = 0; o < 4; o++)
                        for (size_t ci = 0; ci < 5; ci++) {
                            int64_t dims[4] = {2, in_hw[i][0], in_hw[i][1], chans[ci]};
                            float *x = fill_rand(ks__numel(4, dims), -1, 1, false);
                            tens t;
                            tens_init(&t, KS_DTYPE_F32, 4, dims, x);
                            ks__node node = node_of(KS_OP_RESIZE);
                            node.ip[0] = mode, node.ip[1] = coord, node.ip[2] = rnd;
                            node.ip[3] = (int32_t)out_hw[o][0];
                            node.ip[4] = (int32_t)out_hw[o][1];
                            expect_fast(
                                check_node(&node, &t, 1, TOL_INTERP_REL, TOL_INTERP_ABS, "resize"));
                            free(x);
                        }
    /* sizes from scales (ONNX), and a large image over threads */
    int64_t dims[4] = {1, 45, 37, 24};
    float *x = fill_rand(ks__numel(4, dims), -1, 1, false);
    tens t;
    tens_init(&t, KS_DTYPE_F32, 4, dims, x);
    for (int mode = 0; mode < 2; mode++) {
        ks__node node = node_of(KS_OP_RESIZE);
        node.ip[0] = mode, node.ip[1] = KS_RESIZE_HALF_PIXEL;
        node.fp[0] = 2.5f, node.fp[1] = 1.7f;
        expect_fast(check_node(&node, &t, 1, TOL_INTERP_REL, TOL_INTERP_ABS, "resize scales"));
        node.fp[0] = 0, node.fp[1] = 0;
        node.ip[3] = 180, node.ip[4] = 148;
        expect_fast(check_node(&node, &t, 1, TOL_INTERP_REL, TOL_INTERP_ABS, "resize big"));
    }
    free(x);
}

/* ---- concat and pad ---- */

static void test_concat(void **state) {
    (void)state;
    for (int64_t c = 1; c <= 67; c += 3) {
        for (int32_t axis = -4; axis < 4; axis++) {
            tens ins[3];
            float *bufs[3];
            for (int i = 0; i < 3; i++) {
                int64_t dims[4] = {2, 3, 5, c};
                int32_t ax = axis < 0 ? axis + 4 : axis;
                dims[ax] = 1 + (i * 7 + c) % 4;
                bufs[i] = fill_rand(ks__numel(4, dims), -3, 3, i == 1);
                tens_init(&ins[i], KS_DTYPE_F32, 4, dims, bufs[i]);
            }
            ks__node node = node_of(KS_OP_CONCAT);
            node.ip[0] = axis;
            node.ip[1] = c % 9 == 1 ? KS_ACT_RELU6 : KS_ACT_NONE;
            expect_fast(check_node(&node, ins, 3, TOL_EXACT_REL, 0, "concat"));
            for (int i = 0; i < 3; i++)
                free(bufs[i]);
        }
    }
    int64_t da[4] = {1, 96, 96, 40}, db[4] = {1, 96, 96, 24};
    float *a = fill_rand(ks__numel(4, da), -1, 1, false),
          *b = fill_rand(ks__numel(4, db), -1, 1, false);
    tens ins[2];
    tens_init(&ins[0], KS_DTYPE_F32, 4, da, a);
    tens_init(&ins[1], KS_DTYPE_F32, 4, db, b);
    ks__node node = node_of(KS_OP_CONCAT);
    node.ip[0] = 3;
    node.ip[1] = KS_ACT_TANH;
    expect_fast(check_node(&node, ins, 2, TOL_MATH_REL, TOL_TINY_ABS, "concat big"));
    node.ip[0] = 0;
    int64_t db0[4] = {2, 96, 96, 40};
    float *b0 = fill_rand(ks__numel(4, db0), -1, 1, false);
    tens_init(&ins[1], KS_DTYPE_F32, 4, db0, b0);
    node.ip[1] = KS_ACT_NONE;
    expect_fast(check_node(&node, ins, 2, TOL_EXACT_REL, 0, "concat big axis0"));
    free(a);
    free(b);
    free(b0);
}

static void pad_case(int32_t rank, const int64_t *dims, const int32_t *pads, bool value_input,
                     const char *what) {
    float *x = fill_rand(ks__numel(rank, dims), -2, 2, false);
    int64_t pdims[2] = {rank, 2};
    float value = 7.25f;
    int64_t one[1] = {1};
    tens ins[3];
    tens_init(&ins[0], KS_DTYPE_F32, rank, dims, x);
    tens_init(&ins[1], KS_DTYPE_I32, 2, pdims, (void *)pads);
    tens_init(&ins[2], KS_DTYPE_F32, 1, one, &value);
    ks__node node = node_of(KS_OP_PAD);
    node.fp[0] = -1.5f;
    expect_fast(check_node(&node, ins, value_input ? 3 : 2, TOL_EXACT_REL, 0, what));
    free(x);
}

static void test_pad(void **state) {
    (void)state;
    for (int64_t c = 1; c <= 67; c += 2) {
        int64_t d4[4] = {2, 3, 5, c};
        int32_t p4[8] = {0, 0, 1, 2, 2, 1, 0, 0};
        pad_case(4, d4, p4, c % 3 == 0, "pad hw");
        int32_t p4c[8] = {0, 1, 0, 0, 1, 0, (int32_t)(c % 5), 3};
        pad_case(4, d4, p4c, false, "pad c");
        int32_t p4ch[8] = {0, 0, 0, 0, 0, 0, (int32_t)(c % 3), (int32_t)(c % 7)};
        pad_case(4, d4, p4ch, c % 2 == 1, "pad channels only");
        int32_t crop[8] = {0, 0, -1, 1, 1, -2, (int32_t)(-(c / 2)), 1};
        pad_case(4, d4, crop, true, "pad crop");
        int64_t d1[1] = {c};
        int32_t p1[2] = {3, (int32_t)(c % 4)};
        pad_case(1, d1, p1, false, "pad rank1");
    }
    int64_t big[4] = {1, 112, 112, 24};
    int32_t pb[8] = {0, 0, 1, 1, 1, 1, 0, 0};
    pad_case(4, big, pb, false, "pad big");
    int32_t pbc[8] = {0, 0, 0, 0, 0, 0, 0, 4}; /* BlazeFace's 24 -> 28 channels */
    pad_case(4, big, pbc, false, "pad big channels");
}

/* Every variant of these families that this CPU supports ran at least once. */
static void test_all_variants_ran(void **state) {
    (void)state;
    static const uint32_t ops[] = {
        KS_OP_ADD,        KS_OP_SUB,         KS_OP_MUL,    KS_OP_DIV,        KS_OP_MAXIMUM,
        KS_OP_MINIMUM,    KS_OP_PRELU,       KS_OP_RELU,   KS_OP_RELU6,      KS_OP_RELU_N1_TO_1,
        KS_OP_LEAKY_RELU, KS_OP_SIGMOID,     KS_OP_TANH,   KS_OP_HARD_SWISH, KS_OP_EXP,
        KS_OP_ELU,        KS_OP_CLIP,        KS_OP_SQRT,   KS_OP_ABS,        KS_OP_NEG,
        KS_OP_SOFTMAX,    KS_OP_LOG_SOFTMAX, KS_OP_REDUCE, KS_OP_RESIZE,     KS_OP_CONCAT,
        KS_OP_PAD};
    const ks__impl *const *list = ks__impl_list();
    int checked = 0;
    for (int idx = 0; list[idx]; idx++) {
        if ((list[idx]->isa & ~ks__cpu_isa()) != 0) continue;
        for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
            if (list[idx]->op != ops[o] || strncmp(list[idx]->name, "ks_f32_v", 8) != 0) continue;
            if (g_runs[idx] == 0) fail_msg("variant %s never ran", list[idx]->name);
            checked++;
        }
    }
    if (ks__cpu_isa() & FAST_ISA) assert_true(checked >= 26);
}

static int setup(void **state) {
    (void)state;
    return ks__pool_create(NULL, 3, &g_pool3) == KS_STATUS_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    ks__pool_destroy(g_pool3);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_reduce_mean_hw),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_all_variants_ran),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
