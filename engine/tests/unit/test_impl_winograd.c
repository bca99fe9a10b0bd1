/* Winograd 3x3 conv variants (winograd.h) against the reference CONV2D kernel: every F(2)/F(4)/
 * F(6) variant this CPU supports, called directly (plan/pack/run, whatever the cost model says),
 * on odd shapes that hit every tail (channels not a multiple of the vector width or NR, images
 * not a multiple of the tile, 1-pixel images, batch > 1), padding modes, every fused activation,
 * bias and residual, F16 weights, at 1 and 3 threads. Also: what the driver refuses, that the
 * cost model never picks F(6), and the accuracy on realistic (He-initialised) weights, printed
 * for docs/kernels.md. */
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
#include "winograd.h"

/* Error bounds relative to the output's max magnitude, per output tile size: the transforms'
 * coefficients grow with m (winograd.c), and so does the rounding error. Worst cases measured
 * here are several times below each bound (few-channel outputs with cancellation are the worst). */
static double tol_for(const char *name) {
    size_t n = strlen(name);
    char m = name[n - 1];
    return m == '2' ? 1e-5 : (m == '4' ? 1e-4 : 5e-4);
}

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

static uint32_t g_rng = 4242u;
static float frand(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)(g_rng >> 8) / (float)(1u << 23) - 1.0f;
}

static void *aligned(size_t bytes) {
    void *p = NULL;
    assert_int_equal(posix_memalign(&p, 64, bytes ? (bytes + 63) / 64 * 64 : 64), 0);
    return p;
}

static int is_wino(const ks__impl *im) {
    return strstr(im->name, "_wino") != NULL;
}

