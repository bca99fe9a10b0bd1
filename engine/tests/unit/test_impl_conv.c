/* Fast CONV2D / FULLY_CONNECTED / MATMUL variants (gemm.h) against the reference kernels: every
 * variant of ks__impl_list() that this CPU supports, on odd shapes that hit every row and column
 * tail, strides, dilation, padding modes, groups, every fused activation and the residual input,
 * at 1 and 3 threads. Also the reference residual semantics and the ADD -> conv residual fusion
 * pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "convert.h"
#include "impl.h"
#include "cpu_kernel.h"

/* Max relative error of f32 results scales with the square root of the reduction depth. */
#define F32_TOL_PER_SQRT_K 1e-5

static const ks__quant k_noq = {0};
static char g_err[512];

static void mk(ks__rt_tensor *t, ks_dtype dt, void *data, int32_t rank, const int64_t *dims) {
    memset(t, 0, sizeof(*t));
    t->dtype = dt;
    t->rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->data = data;
    t->quant = &k_noq;
    t->size_bytes = data ? (size_t)ks__rt_numel(t) * ks_dtype_size(dt) : 0;
}

static uint32_t g_rng = 777u;
static float frand(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)(g_rng >> 8) / (float)(1u << 23) - 1.0f;
}

static float *rand_buf(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

static void *aligned(size_t bytes) {
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, bytes ? bytes : 64), 0);
    return p;
}

static ks__kernel_ctx make_ctx(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                               ks__rt_tensor **outs) {
    ks__kernel_ctx ctx = {.node = node,
                          .node_index = 3,
                          .in = ins,
                          .num_inputs = nin,
                          .out = outs,
                          .num_outputs = 1,
                          .err = g_err,
                          .err_cap = sizeof(g_err),
                          .num_threads = 1};
    g_err[0] = 0;
    return ctx;
}

/* Reference infer + run; returns the output (malloc) and its element count. */
static float *run_ref(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, ks__rt_tensor *y) {
    mk(y, KS_DTYPE_F32, NULL, 0, NULL);
    ks__rt_tensor *outs[1] = {y};
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
    const ks__kernel *k = &ks__ref_kernels()->k[node->op];
    ks_status st = ks__ref_prepare(&ctx);
    if (st) print_error("ref infer: %s\n", g_err);
    assert_int_equal(st, KS_STATUS_OK);
    y->size_bytes = (size_t)ks__rt_numel(y) * sizeof(float);
    y->data = malloc(y->size_bytes);
    assert_non_null(y->data);
    ctx.scratch = ctx.scratch_bytes ? aligned(ctx.scratch_bytes) : NULL;
    st = k->run(&ctx);
    free(ctx.scratch);
    assert_int_equal(st, KS_STATUS_OK);
    return y->data;
}

/* The f32 GEMM family (gemm.h), which must take every float conv/fc/matmul these tests build. */
static int is_gemm_variant(const ks__impl *im) {
    return strncmp(im->name, "ks_f32_conv2d__", 15) == 0 ||
           strncmp(im->name, "ks_f32_fc__", 11) == 0 ||
           strncmp(im->name, "ks_f32_matmul__", 15) == 0;
}

/* Runs every supported variant for node->op at 1 and 3 threads and compares with the reference.
 * `depth` is the reduction length (for the tolerance). Returns the number of variants run. */
static int check_variants(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, int64_t depth) {
    ks__rt_tensor yref;
    const float *want = run_ref(node, ins, nin, &yref);
    int64_t count = ks__rt_numel(&yref);
    double tol = F32_TOL_PER_SQRT_K * sqrt((double)depth);
    int ran = 0;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        /* fp16-arithmetic variants (sessions with KS_PRECISION_FP16 only) have their own
         * tolerance: test_impl_f16 */
        if (im->op != node->op || (im->isa & ~ks__cpu_isa()) != 0 || (im->isa & KS_ISA_NEON_FP16))
            continue;
        for (uint32_t threads = 1; threads <= 3; threads += 2) {
            ks__pool *pool = NULL;
            if (threads > 1) assert_int_equal(ks__pool_create(NULL, threads, &pool), KS_STATUS_OK);
            ks__rt_tensor y;
            mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
            ks__rt_tensor *outs[1] = {&y};
            ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
            assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
            y.size_bytes = yref.size_bytes;
            float *got = malloc(y.size_bytes);
            assert_non_null(got);
            for (int64_t i = 0; i < count; i++)
                got[i] = NAN; /* every output must be written */
            y.data = got;
            ctx.num_threads = threads;
            ctx.pool = pool;
            if (im->cost(&ctx) < 0) {
                /* Not this variant's case (e.g. a depthwise kernel); the GEMM ones must run. */
                assert_false(is_gemm_variant(im));
                ks__pool_destroy(pool);
                free(got);
                break;
            }
            ran += threads == 1;
            size_t packed_bytes = 0;
            ctx.scratch_bytes = 0;
            assert_int_equal(im->plan(&ctx, &packed_bytes), KS_STATUS_OK);
            ctx.packed = aligned((packed_bytes + 63) / 64 * 64);
            ctx.packed_bytes = packed_bytes;
            if (packed_bytes && im->pack) assert_int_equal(im->pack(&ctx), KS_STATUS_OK);
            ctx.scratch = aligned((ctx.scratch_bytes + 63) / 64 * 64);
            assert_int_equal(im->run(&ctx), KS_STATUS_OK);
            for (int64_t i = 0; i < count; i++) {
                if (!(fabs((double)got[i] - want[i]) <= tol * (1.0 + fabs(want[i])))) {
                    print_error("%s threads %u element %lld: got %g want %g\n", im->name, threads,
                                (long long)i, (double)got[i], (double)want[i]);
                    fail();
                }
            }
            free(ctx.scratch);
            free(ctx.packed);
            free(got);
            ks__pool_destroy(pool);
        }
    }
    free(yref.data);
    return ran;
}

/* Every GEMM variant must refuse the node (cost < 0). */
static void expect_refused(const ks__node *node, ks__rt_tensor **ins, uint32_t nin) {
    ks__rt_tensor y;
    mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
    ks__rt_tensor *outs[1] = {&y};
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
    ks_status st = ks__ref_prepare(&ctx);
    if (st) return; /* the reference refuses too */
    for (const ks__impl *const *it = ks__impl_list(); *it; it++)
        if ((*it)->op == node->op && is_gemm_variant(*it)) assert_true((*it)->cost(&ctx) < 0);
}

static int has_fast(void) {
    return (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_AVX512)) != 0;
}

/* AArch64: the NEON GEMM takes every ungrouped float conv and FC (with the residual and PRELU
 * fused in its microkernel); grouped convs and MATMUL have no NEON variant */
static int has_neon(void) {
    return (ks__cpu_isa() & KS_ISA_NEON) != 0;
}

/* ---- CONV2D ---- */

typedef struct conv_case {
    int64_t n, ih, iw, ic, oc, kh, kw;
    int32_t sh, sw, dh, dw, pt, pl, pb, pr, mode, groups, act;
    int bias, residual, f16_weights;
} conv_case;

static void run_conv_case(const conv_case *c) {
    int64_t groups = c->groups ? c->groups : 1;
    int64_t xd[4] = {c->n, c->ih, c->iw, c->ic}, wd[4] = {c->oc, c->kh, c->kw, c->ic / groups};
    int64_t bd[1] = {c->oc};
    int64_t wn = c->oc * c->kh * c->kw * (c->ic / groups);
    float *x = rand_buf(c->n * c->ih * c->iw * c->ic), *w = rand_buf(wn), *b = rand_buf(c->oc);
    uint16_t *w16 = NULL;
    ks__rt_tensor tx, tw, tb, tr, ts;
    /* PRELU: per-channel slopes of both signs as input 4, shaped like TFLite's [1, 1, C] */
    float *slope = c->act == KS_ACT_PRELU ? rand_buf(c->oc) : NULL;
    int64_t sd[3] = {1, 1, c->oc};
    if (slope) mk(&ts, KS_DTYPE_F32, slope, 3, sd);
    mk(&tx, KS_DTYPE_F32, x, 4, xd);
    if (c->f16_weights) {
        w16 = malloc((size_t)wn * sizeof(uint16_t));
        assert_non_null(w16);
        for (int64_t i = 0; i < wn; i++)
            w16[i] = ks__f32_to_f16(w[i]);
        mk(&tw, KS_DTYPE_F16, w16, 4, wd);
    } else {
        mk(&tw, KS_DTYPE_F32, w, 4, wd);
    }
    mk(&tb, KS_DTYPE_F32, b, 1, bd);
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"conv";
    int32_t ip[11] = {c->sh, c->sw, c->dh,   c->dw,     c->pt, c->pl,
                      c->pb, c->pr, c->mode, c->groups, c->act};
    memcpy(node.ip, ip, sizeof(ip));
    node.fp[0] = 0.125f;
    ks__rt_tensor *ins[5] = {&tx, &tw, c->bias ? &tb : NULL, NULL, slope ? &ts : NULL};
    uint32_t nin = slope ? 5 : 3;
    float *res = NULL;
    if (c->residual) {
        /* Output shape first, from the reference infer. */
        ks__rt_tensor y;
        mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
        ks__rt_tensor *outs[1] = {&y};
        ks__kernel_ctx ctx = make_ctx(&node, ins, nin, outs);
        assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
        res = rand_buf(ks__rt_numel(&y));
        mk(&tr, KS_DTYPE_F32, res, 4, y.dims);
        ins[3] = &tr;
        if (!slope) nin = 4;
    }
    int ran = check_variants(&node, ins, nin, c->kh * c->kw * (c->ic / groups));
    if (has_fast() || (has_neon() && groups == 1)) assert_true(ran > 0);
    free(x), free(w), free(b), free(w16), free(res), free(slope);
}