static ks__kernel_ctx make_ctx(const ks__node *node, ks__rt_tensor **ins, uint32_t nin,
                               ks__rt_tensor **outs) {
    ks__kernel_ctx ctx = {.node = node,
                          .node_index = 5,
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

typedef struct conv_case {
    int64_t n, ih, iw, ic, oc;
    int32_t pt, pl, pb, pr, mode, act;
    int bias, residual, f16_weights;
    float w_scale; /* 0: uniform [-1, 1); else uniform with this half-width */
} conv_case;

typedef struct conv_data {
    ks__node node;
    ks__rt_tensor tx, tw, tb, tr, yref;
    ks__rt_tensor *ins[4];
    uint32_t nin;
    float *x, *w, *b, *r, *want;
    uint16_t *w16;
    int64_t count;
    double max_abs;
} conv_data;

static void setup_case(const conv_case *c, conv_data *d) {
    memset(d, 0, sizeof(*d));
    int64_t xd[4] = {c->n, c->ih, c->iw, c->ic}, wd[4] = {c->oc, 3, 3, c->ic}, bd[1] = {c->oc};
    int64_t xn = c->n * c->ih * c->iw * c->ic, wn = c->oc * 9 * c->ic;
    d->x = malloc((size_t)xn * sizeof(float));
    d->w = malloc((size_t)wn * sizeof(float));
    d->b = malloc((size_t)c->oc * sizeof(float));
    assert_true(d->x && d->w && d->b);
    float ws = c->w_scale > 0 ? c->w_scale : 1.0f;
    for (int64_t i = 0; i < xn; i++)
        d->x[i] = c->w_scale > 0 ? fabsf(frand()) : frand(); /* post-ReLU activations */
    for (int64_t i = 0; i < wn; i++)
        d->w[i] = frand() * ws;
    for (int64_t i = 0; i < c->oc; i++)
        d->b[i] = frand() * 0.1f;
    mk(&d->tx, KS_DTYPE_F32, d->x, 4, xd);
    if (c->f16_weights) {
        d->w16 = malloc((size_t)wn * sizeof(uint16_t));
        assert_non_null(d->w16);
        for (int64_t i = 0; i < wn; i++)
            d->w16[i] = ks__f32_to_f16(d->w[i]);
        mk(&d->tw, KS_DTYPE_F16, d->w16, 4, wd);
    } else {
        mk(&d->tw, KS_DTYPE_F32, d->w, 4, wd);
    }
    mk(&d->tb, KS_DTYPE_F32, d->b, 1, bd);
    d->node.op = KS_OP_CONV2D;
    d->node.name = (char *)"wino";
    d->node.ip[4] = c->pt, d->node.ip[5] = c->pl, d->node.ip[6] = c->pb, d->node.ip[7] = c->pr;
    d->node.ip[8] = c->mode;
    d->node.ip[10] = c->act;
    d->node.fp[0] = 0.1f;
    d->ins[0] = &d->tx;
    d->ins[1] = &d->tw;
    d->ins[2] = c->bias ? &d->tb : NULL;
    d->nin = c->bias ? 3 : 2;
    /* reference infer gives the output shape, which the residual must match */
    mk(&d->yref, KS_DTYPE_F32, NULL, 0, NULL);
    ks__rt_tensor *outs[1] = {&d->yref};
    ks__kernel_ctx ctx = make_ctx(&d->node, d->ins, d->nin, outs);
    const ks__kernel *k = &ks__ref_kernels()->k[KS_OP_CONV2D];
    assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
    d->count = ks__rt_numel(&d->yref);
    if (c->residual) {
        d->r = malloc((size_t)d->count * sizeof(float));
        assert_non_null(d->r);
        for (int64_t i = 0; i < d->count; i++)
            d->r[i] = frand();
        mk(&d->tr, KS_DTYPE_F32, d->r, 4, d->yref.dims);
        d->ins[2] = &d->tb;
        d->ins[3] = &d->tr;
        d->nin = 4;
        if (!c->bias) d->ins[2] = NULL;
        ctx = make_ctx(&d->node, d->ins, d->nin, outs);
        assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
    }
    d->yref.size_bytes = (size_t)d->count * sizeof(float);
    d->want = malloc(d->yref.size_bytes);
    assert_non_null(d->want);
    d->yref.data = d->want;
    ctx.scratch = ctx.scratch_bytes ? aligned(ctx.scratch_bytes) : NULL;
    assert_int_equal(k->run(&ctx), KS_STATUS_OK);
    free(ctx.scratch);
    for (int64_t i = 0; i < d->count; i++)
        if (fabs(d->want[i]) > d->max_abs) d->max_abs = fabs(d->want[i]);
}

static void free_case(conv_data *d) {
    free(d->x), free(d->w), free(d->b), free(d->r), free(d->want), free(d->w16);
}

typedef struct err_stats {
    double max_rel; /* max |got - want| / max |want| */
    double rel_l2;  /* ||got - want|| / ||want|| */
} err_stats;

/* Runs one variant; returns its error against the reference. */
static err_stats run_variant(const ks__impl *im, conv_data *d, uint32_t threads) {
    ks__pool *pool = NULL;
    if (threads > 1) assert_int_equal(ks__pool_create(NULL, threads, &pool), KS_STATUS_OK);
    ks__rt_tensor y;
    mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
    ks__rt_tensor *outs[1] = {&y};
    ks__kernel_ctx ctx = make_ctx(&d->node, d->ins, d->nin, outs);
    assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
    float *got = malloc((size_t)d->count * sizeof(float));
    assert_non_null(got);
    for (int64_t i = 0; i < d->count; i++)
        got[i] = NAN; /* every output must be written */
    y.data = got;
    y.size_bytes = (size_t)d->count * sizeof(float);
    ctx.num_threads = threads;
    ctx.pool = pool;
    ctx.scratch_bytes = 0;
    assert_true(ks__wino_supported(&ctx));
    size_t packed_bytes = 0;
    assert_int_equal(im->plan(&ctx, &packed_bytes), KS_STATUS_OK);
    ctx.packed = aligned(packed_bytes);
    ctx.packed_bytes = packed_bytes;
    assert_int_equal(im->pack(&ctx), KS_STATUS_OK);
    ctx.scratch = aligned(ctx.scratch_bytes);
    assert_int_equal(im->run(&ctx), KS_STATUS_OK);
    err_stats e = {0, 0};
    double num = 0, den = 0, scale = d->max_abs > 0 ? d->max_abs : 1.0;
    for (int64_t i = 0; i < d->count; i++) {
        double diff = fabs((double)got[i] - d->want[i]);
        if (!(diff / scale <= e.max_rel)) e.max_rel = isnan(diff) ? INFINITY : diff / scale;
        num += diff * diff;
        den += (double)d->want[i] * d->want[i];
    }
    e.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    free(ctx.scratch);
    free(ctx.packed);
    free(got);
    ks__pool_destroy(pool);
    return e;
}

static int check_case(const conv_case *c) {
    conv_data d;
    setup_case(c, &d);
    int ran = 0;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        if (!is_wino(im) || (im->isa & ~ks__cpu_isa()) != 0) continue;
        for (uint32_t threads = 1; threads <= 3; threads += 2) {
            err_stats e = run_variant(im, &d, threads);
            if (!(e.max_rel <= tol_for(im->name))) {
                print_error("%s threads %u: %lldx%lldx%lldx%lld -> %lld ch: max rel error %g\n",
                            im->name, threads, (long long)c->n, (long long)c->ih, (long long)c->iw,
                            (long long)c->ic, (long long)c->oc, e.max_rel);
                fail();
            }
        }
        ran++;
    }
    free_case(&d);
    return ran;
}

static int has_fast(void) {
    return (ks__cpu_isa() & (KS_ISA_AVX2 | KS_ISA_AVX512 | KS_ISA_NEON)) != 0;
}

static void test_shapes(void **state) {
    (void)state;
    if (!has_fast()) skip();
    static const conv_case cases[] = {
        /* n, ih, iw, ic, oc, pads t l b r, mode, act, bias, residual, f16 */
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, KS_ACT_NONE, 1, 0, 0, 0},
        {1, 5, 7, 3, 5, 1, 1, 1, 1, 0, KS_ACT_RELU, 1, 0, 0, 0},
        {2, 9, 13, 17, 33, 1, 1, 1, 1, 0, KS_ACT_NONE, 1, 1, 0, 0},
        {1, 14, 14, 16, 16, 1, 1, 1, 1, 0, KS_ACT_RELU6, 1, 0, 0, 0},
        {1, 17, 11, 24, 40, 0, 0, 0, 0, 0, KS_ACT_LEAKY_RELU, 0, 0, 0, 0},
        {1, 12, 12, 8, 35, 2, 0, 1, 2, 0, KS_ACT_RELU_N1_TO_1, 1, 0, 0, 0},
        {1, 10, 10, 32, 32, 0, 0, 0, 0, KS_PAD_SAME_UPPER, KS_ACT_HARD_SWISH, 1, 1, 0, 0},
        {1, 8, 9, 19, 21, 0, 0, 0, 0, KS_PAD_SAME_LOWER, KS_ACT_SIGMOID, 1, 0, 1, 0},
        {1, 7, 6, 9, 7, 0, 0, 0, 0, KS_PAD_VALID, KS_ACT_TANH, 0, 1, 0, 0},
        {3, 3, 3, 2, 64, 1, 1, 1, 1, 0, KS_ACT_NONE, 1, 0, 0, 0},
        {1, 23, 2, 65, 9, 1, 1, 1, 1, 0, KS_ACT_RELU, 1, 1, 0, 0},
        {1, 13, 11, 21, 37, 1, 1, 1, 1, 0, KS_ACT_SILU, 1, 1, 0, 0},
        {2, 6, 19, 8, 17, 0, 0, 0, 0, KS_PAD_SAME_UPPER, KS_ACT_SILU, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_true(check_case(&cases[i]) > 0);
}

/* Nodes the driver must refuse: stride 2, dilation, groups, 5x5, 1x3, quantized-free int. */
static void test_refuses(void **state) {
    (void)state;
    static float x[1 * 6 * 6 * 8], w[8 * 5 * 5 * 8];
    int64_t xd[4] = {1, 6, 6, 8}, yd[4] = {1, 6, 6, 8};
    ks__rt_tensor tx, tw, ty;
    mk(&tx, KS_DTYPE_F32, x, 4, xd);
    mk(&ty, KS_DTYPE_F32, NULL, 4, yd);
    ks__rt_tensor *ins[2] = {&tx, &tw}, *outs[1] = {&ty};
    ks__node node;
    struct {
        int64_t kh, kw, ci;
        int ipi, ipv;
    } bad[] = {
        {3, 3, 8, 0, 2}, {3, 3, 8, 2, 2}, {3, 3, 4, 9, 2}, {5, 5, 8, -1, 0}, {1, 3, 8, -1, 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t wd[4] = {8, bad[i].kh, bad[i].kw, bad[i].ci};
        mk(&tw, KS_DTYPE_F32, w, 4, wd);
        memset(&node, 0, sizeof(node));
        node.op = KS_OP_CONV2D;
        node.name = (char *)"bad";
        if (bad[i].ipi >= 0) node.ip[bad[i].ipi] = bad[i].ipv;
        ks__kernel_ctx ctx = make_ctx(&node, ins, 2, outs);
        assert_false(ks__wino_supported(&ctx));
        for (const ks__impl *const *it = ks__impl_list(); *it; it++)
            if (is_wino(*it)) assert_true((*it)->cost(&ctx) < 0);
    }
    /* non-constant weights */
    int64_t wd[4] = {8, 3, 3, 8};
    mk(&tw, KS_DTYPE_F32, NULL, 4, wd);
    memset(&node, 0, sizeof(node));
    node.op = KS_OP_CONV2D;
    ks__kernel_ctx ctx = make_ctx(&node, ins, 2, outs);
    assert_false(ks__wino_supported(&ctx));
}

/* Accuracy on a realistic layer: post-ReLU activations, He-initialised weights
 * (uniform +-sqrt(6 / fan_in)), 28x28x64 -> 64 and 14x14x256 -> 256. Prints the errors of every
 * tile size; the cost model must never pick F(6) (its error is the largest, see winograd.c). */
static void test_accuracy(void **state) {
    (void)state;
    if (!has_fast()) skip();
    static const int64_t shapes[][2] = {{28, 64}, {14, 256}};
    for (size_t s = 0; s < 2; s++) {
        int64_t hw = shapes[s][0], c = shapes[s][1];
        conv_case cc = {1,           hw, hw, c, c,
                        1,           1,  1,  1, 0,
                        KS_ACT_NONE, 1,  0,  0, (float)sqrt(6.0 / (9.0 * (double)c))};
        conv_data d;
        setup_case(&cc, &d);
        for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
            const ks__impl *im = *it;
            if (!is_wino(im) || (im->isa & ~ks__cpu_isa()) != 0) continue;
            err_stats e = run_variant(im, &d, 1);
            printf("# %-30s %lldx%lldx%lld: max rel %.2e, rel L2 %.2e\n", im->name, (long long)hw,
                   (long long)hw, (long long)c, e.max_rel, e.rel_l2);
            assert_true(e.max_rel <= tol_for(im->name));
            ks__rt_tensor y;
            mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
            ks__rt_tensor *outs[1] = {&y};
            ks__kernel_ctx ctx = make_ctx(&d.node, d.ins, d.nin, outs);
            assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
            if (strstr(im->name, "wino6")) assert_true(im->cost(&ctx) < 0);
        }
        free_case(&d);
    }
}

/* The channel gate (winograd.c ks__wino_cost): 8 to 15 channels are left to the direct kernels
 * with 16-float vectors (AVX-512), and taken by F(2) / F(4) with AVX2's 8-float ones, where
 * YOLOX-nano's 12 -> 16 stem measured 1.5 -> 1.1 ms (docs/kernels.md). */
static void test_channel_gate(void **state) {
    (void)state;
    conv_case cc = {1, 40, 40, 12, 16, 1, 1, 1, 1, 0, KS_ACT_NONE, 1, 0, 0, 0};
    conv_data d;
    setup_case(&cc, &d);
    int checked = 0;
    for (const ks__impl *const *it = ks__impl_list(); *it; it++) {
        const ks__impl *im = *it;
        if (!is_wino(im) || strstr(im->name, "wino6") || (im->isa & ~ks__cpu_isa()) != 0) continue;
        ks__rt_tensor y;
        mk(&y, KS_DTYPE_F32, NULL, 0, NULL);
        ks__rt_tensor *outs[1] = {&y};
        ks__kernel_ctx ctx = make_ctx(&d.node, d.ins, d.nin, outs);
        assert_int_equal(ks__ref_prepare(&ctx), KS_STATUS_OK);
        if (strstr(im->name, "__avx2_")) assert_true(im->cost(&ctx) >= 0), checked++;
        if (strstr(im->name, "__avx512_")) assert_true(im->cost(&ctx) < 0), checked++;
    }
    if (ks__cpu_isa() & KS_ISA_AVX2) assert_true(checked >= 2);
    free_case(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_refuses),
        cmocka_unit_test(test_accuracy),
        cmocka_unit_test(test_channel_gate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