static void test_conv_1x1_tails(void **state) {
    (void)state;
    /* Every row tail (pixels 1..17) and column tail (channels around 16/32). */
    for (int64_t wdt = 1; wdt <= 17; wdt++) {
        int64_t oc = 1 + (wdt * 7) % 40;
        conv_case c = {.n = 1,
                       .ih = 1,
                       .iw = wdt,
                       .ic = 3 + wdt % 5,
                       .oc = oc,
                       .kh = 1,
                       .kw = 1,
                       .bias = (int)(wdt & 1),
                       .act = (int32_t)(wdt % 3 == 0   ? KS_ACT_RELU
                                        : wdt % 3 == 1 ? KS_ACT_PRELU
                                                       : KS_ACT_NONE)};
        run_conv_case(&c);
    }
    conv_case wide = {.n = 1, .ih = 5, .iw = 7, .ic = 64, .oc = 96, .kh = 1, .kw = 1, .bias = 1};
    run_conv_case(&wide);
}

static void test_conv_general(void **state) {
    (void)state;
    const conv_case cases[] = {
        /* 3x3 pad 1, odd channel counts */
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
         .bias = 1},
        /* stride 2, asymmetric pads, batch 2 */
        {.n = 2,
         .ih = 10,
         .iw = 7,
         .ic = 5,
         .oc = 17,
         .kh = 3,
         .kw = 3,
         .sh = 2,
         .sw = 2,
         .pt = 0,
         .pl = 1,
         .pb = 1,
         .pr = 1,
         .bias = 1},
        /* 1x1 stride 2 */
        {.n = 1, .ih = 9, .iw = 9, .ic = 24, .oc = 33, .kh = 1, .kw = 1, .sh = 2, .sw = 2},
        /* dilation 2, SAME_UPPER */
        {.n = 1,
         .ih = 8,
         .iw = 13,
         .ic = 9,
         .oc = 31,
         .kh = 3,
         .kw = 3,
         .dh = 2,
         .dw = 2,
         .mode = KS_PAD_SAME_UPPER,
         .bias = 1},
        /* 5x5 stride 2 SAME_LOWER, non-square kernel via 1x7 next */
        {.n = 1,
         .ih = 12,
         .iw = 9,
         .ic = 6,
         .oc = 40,
         .kh = 5,
         .kw = 5,
         .sh = 2,
         .sw = 2,
         .mode = KS_PAD_SAME_LOWER},
        {.n = 1,
         .ih = 6,
         .iw = 15,
         .ic = 16,
         .oc = 16,
         .kh = 1,
         .kw = 7,
         .pl = 3,
         .pr = 3,
         .bias = 1},
        /* first layer: 3 input channels, stride 2, VALID */
        {.n = 1,
         .ih = 17,
         .iw = 17,
         .ic = 3,
         .oc = 24,
         .kh = 3,
         .kw = 3,
         .sh = 2,
         .sw = 2,
         .mode = KS_PAD_VALID,
         .bias = 1},
        /* grouped: 2 groups of 8 -> 12, 3 groups of 9 -> 33 */
        {.n = 1,
         .ih = 7,
         .iw = 6,
         .ic = 16,
         .oc = 24,
         .kh = 3,
         .kw = 3,
         .pt = 1,
         .pl = 1,
         .pb = 1,
         .pr = 1,
         .groups = 2,
         .bias = 1},
        {.n = 1, .ih = 5, .iw = 9, .ic = 27, .oc = 99, .kh = 1, .kw = 1, .groups = 3, .bias = 1},
        /* F16 weights */
        {.n = 1,
         .ih = 6,
         .iw = 6,
         .ic = 20,
         .oc = 21,
         .kh = 3,
         .kw = 3,
         .pt = 1,
         .pl = 1,
         .pb = 1,
         .pr = 1,
         .bias = 1,
         .f16_weights = 1},
        /* kernel as large as the padded input */
        {.n = 1,
         .ih = 2,
         .iw = 3,
         .ic = 8,
         .oc = 8,
         .kh = 3,
         .kw = 3,
         .pt = 1,
         .pl = 1,
         .pb = 1,
         .pr = 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_conv_case(&cases[i]);
}

/* Rows wide enough for tiles whose every tap is inside the image (the NEON driver's arithmetic
 * tap pointers) beside tiles at the borders and across row ends, for strides, dilations and
 * windows of 3x3 to 5x5 (outputs 13..22 wide, two images). */
static void test_conv_wide_rows(void **state) {
    (void)state;
    static const int32_t k_geo[][5] = {
        /* kh = kw, stride, dilation, pad, ic */
        {3, 1, 1, 1, 5}, {3, 2, 1, 1, 3}, {5, 2, 1, 2, 3}, {3, 1, 2, 2, 7}, {5, 1, 1, 0, 4},
    };
    for (size_t i = 0; i < sizeof(k_geo) / sizeof(k_geo[0]); i++) {
        conv_case c = {.n = 2,
                       .ih = 11,
                       .iw = 27 + (int64_t)i * 5,
                       .ic = k_geo[i][4],
                       .oc = 19,
                       .kh = k_geo[i][0],
                       .kw = k_geo[i][0],
                       .sh = k_geo[i][1],
                       .sw = k_geo[i][1],
                       .dh = k_geo[i][2],
                       .dw = k_geo[i][2],
                       .pt = k_geo[i][3],
                       .pl = k_geo[i][3],
                       .pb = k_geo[i][3],
                       .pr = k_geo[i][3],
                       .act = KS_ACT_RELU,
                       .bias = 1};
        run_conv_case(&c);
    }
}

static void test_conv_acts_and_residual(void **state) {
    (void)state;
    for (int32_t act = 0; act < KS_ACT_COUNT; act++) {
        if (act == KS_ACT_TABLE) continue; /* quantized convs only (test_impl_quant) */
        for (int residual = 0; residual <= 1; residual++) {
            conv_case c = {.n = 1,
                           .ih = 5,
                           .iw = 7,
                           .ic = 12,
                           .oc = 37,
                           .kh = 3,
                           .kw = 3,
                           .pt = 1,
                           .pl = 1,
                           .pb = 1,
                           .pr = 1,
                           .act = act,
                           .bias = 1,
                           .residual = residual};
            run_conv_case(&c);
            c.oc = 24; /* a last panel of exactly 8 columns (AVX2: the 6 x 8 full tile) */
            run_conv_case(&c);
        }
    }
    conv_case g = {.n = 1,
                   .ih = 4,
                   .iw = 5,
                   .ic = 16,
                   .oc = 16,
                   .kh = 1,
                   .kw = 1,
                   .groups = 2,
                   .act = KS_ACT_RELU6,
                   .residual = 1};
    run_conv_case(&g);
}

static void test_conv_refused(void **state) {
    (void)state;
    /* depthwise-like groups (Cin/g < 8) are left to other kernels */
    float x[4 * 4 * 8] = {0}, w[8 * 9] = {0};
    int64_t xd[4] = {1, 4, 4, 8}, wd[4] = {8, 3, 3, 1};
    ks__rt_tensor tx, tw;
    mk(&tx, KS_DTYPE_F32, x, 4, xd);
    mk(&tw, KS_DTYPE_F32, w, 4, wd);
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"dw";
    node.ip[9] = 8;
    ks__rt_tensor *ins[3] = {&tx, &tw, NULL};
    expect_refused(&node, ins, 3);
    /* non-constant weights */
    int64_t wd2[4] = {4, 1, 1, 8};
    mk(&tw, KS_DTYPE_F32, NULL, 4, wd2);
    node.ip[9] = 0;
    ks__rt_tensor y;
    mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
    ks__rt_tensor *outs[1] = {&y};
    ks__kernel_ctx ctx = make_ctx(&node, ins, 3, outs);
    assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
    for (const ks__impl *const *it = ks__impl_list(); *it; it++)
        if ((*it)->op == KS_OP_CONV2D && is_gemm_variant(*it)) assert_true((*it)->cost(&ctx) < 0);
}

/* ---- FULLY_CONNECTED / MATMUL ---- */

static void test_fc(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{1, 37, 45}, {3, 5, 1}, {13, 64, 33}, {7, 100, 16}, {25, 9, 70}};
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int64_t rows = shapes[s][0], in = shapes[s][1], o = shapes[s][2];
        float *x = rand_buf(rows * in), *w = rand_buf(o * in), *b = rand_buf(o);
        int64_t xd[2] = {rows, in}, wd[2] = {o, in}, bd[1] = {o};
        ks__rt_tensor tx, tw, tb;
        mk(&tx, KS_DTYPE_F32, x, 2, xd);
        mk(&tw, KS_DTYPE_F32, w, 2, wd);
        mk(&tb, KS_DTYPE_F32, b, 1, bd);
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_FULLY_CONNECTED;
        node.name = (char *)"fc";
        node.ip[0] = (int32_t)(s % KS_ACT_COUNT);
        if (node.ip[0] == KS_ACT_TABLE) node.ip[0] = KS_ACT_NONE; /* quantized convs only */
        node.fp[0] = 0.2f;
        ks__rt_tensor *ins[3] = {&tx, &tw, (s & 1) ? NULL : &tb};
        int ran = check_variants(&node, ins, 3, in);
        if (has_fast() || has_neon()) assert_true(ran > 0);
        free(x), free(w), free(b);
    }
}

static void test_matmul(void **state) {
    (void)state;
    for (int tb = 0; tb <= 1; tb++) {
        int64_t k = 29, n = 35;
        float *a = rand_buf(2 * 7 * k), *b = rand_buf(k * n);
        int64_t ad[3] = {2, 7, k}, bd[2] = {tb ? n : k, tb ? k : n};
        ks__rt_tensor ta, tbt;
        mk(&ta, KS_DTYPE_F32, a, 3, ad);
        mk(&tbt, KS_DTYPE_F32, b, 2, bd);
        ks__node node;
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_MATMUL;
        node.name = (char *)"mm";
        node.ip[1] = tb;
        ks__rt_tensor *ins[2] = {&ta, &tbt};
        int ran = check_variants(&node, ins, 2, k);
        if (has_fast()) assert_true(ran > 0);
        /* transpose_a stays on the reference kernel */
        int64_t ad2[3] = {2, k, 7};
        mk(&ta, KS_DTYPE_F32, a, 3, ad2);
        node.ip[0] = 1;
        expect_refused(&node, ins, 2);
        free(a), free(b);
    }
}

/* ---- reference residual semantics ---- */

static void test_ref_residual(void **state) {
    (void)state;
    float x[2] = {1.0f, 2.0f}, w[1] = {3.0f}, b[1] = {0.5f}, r[2] = {-4.0f, 1.0f};
    int64_t xd[4] = {1, 1, 2, 1}, wd[4] = {1, 1, 1, 1}, bd[1] = {1};
    ks__rt_tensor tx, tw, tb, tr;
    mk(&tx, KS_DTYPE_F32, x, 4, xd);
    mk(&tw, KS_DTYPE_F32, w, 4, wd);
    mk(&tb, KS_DTYPE_F32, b, 1, bd);
    mk(&tr, KS_DTYPE_F32, r, 4, xd);
    ks__node node;
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    node.name = (char *)"res";
    node.ip[10] = KS_ACT_RELU;
    ks__rt_tensor *ins[4] = {&tx, &tw, &tb, &tr};
    ks__rt_tensor y;
    float *got = run_ref(&node, ins, 4, &y);
    /* relu(3 * [1, 2] + 0.5 + [-4, 1]) */
    assert_true(got[0] == 0.0f);
    assert_true(got[1] == 7.5f);
    free(got);

    /* wrong residual shape */
    int64_t bad[4] = {1, 2, 1, 1};
    mk(&tr, KS_DTYPE_F32, r, 4, bad);
    ks__rt_tensor *outs[1] = {&y};
    mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
    ks__kernel_ctx ctx = make_ctx(&node, ins, 4, outs);
    assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_INVALID_SHAPE);

    /* quantized conv with a residual */
    uint8_t qx[2] = {1, 2}, qw[1] = {3};
    float scale = 1.0f;
    int32_t zp = 0;
    ks__quant q = {1, 0, &scale, &zp};
    mk(&tx, KS_DTYPE_U8, qx, 4, xd);
    tx.quant = &q;
    mk(&tw, KS_DTYPE_U8, qw, 4, wd);
    tw.quant = &q;
    mk(&tr, KS_DTYPE_F32, r, 4, xd);
    ks__rt_tensor *qins[4] = {&tx, &tw, NULL, &tr};
    mk(&y, KS_DTYPE_U8, NULL, 0, NULL);
    y.quant = &q;
    ctx = make_ctx(&node, qins, 4, outs);
    assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_UNSUPPORTED);
}

/* ---- ADD -> conv residual fusion (graph pass) ---- */

static int32_t add_t(ks__graph *g, const char *name, int32_t rank, const int64_t *dims) {
    int32_t id;
    assert_int_equal(ks__graph_add_tensor(g, name, KS_DTYPE_F32, rank, dims, &id), KS_STATUS_OK);
    return id;
}

/* x -> conv -> t; ADD(t, x) -> s; RELU(s) -> y. `extra_use` also makes t a graph output. */
static void build_block(ks__graph *g, int extra_use) {
    ks__graph_init(g, NULL);
    int64_t xd[4] = {1, 4, 4, 8}, wd[4] = {8, 1, 1, 8}, bd[1] = {8};
    int32_t x = add_t(g, "x", 4, xd), w = add_t(g, "w", 4, wd), b = add_t(g, "b", 1, bd);
    int32_t t = add_t(g, "t", 4, xd), s = add_t(g, "s", 4, xd), y = add_t(g, "y", 4, xd);
    float wv[64], bv[8];
    for (int i = 0; i < 64; i++)
        wv[i] = frand();
    for (int i = 0; i < 8; i++)
        bv[i] = frand();
    assert_int_equal(ks__graph_set_const(g, w, wv, sizeof(wv), true), KS_STATUS_OK);
    assert_int_equal(ks__graph_set_const(g, b, bv, sizeof(bv), true), KS_STATUS_OK);
    int32_t cin[3] = {x, w, b}, ain[2] = {t, x};
    uint32_t idx;
    assert_int_equal(ks__graph_add_node(g, KS_OP_CONV2D, "conv", 3, cin, 1, &t, &idx), 0);
    assert_int_equal(ks__graph_add_node(g, KS_OP_ADD, "add", 2, ain, 1, &s, &idx), 0);
    assert_int_equal(ks__graph_add_node(g, KS_OP_RELU, "relu", 1, &s, 1, &y, &idx), 0);
    int32_t outs[2] = {y, t};
    assert_int_equal(ks__graph_set_io(g, 1, &x, extra_use ? 2 : 1, outs), KS_STATUS_OK);
}

static void test_fuse_residual(void **state) {
    (void)state;
    ks__graph g;
    char err[256];
    build_block(&g, 0);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    assert_int_equal(g.num_nodes, 1);
    const ks__node *n = &g.nodes[0];
    assert_int_equal(n->op, KS_OP_CONV2D);
    assert_int_equal(n->num_inputs, 4);
    assert_string_equal(g.tensors[n->inputs[3]].name, "x");
    assert_int_equal(n->ip[10], KS_ACT_RELU);
    assert_string_equal(g.tensors[n->outputs[0]].name, "y");
    ks__graph_free(&g);

    /* the conv output is also a graph output: no fusion */
    build_block(&g, 1);
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    int convs = 0, adds = 0;
    for (uint32_t i = 0; i < g.num_nodes; i++) {
        convs += g.nodes[i].op == KS_OP_CONV2D && g.nodes[i].num_inputs <= 3;
        adds += g.nodes[i].op == KS_OP_ADD;
    }
    assert_int_equal(convs, 1);
    assert_int_equal(adds, 1);
    ks__graph_free(&g);
}

/* ---- SPACE_TO_BATCH_ND + CONV2D + BATCH_TO_SPACE_ND -> dilated CONV2D (graph pass) ---- */

/* Runs `node` with the reference kernel: y gets its inferred shape and a new buffer. */
static void ref_node(const ks__node *node, ks__rt_tensor **ins, uint32_t nin, ks__rt_tensor *y) {
    mk(y, KS_DTYPE_F32, NULL, 0, NULL);
    ks__rt_tensor *outs[1] = {y};
    ks__kernel_ctx ctx = make_ctx(node, ins, nin, outs);
    assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
    y->size_bytes = (size_t)ks__rt_numel(y) * sizeof(float);
    y->data = aligned(y->size_bytes);
    ctx.scratch = aligned(ctx.scratch_bytes);
    assert_int_equal(ks__ref_kernels()->k[node->op].run(&ctx), KS_STATUS_OK);
    free(ctx.scratch);
}

/* x -> S2B(block, pads) -> conv 3x3 VALID (+ bias, ReLU) -> t -> B2S(block, crops) -> y, run by
 * the reference kernels node by node, then the optimized graph: one dilated CONV2D whose output
 * must be the same values (`crop_over`: a crop beyond its pad, which must not fold). */
static void atrous_case(int64_t bh, int64_t bw, const int32_t pads[4], const int32_t crops[4],
                        int crop_over) {
    ks__graph g;
    ks__graph_init(&g, NULL);
    const int64_t n = 2, h = 9, w = 11, ci = 3, co = 4;
    int64_t xd[4] = {n, h, w, ci}, wd[4] = {co, 3, 3, ci}, bd[1] = {co}, two[1] = {2};
    int64_t pd[2] = {2, 2};
    int64_t hp = h + pads[0] + pads[1], wp = w + pads[2] + pads[3];
    int64_t sd[4] = {n * bh * bw, hp / bh, wp / bw, ci};
    int64_t td[4] = {n * bh * bw, hp / bh - 2, wp / bw - 2, co};
    int64_t yd[4] = {n, td[1] * bh - crops[0] - crops[1], td[2] * bw - crops[2] - crops[3], co};
    int32_t x = add_t(&g, "x", 4, xd), wt = add_t(&g, "w", 4, wd), b = add_t(&g, "b", 1, bd);
    int32_t blk, pads_t, crops_t, blk2;
    assert_int_equal(ks__graph_add_tensor(&g, "block", KS_DTYPE_I32, 1, two, &blk), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "block2", KS_DTYPE_I32, 1, two, &blk2), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "pads", KS_DTYPE_I32, 2, pd, &pads_t), 0);
    assert_int_equal(ks__graph_add_tensor(&g, "crops", KS_DTYPE_I32, 2, pd, &crops_t), 0);
    int32_t sb = add_t(&g, "s", 4, sd), t = add_t(&g, "t", 4, td), y = add_t(&g, "y", 4, yd);
    float *wv = rand_buf(co * 9 * ci), *bv = rand_buf(co), *xv = rand_buf(n * h * w * ci);
    int32_t bk[2] = {(int32_t)bh, (int32_t)bw};
    assert_int_equal(ks__graph_set_const(&g, wt, wv, (size_t)(co * 9 * ci) * 4, true), 0);
    assert_int_equal(ks__graph_set_const(&g, b, bv, (size_t)co * 4, true), 0);
    assert_int_equal(ks__graph_set_const(&g, blk, bk, sizeof(bk), true), 0);
    assert_int_equal(ks__graph_set_const(&g, blk2, bk, sizeof(bk), true), 0);
    assert_int_equal(ks__graph_set_const(&g, pads_t, pads, 16, true), 0);
    assert_int_equal(ks__graph_set_const(&g, crops_t, crops, 16, true), 0);
    int32_t in_s[3] = {x, blk, pads_t}, in_c[3] = {sb, wt, b}, in_b[3] = {t, blk2, crops_t};
    uint32_t i_s, i_c, i_b;
    assert_int_equal(ks__graph_add_node(&g, KS_OP_SPACE_TO_BATCH_ND, "s2b", 3, in_s, 1, &sb, &i_s),
                     0);
    assert_int_equal(ks__graph_add_node(&g, KS_OP_CONV2D, "conv", 3, in_c, 1, &t, &i_c), 0);
    assert_int_equal(ks__graph_add_node(&g, KS_OP_BATCH_TO_SPACE_ND, "b2s", 3, in_b, 1, &y, &i_b),
                     0);
    g.nodes[i_c].ip[0] = g.nodes[i_c].ip[1] = 1;
    g.nodes[i_c].ip[8] = KS_PAD_VALID;
    g.nodes[i_c].ip[10] = KS_ACT_RELU;
    assert_int_equal(ks__graph_set_io(&g, 1, &x, 1, &y), KS_STATUS_OK);

    /* the reference chain */
    ks__rt_tensor tx, tw, tb, tblk, tpads, tcrops, ts, tt, ty;
    mk(&tx, KS_DTYPE_F32, xv, 4, xd);
    mk(&tw, KS_DTYPE_F32, wv, 4, wd);
    mk(&tb, KS_DTYPE_F32, bv, 1, bd);
    mk(&tblk, KS_DTYPE_I32, bk, 1, two);
    mk(&tpads, KS_DTYPE_I32, (void *)pads, 2, pd);
    mk(&tcrops, KS_DTYPE_I32, (void *)crops, 2, pd);
    ks__rt_tensor *a1[3] = {&tx, &tblk, &tpads};
    ref_node(&g.nodes[i_s], a1, 3, &ts);
    ks__rt_tensor *a2[3] = {&ts, &tw, &tb};
    ref_node(&g.nodes[i_c], a2, 3, &tt);
    ks__rt_tensor *a3[3] = {&tt, &tblk, &tcrops};
    ref_node(&g.nodes[i_b], a3, 3, &ty);
    for (int d = 0; d < 4; d++)
        assert_int_equal(ty.dims[d], yd[d]);

    char err[256];
    assert_int_equal(ks__graph_optimize(&g, err, sizeof(err)), KS_STATUS_OK);
    if (crop_over) {
        assert_int_equal(g.num_nodes, 3);
    } else {
        assert_int_equal(g.num_nodes, 1);
        const ks__node *c = &g.nodes[0];
        assert_int_equal(c->op, KS_OP_CONV2D);
        assert_int_equal(c->ip[2], bh);
        assert_int_equal(c->ip[3], bw);
        ks__rt_tensor tz;
        ks__rt_tensor *a4[3] = {&tx, &tw, &tb};
        ref_node(c, a4, 3, &tz);
        for (int d = 0; d < 4; d++)
            assert_int_equal(tz.dims[d], yd[d]);
        const float *want = ty.data, *got = tz.data;
        for (int64_t k = 0; k < ks__rt_numel(&ty); k++)
            if (fabsf(want[k] - got[k]) > 1e-5f * (1.0f + fabsf(want[k])))
                fail_msg("element %lld: %g vs %g", (long long)k, (double)want[k], (double)got[k]);
        free(tz.data);
    }
    free(ts.data);
    free(tt.data);
    free(ty.data);
    free(wv);
    free(bv);
    free(xv);
    ks__graph_free(&g);
}

static void test_fold_atrous(void **state) {
    (void)state;
    /* block 2x2: pads fill to multiples of the block; crops within the pads */
    static const int32_t p1[4] = {1, 2, 3, 2}, c1[4] = {0, 1, 1, 0};
    atrous_case(2, 2, p1, c1, 0);
    /* block 3x2, no crops (the RFB-320 model's form has block 5 and zero pads and crops) */
    static const int32_t p2[4] = {3, 3, 2, 3}, c2[4] = {0, 0, 0, 0};
    atrous_case(3, 2, p2, c2, 0);
    /* a crop beyond its pad: not a plain padding, left as it is */
    static const int32_t p3[4] = {0, 1, 1, 0}, c3[4] = {1, 0, 0, 0};
    atrous_case(2, 2, p3, c3, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_1x1_tails),
        cmocka_unit_test(test_conv_general),
        cmocka_unit_test(test_conv_acts_and_residual),
        cmocka_unit_test(test_conv_wide_rows),
        cmocka_unit_test(test_conv_refused),
        cmocka_unit_test(test_fc),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_ref_residual),
        cmocka_unit_test(test_fuse_residual),
        cmocka_unit_test(test_fold_atrous),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
